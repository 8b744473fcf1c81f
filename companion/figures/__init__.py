"""Interactive figures: Python computes every number, a small ES module draws it.

Each figure is an `anywidget <https://anywidget.dev>`_ widget. Its data are synced
traits filled by ``companion``; its JavaScript (one ``.js`` file beside the ``.py``)
only draws and reacts to the reader. The saved widget state travels inside the built
page, so the figures stay interactive on the static site with no kernel and no
network, and they work live in Jupyter, Colab and Binder as well.

Each figure lives in a module named after the ``companion`` module whose numbers it
draws (``figures.alibi`` draws :mod:`companion.alibi`), with its script beside it
(``alibi.js``); the package exports one function per figure.
"""
from .absolute import PositionTerm, position_term
from .alibi import AlibiHeatmap, alibi_heatmap
from .permutation import PermutationExplorer, permutation_explorer
from .rope import RopeRotation, rope_rotation
from .scaling import ContextExtension, context_extension

# One function per figure, in the order of the chapters; each returns a widget.
__all__ = [
    "permutation_explorer",  # chapter 0
    "position_term",  # chapter 1
    "rope_rotation",  # chapter 3
    "alibi_heatmap",  # chapter 4
    "context_extension",  # chapter 6
    "PermutationExplorer",
    "PositionTerm",
    "RopeRotation",
    "AlibiHeatmap",
    "ContextExtension",
]
