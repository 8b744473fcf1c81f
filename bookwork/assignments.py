"""Turn the lessons into graded assignments; list their questions.

The exercises of every lesson are marked up in otter-grader's notebook format
(https://otter-grader.readthedocs.io, "Otter Assign"): raw cells ``# BEGIN QUESTION``
(with ``name``, ``points`` and, for questions graded by a person, ``manual: true``),
``# BEGIN SOLUTION`` / ``# END SOLUTION`` around the worked solution (and
``# BEGIN SOLUTION`` / ``# END SOLUTION`` comments inside code cells around the lines a
student writes), ``# BEGIN TESTS`` / ``# END TESTS`` around the checks (a check whose
first line is ``# HIDDEN`` is kept out of the student's copy), and ``# END QUESTION``.
The book hides every marker and check cell (tag ``remove-cell``), so the same notebook is
a chapter of the book and the master copy of an assignment. A question may also carry
``minutes:`` (the time a student needs), which this tool lists for instructors.

    python -m bookwork.assignments generate [LESSON ...] [--out DIR] [--tests-url URL]
    python -m bookwork.assignments questions [--markdown]

``generate`` writes, for each lesson, ``DIR/<lesson>/student/`` (the notebook with
solutions replaced by ``...``, hidden checks removed and no outputs, plus the public
checks in ``tests/``), ``DIR/<lesson>/<lesson>-student.zip`` (that folder, to hand out),
and ``DIR/<lesson>/autograder/`` (the solution notebook and ``autograder.zip``, which
grades a submission with every check, hidden ones included). It refuses to write a
student copy that still contains a line of a solution or of a hidden check.
``--tests-url`` makes the student notebooks fetch their public checks from a web
folder (where ``student/tests`` has been published), which is what Google Colab needs;
without it they read ``tests/`` beside the notebook (Jupyter, JupyterHub, Binder).

The submissions are graded with the autograder by :mod:`bookwork.grading`
(``python -m bookwork.grading AUTOGRADER.zip SUBMISSION ...``).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

from bookwork import ROOT
from bookwork.book_targets import book_targets, page_titles
from bookwork.grading import review
from bookwork.myst_markdown import leftovers, myst_to_markdown

LESSONS = ROOT / "lessons"
DEFAULT_OUT = ROOT / "_build" / "assignments"
OTTER_VERSION = "7.0.0"
#: Lesson folders a notebook reads, copied beside it (none: the lab's results are package data).
SUPPORT_FOLDERS: tuple[str, ...] = ()

BEGIN = re.compile(r"#\s+begin\s+(question|solution|tests|prompt)\b", re.IGNORECASE)
END = re.compile(r"#\s+end\s+(question|solution|tests|prompt)\b", re.IGNORECASE)


# --- reading the markers --------------------------------------------------------------

@dataclass
class Question:
    """One question of a lesson, as its ``# BEGIN QUESTION`` cell and checks declare it."""

    name: str
    points: float
    manual: bool = False
    minutes: int | None = None
    public_checks: int = 0
    hidden_checks: int = 0
    title: str = ""
    answer_names: set[str] = field(default_factory=set)  # names bound by the lines a student writes
    check_parameters: list[str] = field(default_factory=list)  # the names its checks take

    @property
    def kind(self) -> str:
        return "written" if self.manual else "autograded"


@dataclass
class Lesson:
    """A lesson notebook read as an assignment: its questions and its solution text."""

    path: Path
    questions: list[Question] = field(default_factory=list)
    solution_text: list[str] = field(default_factory=list)  # solution code lines and prose
    hidden_text: list[str] = field(default_factory=list)  # lines of hidden checks
    other_text: str = ""  # everything a student may see

    @property
    def name(self) -> str:
        return self.path.stem


def _marker(cell) -> tuple[str, str] | None:
    """('begin' | 'end', block type) for a raw marker cell, else None."""
    if cell.cell_type != "raw" or not cell.source.strip():
        return None
    first = cell.source.strip().splitlines()[0]
    for kind, pattern in (("begin", BEGIN), ("end", END)):
        match = pattern.match(first)
        if match:
            return kind, match.group(1).lower()
    return None


def _solution_lines(source: str) -> tuple[list[str], list[str]]:
    """Split code into (lines a student must write, lines a student sees)."""
    hidden, shown, inside = [], [], False
    for line in source.splitlines():
        stripped = line.rstrip()
        if stripped.endswith("# END SOLUTION"):
            inside = False
        elif re.match(r"\s*# BEGIN SOLUTION", line):
            inside = True
        elif inside or stripped.endswith("# SOLUTION"):
            hidden.append(line.replace("# SOLUTION", "").strip())
        else:
            shown.append(line)
    return hidden, shown


def _bound_names(statement) -> set[str]:
    """The names a statement binds or changes (``x = ``, ``x[i] = ``, ``def x``, ``for x in``)."""
    targets = []
    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    names = set()
    for target in targets:
        for node in ast.walk(target):
            while isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def answer_names(source: str) -> set[str]:
    """The names a student defines in a code cell of a solution: those bound or changed by
    a statement that holds one of the lines the student writes."""
    written, inside = set(), False
    for number, line in enumerate(source.splitlines(), start=1):
        if line.rstrip().endswith("# END SOLUTION"):
            inside = False
        elif re.match(r"\s*# BEGIN SOLUTION", line):
            inside = True
        elif inside or line.rstrip().endswith("# SOLUTION"):
            written.add(number)
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and written & set(range(node.lineno, node.end_lineno + 1)):
            names |= _bound_names(node)
    return names


def check_parameters(source: str) -> list[str]:
    """The parameters of the check functions a test cell defines (the names they read)."""
    return [arg.arg for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)
            for arg in node.args.args]


def read_lesson(path: Path) -> Lesson:
    """Parse the question markers of a lesson and check that they are well formed."""
    nb = nbformat.read(path, as_version=4)
    lesson = Lesson(Path(path))
    stack: list[str] = []
    visible: list[str] = []
    question: Question | None = None
    for index, cell in enumerate(nb.cells):
        where = f"{Path(path).name}, cell {index}"
        marker = _marker(cell)
        if marker:
            kind, block = marker
            if cell.metadata.get("tags") != ["remove-cell"]:
                raise ValueError(f"{where}: marker cells must be tagged remove-cell (hidden in the book)")
            if kind == "begin":
                if block == "question":
                    if stack:
                        raise ValueError(f"{where}: BEGIN QUESTION inside another question")
                    config = yaml.safe_load("\n".join(cell.source.splitlines()[1:])) or {}
                    if "name" not in config or "points" not in config:
                        raise ValueError(f"{where}: a question needs a name and points")
                    question = Question(str(config["name"]), float(config["points"]),
                                        bool(config.get("manual", False)), config.get("minutes"))
                    lesson.questions.append(question)
                elif not stack:
                    raise ValueError(f"{where}: BEGIN {block.upper()} outside a question")
                stack.append(block)
            else:
                if not stack or stack[-1] != block:
                    raise ValueError(f"{where}: END {block.upper()} without a matching BEGIN")
                stack.pop()
                if block == "question":
                    question = None
            continue
        block = stack[-1] if stack else None
        if block == "tests":
            if cell.cell_type != "code":
                raise ValueError(f"{where}: only code cells may sit between BEGIN and END TESTS")
            if cell.metadata.get("tags") != ["remove-cell"]:
                raise ValueError(f"{where}: check cells must be tagged remove-cell (hidden in the book)")
            question.check_parameters += [n for n in check_parameters(cell.source)
                                          if n not in question.check_parameters]
            if re.match(r"\s*#.*\bhidden\b", cell.source.splitlines()[0], re.IGNORECASE):
                question.hidden_checks += 1
                lesson.hidden_text += [line.strip() for line in cell.source.splitlines()]
            else:
                question.public_checks += 1
                visible.append(cell.source)
        elif block == "solution":
            if cell.cell_type == "code":
                if not re.search(r"# BEGIN SOLUTION|# SOLUTION\s*$", cell.source, re.MULTILINE):
                    raise ValueError(
                        f"{where}: a code cell of a solution has no solution comments, so the student "
                        "would get it whole. Put the lines the student writes between '# BEGIN "
                        "SOLUTION' and '# END SOLUTION' comments (the whole cell if the student "
                        "writes all of it), or end them with '# SOLUTION'")
                hidden, shown = _solution_lines(cell.source)
                question.answer_names |= answer_names(cell.source)
                lesson.solution_text += hidden
                visible += shown
            else:
                lesson.solution_text += [line.strip() for line in cell.source.splitlines()]
        else:
            if cell.cell_type == "code" and "# BEGIN SOLUTION" in cell.source:
                raise ValueError(f"{where}: a solution region outside a BEGIN/END SOLUTION block")
            visible.append(cell.source)
            if question is not None and cell.cell_type == "markdown" and not question.title:
                title = re.search(r"```\{exercise\} ([^\n]*)", cell.source)
                question.title = title.group(1).strip() if title else ""
    if stack:
        raise ValueError(f"{Path(path).name}: BEGIN {stack[-1].upper()} is never ended")
    lesson.other_text = "\n".join(visible)
    return lesson


# --- the master notebook otter-assign reads ---------------------------------------------

def _assignment_config(name: str, tests_url: str | None, files: list[str]) -> str:
    config = {
        "name": name,
        "init_cell": False,  # ours goes after the setup cell, which installs otter on Colab
        "check_all_cell": True,
        "export_cell": {"pdf": False, "run_tests": True},
        "run_tests": False,
        "solutions_pdf": False,
        "show_question_points": True,
        "requirements": "requirements.txt",
        "tests": {"files": True, "ok_format": False},
    }
    if tests_url:
        config["runs_on"] = "colab"
        config["tests"]["url_prefix"] = tests_url
    if files:
        config["files"] = files
    return "# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False)


def _init_cell_source(notebook_name: str, tests_url: str | None) -> str:
    target = f'tests_url_prefix="{tests_url}"' if tests_url else f'"{notebook_name}"'
    return ("# Checks: grader.check(\"<question>\") runs a question's public checks.\n"
            "import otter\n"
            f"grader = otter.Notebook({target})")


OTTER_ON_COLAB = f'''

# Assignments: the checks run with otter-grader.
if "google.colab" in sys.modules and importlib.util.find_spec("otter") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "otter-grader=={OTTER_VERSION}"])'''


def master_notebook(path: Path, tests_url: str | None = None):
    """The lesson with an assignment config cell and an otter init cell added."""
    nb = nbformat.read(path, as_version=4)
    setup = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")
    nb.cells[setup].source += OTTER_ON_COLAB
    init = nbformat.v4.new_code_cell(_init_cell_source(path.name, tests_url))
    nb.cells.insert(setup + 1, init)
    text = "\n".join(cell.source for cell in nb.cells)
    files = [folder for folder in SUPPORT_FOLDERS if folder in text and (path.parent / folder).is_dir()]
    nb.cells.insert(0, nbformat.v4.new_raw_cell(_assignment_config(path.stem, tests_url, files)))
    return nb


def requirements() -> str:
    """What a grading machine (or a course's Binder) installs: the book's package, pinned torch."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"]
    return ("--extra-index-url https://download.pytorch.org/whl/cpu\n"
            "torch==2.13.0\n"
            f"companion @ git+{url}@{config['repository'].get('branch', 'main')}\n"
            f"otter-grader=={OTTER_VERSION}\n")


# --- plain Markdown for the student's notebook -------------------------------------------

def _emptied_check(cell) -> bool:
    """A folded check of a worked solution's numbers, as the student copy would get it: its
    ``# Check:`` comment over the ``...`` left by the solution's removal, nothing to answer."""
    lines = [line.strip() for line in cell.source.splitlines() if line.strip()]
    return (cell.cell_type == "code" and bool(lines) and lines[0].startswith("# Check:")
            and "..." in lines and all(line == "..." or line.startswith("#") for line in lines))


def _student_touches(notebook: Path) -> None:
    """The student notebook's Markdown rewritten for Jupyter and Colab, cross-references
    reading as on the site (:mod:`bookwork.book_targets`), and the emptied checks of worked
    solutions saying that they ask for nothing (:func:`_emptied_check`); ValueError naming
    what a reader would still see of the markup (:func:`bookwork.myst_markdown.leftovers`)."""
    targets = book_targets(all_lessons())
    references = {label: target.reference() for label, target in targets.items()}
    numbers = {label: target.number for label, target in targets.items()}
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if _emptied_check(cell):  # kept, so that the cells still line up with the solution's
            cell.source = cell.source.split("\n", 1)[0] + "\n# (run on the worked solution: nothing to write here)"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = myst_to_markdown(cell.source, references, numbers=numbers, documents=page_titles())
            left = leftovers(cell.source, targets)
            if left:
                raise ValueError(f"{notebook.name}: the student notebook would show markup: {left[:3]} in\n"
                                 f"{cell.source[:300]}")
    nbformat.write(nb, notebook)


# --- generating --------------------------------------------------------------------------

def _student_files_text(student_dir: Path) -> str:
    """Everything a student receives, as text: cell sources, outputs, metadata, check files."""
    parts = []
    for file in sorted(student_dir.rglob("*")):
        if file.suffix == ".ipynb":
            nb = json.loads(file.read_text())
            parts.append(json.dumps(nb.get("metadata", {}), ensure_ascii=False))
            for cell in nb["cells"]:
                source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                parts += [source, json.dumps(cell.get("metadata", {}), ensure_ascii=False),
                          json.dumps(cell.get("outputs", []), ensure_ascii=False)]
        elif file.suffix in (".py", ".txt", ".json", ".yml", ".md"):
            parts.append(file.read_text())
    return "\n".join(parts)


def find_leaks(lesson: Lesson, student_dir: Path) -> list[str]:
    """Lines of solutions or hidden checks that appear in a student folder.

    Lines also found in what students may see (the chapter's text and the code they are
    given), and lines too short to identify a solution (``return out``), are not counted.
    """
    text = _student_files_text(student_dir)
    leaks = []
    for line in dict.fromkeys(lesson.solution_text + lesson.hidden_text):
        if len(line) < 12 or line.startswith(("```", ":class:", "#", '"""')) or line in lesson.other_text:
            continue
        if line in text:
            leaks.append(line)
    return leaks


def _quietly(function, *args, **kwargs):
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        return function(*args, **kwargs)


def generate(path: Path, out_dir: Path = DEFAULT_OUT, tests_url: str | None = None) -> Path:
    """Write the student folder, its zip and the autograder of one lesson; return its folder."""
    from otter.assign import main as otter_assign

    path = Path(path).resolve()
    lesson = read_lesson(path)
    if not any(not q.manual for q in lesson.questions):
        raise ValueError(f"{path.name} has no autograded question")
    target = Path(out_dir).resolve() / path.stem
    shutil.rmtree(target, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        master = Path(tmp) / path.name
        nbformat.write(master_notebook(path, tests_url), master)
        (Path(tmp) / "requirements.txt").write_text(requirements())
        for folder in SUPPORT_FOLDERS:
            if (path.parent / folder).is_dir() and folder in master.read_text():
                shutil.copytree(path.parent / folder, Path(tmp) / folder)
        _quietly(otter_assign, str(master), str(Path(tmp) / "dist"), no_run_tests=True, no_pdfs=True)
        shutil.copytree(Path(tmp) / "dist", target)
    student, autograder = target / "student", target / "autograder"
    _student_touches(student / path.name)
    (student / "requirements.txt").write_text(requirements())
    zips = list(autograder.glob("*-autograder_*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"expected one autograder zip in {autograder}, found {zips}")
    zips[0].rename(autograder / "autograder.zip")
    handed_out = nbformat.read(student / path.name, as_version=4)
    cells = [(cell.source, "otter_answer_cell" in cell.metadata.get("tags", []))
             for cell in handed_out.cells if cell.cell_type == "code"]
    with zipfile.ZipFile(autograder / "autograder.zip", "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(review.DISTRIBUTED, json.dumps(review.distributed_cells(cells)))
    leaks = find_leaks(lesson, student)
    if leaks:
        shutil.rmtree(student)
        raise RuntimeError(f"{path.name}: the student copy would contain solution text: {leaks[:3]}")
    with zipfile.ZipFile(target / f"{path.stem}-student.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(student.rglob("*")):
            if file.is_file():
                archive.write(file, Path(path.stem) / file.relative_to(student))
    return target


# --- listing -----------------------------------------------------------------------------

def all_lessons() -> list[Path]:
    return sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))


def questions_table() -> str:
    """The questions of every lesson as a Markdown table (points, kind, minutes)."""
    rows = ["| Chapter | Question | Kind | Points | Minutes |", "| --- | --- | --- | ---: | ---: |"]
    for path in all_lessons():
        lesson = read_lesson(path)
        for q in lesson.questions:
            rows.append(f"| {path.stem[:2]} | `{q.name}` {q.title} | {q.kind} | {q.points:g} | {q.minutes or ''} |")
        auto = sum(q.points for q in lesson.questions if not q.manual)
        written = sum(q.points for q in lesson.questions if q.manual)
        minutes = sum(q.minutes or 0 for q in lesson.questions)
        rows.append(f"| {path.stem[:2]} | **total** | {auto:g} autograded + {written:g} written | "
                    f"**{auto + written:g}** | **{minutes}** |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookwork.assignments", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write student folders and autograders")
    gen.add_argument("lessons", nargs="*", type=Path, help="lesson notebooks (default: all)")
    gen.add_argument("--out", type=Path, default=DEFAULT_OUT)
    gen.add_argument("--tests-url", default=None,
                     help="web folder holding student/tests (for Google Colab)")
    qs = sub.add_parser("questions", help="list the questions of every lesson")
    qs.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)

    if args.command == "generate":
        for path in args.lessons or all_lessons():
            target = generate(path, args.out, args.tests_url)
            lesson = read_lesson(path)
            auto = sum(q.points for q in lesson.questions if not q.manual)
            print(f"{path.stem}: {len(lesson.questions)} questions ({auto:g} autograded points) -> "
                  f"{target.relative_to(Path.cwd()) if target.is_relative_to(Path.cwd()) else target}")
    elif args.markdown:
        print(questions_table())
    else:
        for path in all_lessons():
            for q in read_lesson(path).questions:
                print(f"{path.stem:28s} {q.name:28s} {q.kind:10s} {q.points:g} pt "
                      f"{q.minutes or '?'} min  ({q.public_checks} public, {q.hidden_checks} hidden checks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
