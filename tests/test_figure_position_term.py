"""Figure 1 (position-position term): the data are right, and the page draws and responds."""
import importlib

import numpy as np
import pytest

from companion import absolute

# the module, not the function of the same name that companion.figures exports
fig = importlib.import_module("companion.figures.absolute")

D = 64
M_ALL = np.arange(201)


def mixed_matrix(sigma=0.3, seed=0):
    return np.eye(D) + np.random.default_rng(seed).normal(scale=sigma, size=(D, D))


def test_data_match_companion():
    data = fig.position_term_data()
    assert data["distances"] == [1, 2, 4, 8, 16, 32]
    assert (data["d"], data["m_max"], data["sigma"], data["seed"]) == (64, 200, 0.3, 0)
    M = mixed_matrix()
    for i, k in enumerate(data["distances"]):
        ident = np.array(data["identity"][i])
        mixed = np.array(data["mixed"][i])
        assert ident.shape == mixed.shape == (201,)
        # M = I: PE(m).PE(m+k) / (d/2) = mean_i cos(w_i k), the same at every m
        closed = np.mean(np.cos(k * absolute.frequencies(D)))
        assert np.allclose(ident, closed, atol=1e-6)
        assert abs(data["flat"][i] - closed) < 1e-6
        direct = np.sum(absolute.sinusoidal(M_ALL, D) * absolute.sinusoidal(M_ALL + k, D), axis=-1) / 32
        assert np.allclose(ident, direct, atol=1e-6)
        # M = I + R: the bilinear form computed from the sinusoids, changing with m
        pe_m, pe_mk = absolute.sinusoidal(M_ALL, D), absolute.sinusoidal(M_ALL + k, D)
        expected = np.einsum("mi,ij,mj->m", pe_m, M, pe_mk) / 32
        assert np.allclose(mixed, expected, atol=1e-6)
        assert np.ptp(mixed) > 0.5
        assert data["mixed_min"][i] == pytest.approx(expected.min(), abs=1e-6)
        assert data["mixed_max"][i] == pytest.approx(expected.max(), abs=1e-6)
        assert mixed[data["mixed_argmin"][i]] == data["mixed_min"][i]
        assert mixed[data["mixed_argmax"][i]] == data["mixed_max"][i]
        lo, hi = data["y_range"]
        assert lo <= mixed.min() and hi >= mixed.max() and lo <= ident.min() and hi >= ident.max()
    # the flat value falls with distance at first: mean cos(w_i k) at k = 1 is close to 1
    assert data["flat"][0] > 0.95 and data["flat"][0] > data["flat"][2] > data["flat"][4]
    # a random R is not of the rotation-and-scaling form, so distance alone does not fix the score
    assert np.ptp(absolute.position_score(M_ALL, 4, M)) > 1.0


def test_widget_traits_and_bad_input():
    w = fig.position_term(k=8, m=120)
    assert (w.k, w.m, len(w.identity), len(w.mixed[0])) == (8, 120, 6, 201)
    assert "flat line at 0.97 at k = 1" in w.description
    assert "standard deviation 0.3" in w.description and "M = I + R" in w.caption
    with pytest.raises(ValueError, match="k must be one of"):
        fig.position_term(k=3)
    with pytest.raises(ValueError, match="m must be"):
        fig.position_term(m=201)
    with pytest.raises(ValueError, match="d must be an even"):
        fig.position_term_data(d=63)
    with pytest.raises(ValueError, match="distances"):
        fig.position_term_data(distances=(0, 1))
    with pytest.raises(ValueError, match="sigma"):
        fig.position_term_data(sigma=-1.0)
    with pytest.raises(ValueError, match="m_max"):
        fig.position_term_data(m_max=0)
    with pytest.raises(Exception, match="k must be one of"):
        w.k = 5
    with pytest.raises(Exception, match="m must be in"):
        w.m = -1
    assert w.fallback_html().startswith('<div class="companion-fallback" data-fallback-for="position_term">')


@pytest.mark.site
def test_page_interaction(open_figure):
    page, root, problems = open_figure("position_term")
    data = fig.position_term_data()
    M = mixed_matrix()

    def values(selector):
        return [float(v) for v in root.locator(selector).get_attribute("data-values").split(",")]

    def readout():
        r = root.locator(".cf-readout")
        return int(r.get_attribute("data-m")), float(r.get_attribute("data-mixed")), float(r.get_attribute("data-identity"))

    # choose k = 16: the blue curve is flat at companion's value for that distance
    root.locator("button[data-value='16']").click()
    assert root.locator("button[aria-pressed=true]").inner_text() == "16"
    blue = values("polyline.cf-identity")
    assert len(blue) == 201 and max(blue) - min(blue) < 1e-9
    flat16 = absolute.dot_product_at_distance(16, D) / 32
    assert abs(blue[0] - flat16) < 1e-5
    orange = values("polyline.cf-mixed")
    assert max(orange) - min(orange) > 0.5  # not flat
    assert np.allclose(orange, absolute.position_score(M_ALL, 16, M) / 32, atol=1e-5)
    assert "k = 16" in root.locator(".cf-description").inner_text()
    assert f"{data['mixed_max'][4]:.3g}" in root.locator(".cf-description").inner_text()

    # drag the point along the orange curve to about m = 140
    handle = root.locator("circle.cf-handle").bounding_box()
    area = root.locator("rect.cf-plot-area").bounding_box()
    target_x = area["x"] + area["width"] * 140 / 200
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(target_x - 30, area["y"] + area["height"] / 2, steps=5)
    page.mouse.move(target_x, area["y"] + area["height"] / 2, steps=5)
    page.mouse.up()
    m, mixed_value, identity_value = readout()
    assert abs(m - 140) <= 1
    assert int(root.locator("circle.cf-handle").get_attribute("data-m")) == m
    assert abs(mixed_value - absolute.position_score(m, 16, M) / 32) < 1e-5
    assert abs(identity_value - flat16) < 1e-5
    assert f"m = {m}:" in root.locator(".cf-readout").inner_text()
    assert root.locator("input.cf-m-slider").input_value() == str(m)

    # keyboard: ArrowRight on the focused chart moves the point one position on
    root.locator("svg").focus()
    page.keyboard.press("ArrowRight")
    m2, mixed2, _ = readout()
    assert m2 == m + 1
    assert abs(mixed2 - absolute.position_score(m2, 16, M) / 32) < 1e-5
    # ... and so does the range input, kept in step with the chart
    root.locator("input.cf-m-slider").focus()
    page.keyboard.press("ArrowRight")
    assert readout()[0] == m + 2
    assert problems == {"outside": [], "console": [], "http": []}
