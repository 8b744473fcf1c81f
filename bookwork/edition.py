"""Write the reader's edition: every chapter as a plain notebook for Colab, Binder and Jupyter.

The lessons are written in MyST for the book's site, which Colab and a plain Jupyter
do not render. The reader's edition (``notebooks/``, one notebook per lesson, committed
without outputs) says the same in Markdown that every front end shows:

- definitions, theorems, proofs and exercises become headed blocks, numbered within
  the chapter (Definition 3.1, Exercise 3.4); plots and interactive figures are numbered
  in one sequence per chapter (Figure 3.2), as on the site and in the PDF;
- cross-references show what they point to, with its number and title, also across
  chapters; citations read "Su et al. (2024)" and the chapter ends with its works cited,
  from ``book/references.bib``;
- solutions are collapsed: the prose in ``<details>`` blocks, the worked code in cells
  whose source Colab and JupyterLab fold away, still run from top to bottom;
- the assignment markers and checks (``tests/`` of the assignments) are left out;
- the setup cell installs the tagged release of ``companion`` that matches
  ``pyproject.toml`` with the library versions the book was tested with
  (``notebooks/requirements.txt``), where ``companion`` is missing (Colab).

    python -m bookwork.edition            # (re)write notebooks/ from lessons/
    python -m bookwork.edition --check    # exit 1, naming the stale notebooks

``make edition`` runs the first; ``tests/test_reader_edition.py`` the second, runs each
notebook alone in an empty folder, and looks for MyST left in its Markdown.
"""
from __future__ import annotations

import argparse
import re
import sys
import tomllib
from functools import cache, lru_cache
from pathlib import Path

import nbformat
import yaml

from bookwork import ROOT
from bookwork.book_targets import (
    Target,
    book_targets,
    chapter_number,
    figure_name,
    live_figure_label,
    live_figure_name,
    page_titles,
)
from bookwork.myst_markdown import DIRECTIVE, myst_to_markdown
from bookwork.sphinx.exercise_solutions import strip_markers

LESSONS = ROOT / "lessons"
EDITION = ROOT / "notebooks"
REQUIREMENTS = EDITION / "requirements.txt"
BIBLIOGRAPHY = ROOT / "book" / "references.bib"
#: The index of CPU-only torch wheels: the exact pin from PyPI alone would pull a CUDA build.
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
MARKER = re.compile(r"#\s+(begin|end)\s+(question|solution|tests|prompt)\b", re.IGNORECASE)


# --- what the book is: its release, its requirements, its numbered targets --------------------

def version() -> str:
    """companion's version, from pyproject.toml (the release the edition installs is ``v`` + it)."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def repository_url() -> str:
    return yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")


def requirements() -> list[str]:
    """The pinned requirements of ``notebooks/requirements.txt`` (``name==version`` lines)."""
    lines = [line.split("#")[0].strip() for line in REQUIREMENTS.read_text().splitlines()]
    return [line for line in lines if line]


def companion_requirement() -> str:
    """companion from the repository, at the tag of its version."""
    return f"companion @ git+{repository_url()}@v{version()}"


#: How a chapter starts the italic caption under an interactive figure ("*Figure 2." or
#: "*Figure 2,"): the edition writes the figure's number in the chapter there.
WRITTEN_CAPTION_NUMBER = re.compile(r"^\*(?:Figure|Fig\.)\s+\d+(?:\.\d+)?\s*([.,:]?)")


# --- citations --------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def bibliography():
    from pybtex.database import parse_file

    return parse_file(str(BIBLIOGRAPHY))


def _plain(latex: str) -> str:
    from pybtex.backends.plaintext import Backend
    from pybtex.richtext import Text

    return Text.from_latex(latex).render(Backend())


@cache
def author_year(key: str) -> tuple[str, str]:
    """``("Su et al.", "2024")``: one or two family names, or the first and "et al."."""
    entry = bibliography().entries[key]
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_plain(" ".join(person.prelast_names + person.last_names)) for person in people]
    if not names:
        names = [_plain(entry.fields.get("organization", key))]
    if len(names) == 1:
        who = names[0]
    elif len(names) == 2 and people[1].last_names != ["others"]:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return who, entry.fields.get("year", "n.d.")


def citation(keys: list[str], textual: bool) -> str:
    """``{cite:t}`` as "Su et al. (2024)", ``{cite:p}`` as "(Su et al., 2024; Press et al., 2022)"."""
    pairs = [author_year(key) for key in keys]
    if textual:
        return "; ".join(f"{who} ({year})" for who, year in pairs)
    return "(" + "; ".join(f"{who}, {year}" for who, year in pairs) + ")"


def works_cited(keys: list[str]) -> str:
    """The reference list of the given keys, in Markdown, ordered by author and year."""
    from pybtex.backends.markdown import Backend
    from pybtex.style.formatting.plain import Style

    style, markdown = Style(), Backend()
    entries = {entry.key: entry for entry in style.format_entries(
        bibliography().entries[key] for key in dict.fromkeys(keys))}
    lines = []
    for key in sorted(entries, key=lambda k: (author_year(k)[0].lower(), author_year(k)[1])):
        who, year = author_year(key)
        text = entries[key].text.render(markdown).replace("\n", " ")
        text = re.sub(r"\\\\(?:texttt|emph|textit) ?", "", text)
        lines.append(f"- **{who} ({year}).** {text}")
    return "\n".join(lines)


# --- the notebook -----------------------------------------------------------------------------

def setup_source() -> str:
    """The edition's setup cell: install the tagged release with the tested versions."""
    pins = ",\n    ".join(f'"{line}"' for line in [companion_requirement(), *requirements()])
    return f'''# Setup. This chapter needs the book's package `companion`, release v{version()}, and
# the library versions the book was tested with. Where companion is missing (Google
# Colab, a fresh Python) this cell installs them, which takes a minute or two; on
# Binder and in a checkout of the book they are installed already and it does nothing.
import importlib.util
import subprocess
import sys

REQUIREMENTS = [
    {pins},
]
if importlib.util.find_spec("companion") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q",
                           "--extra-index-url", "{TORCH_INDEX}", *REQUIREMENTS])
if "google.colab" in sys.modules:
    from google.colab import output
    output.enable_custom_widget_manager()  # the interactive figures
'''


def _note(lesson: Path) -> str:
    return (f"*Positions in Transformers*, chapter {chapter_number(lesson)}: the reader's edition "
            f"for Jupyter and Colab, generated from `lessons/{lesson.name}`. Run the cells from "
            "the top; the first one installs what the chapter needs where it is missing. "
            "Solutions are folded: open them after trying the exercise.")


def _is_solution_start(source: str) -> str | None:
    match = re.search(r"^(?:`{3,}|:{3,})\{solution-start\}[ \t]*(\S+)", source, re.MULTILINE)
    return match.group(1) if match else None


SOLUTION_END = re.compile(r"^(`{3,}|:{3,})\{solution-end\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*\1[ \t]*$", re.MULTILINE)


class Chapter:
    """One lesson turned into its reader's edition, cell by cell (see :func:`reader_notebook`)."""

    def __init__(self, lesson: Path, targets: dict[str, Target]):
        self.lesson = lesson
        self.references = {label: target.reference() for label, target in targets.items()}
        self.numbers = {label: target.number for label, target in targets.items()}
        self.short = {label: f"{target.kind} {target.number}" for label, target in targets.items()}
        self.cells: list = []
        self.cited: list[str] = []
        self.solution: str | None = None  # the exercise whose gated solution we are in
        self.bound: dict[str, str] = {}  # names bound to interactive figures
        self.caption_number: str | None = None  # of the interactive figure just shown

    def add(self, cell_type: str, source: str, name: str):
        make = nbformat.v4.new_markdown_cell if cell_type == "markdown" else nbformat.v4.new_code_cell
        cell = make(source)
        cell.id = f"{self.lesson.stem[:2]}-{name}"
        self.cells.append(cell)
        return cell

    def markdown(self, source: str) -> str:
        return myst_to_markdown(source, self.references, numbers=self.numbers, documents=page_titles(),
                                cite=citation)

    def markdown_cell(self, cell) -> None:
        """Prose; inside a gated solution (solution-start ... solution-end) folded in <details>.
        Under an interactive figure, its caption starts with the figure's number."""
        self.cited += [key.strip() for keys in re.findall(r"\{cite:[pt]\}`([^`]+)`", cell.source)
                       for key in keys.split(",")]
        ended = bool(SOLUTION_END.search(cell.source))
        source = SOLUTION_END.sub("", cell.source).strip()
        if self.caption_number and source.startswith("*"):
            number = f"*Figure {self.caption_number}"
            numbered = WRITTEN_CAPTION_NUMBER.subn(lambda m: number + (m.group(1) or "."), source, count=1)
            source = numbered[0] if numbered[1] else f"{number}. {source[1:]}"
        self.caption_number = None
        started = _is_solution_start(source)
        if started:
            self.solution = started
            source = DIRECTIVE.sub("", source, count=1).strip()
        text = self.markdown(source).strip()
        if self.solution:
            name = self.short.get(self.solution, "the exercise")
            if not text:
                text = f"**Solution to {name}**" if started else ""
            else:
                summary = f"Solution to {name}" + ("" if started else ", continued")
                text = f"<details>\n<summary><b>{summary}</b></summary>\n\n{text}\n\n</details>"
        if ended:
            self.solution = None
        if text:
            self.add("markdown", text, cell.id)
        if len(self.cells) == 1:
            self.add("markdown", _note(self.lesson), "note")

    def code_cell(self, cell) -> None:
        """Code without otter's comments; a solution's folded, a folded check's source hidden."""
        code = self.add("code", strip_markers(cell.source), cell.id)
        if self.solution:
            code.source = f"# @title Solution to {self.short.get(self.solution, 'the exercise')}\n" + code.source
            code.metadata.update({"cellView": "form", "jupyter": {"source_hidden": True}})  # Colab, JupyterLab
        elif "hide-input" in cell.metadata.get("tags", []):
            code.metadata["jupyter"] = {"source_hidden": True}
        figure = figure_name(cell)
        if figure:
            name, caption = figure
            self.add("markdown", f"*Figure {self.numbers[name]}.* {self.markdown(caption)}".strip(),
                     f"{cell.id}-caption")
        live = live_figure_name(cell.source, self.bound)
        self.caption_number = self.numbers[live_figure_label(chapter_number(self.lesson), live)] if live else None


def reader_notebook(lesson: Path, targets: dict[str, Target]):
    """The reader's edition of one lesson (no outputs).

    Raw cells (otter's markers) and the check cells between ``# BEGIN TESTS`` and ``#
    END TESTS`` are left out; the first code cell, the setup, becomes
    :func:`setup_source`; the works cited follow the last cell.
    """
    chapter = Chapter(lesson, targets)
    in_checks, setup_done = False, False
    for cell in nbformat.read(lesson, as_version=4).cells:
        if cell.cell_type == "raw":
            marker = MARKER.match(cell.source.strip())
            if marker and marker.group(2).lower() == "tests":
                in_checks = marker.group(1).lower() == "begin"
        elif in_checks:
            continue
        elif cell.cell_type == "markdown":
            chapter.markdown_cell(cell)
        elif not setup_done:
            setup_done = True
            chapter.add("code", setup_source(), "setup")
        else:
            chapter.code_cell(cell)
    if chapter.cited:
        chapter.add("markdown", "### Works cited in this chapter\n\n" + works_cited(chapter.cited), "works-cited")
    out = nbformat.v4.new_notebook(cells=chapter.cells, metadata={"kernelspec": KERNELSPEC,
                                                                  "language_info": {"name": "python"}})
    out.nbformat_minor = 5
    return out


def lessons() -> list[Path]:
    return sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))


def edition() -> dict[Path, str]:
    """Every notebook of the edition: path -> its text."""
    all_lessons = lessons()
    targets = book_targets(all_lessons)
    return {EDITION / lesson.name: nbformat.writes(reader_notebook(lesson, targets)) + "\n"
            for lesson in all_lessons}


def stale() -> list[str]:
    """Notebooks of the edition that differ from what the lessons give, or that no lesson gives."""
    wanted = edition()
    found = set(EDITION.glob("*.ipynb"))
    names = [path.name for path, text in wanted.items() if not path.exists() or path.read_text() != text]
    return names + sorted(path.name for path in found - set(wanted))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if notebooks/ is out of date")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        if names:
            print("The reader's edition is out of date (run 'make edition'): " + ", ".join(names))
            return 1
        print(f"The reader's edition is up to date ({len(lessons())} chapters).")
        return 0
    wanted = edition()
    for path in set(EDITION.glob("*.ipynb")) - set(wanted):
        path.unlink()
    for path, text in wanted.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
