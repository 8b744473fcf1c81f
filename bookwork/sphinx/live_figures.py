"""An interactive figure is a numbered figure of its chapter, like a plot.

A chapter shows an interactive figure (``companion.figures``) as a code cell's output and
writes its caption in the paragraph right under it, in italics:
``*Figure 2. RoPE on one pair of components ...*``. The book numbers plots and
interactive figures in one sequence per chapter ("Figure 3.2"), so this extension, when
a chapter is read,

- wraps the cell and that paragraph in a figure whose caption is the paragraph, without
  the number the chapter wrote ("Figure 2." or "Figure 2,"): Sphinx numbers it with the
  chapter's plots (and ``chapter_numbers.py`` numbers it within the chapter);
- labels it ``fig-NN-<name>`` (``fig-03-rope-rotation`` for ``rope_rotation`` in chapter
  3), so that the text refers to it with ``{numref}`fig-03-rope-rotation```;
- keeps, for print, the figure's own caption (its ``caption`` trait, carried in the
  figure's static fallback, which says what the figure shows and nothing about dragging
  or pressing) and the LaTeX build prints that one under the fallback image.

The reader's edition numbers the same figures the same way (:mod:`bookwork.edition`,
:func:`~bookwork.edition.live_figure_name` there reads a cell's code). A figure with no italic caption
right under it, or a paragraph that reads like such a caption anywhere else, is a
build error (``markup_check.py`` reports the second).
"""
from __future__ import annotations

import html
import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from bookwork.sphinx.chapter_numbers import chapter_of

logger = logging.getLogger(__name__)

FALLBACK = re.compile(r'<div class="companion-fallback"[^>]*\bdata-fallback-for="([a-z_]+)"')
PRINT_CAPTION = re.compile(r"<p><em>(.*?)</em></p>\s*</div>\s*$", re.S)
#: The number a chapter writes at the start of a caption, with what follows it.
WRITTEN_NUMBER = re.compile(r"^(?:Figure|Fig\.)\s+\d+(?:\.\d+)?\s*[.,:]?\s*")


def label(chapter: int, name: str) -> str:
    """The label of figure ``name`` (``rope_rotation``) in ``chapter``: ``fig-03-rope-rotation``."""
    return f"fig-{chapter:02d}-{name.replace('_', '-')}"


def _cell_of(node: nodes.Node):
    while node is not None and not (isinstance(node, nodes.container) and node.get("nb_element") == "cell_code"):
        node = node.parent
    return node


def _caption_paragraph(cell: nodes.Element):
    """The paragraph right under the cell if it is an italic caption, else None."""
    after = cell.next_node(descend=False, siblings=True, ascend=False)
    while isinstance(after, nodes.target):  # a label written above the caption
        after = after.next_node(descend=False, siblings=True, ascend=False)
    if isinstance(after, nodes.paragraph) and len(after.children) == 1 and isinstance(after[0], nodes.emphasis):
        return after
    return None


def caption_nodes(paragraph: nodes.paragraph) -> list[nodes.Node]:
    """The caption's content: the italic paragraph's, without the number the chapter wrote."""
    children = [child.deepcopy() for child in paragraph[0].children]
    if children and isinstance(children[0], nodes.Text):
        text = WRITTEN_NUMBER.sub("", str(children[0]), count=1)
        if text != str(children[0]) and text[:1].islower():
            text = text[0].upper() + text[1:]
        children[0] = nodes.Text(text)
    return children


class LiveFigures(SphinxTransform):
    """Wrap each interactive figure of a chapter and its caption in a labelled figure."""

    # before the domains collect labels (SphinxDomains, 850) and Sphinx numbers figures
    default_priority = 840

    def apply(self, **kwargs) -> None:
        chapter = chapter_of(self.env.docname)
        if chapter is None:
            return
        for raw in list(self.document.findall(nodes.raw)):
            found = FALLBACK.search(raw.astext())
            cell = _cell_of(raw) if found else None
            if cell is None or isinstance(cell.parent, nodes.figure):
                continue
            paragraph = _caption_paragraph(cell)
            if paragraph is None:
                logger.warning(f"the interactive figure {found.group(1)} has no caption: write it in italics "
                               "in the paragraph right under the figure", location=cell,
                               type="markup", subtype="live-figure")
                continue
            name = label(chapter, found.group(1))
            figure = nodes.figure(classes=["live-figure"])
            printed = PRINT_CAPTION.search(raw.astext())
            figure["print_caption"] = html.unescape(printed.group(1)) if printed else ""
            figure.source, figure.line = cell.source, cell.line
            cell.replace_self(figure)
            figure += cell
            figure += nodes.caption("", "", *caption_nodes(paragraph))
            paragraph.parent.remove(paragraph)
            figure["names"].append(name)
            self.document.note_explicit_target(figure, figure)


def _print_captions(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """In the PDF an interactive figure's caption is its own, made for paper."""
    if app.builder.format != "latex":
        return
    for figure in doctree.findall(nodes.figure):
        if "live-figure" in figure["classes"] and figure.get("print_caption"):
            caption = figure.next_node(nodes.caption)
            caption.children = []
            caption += nodes.Text(figure["print_caption"])


def setup(app: Sphinx) -> dict:
    app.add_transform(LiveFigures)
    app.connect("doctree-resolved", _print_captions)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
