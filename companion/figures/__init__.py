"""Interactive figures: Python computes every number, a small ES module draws it.

Each figure is an `anywidget <https://anywidget.dev>`_ widget. Its data are synced
traits filled by ``companion``; its JavaScript (one ``.js`` file beside the ``.py``)
only draws and reacts to the reader. The saved widget state travels inside the built
page, so the figures stay interactive on the static site with no kernel and no
network, and they work live in Jupyter, Colab and Binder as well.
"""
from .permutation import PermutationExplorer, permutation_explorer

__all__ = ["PermutationExplorer", "permutation_explorer"]
