"""Every lesson runs top to bottom in a fresh kernel, and has the shape of a chapter.

The book build executes each lesson once, as a student would: a fresh kernel, working
directory ``lessons/``, every cell, stopping at the first error. It keeps the executed
notebook in its cache (``_build/.jupyter_cache``) only when every cell ran, under a key
made of the notebook's code; :mod:`bookwork.sphinx.rerun_on_package_change` empties the cache
when ``companion`` changes. So a cache entry that matches a lesson's current code is the
proof that this code runs, and the lesson tests read it instead of running every lesson
a second time.
"""
from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
EXECUTION_CACHE = ROOT / "_build" / ".jupyter_cache"
REPORTS = ROOT / "_build" / "html" / "reports"


def markdown(nb) -> str:
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")


def data_files_read_by(nb) -> list[Path]:
    """Files beside the lessons that a lesson names (lessons/lab_results/... for a lesson
    that mentions lab_results): the cached execution must be newer than they are."""
    text = "\n".join(cell.source for cell in nb.cells)
    folder = ROOT / "lessons"
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix != ".ipynb"
            and ".ipynb_checkpoints" not in p.parts and p.relative_to(folder).parts[0] in text]


@pytest.mark.site
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_executes(path, book_build, record_property):
    """The book build ran this lesson's current code in a fresh kernel without an error."""
    nb = nbformat.read(path, as_version=4)
    try:
        record = get_cache(str(EXECUTION_CACHE)).match_cache_notebook(nb)
    except KeyError:
        report = REPORTS / path.relative_to(ROOT).with_suffix(".err.log")
        detail = report.read_text()[-6000:] if report.is_file() else book_build["log"]
        pytest.fail(f"{path.name} did not run to the end in the book build:\n{detail}")
    executed = record.created.replace(tzinfo=UTC)
    for data in data_files_read_by(nb):
        changed = datetime.fromtimestamp(data.stat().st_mtime, tz=UTC)
        assert changed <= executed, (
            f"{path.name} was executed before {data.relative_to(ROOT)} changed; run it again "
            "(rm -rf _build/.jupyter_cache, then make book)")
    executed_cells = get_cache(str(EXECUTION_CACHE)).get_cache_bundle(record.pk).nb.cells
    meant_to_raise = [("raises-exception" in cell.metadata.get("tags", []))
                      for cell in nb.cells if cell.cell_type == "code"]
    errors = [out for cell, allowed in zip(executed_cells, meant_to_raise) if not allowed
              for out in cell.get("outputs", []) if out.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0].ename}: {errors[0].evalue}"
    record_property("lesson", path.name)
    record_property("lesson_execution_seconds", float(record.data["execution_seconds"]))
    record_property("executed", f"executed {executed.astimezone():%Y-%m-%d %H:%M}")


@pytest.mark.site
def test_an_edited_lesson_has_no_execution_to_show(book_build):
    """test_lesson_executes can fail: a lesson whose code is not what the build ran
    finds no cached execution."""
    nb = nbformat.read(LESSONS[0], as_version=4)
    next(cell for cell in nb.cells if cell.cell_type == "code").source += "\nraise RuntimeError('never run')"
    with pytest.raises(KeyError):
        get_cache(str(EXECUTION_CACHE)).match_cache_notebook(nb)


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
    assert any(re.search(r"assert .*is_zero(_matrix)?\(", cell.source) for cell in code), \
        "a SymPy proof that asserts zero"


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




def test_the_build_executes_lessons_as_a_student_would():
    """What test_lesson_executes relies on: the build runs every cell in lessons/, keeps
    only runs without an error, and marks a raising notebook as a failed build."""
    import yaml

    execute = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    assert execute["execute_notebooks"] == "cache"
    assert execute.get("allow_errors") is False
    assert not execute.get("run_in_temp", False), "lessons run in their own folder"
    assert not execute.get("exclude_patterns"), "no lesson is left unexecuted"


def test_the_build_writes_nothing_beside_the_lessons(book_build):
    """The build executes every lesson with lessons/ as its working directory: a chapter that
    wrote a file (a saved figure, a cache) would leave it there, and would write it beside
    a reader's copy too. Every file in lessons/ is one git tracks."""
    untracked = subprocess.run(["git", "ls-files", "--others", "lessons"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.split()
    assert [f for f in untracked if ".ipynb_checkpoints" not in f] == []
