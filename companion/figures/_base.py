"""What every figure shares: a caption, a text alternative, and a static fallback.

A figure is an anywidget whose synced traits hold the numbers ``companion``
computed; its ``.js`` file (beside its ``.py``) draws them. Displaying a figure in a
notebook shows the live widget and, hidden on screen, a PNG of its starting state
that appears in print and where JavaScript is off.

A figure has one visible caption: on screen it is the numbered caption the chapter
writes under the figure, so the widget's own caption (``caption`` plus
``instructions``) is kept for screen readers only; in print and without JavaScript
the fallback shows ``caption``, which says what the figure shows and nothing about
dragging or pressing.

The fallback is one output with two forms: HTML holding the drawing as SVG (what a
browser prints, and shows without JavaScript) and the print version of the same drawing
as a vector PDF (:func:`companion.plotting.print_version`), which the book's LaTeX build
prints at the width given in the output's metadata.
"""
from __future__ import annotations

import base64
import html
import io
import re
from pathlib import Path

import anywidget
import traitlets

HERE = Path(__file__).parent


def esm(script: str) -> str:
    """A figure's ES module: the shared helpers (``_common.js``) followed by ``script``."""
    return (HERE / "_common.js").read_text(encoding="utf-8") + "\n" + (HERE / script).read_text(encoding="utf-8")

FALLBACK_CSS = (
    "<style>.companion-fallback{display:none}"
    "@media print{.companion-fallback{display:block}.companion-figure{display:none}}</style>"
    "<noscript><style>.companion-fallback{display:block}</style></noscript>"
)


class Figure(anywidget.AnyWidget):
    """Base class of the book's figures.

    Subclasses set ``_esm = esm("<name>.js")`` (their drawing script) and implement
    :meth:`static_figure`, a matplotlib drawing of the starting state.
    """

    #: What the figure shows, in words that hold on paper too: the caption of the printed
    #: fallback, and (with :attr:`instructions`) the live figure's caption for screen
    #: readers. On screen the chapter's own numbered caption is the one a reader sees.
    caption = traitlets.Unicode("").tag(sync=True)
    #: How to work the live figure ("choose k; drag the orange point"). Never printed.
    instructions = traitlets.Unicode("").tag(sync=True)
    #: The figure's key numbers in words, for screen readers and the fallback image.
    description = traitlets.Unicode("").tag(sync=True)

    @classmethod
    def figure_name(cls) -> str:
        """The figure's name, its function's: ``rope_rotation`` for :class:`RopeRotation`.

        The live figure carries it as ``data-figure``, its fallback block as
        ``data-fallback-for``; the book labels the figure with it
        (``fig-03-rope-rotation``, ``bookwork/sphinx/live_figures.py``)."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    def static_figure(self):
        """A :class:`matplotlib.figure.Figure` of the current state (the print fallback)."""
        raise NotImplementedError

    def fallback_html(self, fig=None) -> str:
        """The fallback block: hidden on screen, shown in print and without JavaScript.

        ``fig`` is the drawing (:meth:`static_figure`, drawn here when not given), as SVG."""
        buffer = io.BytesIO()
        fig = self.static_figure() if fig is None else fig
        fig.savefig(buffer, format="svg", bbox_inches="tight")
        svg = base64.b64encode(buffer.getvalue()).decode("ascii")
        return (
            f'<div class="companion-fallback" data-fallback-for="{self.figure_name()}">{FALLBACK_CSS}'
            f'<img src="data:image/svg+xml;base64,{svg}" alt="{html.escape(self.description)}" style="max-width:100%">'
            f"<p><em>{html.escape(self.caption)}</em></p></div>"
        )

    def fallback_bundle(self) -> tuple[dict, dict]:
        """The fallback as one output: its HTML (:meth:`fallback_html`) and its print
        version (``application/pdf``) with the width to print it at, from one drawing."""
        from ..plotting import print_version

        fig = self.static_figure()
        pdf, width = print_version(fig)
        data = {"text/html": self.fallback_html(fig), "application/pdf": base64.b64encode(pdf).decode("ascii")}
        return data, {"application/pdf": {"width": f"{width:.3f}in"}}

    def _ipython_display_(self, **kwargs):
        from IPython.display import display

        bundle = self._repr_mimebundle_(**kwargs)  # anywidget gives (data, metadata)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        display(data, metadata=metadata, raw=True)
        fallback, fallback_metadata = self.fallback_bundle()
        display(fallback, metadata=fallback_metadata, raw=True)
