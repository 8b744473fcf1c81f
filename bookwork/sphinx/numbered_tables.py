"""A table of results with a caption is a numbered table of its chapter, like a figure.

A chapter shows a result as a :class:`companion.tables.Table`; given a caption (and a
label), its Markdown holds the label in an HTML comment, the caption in italics and the
table (``companion/tables.py``). When a chapter is read, this extension

- makes the caption the table's title, which Sphinx numbers with the chapter's other
  tables ("Table 10.1"; ``chapter_numbers.py`` numbers within the chapter) on the site
  and in the PDF, above the table;
- labels the table with the label, so that the text refers to it with
  ``{numref}`tab-10-configurations```;
- drops the comment and the caption's paragraph, which only a notebook front end shows.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The comment ``companion.tables.Table`` writes above a captioned table.
MARKER = re.compile(r"<!--\s*companion\.tables:\s*([a-z0-9-]*)\s*-->")


def _next_sibling(node: nodes.Node):
    return node.next_node(descend=False, siblings=True, ascend=False)


class NumberedTables(SphinxTransform):
    """Give each captioned table of results its title and its label."""

    # before the domains collect labels (SphinxDomains, 850) and Sphinx numbers tables
    default_priority = 840

    def apply(self, **kwargs) -> None:
        for marker in list(self.document.findall(lambda n: isinstance(n, (nodes.raw, nodes.comment)))):
            found = MARKER.fullmatch(marker.astext().strip())
            if not found:
                continue
            caption = _next_sibling(marker)
            table = _next_sibling(caption) if caption is not None else None
            if not (isinstance(caption, nodes.paragraph) and len(caption.children) == 1
                    and isinstance(caption[0], nodes.emphasis) and isinstance(table, nodes.table)):
                logger.warning("a captioned table of results is not a caption in italics followed by a table",
                               location=marker, type="markup", subtype="numbered-table")
                continue
            table.insert(0, nodes.title("", "", *[child.deepcopy() for child in caption[0].children]))
            label = found.group(1)
            if label:
                table["names"].append(label)
                self.document.note_explicit_target(table, table)
            caption.parent.remove(caption)
            marker.parent.remove(marker)


def setup(app: Sphinx) -> dict:
    app.add_transform(NumberedTables)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
