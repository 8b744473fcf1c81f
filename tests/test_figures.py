"""companion.figures: the data each figure shows are right, and the drawing code ships."""
import re
from pathlib import Path

import numpy as np
import pytest

import companion.figures
from companion import attention
from companion.figures import permutation


def test_permutation_figure_data():
    data = permutation.permutation_results(seed=0, d=4)
    assert data["orders"][4] == ["C", "A", "B"]
    # without the mask every token keeps its row, in every order
    assert all(all(r["same_as_original"]) for r in data["results"]["none"])
    # with the causal mask a token keeps its row exactly when the set of tokens
    # in front of it is the one it had in the order A B C
    for order, result in zip(data["orders"], data["results"]["causal"]):
        expected = [set(order[:i]) == set("ABC"[: "ABC".index(t)]) for i, t in enumerate(order)]
        assert result["same_as_original"] == expected, order
    for result in data["results"]["causal"]:
        weights = np.array(result["weights"])
        assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-5)
        assert np.all(weights[~attention.causal_mask(3)] == 0)


def test_permutation_explorer_widget_state():
    widget = companion.figures.permutation_explorer(order_index=1, causal=True)
    assert widget.order_index == 1 and widget.causal is True
    assert widget.tokens == ["A", "B", "C"] and len(widget.orders) == 6
    assert "export default" in widget._esm
    with pytest.raises(ValueError, match="order_index"):
        companion.figures.permutation_explorer(order_index=6)
    with pytest.raises(ValueError, match="d must be"):
        companion.figures.permutation_explorer(d=0)


def test_figure_scripts_are_package_data():
    """Each figure module's .js sits beside its .py and is declared as package data."""
    folder = Path(companion.figures.__file__).parent
    for module in folder.glob("*.py"):
        if not module.name.startswith("_"):
            assert module.with_suffix(".js").exists(), module
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert '"figures/*.js"' in pyproject


FIGURES = [companion.figures.permutation_explorer, companion.figures.position_term,
           companion.figures.rope_rotation, companion.figures.alibi_heatmap,
           companion.figures.context_extension]


@pytest.mark.parametrize("make", FIGURES, ids=lambda f: f.__name__)
def test_printed_caption_says_what_the_figure_shows_not_how_to_work_it(make):
    """The fallback (print, no JavaScript) carries the caption without instructions."""
    widget = make()
    assert widget.caption and widget.instructions
    printed = re.search(r"<p><em>(.*?)</em></p>", widget.fallback_html(), re.S).group(1)
    assert widget.instructions not in printed
    for word in ("drag", "press", "click", "hover", "choose", "arrow keys", "focus"):
        assert word not in printed.lower(), (make.__name__, word)


def test_live_caption_is_for_screen_readers_only():
    """On screen the chapter's numbered caption is the only visible one."""
    common = (Path(companion.figures.__file__).parent / "_common.js").read_text()
    hidden_rule = re.search(r"\.companion-figure \.cf-sr, \.companion-figure \.cf-caption \{([^}]*)\}", common)
    assert hidden_rule and "clip: rect(0 0 0 0)" in hidden_rule.group(1)
    assert 'model.get("instructions")' in common


def test_shift_button_label_is_the_same_in_python_and_script():
    from companion.figures import rope

    script = (Path(rope.__file__).parent / "rope.js").read_text()
    assert rope.SHIFT_LABEL == "Move both one later (+1)"
    assert f'text: "{rope.SHIFT_LABEL}"' in script
    assert rope.shifted(5, 2) == (6, 3)  # later, as the label says


def _contrast(a, b) -> float:
    import matplotlib.colors as mcolors

    def luminance(colour):
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in mcolors.to_rgb(colour))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("cmap", ["viridis", "PuOr_r", "Blues", "RdBu", "magma", "cividis"])
def test_ink_on_any_cell_of_a_colour_map_reads_at_wcag_aa(cmap):
    """The ink plotting.ink_on picks reads at 4.5:1 or more on every colour of maps the
    chapters use and maps they do not (a heat map's annotations, Fig. 0.1)."""
    import matplotlib

    from companion import plotting

    colours = matplotlib.colormaps[cmap](np.linspace(0, 1, 101))
    worst = min(_contrast(plotting.ink_on(c), c) for c in colours)
    assert worst >= 4.5, (cmap, worst)
    with pytest.raises(ValueError):
        plotting.ink_on("not a colour")


def test_the_house_style_keeps_text_legible_on_a_phone():
    """A plot COLUMN_WIDTH wide, drawn 342 px wide on a 390 px phone, shows its tick
    labels and legend at 9 px or more even when a title or legend widens the drawing by
    10 %."""
    import matplotlib

    from companion import plotting

    plotting.use_book_style(svg=False)
    scale = 342 / (1.1 * plotting.COLUMN_WIDTH * 72)  # CSS pixels per point
    for key in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize", "font.size", "axes.labelsize"):
        assert matplotlib.rcParams[key] * scale >= 9, key


def test_the_fallback_names_its_figure():
    """The printed fallback carries the figure's name, with which the book labels it."""
    for make in FIGURES:
        widget = make()
        assert f'data-fallback-for="{widget.figure_name()}"' in widget.fallback_html()
        assert widget.figure_name() == make.__name__


def test_the_scripts_palette_is_the_packages():
    """The drawing scripts and the Python side (plots and fallbacks) name the same colours:
    ``_common.js`` keeps its own copy of ``PALETTE``, so a colour changed on one side only
    would draw a figure's line in one colour and the prose's name for it in another."""
    from companion.plotting import PALETTE

    script = (Path(companion.figures.__file__).parent / "_common.js").read_text(encoding="utf-8")
    block = re.search(r"const PALETTE = \{(.*?)\};", script, re.S).group(1)
    assert dict(re.findall(r'(\w+): "(#[0-9A-Fa-f]{6})"', block)) == PALETTE


@pytest.mark.parametrize("make", FIGURES, ids=lambda f: f.__name__)
def test_the_fallback_is_vector_for_the_browser_and_for_print(make, tmp_path):
    """The fallback output holds the drawing as SVG (a browser prints it, and shows it
    without JavaScript) and its print version as a PDF with the width to print it at (the
    book's LaTeX build picks it): text and lines as vectors, an image's pixels at 300 per
    inch or more as printed."""
    import base64
    import shutil
    import subprocess

    from companion import plotting

    data, metadata = make().fallback_bundle()
    assert 'src="data:image/svg+xml;base64,' in data["text/html"] and "image/png" not in data["text/html"]
    pdf = base64.b64decode(data["application/pdf"])
    assert pdf.startswith(b"%PDF") and b"/Subtype /Type3" in pdf
    width = float(metadata["application/pdf"]["width"].removesuffix("in"))
    assert 3 < width <= plotting.PRINT_WIDTH
    if shutil.which("pdfimages") is None:
        pytest.skip("pdfimages (poppler) is not installed: the resolution of images is not checked")
    (tmp_path / "print.pdf").write_bytes(pdf)
    listing = subprocess.run(["pdfimages", "-list", str(tmp_path / "print.pdf")], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    ppi = [min(float(line.split()[12]), float(line.split()[13])) for line in listing if line.strip()]
    assert all(value >= 300 for value in ppi), ppi
