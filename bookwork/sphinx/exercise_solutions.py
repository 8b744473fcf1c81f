"""Exercise solutions on the site: shown in dropdowns, or left out for a class.

The lessons mark the lines a student writes with otter-grader's comments (``# BEGIN
SOLUTION``, ``# END SOLUTION``, a trailing ``# SOLUTION``), which the assignment
generator needs but a reader of the site does not: this extension removes them from the
code shown on the pages.

With the environment variable ``BOOK_WITHOUT_SOLUTIONS=1`` (or the Sphinx option
``book_without_solutions = True``) the build leaves out every exercise solution,
worked code included, so an instructor can publish the book for a class that works the
exercises as homework (``make book-without-solutions``). The exercises stay.

A solution shown in a dropdown opens and closes when its title is clicked: the
title's link to the exercise (which sphinx-exercise adds, and which would jump away
instead) is taken out of dropdown titles; the exercise sits just above.

Why not sphinx-exercise's own ``hide_solutions`` (1.2.1): it drops a ``{solution}``
directive, but of a gated solution (``solution-start`` ... ``solution-end``, the form
of every worked code solution here) it drops only the start: the prose and code
between the two stay on the page, and the HTML build then stops on the
``solution_end_node`` left without its start ("departing unknown node type"). Leaving
solutions out is therefore done here, after sphinx-exercise has merged each gated
solution into one node (:class:`RemoveSolutions`).
"""
from __future__ import annotations

import os
import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

MARKER_LINE = re.compile(r"^[ \t]*# (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)
MARKER_SUFFIX = re.compile(r"[ \t]*# SOLUTION[ \t]*$", re.MULTILINE)


def strip_markers(code: str) -> str:
    """``code`` without otter's solution comments."""
    return MARKER_SUFFIX.sub("", MARKER_LINE.sub("", code))


def _clean_code_blocks(app: Sphinx, doctree: nodes.document) -> None:
    for block in doctree.findall(nodes.literal_block):
        text = block.astext()
        if "SOLUTION" in text:
            cleaned = strip_markers(text)
            if cleaned != text:
                block.children = [nodes.Text(cleaned)]
                block.rawsource = cleaned


class RemoveSolutions(SphinxTransform):
    """Drop solution nodes, after sphinx-exercise has merged gated solutions into one node."""

    default_priority = 20  # sphinx-exercise merges solution-start/-end at priority 10

    def apply(self, **kwargs) -> None:
        if not self.config.book_without_solutions:
            return
        from sphinx_exercise.nodes import solution_node

        for node in list(self.document.findall(solution_node)):
            node.parent.remove(node)


class PlainDropdownTitles(SphinxPostTransform):
    """"Solution to Exercise 3.2 (title)" as plain text in a dropdown's title, so it toggles."""

    default_priority = 22  # sphinx-exercise writes the titles at priority 21

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import solution_node

        for node in self.document.findall(solution_node):
            if "dropdown" not in node.get("classes", []) or not node.children:
                continue
            title = node.children[0]
            for reference in list(title.findall(nodes.reference)):
                reference.replace_self(reference.children)


def _from_environment(app: Sphinx, config) -> None:
    if os.environ.get("BOOK_WITHOUT_SOLUTIONS", "") not in ("", "0"):
        config.book_without_solutions = True


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_without_solutions", False, "env")
    app.connect("config-inited", _from_environment)
    app.connect("doctree-read", _clean_code_blocks)
    app.add_transform(RemoveSolutions)
    app.add_post_transform(PlainDropdownTitles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
