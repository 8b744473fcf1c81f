"""The book's house style for static plots.

Every chapter calls :func:`use_book_style` once, in its first code cell, so that all
static figures share one look and one size: drawn for the content column of the site
(about 7 inches at 96 px per inch), with fonts that stay legible at that width, in the
colour-blind-safe palette of the interactive figures, and written as SVG so they stay
sharp on high-density screens and in print.

Sizes: a figure is :data:`COLUMN_WIDTH` wide; one with two panels side by side uses
``figsize=(COLUMN_WIDTH, PANEL_HEIGHT)`` and ``plt.subplots(1, 2)``; three or more
panels go in a grid of at most two columns or are stacked. Colours are taken from
:data:`PALETTE` by name, and the prose names them by the same names ("blue",
"orange", "vermillion", ...).
"""
from __future__ import annotations

import matplotlib as mpl

from .figures._base import PALETTE

__all__ = ["COLUMN_WIDTH", "PANEL_HEIGHT", "PALETTE", "use_book_style"]

#: Width in inches of a plot that fills the site's content column.
COLUMN_WIDTH = 7.0
#: Height in inches of one row of panels.
PANEL_HEIGHT = 3.2

_STYLE = {
    "figure.figsize": (COLUMN_WIDTH, 4.0),
    "figure.dpi": 96,
    "figure.constrained_layout.use": True,
    "font.size": 10.5,
    "axes.titlesize": 11,
    "axes.labelsize": 10.5,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "legend.fontsize": 9.5,
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
