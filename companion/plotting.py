"""The book's house style for static plots.

Every chapter calls :func:`use_book_style` once, in its first code cell, so that all
static figures share one look and one size, in the colour-blind-safe palette of the
interactive figures, written as SVG so they stay sharp on high-density screens and in
print.

Sizes are chosen for the smallest screen the book is read on. A plot is
:data:`COLUMN_WIDTH` (5 inches, 360 points; a little more where a title or a legend
sticks out and matplotlib's tight bounding box widens the drawing) wide; a phone 390
pixels wide draws it 342 pixels wide, about 0.9 of a pixel per point, so text set at 11
points is still over 9 pixels there even when the drawing is 10 % wider than the
figure, and on a laptop, where it is drawn at its natural 480 pixels, it reads like the
body text. Every text of the style is 11 points or more; a plot that sets a size of its
own keeps it at 11 too (``tests/test_site.py`` measures tick labels and legends on a
phone).

A plot with two panels side by side uses ``figsize=(COLUMN_WIDTH, PANEL_HEIGHT)`` and
``plt.subplots(1, 2)``; three or more panels go in a grid of at most two columns or are
stacked. Colours are taken from :data:`PALETTE` by name, and the prose names them by the
same names ("blue", "orange", "vermillion", ...); text printed on a coloured cell takes
the ink :func:`ink_on` picks for that cell.
"""
from __future__ import annotations

import matplotlib as mpl

__all__ = ["COLUMN_WIDTH", "PANEL_HEIGHT", "PALETTE", "ink_on", "use_book_style"]

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

_STYLE = {
    "figure.figsize": (COLUMN_WIDTH, 4.0),
    "figure.dpi": 96,
    "figure.constrained_layout.use": True,
    "font.size": 11,
    "axes.titlesize": 11.5,
    "axes.labelsize": 11,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
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

    Parameters
    ----------
    svg : bool
        Render inline plots as SVG (``True``) or as PNG at twice the pixel density.
    """
    if not isinstance(svg, bool):
        raise TypeError(f"svg must be True or False, got {svg!r}")
    mpl.rcParams.update(_STYLE)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # plain Python, no IPython: the rcParams are all there is to set
        return
    set_matplotlib_formats("svg" if svg else "retina")
