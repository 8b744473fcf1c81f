"""Figure 4 (context extension): the data are right, and the page draws and responds."""
import importlib
import json

import numpy as np
import pytest

from companion import rope, scaling, trained_range

# the module (companion.figures.context_extension is also the name of its figure function)
fig = importlib.import_module("companion.figures.scaling")

BOOK = dict(d=128, L=4096, base=10000.0)
METHODS = ("none", "pi", "ntk", "yarn")


@pytest.fixture(scope="module")
def data():
    return fig.context_extension_data()


def test_data_match_companion(data):
    theta = rope.inv_freq(128, 10000.0)
    assert np.allclose(data["theta"], theta, rtol=1e-6, atol=0)
    assert np.allclose(data["turns"], scaling.training_turns(theta, 4096), rtol=1e-6, atol=0)
    assert data["s_values"] == list(range(1, 33))
    assert [m for m, _ in data["methods"]] == list(METHODS)
    for method in METHODS:
        assert method in scaling.METHODS
        for s in (1, 2, 3, 8, 13, 32):
            ext = trained_range.extension(method, s=float(s), **BOOK)
            k = s - 1
            assert np.allclose(data["ratio"][method][k], ext.ratio, rtol=0, atol=1e-8), (method, s)
            assert data["out"][method][k] == ext.out_of_range.tolist(), (method, s)
            assert data["n_out"][method][k] == ext.n_out == sum(data["out"][method][k])
            assert data["worst"][method][k] == pytest.approx(ext.worst_ratio, abs=1e-8)
            assert data["attention_factor"][method][k] == pytest.approx(ext.attention_factor, abs=1e-8)
            freq = scaling.scale(method, 128, s=float(s), L=4096, base=10000.0).inv_freq
            assert np.allclose(data["scaled_freq"][method][k], freq, rtol=1e-6, atol=0), (method, s)
            # the ratio is s * theta' / theta
            assert np.allclose(np.array(data["ratio"][method][k]),
                               s * np.array(data["scaled_freq"][method][k]) / theta, rtol=1e-5)
    assert data["n_slow"] == trained_range.extension("none", **BOOK).n_slow == sum(t < 1 for t in data["turns"])


def test_the_book_numbers_at_s8(data):
    k = 8 - 1
    assert data["n_slow"] == 18  # pairs 46..63 never made a full turn in 4096 tokens
    assert [t < 1 for t in data["turns"]] == [i >= 46 for i in range(64)]
    # no scaling: every pair reaches 8x its training angle, the 18 slow pairs leave the range
    assert data["n_out"]["none"][k] == 18 and data["worst"]["none"][k] == pytest.approx(8.0)
    assert np.allclose(data["ratio"]["none"][k], 8.0)
    assert data["out"]["none"][k] == [i >= 46 for i in range(64)]
    # PI: nothing out of range, but every pair is slowed, the fast ones too
    assert data["n_out"]["pi"][k] == 0 and np.allclose(data["ratio"]["pi"][k], 1.0)
    assert data["kept"]["pi"][k] == 0
    # NTK-aware: all slow pairs but the last still exceed, the worst about 1.75x
    assert data["n_out"]["ntk"][k] == 17
    assert data["out"]["ntk"][k] == [46 <= i <= 62 for i in range(64)]
    assert 1.74 < data["worst"]["ntk"][k] < 1.76
    assert data["ratio"]["ntk"][k][0] == pytest.approx(8.0)  # fastest pair kept
    # YaRN: nothing out of range and the fast pairs untouched
    assert data["n_out"]["yarn"][k] == 0 and data["worst"]["yarn"][k] == pytest.approx(1.0)
    assert data["kept"]["yarn"][k] == 21
    assert np.allclose(data["ratio"]["yarn"][k][:21], 8.0)
    assert data["attention_factor"]["yarn"][k] == pytest.approx(0.1 * np.log(8) + 1)
    # s = 1 changes nothing
    for method in METHODS:
        assert data["n_out"][method][0] == 0 and np.allclose(data["ratio"][method][0], 1.0)


def test_widget_traits_and_bad_input():
    w = fig.context_extension(method="ntk", s=4)
    assert (w.method, w.s, w.pair, w.n_slow, len(w.theta)) == ("ntk", 4, 46, 18, 64)
    assert "18 of 64" in w.description and "17 of 64" in fig.context_extension().description
    assert "worst ratio 1.75" in fig.context_extension().description
    assert "export default" in w._esm
    state = {name: getattr(w, name) for name in w.trait_names(sync=True) if not name.startswith("_")
             and name not in ("layout", "comm", "keys", "tabbable", "tooltip")}
    assert len(json.dumps(fig.context_extension_data())) < 400_000
    assert len(json.dumps(state, default=str)) < 400_000
    for kwargs, name in [({"method": "linear_plus"}, "method"), ({"s": 0}, "s"), ({"s": 33}, "s"),
                         ({"s": 2.5}, "s"), ({"s": True}, "s"), ({"pair": 64}, "pair"), ({"pair": -1}, "pair"),
                         ({"d": 3}, "d"), ({"d": 2}, "d"), ({"L": 0}, "L"), ({"base": -1.0}, "base"),
                         ({"max_s": 1}, "max_s")]:
        with pytest.raises(ValueError, match=name):
            fig.context_extension(**kwargs)
    with pytest.raises(Exception, match="s must"):
        w.s = 40
    with pytest.raises(Exception, match="method"):
        w.method = "rope"
    with pytest.raises(Exception, match="pair"):
        w.pair = 70
    w.method, w.s, w.pair = "yarn", 16, 50
    assert w.fallback_html().startswith('<div class="companion-fallback" data-fallback-for="context_extension">')


@pytest.mark.site
def test_page_interaction(open_figure):
    page, root, problems = open_figure("context_extension")
    bars = root.locator("rect.cf-bar")
    assert bars.count() == 64
    red = root.locator("rect.cf-bar[data-out='true']")
    count = root.locator(".cf-count")
    slider = root.locator("input[type=range].cf-s")
    readout = root.locator(".cf-readout")
    live = root.locator(".cf-description")

    def drawn_ratios():
        return [float(v) for v in bars.evaluate_all("els => els.map(e => e.dataset.ratio)")]

    def choose(label):
        root.locator(f"button[data-value='{label}']").click()
        assert root.locator(f"button[data-value='{label}']").get_attribute("aria-pressed") == "true"

    # the default view: no scaling at s = 8
    assert slider.input_value() == "8"
    assert red.count() == 18
    assert count.inner_text() == "18 of 64 pairs beyond the trained range; worst 8.00×"
    assert root.locator("rect.cf-slow-band").get_attribute("data-count") == "18"
    assert root.locator("rect.cf-slow-band").get_attribute("data-first") == "46"

    # a smaller scale: the drawn ratios are companion's
    slider.fill("2")
    assert count.get_attribute("data-s") == "2"
    for method in ("none", "ntk", "yarn", "pi"):
        choose(method)
        expected = trained_range.extension(method, s=2.0, **BOOK)
        assert np.allclose(drawn_ratios(), expected.ratio, rtol=0, atol=1e-6), method
        assert red.count() == expected.n_out
    assert "PI, s = 2 (8,192 tokens)" in live.inner_text()

    # back to s = 8 with the keyboard
    slider.focus()
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    assert slider.input_value() == "8" and count.get_attribute("data-s") == "8"
    expected_red = {"none": 18, "pi": 0, "ntk": 17, "yarn": 0}
    for method, n_red in expected_red.items():
        choose(method)
        assert count.get_attribute("data-method") == method
        assert red.count() == n_red, method
        assert count.get_attribute("data-n-out") == str(n_red)
        assert count.inner_text().startswith(f"{n_red} of 64 pairs beyond the trained range"), method
        ext = trained_range.extension(method, s=8.0, **BOOK)
        assert np.allclose(drawn_ratios(), ext.ratio, rtol=0, atol=1e-6), method
        if method == "ntk":
            assert 1.74 < float(count.get_attribute("data-worst")) < 1.76
            assert "worst 1.75×" in count.inner_text()
    assert "queries and keys multiplied by 1.208" in live.inner_text()

    # reading pairs: keyboard first, then hover pair 46 (the worst NTK-aware pair)
    choose("ntk")
    root.locator("svg.cf-plot").focus()
    page.keyboard.press("ArrowLeft")
    assert readout.inner_text().startswith("pair 45:")
    assert "within the trained range" in readout.inner_text()
    root.locator("rect.cf-hit[data-pair='46']").hover()
    ratio46 = trained_range.extension("ntk", s=8.0, **BOOK).ratio[46]
    text = readout.inner_text()
    assert text.startswith("pair 46:") and f"ratio {ratio46:.4g}×" in text
    assert "beyond the trained range" in text
    assert abs(float(readout.get_attribute("data-ratio")) - ratio46) < 1e-6

    # the selection outline wraps the selected bar only, not the whole height of the plot
    def box(locator):
        return {k: float(locator.get_attribute(k)) for k in ("x", "y", "width", "height")}

    outline, bar = box(root.locator("rect.cf-cursor")), box(root.locator("rect.cf-bar[data-pair='46']"))
    assert outline["y"] == pytest.approx(bar["y"]) and outline["height"] == pytest.approx(bar["height"])
    assert outline["x"] == pytest.approx(bar["x"] - 1.5) and outline["width"] == pytest.approx(bar["width"] + 3)
    assert problems == {"outside": [], "console": [], "http": []}
