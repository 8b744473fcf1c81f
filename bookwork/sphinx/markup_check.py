"""Fail the build when markup reaches the reader as text.

A slip in a Markdown cell does not break a build; it shows. A stray fence turns the
rest of a cell into a grey code block with ```` ```{admonition} ```` in it; a list
marker at the start of a continuation line splits ``$...$`` so that the TeX is printed
raw; "Theorem {prf:ref}`thm-x`" reads "Theorem Theorem 3.1". This extension reads
every page after references are resolved, as the reader will see it, and warns (an
error, since the book builds with warnings as errors) on:

* a code block with no language whose text holds MyST markup (a line starting
  ```` ```{ ````, ``:::{`` or a directive option such as ``:class:``): markup that was
  meant to render. A block meant to show markup names its language (```` ```markdown ````);
* TeX in running text, outside math and code: ``$...$`` or a command such as
  ``\\operatorname``, ``\\frac``, ``\\theta``;
* a reStructuredText directive in running text (``.. autosummary::`` parsed as Markdown);
* a role shown as text: reStructuredText's ``:py:obj:`x``` or MyST's ``{py:func}`` before
  code, left unparsed (an API table written in the wrong markup);
* an empty code block outside code cells: what is left when a code fence inside a
  directive (```` ```python ```` in an ```` ```{exercise} ````) closes the directive
  early; the outer fence needs more backticks (````` ```` `````);
* a figure caption that is not under its figure: an italic paragraph that starts
  "Figure 2." where no interactive figure is right above it (``live_figures.py`` takes
  the caption under each figure into the figure);
* a numbered cross-reference in a section heading (``## 3.5 Try it: {numref}`fig-...```):
  the contents lists show headings before references are resolved, so they would
  show the label;
* a paragraph swallowed by the table above it: Markdown continues a table until a
  blank line, so text written on the line after its last row becomes rows of the table,
  each with its first cell filled and the others empty;
* the same word twice in a row ("Theorem Theorem", "the the").
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

MARKUP_LINE = re.compile(r"^\s*(```+\s*\{|~~~+\s*\{|:::+\s*\{|:(class|label|name|nosignatures):\s)", re.M)
TEX_COMMAND = re.compile(
    r"\\(operatorname|frac|dfrac|tfrac|mathrm|mathsf|mathbf|mathcal|mathbb|text|sqrt|sum|prod|int|cdot|cdots|"
    r"ldots|times|left|right|begin|end|alpha|beta|gamma|delta|theta|lambda|sigma|varphi|phi|pi|omega|infty|"
    r"le|ge|leq|geq|neq|approx|in|top|lVert|rVert|langle|rangle|bigl|bigr|quad)(?![A-Za-z])"
)
DOLLAR_MATH = re.compile(r"(?<![\w$\\])\$(?=[^\s$])[^$\n]{1,300}?(?<=[^\s$\\])\$(?![\w$])")
REST_DIRECTIVE = re.compile(r"(?:^|\s)\.\. [a-z][a-z:-]*::")
#: A role left as text before its (code-formatted) target: ``:py:obj:``, ``{py:func}``.
ROLE_TEXT = re.compile(r"(?:(?<=\s)|^|(?<=\())(?::[a-z]+)+:(?=\s*⟨⟩)|\{[a-z]+(?::[a-z]+)*\}(?=\s*⟨⟩)")
#: How a chapter starts a figure's caption.
CAPTION_START = re.compile(r"^(?:Figure|Fig\.)\s+\d+(?:\.\d+)?\s*[.,:]")
DOUBLED = re.compile(r"\b([A-Za-z][A-Za-z'’-]*)\s+\1\b")
#: Doubled words that English allows ("that that", "had had").
DOUBLED_ALLOWED = {"that", "had"}
#: Nodes whose text is code or math, not prose.
NOT_PROSE = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw, nodes.comment,
             nodes.doctest_block, nodes.target, nodes.substitution_definition)
UNNAMED_LANGUAGES = {None, "", "default", "text", "none"}


def _in_code_cell(node) -> bool:
    parent = node.parent
    while parent is not None:
        classes = parent.get("classes", []) if isinstance(parent, nodes.Element) else []
        if "cell" in classes or "cell_input" in classes or "cell_output" in classes or \
                parent.__class__.__name__ in {"CellNode", "CellInputNode", "CellOutputNode"}:
            return True
        parent = parent.parent
    return False


def prose_text(element: nodes.Element) -> str:
    """The text of ``element`` a reader sees as prose; code and math become a placeholder."""
    parts = []
    for node in element.children:
        if isinstance(node, NOT_PROSE):
            parts.append(" ⟨⟩ ")
        elif isinstance(node, nodes.Text):
            parts.append(str(node))
        elif isinstance(node, nodes.Element) and not isinstance(node, (nodes.paragraph, nodes.section)):
            parts.append(prose_text(node))
    return "".join(parts)


def problems(doctree: nodes.document) -> list[tuple[nodes.Node, str]]:
    """Every place in ``doctree`` where markup shows as text, with what is wrong."""
    found = []
    for block in doctree.findall(nodes.literal_block):
        if _in_code_cell(block):
            continue
        if not block.astext().strip():
            found.append((block, "an empty code block (a code fence inside a directive closes the directive "
                                 "when its fence has as many backticks: give the outer fence one more)"))
        elif block.get("language") in UNNAMED_LANGUAGES:
            match = MARKUP_LINE.search(block.astext())
            if match:
                found.append((block, f"MyST markup shown as a code block: {match.group(0).strip()!r} "
                                     "(a stray ``` fence? a block meant to show markup names its language)"))
    for row in doctree.findall(nodes.row):
        cells = [entry.astext().strip() for entry in row.findall(nodes.entry)]
        if len(cells) >= 2 and cells[0] and not any(cells[1:]) and isinstance(row.parent, nodes.tbody):
            found.append((row, f"a paragraph swallowed by the table above it: {cells[0][:40]!r} "
                               "(leave a blank line after a table)"))
    for paragraph in doctree.findall(nodes.paragraph):
        if len(paragraph.children) == 1 and isinstance(paragraph[0], nodes.emphasis) \
                and CAPTION_START.match(paragraph.astext()) and not isinstance(paragraph.parent, nodes.figure):
            found.append((paragraph, f"a figure caption away from its figure: {paragraph.astext()[:40]!r} "
                                     "(write it right under the figure)"))
    for element in doctree.findall(lambda n: isinstance(n, (nodes.paragraph, nodes.title, nodes.term,
                                                            nodes.caption, nodes.rubric))):
        if _in_code_cell(element):
            continue
        text = prose_text(element)
        for pattern, what in ((DOLLAR_MATH, "TeX in $...$ shown as text"),
                              (TEX_COMMAND, "a TeX command shown as text"),
                              (REST_DIRECTIVE, "a reStructuredText directive shown as text"),
                              (ROLE_TEXT, "a role shown as text")):
            match = pattern.search(text)
            if match:
                found.append((element, f"{what}: {match.group(0)[:60]!r}"))
                break
        for match in DOUBLED.finditer(text):
            if match.group(1).lower() not in DOUBLED_ALLOWED:
                found.append((element, f"doubled word: {match.group(0)!r}"))
    return found


def _check(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node, message in problems(doctree):
        logger.warning(message, location=node, type="markup", subtype="as-text")


def _check_headings(app: Sphinx, doctree: nodes.document) -> None:
    from sphinx import addnodes

    for title in doctree.findall(nodes.title):
        if not isinstance(title.parent, nodes.section):
            continue
        for xref in title.findall(addnodes.pending_xref):
            if xref.get("reftype") == "numref":
                logger.warning(f"a numbered reference in a heading ({xref.get('reftarget')}): the contents "
                               "would show its label", location=title, type="markup", subtype="as-text")


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", _check_headings)
    app.connect("doctree-resolved", _check)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
