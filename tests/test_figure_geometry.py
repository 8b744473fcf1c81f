"""Every plot keeps its panels and its text clear of each other, on screen and in print.

:func:`companion.plotting.layout_faults` measures a drawn figure with matplotlib's renderer
(the window extents of axes, legends, titles, labels and texts, and the ink of the data
artists drawn alone): a panel crushed by a legend outside its axes, two texts that
overlap, a legend or title over the data, text too small in print. Every plot a chapter
shows records those faults at screen and at print size in its output
(``companion.plotting.use_book_style``), so the tests read what the book build drew:

- the check itself: it finds nothing in a clean plot, and finds each kind of fault in a
  plot made to have it; above all it fails Figure 3.2 and Figure 10.1 as they were
  drawn before (a legend outside the axes crushed their panels to about 70 pixels);
- every plot of every chapter, as the book build executed it, carries its record, with
  no fault at either size, and its print version is a vector PDF no wider than the
  printed text;
- each interactive figure's printed drawing has no fault at print size.
"""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import companion.figures  # noqa: E402
from companion import configs, plotting, rope  # noqa: E402
from companion.plotting import PALETTE  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
EXECUTION_CACHE = ROOT / "_build" / ".jupyter_cache"


@pytest.fixture(autouse=True)
def book_style():
    plotting.use_book_style(svg=False)
    yield
    plt.close("all")


# --- the two broken figures, drawn as they were --------------------------------------------

def figure_3_2_as_it_was():
    """Figure 3.2 as chapter 3 drew it: three terms of the RoPE score, their legend outside
    the axes on the right (``bbox_to_anchor=(1.0, 1.0)``)."""
    rng = np.random.default_rng(1)
    q, k, theta = rng.normal(size=128), rng.normal(size=128), rope.inv_freq(128)
    r_axis = np.arange(-300, 301)
    h = rope.to_complex(q) * np.conj(rope.to_complex(k))
    fig, axes = plt.subplots(2, 1, figsize=(plotting.COLUMN_WIDTH, 5), sharex=True)
    axes[0].plot(r_axis, rope.relative_score(q, k, -r_axis, theta), color=PALETTE["blue"], lw=1.2)
    axes[0].set_ylabel("score (dimensionless)")
    axes[0].set_title("One random query and key, d = 128")
    for i, colour in ((0, PALETTE["vermillion"]), (20, PALETTE["green"]), (63, PALETTE["orange"])):
        axes[1].plot(r_axis, np.real(h[i] * np.exp(1j * r_axis * theta[i])), color=colour, lw=1.2,
                     label=f"pair {i}: θ = {theta[i]:.2g} rad per position")
    axes[1].set_xlabel("distance m − n (positions)")
    axes[1].set_ylabel("contribution of one pair")
    axes[1].set_title("Three of the 64 terms of the sum")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def figure_10_1_as_it_was():
    """Figure 10.1 as chapter 10 drew it: the published configurations' ratios, each
    panel's names in a legend outside it on the right, one label for both panels."""
    rows = [(entry.name, configs.read_config(entry.config, entry.layer_type), entry) for entry in configs.PUBLISHED]
    rows = [(name, s, configs.config_extension(s, entry.context, entry.trained_length)) for name, s, entry in rows]
    colours = ["blue", "orange", "green", "vermillion", "sky", "purple", "black", "grey"]
    fig, axes = plt.subplots(2, 1, figsize=(plotting.COLUMN_WIDTH, 6.4), sharex=True)
    for ax, scaled in ((axes[0], True), (axes[1], False)):
        group = [row for row in rows if (row[1].rope_type != "default") == scaled]
        for k, (name, _, ext) in enumerate(group):
            ax.plot(1 / ext.turns, ext.ratio, marker="o", ms=2.5, lw=1, color=PALETTE[colours[k % len(colours)]],
                    ls="-" if k < len(colours) else "--", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title("configurations with a scaling method" if scaled else "plain RoPE (the base is the method)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), handlelength=1, frameon=False)
    axes[1].set_xlabel("wavelength / trained length (pairs right of 1 are slow)")
    fig.supylabel("largest angle at the context / in training")
    return fig


@pytest.mark.parametrize("make", [figure_3_2_as_it_was, figure_10_1_as_it_was], ids=["fig-3.2", "fig-10.1"])
def test_the_broken_figures_as_they_were_fail(make):
    """A legend outside the axes crushed both figures' panels: the check finds it at both sizes."""
    fig = make()
    for size in ("web", "print"):
        faults = plotting.layout_faults(fig, size)
        crushed = [fault for fault in faults if fault.startswith("panel ")]
        assert len(crushed) == 2, (size, faults)


def test_figure_3_2_as_it_was_also_crowds_its_ticks_and_10_1_its_label():
    assert any("tick label '−250' overlaps tick label '0'" in f for f in plotting.layout_faults(figure_3_2_as_it_was()))
    assert any(re.search(r"title 'plain RoPE.*overlaps axis label 'largest angle", f)
               for f in plotting.layout_faults(figure_10_1_as_it_was()))


# --- the check on plots made to pass or to fail ----------------------------------------------

def test_a_clean_plot_has_no_fault():
    x = np.linspace(0, 10, 200)
    fig, (left, right) = plt.subplots(1, 2, figsize=(plotting.COLUMN_WIDTH, plotting.PANEL_HEIGHT))
    left.plot(x, np.sin(x), label="sine")
    left.plot(x, np.cos(x), label="cosine")
    right.plot(x, x ** 2)
    left.set_title("two waves")
    right.set_title("a parabola")
    fig.legend(loc="outside lower center", ncols=2)
    assert plotting.layout_faults(fig) == []
    assert plotting.layout_faults(fig, "print") == []


def test_a_legend_over_the_data_is_found():
    x = np.linspace(0, 1, 100)
    fig, ax = plt.subplots()
    for level in range(1, 6):
        ax.plot(x, np.full_like(x, level), label=f"level {level}")
    ax.legend(loc="upper left")  # the top lines run under it
    assert any(f.startswith("legend ") and "covers data" in f for f in plotting.layout_faults(fig))


def test_a_band_or_a_reference_line_under_a_legend_is_not_data():
    x = np.linspace(0, 1, 100)
    fig, ax = plt.subplots()
    ax.plot(x, x, label="rising")
    ax.axvspan(0, 0.5, color="0.9")
    ax.axhline(0.9, color="0.7")
    ax.legend(loc="upper left")
    assert plotting.layout_faults(fig) == []


def test_overlapping_texts_and_a_title_over_an_image_are_found():
    fig, ax = plt.subplots()
    ax.imshow(np.arange(16.0).reshape(4, 4))
    ax.set_title("inside", y=0.5)
    ax.text(0, 0, "first label")
    ax.text(0.2, 0.1, "second label")
    faults = plotting.layout_faults(fig)
    assert any(f.startswith("title 'inside' covers data") for f in faults), faults
    assert any("text 'first label' overlaps text 'second label'" in f for f in faults), faults


def test_print_size_finds_text_too_small_to_print():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.text(0.5, 0.2, "note", fontsize=6)
    assert plotting.layout_faults(fig) == []
    assert any(f.startswith("text of 6 pt prints at") for f in plotting.layout_faults(fig, "print"))


def test_the_print_version_is_vector_and_sized_for_the_page():
    """Printed at the width it gives, the style's text measures PRINT_TEXT points; the PDF
    draws its lines as paths and its text with its glyphs as outlines, and the figure is
    left as it was."""
    fig, ax = plt.subplots(figsize=(plotting.COLUMN_WIDTH, 3))
    ax.plot([0, 1, 2], [0, 1, 0])
    ax.set_xlabel("distance")
    before = tuple(fig.get_size_inches())
    pdf, width = plotting.print_version(fig)
    assert pdf.startswith(b"%PDF") and b"/Subtype /Type3" in pdf and b"/Subtype /Image" not in pdf
    assert tuple(fig.get_size_inches()) == before
    drawn = float(re.search(rb"/MediaBox \[ *0 0 ([\d.]+)", pdf).group(1)) / 72
    assert width <= plotting.PRINT_WIDTH and 0.8 * plotting.PRINT_WIDTH < width
    assert plotting.TEXT_SIZE * width / drawn == pytest.approx(plotting.PRINT_TEXT, rel=0.01)
    with pytest.raises(ValueError, match="size must be 'web' or 'print'"):
        plotting.layout_faults(fig, "phone")
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        plotting.print_version("figure")
    with pytest.raises(ValueError, match="at least one axes"):
        plotting.layout_faults(plt.figure())


# --- the interactive figures' printed drawings ------------------------------------------------

FIGURES = [companion.figures.permutation_explorer, companion.figures.position_term,
           companion.figures.rope_rotation, companion.figures.alibi_heatmap, companion.figures.context_extension]


@pytest.mark.parametrize("make", FIGURES, ids=lambda f: f.__name__)
def test_each_interactive_figure_prints_clear(make):
    fig = make().static_figure()
    assert plotting.layout_faults(fig, "print") == []


# --- every plot of every chapter, as the book build drew it ----------------------------------

def executed(lesson: Path):
    """The lesson as the book build executed it (its cached execution), or None."""
    from jupyter_cache import get_cache

    nb = nbformat.read(lesson, as_version=4)
    try:
        record = get_cache(str(EXECUTION_CACHE)).match_cache_notebook(nb)
    except KeyError:
        return None
    return get_cache(str(EXECUTION_CACHE)).get_cache_bundle(record.pk).nb


def plots(nb) -> list[tuple[int, dict, dict]]:
    """(cell, data, metadata) of every plot a notebook shows (an SVG or a PNG output)."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/svg+xml" in data or ("image/png" in data and "text/html" not in data):
                found.append((index, data, output.get("metadata", {})))
    return found


@pytest.mark.site
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_every_plot_of_the_chapter_is_clear_on_screen_and_in_print(lesson, book_build):
    nb = executed(lesson)
    if nb is None:
        pytest.fail(f"{lesson.name} has no execution of its current code in the book build (tests/test_lessons.py)")
    found = plots(nb)
    problems = []
    for index, data, metadata in found:
        first = nb.cells[index].source.split("\n", 1)[0][:70]
        record = metadata.get("application/pdf", {})
        if "application/pdf" not in data or "layout" not in record:
            problems.append(f"cell {index} ({first}): no print version or layout record")
            continue
        pdf = base64.b64decode(data["application/pdf"])
        width = float(record["width"].removesuffix("in"))
        if not pdf.startswith(b"%PDF") or width > plotting.PRINT_WIDTH + 1e-6:
            problems.append(f"cell {index} ({first}): print version not a PDF at most {plotting.PRINT_WIDTH} in wide")
        for size in ("web", "print"):
            problems += [f"cell {index} ({first}), {size}: {fault}" for fault in record["layout"][size]]
    assert problems == [], json.dumps(problems, indent=1, ensure_ascii=False)
