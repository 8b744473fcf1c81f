"""Turn the lessons into graded assignments, and grade submissions.

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

    python tools/assignments.py generate [LESSON ...] [--out DIR] [--tests-url URL]
    python tools/assignments.py grade AUTOGRADER.zip SUBMISSION ... [--csv FILE] [--jobs N] [--timeout S]
    python tools/assignments.py questions [--markdown]

``generate`` writes, for each lesson, ``DIR/<lesson>/student/`` (the notebook with
solutions replaced by ``...``, hidden checks removed and no outputs, plus the public
checks in ``tests/``), ``DIR/<lesson>/<lesson>-student.zip`` (that folder, to hand out),
and ``DIR/<lesson>/autograder/`` (the solution notebook and ``autograder.zip``, which
grades a submission with every check, hidden ones included). It refuses to write a
student copy that still contains a line of a solution or of a hidden check.

``grade`` runs ``otter run`` on each submission (a notebook, or the zip that the
notebook's export cell writes), prints the points per question and, with ``--csv``,
writes one row per submission. A submission that cannot be graded (not a notebook,
still running after ``--timeout`` seconds) is reported and the others are graded; the
command then exits with status 1. ``--tests-url`` makes the student
notebooks fetch their public checks from a web folder (where ``student/tests`` has been
published), which is what Google Colab needs; without it they read ``tests/`` beside
the notebook (Jupyter, JupyterHub, Binder).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tools' shared modules
from myst_markdown import labels, myst_to_markdown  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
DEFAULT_OUT = ROOT / "_build" / "assignments"
OTTER_VERSION = "7.0.0"
SUPPORT_FOLDERS: tuple[str, ...] = ()  # lesson folders a notebook reads, copied beside it (none: the lab's results are package data)

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
            if re.match(r"\s*#.*\bhidden\b", cell.source.splitlines()[0], re.IGNORECASE):
                question.hidden_checks += 1
                lesson.hidden_text += [l.strip() for l in cell.source.splitlines()]
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
                lesson.solution_text += hidden
                visible += shown
            else:
                lesson.solution_text += [l.strip() for l in cell.source.splitlines()]
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

def _student_touches(notebook: Path) -> None:
    nb = nbformat.read(notebook, as_version=4)
    titles = labels("\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown"))
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = myst_to_markdown(cell.source, titles)
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
    leaks = find_leaks(lesson, student)
    if leaks:
        shutil.rmtree(student)
        raise RuntimeError(f"{path.name}: the student copy would contain solution text: {leaks[:3]}")
    with zipfile.ZipFile(target / f"{path.stem}-student.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(student.rglob("*")):
            if file.is_file():
                archive.write(file, Path(path.stem) / file.relative_to(student))
    return target


# --- grading -----------------------------------------------------------------------------

class GradingError(RuntimeError):
    """A submission that could not be graded: not a notebook, too slow, or otter failed."""


def grade(autograder: Path, submission: Path, timeout: float | None = None) -> dict[str, dict]:
    """Grade one submission with every check; return {question: {score, possible, output}}.

    Runs ``otter run`` in a subprocess (no container: this environment must have
    companion and otter-grader installed, as ``make test`` and ``make assignments``
    arrange). ``submission`` is a notebook or the zip that ``grader.export`` writes.
    Raises GradingError when the submission cannot be graded, or when it runs longer
    than ``timeout`` seconds (an endless loop in a student's cell).
    """
    submission = Path(submission)
    if not submission.is_file():
        raise GradingError("no such file")
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "otter", "run", "--no-logo", "-a", str(Path(autograder).resolve()),
                   "-o", out, str(submission.resolve())]
        # Its own process group, so that a timeout stops the kernel that otter starts too.
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   cwd=out, start_new_session=True)
        try:
            log, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise GradingError(f"still running after {timeout:g} s (an endless loop?)") from None
        report = Path(out) / "results.json"
        if not report.exists():
            errors = re.findall(r"^(?:[\w]+\.)*(\w*(?:Error|Exception): .*)$", log, re.MULTILINE)
            reason = errors[-1] if errors else log.strip()[-300:]
            raise GradingError(f"otter could not grade it: {reason}")
        results = json.loads(report.read_text())
    scores = {}
    for test in results["tests"]:
        if "max_score" in test and test.get("name") != "Public Tests":
            scores[test["name"]] = {"score": float(test["score"]), "possible": float(test["max_score"]),
                                    "output": test.get("output", "")}
    order = _question_order(submission)
    return dict(sorted(scores.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def _question_order(submission: Path) -> dict[str, int]:
    """Question name -> rank, from the order of the grader.check cells of a submitted
    notebook (or of the notebook inside a submitted zip)."""
    try:
        if zipfile.is_zipfile(submission):
            with zipfile.ZipFile(submission) as archive:
                text = "\n".join(archive.read(name).decode("utf-8", "replace")
                                 for name in archive.namelist() if name.endswith(".ipynb"))
        else:
            text = Path(submission).read_text()
    except (OSError, UnicodeDecodeError, zipfile.BadZipFile):
        return {}
    names = re.findall(r'grader\.check\(\\?"([^"\\]+)\\?"\)', text)
    names = [name for name in dict.fromkeys(names) if not name.startswith("<")]
    return {name: rank for rank, name in enumerate(names)}


def grade_all(autograder: Path, submissions: list[Path], timeout: float | None = None,
              jobs: int = 1) -> dict[Path, dict[str, dict] | GradingError]:
    """Grade many submissions, ``jobs`` at a time; one that cannot be graded gives its
    GradingError in place of scores and does not stop the others."""

    def one(submission):
        try:
            return grade(autograder, submission, timeout)
        except GradingError as error:
            return error

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(zip(submissions, pool.map(one, submissions)))


def failure_messages(output: str) -> list[str]:
    """The messages of the failed checks in one question's grading output."""
    return [line.strip() for line in output.splitlines()
            if re.match(r"\s*[A-Za-z_.]*(Error|Failed|Exception): ", line)]


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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write student folders and autograders")
    gen.add_argument("lessons", nargs="*", type=Path, help="lesson notebooks (default: all)")
    gen.add_argument("--out", type=Path, default=DEFAULT_OUT)
    gen.add_argument("--tests-url", default=None,
                     help="web folder holding student/tests (for Google Colab)")
    gr = sub.add_parser("grade", help="grade submissions with an autograder.zip")
    gr.add_argument("autograder", type=Path)
    gr.add_argument("submissions", nargs="+", type=Path)
    gr.add_argument("--csv", type=Path, default=None)
    gr.add_argument("--timeout", type=float, default=600,
                    help="seconds one submission may run (default 600)")
    gr.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
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
    elif args.command == "grade":
        results = grade_all(args.autograder, args.submissions, args.timeout, args.jobs)
        rows, failed = [], 0
        for submission, scores in results.items():
            if isinstance(scores, GradingError):
                failed += 1
                print(f"{submission}: could not grade: {scores}")
                rows.append({"submission": str(submission), "error": str(scores)})
                continue
            total = sum(s["score"] for s in scores.values())
            possible = sum(s["possible"] for s in scores.values())
            print(f"{submission}: {total:g} / {possible:g}")
            for name, s in scores.items():
                print(f"  {name:32s} {s['score']:g} / {s['possible']:g}")
                for message in dict.fromkeys(failure_messages(s["output"])):
                    print(f"      {message}")
            rows.append({"submission": str(submission), **{n: s["score"] for n, s in scores.items()},
                         "total": total})
        if args.csv:
            fields = list(dict.fromkeys(key for row in rows for key in row if key not in ("total", "error")))
            fields += ["total"] + (["error"] if failed else [])
            with open(args.csv, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=fields)
                writer.writeheader()
                writer.writerows(rows)
        if failed:
            print(f"{failed} of {len(rows)} submissions could not be graded", file=sys.stderr)
            return 1
    else:
        if args.markdown:
            print(questions_table())
        else:
            for path in all_lessons():
                for q in read_lesson(path).questions:
                    print(f"{path.stem:28s} {q.name:28s} {q.kind:10s} {q.points:g} pt "
                          f"{q.minutes or '?'} min  ({q.public_checks} public, {q.hidden_checks} hidden checks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
