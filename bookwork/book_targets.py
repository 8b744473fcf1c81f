"""What every label of the book names, and how a reference to it reads outside the site.

The site numbers definitions, theorems and exercises by kind within their chapter
(Definition 3.1, Exercise 3.4), plots and interactive figures in one sequence per
chapter (Figure 3.2), and shows a link to a section or a page by its title. The
notebooks made from the lessons (the reader's edition, :mod:`bookwork.edition`; the
student notebooks, :mod:`bookwork.assignments`) cannot ask Sphinx, so they read the same
from the lessons here: :func:`book_targets` gives every label of the book its
:class:`Target`, whose :meth:`~Target.reference` is what a cross-reference to it reads,
and :func:`page_titles` every page its title, for a link to a whole page.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nbformat

from bookwork import ROOT
from bookwork.myst_markdown import directives, kind_name


def chapter_number(lesson: Path) -> int:
    return int(lesson.name[:2])


@dataclass(frozen=True)
class Target:
    """What a label names: a numbered block, a section or a figure of some chapter."""

    kind: str  # "Definition", "Exercise", "Section", "Figure", ...
    number: str  # "3.1"; empty for a section
    title: str

    def reference(self) -> str:
        """How a cross-reference to it reads: ``Definition 3.1 (Rotary position embedding)``;
        a chapter and a section by their title, as the site shows a link to them."""
        if self.kind == "Section":
            return f"section {self.title}" if re.match(r"\d+\.\d+ ", self.title) else self.title
        if self.kind == "Chapter":
            return self.title
        name = f"{self.kind} {self.number}"
        return f"{name} ({self.title})" if self.title else name


def figure_name(cell) -> tuple[str, str] | None:
    figure = cell.metadata.get("mystnb", {}).get("figure", {})
    return (figure["name"], figure.get("caption", "")) if "name" in figure else None


@lru_cache(maxsize=1)
def figure_functions() -> frozenset[str]:
    """The functions of ``companion.figures`` that make an interactive figure."""
    import companion.figures

    return frozenset(name for name in companion.figures.__all__ if name[:1].islower())


def live_figure_name(source: str, bound: dict[str, str]) -> str | None:
    """The interactive figure a code cell shows (``rope_rotation``), or None.

    A cell shows a figure when its last statement is a call of one of
    :func:`figure_functions` or a name bound to one earlier in the chapter, or when it
    passes one to ``display``; ``bound`` collects those names, cell after cell. The site
    finds the same figures in the executed cells' output (:mod:`bookwork.sphinx.live_figures`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None

    def figure(node) -> str | None:
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            return name if name in figure_functions() else None
        return bound.get(node.id) if isinstance(node, ast.Name) else None

    shown = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            made = figure(node.value)
            if made:
                bound[node.targets[0].id] = made
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "display" and node.args:
            shown = figure(node.args[0]) or shown
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        shown = figure(tree.body[-1].value) or shown
    return shown


def live_figure_label(chapter: int, name: str) -> str:
    """The label of interactive figure ``name`` in ``chapter``, as the site gives it."""
    return f"fig-{chapter:02d}-{name.replace('_', '-')}"


def chapter_targets(lesson: Path) -> dict[str, Target]:
    """Every label of one lesson: directives numbered by kind, sections, figures."""
    nb = nbformat.read(lesson, as_version=4)
    chapter = chapter_number(lesson)
    counts: Counter[str] = Counter()
    targets = {}
    bound: dict[str, str] = {}  # names bound to interactive figures
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for label, heading in re.findall(r"^\(([\w-]+)\)=[ \t]*\n#+ ([^\n]+)", cell.source, re.MULTILINE):
                if label == f"chapter-{chapter:02d}":
                    targets[label] = Target("Chapter", str(chapter), re.sub(r"^\d+\. ", "", heading))
                else:
                    targets[label] = Target("Section", "", heading.strip())
            for kind, title, options in directives(cell.source):
                if kind in ("proof", "admonition", "solution", "solution-start", "solution-end"):
                    continue
                counts[kind] += 1
                if "label" in options:
                    targets[options["label"]] = Target(kind_name(kind), f"{chapter}.{counts[kind]}", title)
        elif cell.cell_type == "code" and figure_name(cell):
            counts["figure"] += 1
            name, caption = figure_name(cell)
            targets[name] = Target("Figure", f"{chapter}.{counts['figure']}", "")
        elif cell.cell_type == "code" and live_figure_name(cell.source, bound):
            counts["figure"] += 1
            name = live_figure_label(chapter, live_figure_name(cell.source, dict(bound)))
            targets[name] = Target("Figure", f"{chapter}.{counts['figure']}", "")
    return targets


def book_targets(lessons: list[Path]) -> dict[str, Target]:
    """Every label of the given lessons (a reference may point into another chapter)."""
    targets: dict[str, Target] = {}
    for lesson in lessons:
        targets.update(chapter_targets(lesson))
    return targets




@lru_cache(maxsize=1)
def page_titles() -> dict[str, str]:
    """The book's pages by name, as the site titles them: the front matter's
    (``references`` -> ``References``) and the chapters' without their number
    (``00_why_positions`` -> ``Why a transformer needs positions``)."""
    titles = {}
    for page in (ROOT / "book").glob("*.md"):
        heading = re.search(r"^# (.+)$", page.read_text(), re.MULTILINE)
        titles[page.stem] = heading.group(1).strip() if heading else page.stem
    for lesson in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb")):
        title = chapter_targets(lesson).get(f"chapter-{chapter_number(lesson):02d}")
        if title is not None:
            titles[lesson.stem] = title.title
    return titles
