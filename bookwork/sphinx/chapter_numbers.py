"""Number exercises, definitions, theorems and figures within their chapter: "Exercise 3.2".

Sphinx numbers every enumerable node (figures, tables, sphinx-proof's theorems and
definitions, sphinx-exercise's exercises) across the whole book: "Exercise 45" in
chapter 9. Textbooks number them within the chapter, which makes a reference or a
course handout easier to follow. A chapter is a page ``lessons/NN_name``; after
Sphinx has assigned its numbers, this extension replaces each chapter's numbers by
``(NN, k)``, k counting that kind of item from 1 in the chapter in page order, so
titles and every cross-reference (``{prf:ref}``, ``{ref}``, ``{numref}``) read
"Theorem 3.1". Pages that are not chapters keep Sphinx's numbers.
"""
from __future__ import annotations

import re

from sphinx.application import Sphinx

CHAPTER = re.compile(r"^lessons/(\d+)_")


def chapter_of(docname: str) -> int | None:
    """The chapter number of a page (``lessons/03_rope`` is 3), or None for other pages."""
    match = CHAPTER.match(docname)
    return int(match.group(1)) if match else None


def renumber(fignumbers: dict[str, dict[str, dict[str, tuple]]]) -> dict:
    """Per-chapter numbers for ``env.toc_fignumbers`` (docname -> kind -> id -> number)."""
    result = {}
    for docname, kinds in fignumbers.items():
        chapter = chapter_of(docname)
        if chapter is None:
            result[docname] = kinds
            continue
        result[docname] = {}
        for kind, numbers in kinds.items():
            in_order = sorted(numbers, key=lambda target: numbers[target])
            result[docname][kind] = {target: (chapter, k) for k, target in enumerate(in_order, start=1)}
    return result


def _renumber(app: Sphinx, env) -> list[str]:
    before = env.toc_fignumbers
    env.toc_fignumbers = renumber(before)
    return []


def setup(app: Sphinx) -> dict:
    # After the toctree collector has assigned the book-wide numbers (priority 500).
    app.connect("env-get-updated", _renumber, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
