"""A folded code cell is labelled with what it holds, not "Show code cell source".

A chapter folds the code a reader need not see (cells tagged ``hide-input``): the checks
that assert the numbers the prose quotes, the code of a plot, a setup. Each such cell
starts with a comment that says what it is, in one of three forms:

    # Check: the wavelengths quoted in section 1.2
    # Plot: the sinusoids of figure 1.1
    # Setup: the random matrices of the exercises

This extension makes that line the fold's label ("Check: the wavelengths quoted in
section 1.2"), open or closed, in place of myst-nb's "Show code cell source". A folded
cell without such a line keeps myst-nb's label; ``tests/test_hygiene.py`` lists them.

The code of a folded check or plot is shown as plain text, without syntax colours: a
check is read for what it asserts, a plot's code for its calls, and their colouring, one
HTML element per token, was a sixth of a long chapter's page (chapter 9: 96 kB of its
540 kB of HTML). The code a chapter shows unfolded keeps its colours.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

#: The first line of a folded cell: its label.
LABEL = re.compile(r"^#\s*((?:Check|Plot|Setup):\s*\S.*?)\s*$")


def fold_label(source: str) -> str | None:
    """The label a folded cell's code gives itself (its first line), or None."""
    first = source.lstrip("\n").split("\n", 1)[0]
    match = LABEL.match(first)
    return match.group(1) if match else None


def _label_folds(app: Sphinx, doctree: nodes.document) -> None:
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code" or not cell.get("hide_mode"):
            continue
        code = next(iter(cell.findall(nodes.literal_block)), None)
        label = fold_label(code.astext()) if code is not None else None
        if label:
            cell["prompt_show"] = label
            cell["prompt_hide"] = label
        if label and label.startswith(("Check:", "Plot:")):
            code["language"] = "none"


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", _label_folds)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
