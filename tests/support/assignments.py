"""The lessons' assignments as the tests use them: generated once, and graded once per version.

Each lesson's versions (the solution, the untouched student copy, and the solution with
one deliberately wrong answer from ``tests/wrong_answers/<lesson>.json``) are graded
with the lesson's ``autograder.zip`` in one kernel (:mod:`bookwork.grading.versions`),
so the chapter runs once, not once per version. A lesson's grades are kept in
``_build/grading-cache/`` with a hash of everything they depend on (:func:`grading_key`)
and graded again only when that changes.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
import zipfile
from pathlib import Path

import nbformat

from bookwork import assignments
from bookwork.grading.versions import grade_versions
from tests.support.runs import once_per_run

ROOT = Path(__file__).resolve().parents[2]
WRONG = ROOT / "tests" / "wrong_answers"
#: Each lesson's grades, kept with a hash of everything they depend on (grading_key).
GRADES = ROOT / "_build" / "grading-cache"
#: The libraries a grading runs on: a new version of any of them grades again.
GRADING_LIBRARIES = ("otter-grader", "nbclient", "ipykernel", "numpy", "torch", "sympy", "matplotlib")


def cases(lesson: str) -> list[dict]:
    """The cases of tests/wrong_answers/<lesson>.json: wrong answers and honest variants."""
    path = WRONG / f"{lesson}.json"
    return json.loads(path.read_text()) if path.exists() else []


def wrong_answers(lesson: str) -> list[tuple[int, dict]]:
    """``(index, case)`` of each wrong answer (a case without ``"honest": true``)."""
    return [(index, case) for index, case in enumerate(cases(lesson)) if not case.get("honest")]


def honest_variants(lesson: str) -> list[tuple[int, dict]]:
    """``(index, case)`` of each honest variant: another correct answer, which keeps full marks."""
    return [(index, case) for index, case in enumerate(cases(lesson)) if case.get("honest")]


def apply_edits(nb, edits: list[list[str]]):
    """Apply [old, new] replacements, each of which must match exactly one cell once."""
    for old, new in edits:
        hits = [cell for cell in nb.cells if old in cell.source]
        assert len(hits) == 1 and hits[0].source.count(old) == 1, f"edit target not unique: {old!r}"
        hits[0].source = hits[0].source.replace(old, new)
    return nb


class Generated(dict):
    """Assignments generated on first use, one lesson at a time."""

    def __init__(self, out: Path):
        super().__init__()
        self.out = out

    def __missing__(self, lesson: str) -> Path:
        self[lesson] = assignments.generate(ROOT / "lessons" / f"{lesson}.ipynb", self.out)
        return self[lesson]


def versions(lesson: str, folder: Path) -> dict[str, nbformat.NotebookNode]:
    """The versions of a lesson the tests grade: the solution, the untouched student
    copy, and for each wrong answer or honest variant the solution with it alone."""
    solution = folder / "autograder" / f"{lesson}.ipynb"
    found = {"solution": nbformat.read(solution, as_version=4),
             "untouched": nbformat.read(folder / "student" / f"{lesson}.ipynb", as_version=4)}
    for index, case in enumerate(cases(lesson)):
        kind = "honest" if case.get("honest") else "wrong"
        found[f"{kind}-{index}"] = apply_edits(nbformat.read(solution, as_version=4), case["edits"])
    return found


def grading_key(autograder: Path, found: dict[str, nbformat.NotebookNode]) -> str:
    """A hash of what a lesson's grades depend on: the code of every version graded, the
    autograder's checks and files, the companion package, the grading code, Python and
    the libraries it runs on. When it is the same as the last run's, grading again would
    give the same grades (a grading runs the same code on the same inputs; the chapters
    are seeded), and the stored grades are used: a lesson is graded again only when
    something it depends on changed, as the book build re-executes only changed chapters."""
    digest = hashlib.sha256()
    for name, nb in sorted(found.items()):
        digest.update(name.encode())
        for cell in nb.cells:
            digest.update(cell.cell_type.encode() + b"\0" + cell.source.encode() + b"\0")
    with zipfile.ZipFile(autograder) as archive:
        for member in sorted(archive.namelist()):
            digest.update(member.encode() + archive.read(member))
    sources = sorted((ROOT / "companion").rglob("*.py")) + sorted((ROOT / "companion").rglob("*.json"))
    grading = sorted((ROOT / "bookwork" / "grading").glob("*.py"))
    for path in sources + grading + [ROOT / "bookwork" / "assignments.py"]:
        digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    digest.update(sys.version.encode())
    for library in GRADING_LIBRARIES:
        digest.update(f"{library}=={importlib.metadata.version(library)}".encode())
    return digest.hexdigest()


class Graded(dict):
    """The grades of every version of a lesson, {version: {question: score}}, computed on
    first use in one kernel (once per test run, whichever pytest-xdist worker asks first).
    A grading that fails is not tried again: every test that needs it fails with its error."""

    def __init__(self, generated: Generated, out: Path, tmp_path_factory):
        super().__init__()
        self.generated, self.out, self.tmp_path_factory = generated, out, tmp_path_factory

    def __missing__(self, lesson: str) -> dict[str, dict] | Exception:
        def produce():
            folder = self.generated[lesson]
            found = versions(lesson, folder)
            autograder = folder / "autograder" / "autograder.zip"
            key = grading_key(autograder, found)
            stored = GRADES / f"{lesson}.json"
            if stored.is_file() and json.loads(stored.read_text())["key"] == key:
                return json.loads(stored.read_text())["grades"]
            grades = grade_versions(autograder, found, f"{lesson}.ipynb", self.out / lesson)
            GRADES.mkdir(parents=True, exist_ok=True)
            stored.write_text(json.dumps({"key": key, "grades": grades}))
            return grades

        try:
            self[lesson] = once_per_run(f"graded-{lesson}", produce, self.tmp_path_factory)
        except Exception as error:  # kept, and raised again for every test that asks
            self[lesson] = RuntimeError(f"grading the versions of {lesson} failed: {type(error).__name__}: {error}")
        return self[lesson]

    def __getitem__(self, lesson: str) -> dict[str, dict]:
        grades = super().__getitem__(lesson)
        if isinstance(grades, Exception):
            raise grades
        return grades
