"""The book's house style for static plots, on screen and in print, and a check of their layout.

Every chapter calls :func:`use_book_style` once, in its first code cell, so that all
static figures share one look and one size, in the colour-blind-safe palette of the
interactive figures. A plot is then shown twice over: as SVG for the screen, and as a
vector PDF laid out again for the printed book (:func:`print_version`), whose LaTeX
build picks the PDF.

**The screen.** Sizes are chosen for the smallest screen the book is read on. A plot is
:data:`COLUMN_WIDTH` (5 inches, 360 points; a little more where a title or a legend
sticks out and matplotlib's tight bounding box widens the drawing) wide; a phone 390
pixels wide draws it 342 pixels wide, about 0.9 of a pixel per point, so text set at 11
points is still over 9 pixels there even when the drawing is 10 % wider than the
figure, and on a laptop, where it is drawn at its natural 480 pixels, it reads like the
body text. Every text of the style is 11 points or more; a plot that sets a size of its
own keeps it at 11 too (``tests/test_site.py`` measures tick labels and legends on a
phone).

**Print.** The printed page is not a phone: its text block is :data:`PRINT_WIDTH` wide
(``bookwork.sphinx.print_book`` sets the same measure) and its body text is 11 points,
so a plot scaled to the text width would print its text at 13 points. The print
version keeps the plot's fonts and draws it again on a canvas enlarged so that, printed
:data:`PRINT_WIDTH` wide (a plot narrower than :data:`COLUMN_WIDTH` proportionally
narrower, one taller than :data:`PRINT_HEIGHT` narrower too), its text measures
:data:`PRINT_TEXT` points, a little below the body; the
layout (constrained layout) is redone for that canvas, so panels get the room the
smaller text leaves.

**Layout.** :func:`layout_faults` measures a drawn figure with matplotlib's renderer,
at screen and at print size: every panel keeps a fair share of the figure's width
(a legend outside the axes can crush them), and no legend or title covers data, tick
labels or another text, nor does any text cover another. The book records the faults of
every plot it shows next to the print version (``tests/test_figure_geometry.py``
requires none).

A plot with two panels side by side uses ``figsize=(COLUMN_WIDTH, PANEL_HEIGHT)`` and
``plt.subplots(1, 2)``; three or more panels go in a grid of at most two columns or are
stacked. A legend with more than three entries goes below the axes
(``fig.legend(loc="outside lower center", ncol=2)``). Colours are taken from
:data:`PALETTE` by name, and the prose names them by the same names ("blue", "orange",
"vermillion", ...); text printed on a coloured cell takes the ink :func:`ink_on` picks
for that cell.
"""
from __future__ import annotations

import base64
import io
import itertools
import re
from contextlib import contextmanager

import matplotlib as mpl
import numpy as np

__all__ = ["COLUMN_WIDTH", "COVERED", "PANEL_HEIGHT", "PANEL_SHARE", "PALETTE", "PRINT_HEIGHT", "PRINT_PPI",
           "PRINT_TEXT", "PRINT_WIDTH", "SMALLEST_PRINTED", "TEXT_SIZE", "TOUCH", "ink_on", "layout_faults",
           "print_version", "use_book_style"]

#: Colour-blind-safe colours (Okabe and Ito 2008), by name: the static plots, the
#: interactive figures' fallbacks and their drawing scripts use the same values.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "vermillion": "#D55E00",
    "green": "#009E73",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "grey": "#999999",
    "black": "#000000",
}

#: Width in inches of a plot: legible at a phone's width (module docstring).
COLUMN_WIDTH = 5.0
#: Height in inches of one row of panels.
PANEL_HEIGHT = 3.2
#: The printed book's text width in inches (its measure), the widest a plot prints.
PRINT_WIDTH = 5.0
#: The tallest a plot prints, in inches, so that it fits a page with its caption; a tall
#: plot prints narrower.
PRINT_HEIGHT = 7.0
#: The size in points of a plot's text in print (the body is 11 points).
PRINT_TEXT = 9.0
#: The resolution of what a print version draws as pixels (an image's cells), per inch.
PRINT_PPI = 300
#: The size in points of the style's text, which :data:`PRINT_TEXT` replaces in print.
TEXT_SIZE = 11

_STYLE = {
    "figure.figsize": (COLUMN_WIDTH, 4.0),
    "figure.dpi": 96,
    "figure.constrained_layout.use": True,
    "font.size": TEXT_SIZE,
    "axes.titlesize": 11.5,
    "axes.labelsize": TEXT_SIZE,
    "xtick.labelsize": TEXT_SIZE,
    "ytick.labelsize": TEXT_SIZE,
    "legend.fontsize": TEXT_SIZE,
    # the SVG names these fonts for every label; a short list keeps the files small
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "legend.framealpha": 0.9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(color=[PALETTE[name] for name in
                                         ("blue", "orange", "green", "vermillion", "sky", "purple", "black")]),
    "image.cmap": "viridis",
    # Text stays text in the SVG: smaller files, selectable and searchable labels.
    "svg.fonttype": "none",
    "savefig.bbox": "tight",
}

#: How the print version is written: on white paper, its fonts embedded as outlines
#: (Type 3: the glyphs the plot uses, drawn as vectors; TrueType embedding would cost a
#: font subsetting, about half a second, for every plot the book shows).
_PRINT_RC = {"pdf.fonttype": 3, "savefig.facecolor": "white", "savefig.transparent": False}


def ink_on(colour) -> str:
    """The ink, black or white, that reads better on ``colour`` (any matplotlib colour).

    WCAG 2's contrast ratio ``(L1 + 0.05) / (L2 + 0.05)`` of relative luminances
    ``L = 0.2126 R + 0.7152 G + 0.0722 B`` (linear RGB): the ink with the larger ratio
    against the colour.

    Parameters
    ----------
    colour : str or tuple
        The background, e.g. ``image.cmap(image.norm(value))`` for a heat-map cell.
    """
    red, green, blue = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
                        for c in mpl.colors.to_rgb(colour))
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    dark = (luminance + 0.05) / (_DARK_INK_LUMINANCE + 0.05)
    light = 1.05 / (luminance + 0.05)
    return DARK_INK if dark >= light else "#ffffff"


#: The dark ink of :func:`ink_on` and its relative luminance.
DARK_INK = "#000000"
_DARK_INK_LUMINANCE = 0.0


def use_book_style(svg: bool = True) -> None:
    """Apply the book's plot style; with ``svg`` (default) notebooks show SVG plots.

    In a notebook every plot shown also carries its print version (:func:`print_version`,
    ``application/pdf``, which the book's LaTeX build prints) and, in that output's
    metadata, the faults :func:`layout_faults` finds at screen and print size.

    Parameters
    ----------
    svg : bool
        Render inline plots as SVG (``True``) or as PNG at twice the pixel density.
    """
    if not isinstance(svg, bool):
        raise TypeError(f"svg must be True or False, got {svg!r}")
    mpl.rcParams.update(_STYLE)
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # plain Python, no IPython: the rcParams are all there is to set
        return
    set_matplotlib_formats("svg" if svg else "retina")
    shell = get_ipython()
    if shell is not None:
        from matplotlib.figure import Figure

        shell.display_formatter.formatters["application/pdf"].for_type(Figure, _print_output)


def _print_output(fig):
    """The ``application/pdf`` output of a plot: its print version, the width to print it
    at, and its layout faults at both sizes (IPython's formatter protocol: data, metadata)."""
    if not fig.axes:
        return None
    pdf, width = print_version(fig)
    faults = {"web": layout_faults(fig), "print": layout_faults(fig, size="print")}
    return base64.b64encode(pdf).decode("ascii"), {"width": f"{width:.3f}in", "layout": faults}


# --- print -------------------------------------------------------------------------------------

def _print_scale() -> float:
    """Printed size over drawn size: the style's text printed at PRINT_TEXT points."""
    return PRINT_TEXT / TEXT_SIZE


@contextmanager
def _at_print_size(fig):
    """The figure on the canvas its print version is drawn on (module docstring), restored after."""
    width, height = fig.get_size_inches()
    printed = min(width * PRINT_WIDTH / COLUMN_WIDTH, PRINT_WIDTH, PRINT_HEIGHT * width / height)
    factor = printed / _print_scale() / width
    fig.set_size_inches(width * factor, height * factor, forward=False)
    try:
        yield
    finally:
        fig.set_size_inches(width, height, forward=False)


_MEDIA_BOX = re.compile(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]")


def print_version(fig) -> tuple[bytes, float]:
    """The plot for the printed book: a vector PDF and the width to print it at, in inches.

    The figure is drawn again on the print canvas (module docstring) and cut to its tight
    bounding box; printed at the returned width (at most :data:`PRINT_WIDTH`), text set at
    the style's 11 points measures :data:`PRINT_TEXT`. Lines and text are vector; an
    image's pixels are resampled at :data:`PRINT_PPI`. The figure is left as it was.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A plot with at least one axes.
    """
    _check_figure(fig)
    buffer = io.BytesIO()
    with _at_print_size(fig), mpl.rc_context(_PRINT_RC):
        # what stays a raster (an image's pixels) is drawn at PRINT_PPI as printed or finer
        fig.savefig(buffer, format="pdf", bbox_inches="tight", pad_inches=0.03, dpi=PRINT_PPI)
    pdf = buffer.getvalue()
    drawn_width = float(_MEDIA_BOX.search(pdf).group(1)) / 72
    return pdf, min(drawn_width * _print_scale(), PRINT_WIDTH)


def _check_figure(fig) -> None:
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if not fig.axes:
        raise ValueError("fig must have at least one axes (an empty figure has no layout to check or print)")


# --- layout ------------------------------------------------------------------------------------

#: A panel keeps at least this share of its fair part of the figure's width (the width
#: over the number of panels side by side): a legend outside the axes cannot crush it.
PANEL_SHARE = 0.5
#: Boxes that overlap by less than this (points, in both directions) do not touch.
TOUCH = 0.75
#: Data ink under a legend or a title, as a share of its box, that counts as covered.
COVERED = 0.002
#: The smallest text in print, in points.
SMALLEST_PRINTED = 7.0


def _shown(text) -> bool:
    """Whether a text is drawn: visible, not empty, and in a visible axes if in one."""
    return text.get_visible() and bool(text.get_text().strip()) and (text.axes is None or text.axes.get_visible())


def _text_items(fig, renderer):
    """Every text a reader sees, as (kind, owner, name, box): titles, axis labels, tick
    labels, annotations, figure texts and legends (a legend is one box)."""
    items = []

    def add(kind, owner, text):
        if _shown(text):
            items.append((kind, owner, text.get_text().strip()[:40], text.get_window_extent(renderer)))

    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for title in (ax.title, ax._left_title, ax._right_title):
            add("title", ax, title)
        for axis in (ax.xaxis, ax.yaxis):
            if not axis.get_visible():
                continue
            add("axis label", axis, axis.label)
            add("tick label", axis, axis.offsetText)
            for tick in axis._update_ticks():
                for label in (tick.label1, tick.label2):
                    if label.get_visible() and label.get_text().strip():
                        items.append(("tick label", axis, label.get_text().strip(),
                                      label.get_window_extent(renderer)))
        for text in ax.texts:
            add("text", text, text)
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            items.append(("legend", legend, _legend_name(legend), legend.get_window_extent(renderer)))
    for figure in _figures(fig):
        supers = {id(figure._suptitle): "title", id(figure._supxlabel): "axis label",
                  id(figure._supylabel): "axis label"}
        for text in figure.texts:
            add(supers.get(id(text), "text"), text, text)
        for legend in figure.legends:
            if legend.get_visible():
                items.append(("legend", legend, _legend_name(legend), legend.get_window_extent(renderer)))
    return items


def _figures(fig):
    """The figure and its subfigures, at any depth."""
    yield fig
    for sub in fig.subfigs:
        yield from _figures(sub)


def _legend_name(legend) -> str:
    texts = [t.get_text() for t in legend.get_texts()]
    return "legend (" + ", ".join(texts[:2]) + (", ..." if len(texts) > 2 else "") + ")"


def _data_artists(fig):
    """What a panel plots (lines, markers, bars, areas, images), not its guides: a line or
    a band drawn across the axes (``axhline``, ``axvspan``) marks a value or a range, it
    is not data."""
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for artist in itertools.chain(ax.lines, ax.collections, ax.patches, ax.images):
            if not artist.get_visible():
                continue
            if isinstance(artist, mpl.lines.Line2D) and artist.get_transform() != ax.transData:
                continue
            if isinstance(artist, mpl.patches.Patch) and artist.get_data_transform() != ax.transData:
                continue
            yield artist


def _data_ink(fig, artists) -> np.ndarray:
    """Where the data artists leave ink, drawn alone at the figure's size: a boolean image,
    row 0 at the top."""
    from matplotlib.backends.backend_agg import RendererAgg

    width, height = (int(round(v)) for v in fig.bbox.size)
    renderer = RendererAgg(width, height, fig.dpi)
    for artist in artists:
        artist.draw(renderer)
    return np.asarray(renderer.buffer_rgba())[..., 3] > 0


def _ink_under(ink: np.ndarray, box) -> float:
    """The share of ``box`` (display coordinates) under which ``ink`` has ink."""
    height, width = ink.shape
    x0, x1 = max(int(np.ceil(box.x0)) + 1, 0), min(int(np.floor(box.x1)) - 1, width)
    y0, y1 = max(int(np.ceil(height - box.y1)) + 1, 0), min(int(np.floor(height - box.y0)) - 1, height)
    if x1 <= x0 or y1 <= y0:
        return 0.0
    return float(ink[y0:y1, x0:x1].sum()) / max(box.width * box.height, 1.0)


def _panels(fig):
    """The axes that are panels: not colour bars, not hidden, not inset in another axes."""
    panels = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison or hasattr(ax, "_colorbar"):
            continue
        if getattr(ax, "_colorbar_info", None) is not None:
            continue
        panels.append(ax)
    return panels


def _panel_faults(fig, renderer, image) -> list[str]:
    """Each panel keeps PANEL_SHARE of its fair part of the image's width."""
    faults = []
    panels = _panels(fig)
    # a panel of fixed aspect (an image, a circle) is drawn in part of its slot: its slot counts
    boxes = {ax: (ax.get_window_extent(renderer) if ax.get_aspect() == "auto"
                  else ax.get_position(original=True).transformed(fig.transFigure)) for ax in panels}
    for ax in panels:
        box = boxes[ax]
        beside = [other for other in panels
                  if min(box.y1, boxes[other].y1) - max(box.y0, boxes[other].y0) > 0.5 * min(box.height,
                                                                                           boxes[other].height)]
        fair = image.width / len(beside)
        if box.width < PANEL_SHARE * fair:
            name = ax.get_title() or ax.get_ylabel() or f"axes {fig.axes.index(ax) + 1}"
            faults.append(f"panel '{name[:40]}' is {box.width / image.width:.0%} of the figure's width "
                          f"({len(beside)} side by side; at least {PANEL_SHARE / len(beside):.0%})")
    return faults


def layout_faults(fig, size: str = "web") -> list[str]:
    """What is wrong with a figure's layout, measured on the drawn figure; empty when nothing is.

    Drawn at ``size`` (``"web"``: as created; ``"print"``: on the canvas of its print
    version), the figure is measured with matplotlib's renderer (the window extents of its
    axes, legends, titles, labels and texts, and the ink its data artists leave):

    - every panel is at least :data:`PANEL_SHARE` of its fair part of the figure's width
      (the figure's tight bounding box over the number of panels side by side);
    - no two texts (titles, axis and tick labels, annotations, legends) overlap by more
      than :data:`TOUCH` points both ways, tick labels of one axis included;
    - no legend or title covers data: the lines, markers, bars, areas and images of the
      panels leave ink under at most :data:`COVERED` of its box;
    - in print, no text is smaller than :data:`SMALLEST_PRINTED` points.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A plot with at least one axes.
    size : str
        ``"web"`` or ``"print"``.
    """
    _check_figure(fig)
    if size not in ("web", "print"):
        raise ValueError(f"size must be 'web' or 'print', got {size!r}")
    if size == "print":
        with _at_print_size(fig):
            return _faults(fig, printed=True)
    return _faults(fig, printed=False)


def _faults(fig, printed: bool) -> list[str]:
    from matplotlib.backend_bases import _get_renderer

    fig.draw_without_rendering()
    renderer = _get_renderer(fig)
    items = _text_items(fig, renderer)
    # the drawn image: the panels and every text (what the tight bounding box holds)
    image = mpl.transforms.Bbox.union([ax.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
                                      + [box for *_, box in items])
    faults = _panel_faults(fig, renderer, image)
    tolerance = TOUCH * fig.dpi / 72
    for (kind_a, owner_a, name_a, a), (kind_b, owner_b, name_b, b) in itertools.combinations(items, 2):
        if owner_a is owner_b and kind_a != "tick label":
            continue
        overlap_x = min(a.x1, b.x1) - max(a.x0, b.x0)
        overlap_y = min(a.y1, b.y1) - max(a.y0, b.y0)
        if overlap_x > tolerance and overlap_y > tolerance:
            faults.append(f"{kind_a} '{name_a}' overlaps {kind_b} '{name_b}'")
    ink = _data_ink(fig, list(_data_artists(fig)))
    for kind, _, name, box in items:
        if kind in ("legend", "title"):
            covered = _ink_under(ink, box)
            if covered > COVERED:
                faults.append(f"{kind} '{name}' covers data ({covered:.1%} of its box)")
    if printed:
        smallest = min((text.get_fontsize() for text in fig.findobj(mpl.text.Text) if _shown(text)), default=None)
        if smallest is not None and smallest * _print_scale() < SMALLEST_PRINTED:
            faults.append(f"text of {smallest:g} pt prints at {smallest * _print_scale():.1f} pt, "
                          f"under {SMALLEST_PRINTED:g} pt")
    return faults
