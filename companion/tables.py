"""Tables of results that are tables wherever a chapter is read, numbered and captioned in the book.

A chapter that prints a table with ``print`` and f-strings gets text: it wraps on a narrow
screen and in print, and its columns drift apart. A :class:`Table` is shown as a table
instead: as Markdown (``_repr_markdown_``), which Jupyter and Colab draw as a table, the
book's HTML build as an HTML table and its LaTeX build as a LaTeX table; and as aligned
text where only text can be shown (a terminal).

A table with a ``caption`` is a numbered table of its chapter in the book ("Table 10.1",
with its caption above it, on the site and in the PDF), and its ``label``
(``tab-10-configurations``) is what the text refers to it by, ``{numref}`` as for a figure.
The Markdown carries both in a form every notebook front end shows sensibly: the label
in an HTML comment (hidden), the caption in italics above the table; the book
(``bookwork/sphinx/numbered_tables.py``) turns them into a numbered table.

Numbers are right-aligned: a column whose cells are all numbers, or text that reads as a
number (``"10,000"``, ``"1.2e-05"``, ``"3.5%"``, ``"2×"``, ``"inf"``, a dash for none), is
right-aligned unless ``align`` says otherwise; other columns are left-aligned.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from numbers import Number

__all__ = ["Markdown", "Table"]

#: Column alignments: left, right, centred.
ALIGNMENTS = {"l": ":---", "r": "---:", "c": ":---:"}
#: A label: ``tab-`` and the chapter's words (letters, digits, hyphens).
LABEL = re.compile(r"tab-[a-z0-9]+(-[a-z0-9]+)*")
#: Text that reads as a number: a sign, digits with thousands separators and a decimal
#: part, an exponent, a unit sign after it; or a dash standing for no value.
NUMBER = re.compile(r"[+\-\u2212\u00b1]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][+\-\u2212]?\d+)?\s?(%|\u00d7|x)?")
NO_VALUE = {"\u2013", "\u2014", "-", "", "inf", "-inf", "\u2212inf", "nan", "\u221e"}
#: The comment that marks a captioned table and carries its label in its Markdown (read
#: by the book's build).
LABEL_COMMENT = "<!-- companion.tables: {label} -->"


def _reads_as_number(cell) -> bool:
    if isinstance(cell, bool):
        return False
    if isinstance(cell, Number):
        return True
    text = str(cell).strip().replace("$", "")
    return text in NO_VALUE or (any(c.isdigit() for c in text) and NUMBER.fullmatch(text) is not None)


@dataclass(frozen=True)
class Table:
    """A table: a header row, rows of cells, each column's alignment, and a caption.

    Parameters
    ----------
    columns : sequence of str
        The header of each column; Markdown, so ``$a$`` is typeset as math.
    rows : sequence of sequences
        One sequence of cells per row, as many as there are columns; a cell is shown as
        ``str(cell)``, so numbers are formatted by the caller.
    align : str, optional
        One letter per column, ``"l"``, ``"r"`` or ``"c"``; by default columns of numbers
        (module docstring) are right-aligned and the others left-aligned.
    caption : str, optional
        What the table shows, one or two sentences of Markdown; with a caption the book
        numbers the table.
    label : str, optional
        The name the text refers to the table by, ``tab-`` and words (``tab-02-costs``);
        it needs a caption.
    """

    columns: tuple
    rows: tuple
    align: str = ""
    caption: str = ""
    label: str = ""

    def __post_init__(self):
        columns = tuple(self.columns)
        if not columns or not all(isinstance(name, str) for name in columns):
            raise ValueError(f"columns must be a non-empty sequence of strings, got {columns!r}")
        rows = tuple(tuple(row) for row in self.rows)
        for index, row in enumerate(rows):
            if len(row) != len(columns):
                raise ValueError(f"rows[{index}] has {len(row)} cells; the table has {len(columns)} columns")
        align = self.align
        if not align:  # numbers right-aligned, the rest left-aligned
            align = "".join("r" if rows and all(_reads_as_number(row[i]) for row in rows) else "l"
                            for i in range(len(columns)))
        if len(align) != len(columns) or set(align) - set(ALIGNMENTS):
            raise ValueError(f"align must have one of 'l', 'r', 'c' per column ({len(columns)}), got {align!r}")
        if not isinstance(self.caption, str) or "\n\n" in self.caption.strip() or "*" in self.caption:
            raise ValueError(f"caption must be a string of one paragraph with no '*' (it is set in italics), "
                             f"got {self.caption!r}")
        if not isinstance(self.label, str) or (self.label and not LABEL.fullmatch(self.label)):
            raise ValueError(f"label must be 'tab-' and lower-case words joined by hyphens "
                             f"(tab-02-costs), got {self.label!r}")
        if self.label and not self.caption.strip():
            raise ValueError(f"a labelled table needs a caption (label {self.label!r}): the book numbers "
                             "captioned tables")
        # a frozen dataclass: the normalised values replace the given ones once, here
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "align", align)
        object.__setattr__(self, "caption", " ".join(self.caption.split()))

    def _repr_markdown_(self) -> str:
        """The table in Markdown: its label in a comment, its caption in italics, a pipe table."""
        lines = []
        if self.caption:
            lines += [LABEL_COMMENT.format(label=self.label), "", f"*{self.caption}*", ""]
        lines += [_pipe_row(self.columns), _pipe_row(ALIGNMENTS[a] for a in self.align)]
        lines += [_pipe_row(str(cell) for cell in row) for row in self.rows]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        """The table as aligned text, the header underlined, the caption above it."""
        texts = [list(self.columns)] + [[str(cell) for cell in row] for row in self.rows]
        widths = [max(len(row[i]) for row in texts) for i in range(len(self.columns))]

        def line(cells):
            return "  ".join(cell.ljust(w) if a == "l" else cell.rjust(w) if a == "r" else cell.center(w)
                             for cell, w, a in zip(cells, widths, self.align)).rstrip()

        rule = "  ".join("-" * w for w in widths)
        caption = [self.caption] if self.caption else []
        return "\n".join(caption + [line(texts[0]), rule] + [line(row) for row in texts[1:]])

    def __repr__(self) -> str:
        return str(self)


def _pipe_row(cells) -> str:
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


class Markdown(str):
    """Text that a notebook shows as Markdown (a list of sources, a note), and as itself
    where only text can be shown."""

    def _repr_markdown_(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return str(self)
