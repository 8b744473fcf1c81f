"""Every lesson runs top to bottom in a fresh kernel, and has the shape of a chapter."""
from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
TIMINGS: dict[str, float] = {}


def markdown(nb) -> str:
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_executes(path):
    """Execute as a student would: fresh kernel, working directory lessons/."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    TIMINGS[path.name] = time.perf_counter() - start


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_structure(path):
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    setup = code[0]
    assert "google.colab" in setup.source and "companion" in setup.source, "first code cell must be the Colab setup"
    assert setup.metadata.get("tags") == ["remove-cell"], "the setup cell is hidden on the site"
    text = markdown(nb)
    assert re.match(r"\(chapter-\d\d\)=\n# \d+\. ", nb.cells[0].source), "chapter label and numbered title first"
    assert "What you will learn" in text
    assert "## Summary" in text and "## Exercises" in text and "## References" in text
    exercises = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", text)
    solutions = re.findall(r"```\{solution(?:-start)?\} (\S+)", text)
    assert len(exercises) >= 4, "at least four exercises"
    assert sorted(exercises) == sorted(solutions), "every exercise has exactly one solution"
    assert "{cite:" in text, "cite the primary papers"
    assert "{prf:proof}" in text or "```{prf:proof}" in text, "a written proof"
    assert any(re.search(r"assert .*is_zero(_matrix)?\(", cell.source) for cell in code), "a SymPy proof that asserts zero"


def test_every_lesson_is_in_the_table_of_contents():
    toc = (ROOT / "_toc.yml").read_text()
    for path in LESSONS:
        assert f"lessons/{path.stem}" in toc, path.name
    for name in re.findall(r"file: (\S+)", toc):
        assert list(ROOT.glob(name + ".*")), f"_toc.yml names {name}, which does not exist"


def test_lesson_file_names_are_numbered():
    assert LESSONS, "no lessons found"
    for path in LESSONS:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name), path.name


