"""Tables of results that are tables wherever a chapter is read.

A chapter that prints a table with ``print`` and f-strings gets text: it wraps on a narrow
screen and in print, and its columns drift apart. A :class:`Table` is shown as a table
instead: as Markdown (``_repr_markdown_``), which Jupyter and Colab draw as a table, the
book's HTML build as an HTML table and its LaTeX build as a LaTeX table; and as aligned
text where only text can be shown (a terminal).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Markdown", "Table"]

#: Column alignments: left, right, centred.
ALIGNMENTS = {"l": ":---", "r": "---:", "c": ":---:"}


@dataclass(frozen=True)
class Table:
    """A table: a header row, rows of cells and each column's alignment.

    Parameters
    ----------
    columns : sequence of str
        The header of each column; Markdown, so ``$a$`` is typeset as math.
    rows : sequence of sequences
        One sequence of cells per row, as many as there are columns; a cell is shown as
        ``str(cell)``, so numbers are formatted by the caller.
    align : str, optional
        One letter per column, ``"l"``, ``"r"`` or ``"c"``; by default text columns
        (those whose first cell is a ``str``) are left-aligned and the others right-aligned.
    """

    columns: tuple
    rows: tuple
    align: str = ""

    def __post_init__(self):
        columns = tuple(self.columns)
        if not columns or not all(isinstance(name, str) for name in columns):
            raise ValueError(f"columns must be a non-empty sequence of strings, got {columns!r}")
        rows = tuple(tuple(row) for row in self.rows)
        for index, row in enumerate(rows):
            if len(row) != len(columns):
                raise ValueError(f"rows[{index}] has {len(row)} cells; the table has {len(columns)} columns")
        align = self.align
        if not align:  # text columns left-aligned, the others right-aligned
            first = rows[0] if rows else ("",) * len(columns)
            align = "".join("l" if isinstance(cell, str) else "r" for cell in first)
        if len(align) != len(columns) or set(align) - set(ALIGNMENTS):
            raise ValueError(f"align must have one of 'l', 'r', 'c' per column ({len(columns)}), got {align!r}")
        # a frozen dataclass: the normalised values replace the given ones once, here
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "align", align)

    def _repr_markdown_(self) -> str:
        """The table in Markdown: a pipe table."""
        lines = [_pipe_row(self.columns), _pipe_row(ALIGNMENTS[a] for a in self.align)]
        lines += [_pipe_row(str(cell) for cell in row) for row in self.rows]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        """The table as aligned text, the header underlined."""
        texts = [list(self.columns)] + [[str(cell) for cell in row] for row in self.rows]
        widths = [max(len(row[i]) for row in texts) for i in range(len(self.columns))]

        def line(cells):
            return "  ".join(cell.ljust(w) if a == "l" else cell.rjust(w) if a == "r" else cell.center(w)
                             for cell, w, a in zip(cells, widths, self.align)).rstrip()

        rule = "  ".join("-" * w for w in widths)
        return "\n".join([line(texts[0]), rule] + [line(row) for row in texts[1:]])

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
