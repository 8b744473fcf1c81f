"""Grade several versions of one chapter's notebook in a single kernel: the book's own notebooks only.

The grader (``python -m bookwork.grading``) runs a submission from the top in a sandbox
(a cell that raises does not stop it); at each ``grader.check("q")`` cell a separate
process checks question ``q`` against the state at that point with every check of the
autograder, hidden ones included, on values sent to it as data, and the checks no cell
ran are run at the end. Here the same checks (:class:`bookwork.grading.judge.Judge`,
refusing what the judge refuses) read the same data
(:class:`bookwork.grading.runner.Answers`: every value and every call of a submitted
function goes through :mod:`bookwork.grading.wire`), only without the processes in
between. This shares one kernel between versions, so it is for the book's own notebooks
only, never for students' submissions. The kernel imports :class:`Versions` from here
by name, which is why this lives in the package and not beside the tests.

The tests grade several versions of every chapter: the solution, the
untouched student copy, and the solution with one deliberate wrong answer or one honest
variant (another correct answer, which must keep full marks). Graded one by one, each
would run the whole chapter again, although they differ only in the cells of a
question.

:func:`grade_versions` runs them in one kernel, the same way: the code cells that come
before the first cell where a version differs from the solution are run once for all.
At that cell the namespace is saved, the version runs its own cells from there to the
end (its checks recorded as the grader records them, and the checks it did not run run
after its last cell), and the saved namespace is put back before the solution goes on. A
version therefore meets the state that a fresh run of it would meet, with one
exception: names are restored, but an object that a version's cell changes in place
stays changed. The checks whose cells come before that first difference were run on
the state the version shares with the solution there, so the version takes the
solution's results for them, as a fresh run of it would get them at those cells. The
solution is graded last, after every version that branched off before it, so such a
change would show as the solution losing points.

The checks, the support files and the settings come from the chapter's
``autograder.zip``, as in the grader. The versions must have the same code cells as
the solution, differing only in their sources (the student copy and the wrong answers
are made from it).
"""
from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

CHECK_CELL = re.compile(r'grader\.check\("([^"]+)"\)\s*')
SOLUTION = "solution"


def code_cells(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def _checked_questions(cells: list[str]) -> list[tuple[int, str]]:
    return [(index, match.group(1)) for index, source in enumerate(cells)
            if (match := CHECK_CELL.fullmatch(source.strip()))]


def _version_cell(source: str):
    """A cell of a version: it may raise (grading goes on), and its check is recorded."""
    match = CHECK_CELL.fullmatch(source.strip())
    if match:
        source = f'_versions.check("{match.group(1)}")'
    return nbformat.v4.new_code_cell(source, metadata={"tags": ["raises-exception"]})


def _control_cell(source: str):
    """A cell of the grading itself: it must not raise."""
    return nbformat.v4.new_code_cell(source)


def grading_notebook(versions: dict[str, list[str]], tests_dir: Path, results: Path):
    """The notebook that grades every version (code cell sources, the solution's under
    ``"solution"``) and writes the results to ``results``."""
    main = versions[SOLUTION]
    checks = _checked_questions(main)
    first_difference = {}
    for name, cells in versions.items():
        if len(cells) != len(main):
            raise ValueError(f"{name}: {len(cells)} code cells, the solution has {len(main)}")
        if _checked_questions(cells) != checks:
            raise ValueError(f"{name}: its grader.check cells differ from the solution's")
        first_difference[name] = next((i for i, (a, b) in enumerate(zip(cells, main)) if a != b), None)
    setup = ("from otter import Notebook\n"
             f"Notebook.init_grading_mode({str(tests_dir)!r})\n"
             "from bookwork.grading.versions import Versions\n"
             f"_versions = Versions(globals(), {str(tests_dir)!r}, {str(results)!r})\n"
             f"_versions.start({SOLUTION!r})")
    cells = [_control_cell(setup)]
    for index, source in enumerate(main):
        branching = [name for name, at in first_difference.items() if at == index]
        if branching:
            cells.append(_control_cell("_versions.save()"))
        for name in branching:
            cells.append(_control_cell(f"_versions.start({name!r})"))
            cells += [_version_cell(s) for s in versions[name][index:]]
            cells.append(_control_cell("_versions.finish()\n_versions.restore()"))
        cells.append(_version_cell(source))
    cells.append(_control_cell("_versions.finish()"))
    same = [name for name, at in first_difference.items() if at is None and name != SOLUTION]
    cells.append(_control_cell(f"_versions.same_as_solution({same!r})"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def grade_versions(autograder: Path, versions: dict[str, object], notebook_name: str, workdir: Path,
                   timeout: int = 600) -> dict[str, dict[str, dict]]:
    """Grade notebooks (``{name: notebook}``, the solution under ``"solution"``) with
    ``autograder`` (an ``autograder.zip``) in one kernel; ``notebook_name`` is the file
    name a submission has (the notebook's otter init cell opens it).

    Returns ``{name: {question: {"score", "possible", "output"}}}``, the questions in the
    order of the solution's checks, as :func:`bookwork.grading.grade.grade` gives them.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "autograder"
    with zipfile.ZipFile(autograder) as archive:
        archive.extractall(source)
    if (source / "files").is_dir():  # support files go beside the notebook
        for item in (source / "files").iterdir():
            (shutil.copytree if item.is_dir() else shutil.copy)(item, workdir / item.name)
    nbformat.write(versions[SOLUTION], workdir / notebook_name)
    results = workdir / "results.json"
    cells = {name: code_cells(nb) for name, nb in versions.items()}
    nb = grading_notebook(cells, source / "tests", results)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(workdir)}}).execute()
    graded = json.loads(results.read_text())
    late = [question for question, result in graded[SOLUTION].items() if result.pop("at_end")]
    if late:
        raise RuntimeError(f"the solution's grader.check cells did not run for {late}: "
                           f"{_first_error(nb)}")
    for scores in graded.values():
        for result in scores.values():
            result.pop("at_end", None)
    order = {question: rank for rank, (_, question) in enumerate(_checked_questions(cells[SOLUTION]))}
    return {name: dict(sorted(scores.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))
            for name, scores in graded.items()}


def _first_error(nb) -> str:
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                return f"{output.ename}: {output.evalue} (in a cell starting {cell.source[:60]!r})"
    return "no cell raised"


class Versions:
    """Kernel side: which version is running, its check results, the saved namespace."""

    def __init__(self, namespace: dict, tests_dir: str, results_path: str):
        from bookwork.grading import judge

        self.namespace, self.tests_dir, self.results_path = namespace, Path(tests_dir), Path(results_path)
        self.checks = judge.load_checks({p.name: p.read_text() for p in sorted(self.tests_dir.glob("*.py"))})
        self.results: dict[str, dict[str, dict]] = {}
        self.version = SOLUTION
        self.saved: dict | None = None

    def start(self, version: str) -> None:
        """Run ``version`` from here on: the checks the solution ran so far (the cells
        before this one, which the version shares) are its results too."""
        self.version = version
        self.results[version] = dict(self.results.get(SOLUTION, {}))

    def check(self, question: str, at_end: bool = False) -> None:
        """Check one question against the namespace now, as the grader's judge does (once)."""
        from bookwork.grading import judge, runner

        if question in self.results[self.version] or question not in self.checks:
            return
        answers = runner.Answers(self.namespace)

        def request(message, blobs):  # the submission's side: in the grader, the sandbox, unguarded
            with judge.trusting():
                return answers.answer(message, blobs)

        result = judge.Judge(self.checks, request).check(question)
        self.results[self.version][question] = {
            "score": round(result["score"], 5), "possible": round(result["possible"], 5),
            "output": result["output"], "at_end": at_end}

    def finish(self) -> None:
        """Run the checks that no cell of this version ran, against its final state (as
        the grader does after the last cell), and write every result so far."""
        for question in self.checks:
            self.check(question, at_end=True)
        self.results_path.write_text(json.dumps(self.results))

    def save(self) -> None:
        self.saved = dict(self.namespace)

    def restore(self) -> None:
        """Put the saved names back and go on with the solution."""
        self.namespace.clear()
        self.namespace.update(self.saved)
        self.version = SOLUTION

    def same_as_solution(self, versions: list[str]) -> None:
        """Versions whose code is the solution's get the solution's results."""
        for version in versions:
            self.results[version] = self.results[SOLUTION]
        self.results_path.write_text(json.dumps(self.results))
