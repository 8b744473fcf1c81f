"""The lessons as graded assignments (tools/assignments.py, otter-grader's format).

For every lesson: the question markers are well formed and match the exercises; the
student copy holds no solution text and no hidden check; every check reads only its
question's answers from the notebook; the solution notebook scores full marks; the
untouched student notebook scores zero on every autograded question, with a check's
message (not a crash) for each; and each deliberately wrong answer listed in
tests/wrong_answers/<lesson>.json, put alone into the solution, loses exactly the
points of its question, with the expected message, and no other question loses points
(a case marked ``"public": true`` is a mistake the student's own ``grader.check`` must
already catch: one of the question's public checks fails). The same file lists honest
variants (``"honest": true``): other correct answers, at the precision the question
asks for (a value rounded to the figures it states, float32 where it allows float32, a
torch version of NumPy code), which must keep full marks.

A lesson's versions (solution, untouched copy, one per wrong answer) are graded with the
lesson's autograder.zip in one kernel (tests/grading_in_one_kernel.py), so the chapter
runs once, not once per version; test_grading_in_one_kernel_agrees_with_the_grader
grades the solution and the student copy of one lesson with ``grade`` as well (sandbox
and judge), and checks that both give the same points and messages. A lesson's grades
are kept in ``_build/grading-cache/`` with a hash of everything they depend on
(:func:`grading_key`) and graded again only when that changes. Submissions written to
cheat are graded in tests/test_grading_attacks.py.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import re
import shutil
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import once_per_run, processes_with
from grading_in_one_kernel import grade_versions

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("assignments", ROOT / "tools" / "assignments.py")
assignments = importlib.util.module_from_spec(spec)
sys.modules["assignments"] = assignments
spec.loader.exec_module(assignments)

LESSONS = assignments.all_lessons()
WRONG = ROOT / "tests" / "wrong_answers"


def cases(lesson: str) -> list[dict]:
    """The cases of tests/wrong_answers/<lesson>.json: wrong answers and honest variants."""
    path = WRONG / f"{lesson}.json"
    return json.loads(path.read_text()) if path.exists() else []


def wrong_answers(lesson: str) -> list[tuple[int, dict]]:
    return [(index, case) for index, case in enumerate(cases(lesson)) if not case.get("honest")]


def honest_variants(lesson: str) -> list[tuple[int, dict]]:
    return [(index, case) for index, case in enumerate(cases(lesson)) if case.get("honest")]


def public_cases(lesson: str, question: str) -> list[int]:
    """The numbers otter gives the public checks of ``question`` ("<question> - 2 result"):
    its test cells count from 1 in the notebook's order, and a hidden one starts with # HIDDEN."""
    nb = nbformat.read(ROOT / "lessons" / f"{lesson}.ipynb", as_version=4)
    inside, current, numbers = False, None, []
    for cell in nb.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and first.startswith("# BEGIN QUESTION"):
            current = yaml.safe_load("\n".join(cell.source.splitlines()[1:]))["name"]
        elif cell.cell_type == "raw" and first.startswith(("# BEGIN TESTS", "# END TESTS")):
            inside, count = first.startswith("# BEGIN"), 0
        elif inside and cell.cell_type == "code" and current == question:
            count += 1
            if not re.match(r"\s*#.*\bhidden\b", first, re.IGNORECASE):
                numbers.append(count)
    return numbers


def failed_cases(output: str, question: str) -> set[int]:
    """The numbers of the checks of ``question`` that failed, from otter's summary."""
    blocks = re.split(rf"^\s*{re.escape(question)} - (\d+) result:\s*$", output, flags=re.MULTILINE)
    return {int(number) for number, text in zip(blocks[1::2], blocks[2::2]) if "Test case failed" in text}


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
    copy, and for each wrong answer the solution with that answer alone."""
    solution = folder / "autograder" / f"{lesson}.ipynb"
    found = {"solution": nbformat.read(solution, as_version=4),
             "untouched": nbformat.read(folder / "student" / f"{lesson}.ipynb", as_version=4)}
    for index, case in enumerate(cases(lesson)):
        kind = "honest" if case.get("honest") else "wrong"
        found[f"{kind}-{index}"] = apply_edits(nbformat.read(solution, as_version=4), case["edits"])
    return found


#: Each lesson's grades, kept with a hash of everything they depend on (grading_key).
GRADES = ROOT / "_build" / "grading-cache"
#: The libraries a grading runs on: a new version of any of them grades again.
GRADING_LIBRARIES = ("otter-grader", "nbclient", "ipykernel", "numpy", "torch", "sympy", "matplotlib")


def grading_key(autograder: Path, found: dict[str, nbformat.NotebookNode]) -> str:
    """A hash of what a lesson's grades depend on: the code of every version graded, the
    autograder's checks and files, the companion package, this grading code, Python and
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
    grading = sorted((ROOT / "tools" / "grading").glob("*.py"))
    for path in sources + grading + [ROOT / "tests" / "grading_in_one_kernel.py", ROOT / "tools" / "assignments.py"]:
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


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    return Generated(tmp_path_factory.mktemp("assignments"))


@pytest.fixture(scope="session")
def graded(generated, tmp_path_factory):
    return Graded(generated, tmp_path_factory.mktemp("graded"), tmp_path_factory)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_exercise_is_a_question(path):
    lesson = assignments.read_lesson(path)
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", text)
    names = [q.name for q in lesson.questions]
    assert names == labels, "one question per exercise, named by its label, in order"
    autograded = [q for q in lesson.questions if not q.manual]
    assert autograded, "at least one autograded question"
    for q in lesson.questions:
        assert q.points > 0 and isinstance(q.minutes, int) and q.minutes > 0, q.name
        assert q.title, f"{q.name}: the question holds its exercise"
    for q in autograded:
        assert q.public_checks >= 1 and q.hidden_checks >= 1, f"{q.name}: public and hidden checks"
    for q in lesson.questions:
        if q.title.startswith(("Coding", "SymPy")):
            assert not q.manual, f"{q.name}: coding and SymPy exercises are autograded"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_student_copy_holds_no_solution(path, generated):
    lesson = assignments.read_lesson(path)
    student = generated[path.stem] / "student"
    assert assignments.find_leaks(lesson, student) == []
    nb = nbformat.read(student / path.name, as_version=4)
    text = assignments._student_files_text(student)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "# HIDDEN", "{solution", "BEGIN TESTS"):
        assert marker not in text, marker
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
    hidden_functions = re.findall(r"def (test_\w+)", "\n".join(lesson.hidden_text))
    for name in hidden_functions:
        assert name not in text, f"hidden check {name} in the student copy"
    for q in lesson.questions:
        if not q.manual:
            assert f'grader.check("{q.name}")' in text, q.name
    assert (student / "tests").is_dir()
    with zipfile.ZipFile(generated[path.stem] / f"{path.stem}-student.zip") as archive:
        handed_out = {name: archive.read(name) for name in archive.namelist()}
    expected = {f"{path.stem}/{file.relative_to(student)}": file.read_bytes()
                for file in student.rglob("*") if file.is_file()}
    assert handed_out == expected, "the zip handed out is the student folder, byte for byte"


def test_leak_search_finds_a_planted_solution(generated, tmp_path):
    """The search is not vacuous: a solution line copied into a student notebook is found."""
    path = ROOT / "lessons" / "03_rope.ipynb"
    lesson = assignments.read_lesson(path)
    student = tmp_path / "student"
    shutil.copytree(generated["03_rope"] / "student", student)
    nb = nbformat.read(student / path.name, as_version=4)
    planted = next(line for line in lesson.solution_text if "np.cos(phi)" in line)
    nb.cells[-1].source += "\n" + planted
    nbformat.write(nb, student / path.name)
    assert planted in assignments.find_leaks(lesson, student)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_solutions_score_full_marks(path, graded):
    lesson = assignments.read_lesson(path)
    scores = graded[path.stem]["solution"]
    assert list(scores) == [q.name for q in lesson.questions if not q.manual], "questions in the lesson's order"
    for name, s in scores.items():
        assert s["score"] == s["possible"], f"{name}: {s['output']}"
    expected = {q.name: q.points for q in lesson.questions if not q.manual}
    assert {n: s["possible"] for n, s in scores.items()} == expected


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_untouched_student_notebook_scores_zero_with_messages(path, graded):
    scores = graded[path.stem]["untouched"]
    for name, s in scores.items():
        assert s["score"] == 0, f"{name} gives points for an empty answer"
        messages = assignments.failure_messages(s["output"])
        assert messages, f"{name}: no failure message"
        for message in messages:
            assert message.startswith("CheckFailed: "), f"{name}: not a check's message: {message}"


CASES = [pytest.param(path.stem, index, case, id=f"{path.stem}-{case['question']}")
         for path in LESSONS for index, case in wrong_answers(path.stem)]
HONEST = [pytest.param(path.stem, index, case, id=f"{path.stem}-{case['question']}")
          for path in LESSONS for index, case in honest_variants(path.stem)]


@pytest.mark.parametrize("lesson,index,case", CASES)
def test_wrong_answer_loses_its_points(lesson, index, case, graded):
    scores = graded[lesson][f"wrong-{index}"]
    assert case["question"] in scores, f"{case['question']} was not graded"
    for name, s in scores.items():
        if name == case["question"]:
            assert s["score"] == 0, f"{name}: the wrong answer kept points"
        else:
            assert s["score"] == s["possible"], f"{name} lost points for another question's mistake"
    output = scores[case["question"]]["output"]
    assert case["message"] in output, f"expected {case['message']!r} in:\n{output}"
    if case.get("public"):
        public = public_cases(lesson, case["question"])
        assert public and failed_cases(output, case["question"]) & set(public), \
            f"no public check of {case['question']} catches it (checks {public} are public):\n{output}"


@pytest.mark.parametrize("lesson,index,case", HONEST)
def test_honest_variant_keeps_full_marks(lesson, index, case, graded):
    scores = graded[lesson][f"honest-{index}"]
    assert case["question"] in scores, f"{case['question']} was not graded"
    for name, s in scores.items():
        assert s["score"] == s["possible"], f"{name}: an honest variant ({case['why']}) lost points:\n{s['output']}"


def test_every_lesson_has_wrong_answers():
    for path in LESSONS:
        wrong = [case for _, case in wrong_answers(path.stem)]
        assert wrong, f"tests/wrong_answers/{path.stem}.json lists no wrong answer"
        autograded = {q.name for q in assignments.read_lesson(path).questions if not q.manual}
        assert {c["question"] for c in wrong} == autograded, "one or more wrong answers for every autograded question"
        for _, case in honest_variants(path.stem):
            assert case["question"] in autograded and "message" not in case, case["why"]


def test_public_and_failed_checks_are_read_from_the_lesson_and_the_output():
    """The two readers behind ``"public": true`` are not vacuous: chapter 4's ex-04-mean has
    one public check and one hidden one, and a failure is found in otter's summary."""
    assert public_cases("04_alibi", "ex-04-mean") == [1]
    output = ("ex-04-mean results:\n    ex-04-mean - 1 result:\n        ✅ Test case passed\n\n"
              "    ex-04-mean - 2 result:\n        ❌ Test case failed\n        Error at line 3\n")
    assert failed_cases(output, "ex-04-mean") == {2}


def test_instructors_page_lists_every_question():
    page = (ROOT / "book" / "instructors.md").read_text()
    assert assignments.questions_table() in page, "regenerate: python tools/assignments.py questions --markdown"


def test_colab_variant_fetches_checks_from_the_web(tmp_path):
    target = assignments.generate(ROOT / "lessons" / "03_rope.ipynb", tmp_path, tests_url="https://example.org/03/tests/")
    nb = nbformat.read(target / "student" / "03_rope.ipynb", as_version=4)
    sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    assert "otter-grader==" in sources[0], "the setup cell installs otter on Colab"
    assert 'otter.Notebook(tests_url_prefix="https://example.org/03/tests/")' in sources[1]


def test_markdown_for_notebook_front_ends():
    text = ("(chapter-03)=\n# 3. RoPE\n\n```{prf:definition} Rotary position embedding\n:label: def-03-rope\n\n"
            "Turn pairs.\n```\n\nSee {cite:p}`su2024roformer` and {prf:ref}`def-03-rope`, "
            "{py:func}`companion.rope.rotate`, {ref}`figure 2 <chapter-03-try-it>`, {doc}`00_why_positions` "
            "and {doc}`../book/references`; a {term}`KV cache` and {term}`wavelengths <Wavelength>`.\n\n"
            "```{exercise} Coding: RoPE\n:label: ex-03-rotate\n\nWrite it.\n```\n")
    out = assignments.myst_to_markdown(text, assignments.labels(text))
    assert out.startswith("# 3. RoPE")
    assert "**Definition: Rotary position embedding**\n\nTurn pairs." in out
    assert "[su2024roformer] and Rotary position embedding," in out and "`companion.rope.rotate`" in out
    assert "figure 2" in out and "<chapter" not in out
    assert "chapter 0 and the references page of the book; a KV cache and wavelengths." in out
    assert "### Exercise: Coding: RoPE" in out and ":label:" not in out and "```" not in out and "{" not in out


def test_markers_are_checked(tmp_path):
    nb = nbformat.read(ROOT / "lessons" / "03_rope.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "raw" and "END QUESTION" in c.source)
    del nb.cells[index]
    broken = tmp_path / "03_rope.ipynb"
    nbformat.write(nb, broken)
    with pytest.raises(ValueError, match="BEGIN QUESTION inside another question|never ended"):
        assignments.read_lesson(broken)


def test_command_line_generates_lists_and_grades(tmp_path, graded, monkeypatch, capsys):
    """The commands of the instructors' page: generate, questions, grade (points per
    question, messages, the review, a CSV written at once with its SHA-256 printed)."""
    assert assignments.main(["generate", str(ROOT / "lessons" / "03_rope.ipynb"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "03_rope" / "03_rope-student.zip").is_file()
    assert (tmp_path / "03_rope" / "autograder" / "autograder.zip").is_file()
    assert assignments.main(["questions"]) == 0
    assert "ex-03-rotate" in capsys.readouterr().out
    results = {Path("right.ipynb"): assignments.grading.Graded(graded["03_rope"]["solution"]),
               Path("=cmd|calc.ipynb"): assignments.grading.Graded(graded["03_rope"]["untouched"],
                                                                   ["code cell 3 ('x'): calls exec()"])}
    monkeypatch.setattr(assignments, "grade_all", lambda *args, **kwargs: results)
    csv_path = tmp_path / "grades.csv"
    assert assignments.main(["grade", "autograder.zip", "right.ipynb", "=cmd|calc.ipynb",
                             "--csv", str(csv_path)]) == 0
    out = capsys.readouterr().out
    assert "right.ipynb: 12 / 12" in out and "=cmd|calc.ipynb: 0 / 12" in out
    assert "CheckFailed: rope_rotate(x, positions): returned None" in out
    assert "review: 1 finding(s) to read (they do not change the grade)\n      code cell 3 ('x'): calls exec()" in out
    data = csv_path.read_bytes()
    assert f"wrote {csv_path} (SHA-256 {hashlib.sha256(data).hexdigest()})" in out
    rows = data.decode().splitlines()
    assert rows[0] == "submission,ex-03-rotate,ex-03-scaling,ex-03-convert,ex-03-base,ex-03-aim,total,review"
    assert rows[1] == "right.ipynb,3.0,2.0,3.0,2.0,2.0,12.0,0"
    assert rows[2] == "'=cmd|calc.ipynb,0.0,0.0,0.0,0.0,0.0,0.0,1", "a file name is not a spreadsheet formula"


def test_grading_goes_on_past_submissions_it_cannot_grade(tmp_path, generated, graded, monkeypatch, capsys):
    """A class's batch: a file that is not a notebook, another chapter's notebook and an
    endless loop are each reported, the good submission is graded, the CSV has a row for
    every file, and the command exits with status 1."""
    folder = generated["03_rope"]
    (tmp_path / "corrupt.ipynb").write_text("not a notebook")
    nbformat.write(nbformat.read(generated["04_alibi"] / "student" / "04_alibi.ipynb", as_version=4),
                   tmp_path / "other-chapter.ipynb")
    loop = nbformat.read(folder / "student" / "03_rope.ipynb", as_version=4)
    # It waits rather than spins, so that the other tests keep the cores meanwhile; a
    # process it starts shows whether its sandbox outlives the run.
    loop.cells.insert(3, nbformat.v4.new_code_cell(
        'import subprocess, time\nsubprocess.Popen(["sleep", "86398.75"])\nwhile True:\n    time.sleep(0.1)'))
    nbformat.write(loop, tmp_path / "loop.ipynb")
    real_grade = assignments.grade
    monkeypatch.setattr(assignments, "grade", lambda autograder, submission, *args: (
        assignments.grading.Graded(graded["03_rope"]["solution"]) if Path(submission).name == "right.ipynb"
        else real_grade(autograder, submission, *args)))
    names = ["corrupt.ipynb", "other-chapter.ipynb", "loop.ipynb", "right.ipynb"]
    csv_path = tmp_path / "grades.csv"
    status = assignments.main(["grade", str(folder / "autograder" / "autograder.zip"),
                               *[str(tmp_path / n) for n in names], "--csv", str(csv_path),
                               "--timeout", "10", "--jobs", "3"])
    assert status == 1
    out = capsys.readouterr().out
    assert "corrupt.ipynb: could not grade: refused: not a notebook: the file is not JSON" in out
    assert "other-chapter.ipynb: could not grade: refused: this notebook is for assignment '04_alibi', " \
           "not '03_rope'" in out
    assert "loop.ipynb: could not grade: still running after 10 s" in out
    time.sleep(1)  # the kernel ends a sandbox's processes with the first of them
    assert processes_with("86398.75") == [], "the endless loop's sandbox outlived its run"
    assert "right.ipynb: 12 / 12" in out
    rows = csv_path.read_text().splitlines()
    assert rows[0] == "submission,ex-03-rotate,ex-03-scaling,ex-03-convert,ex-03-base,ex-03-aim,total,review,error"
    assert [row.split(",")[0].rsplit("/", 1)[-1] for row in rows[1:]] == names
    assert rows[4].endswith("right.ipynb,3.0,2.0,3.0,2.0,2.0,12.0,0,")



AGREEMENT_LESSON = "01_absolute_positions"


def test_grading_in_one_kernel_agrees_with_the_grader(generated, graded):
    """The grades the tests use (every version of a lesson in one kernel) are those that
    ``grade`` gives each notebook alone, run in the sandbox and checked by the judge:
    same questions, points and messages."""
    folder = generated[AGREEMENT_LESSON]
    notebooks = {"solution": folder / "autograder" / f"{AGREEMENT_LESSON}.ipynb",
                 "untouched": folder / "student" / f"{AGREEMENT_LESSON}.ipynb"}
    alone = assignments.grade_all(folder / "autograder" / "autograder.zip", list(notebooks.values()), jobs=2)
    for version, notebook in notebooks.items():
        assert not isinstance(alone[notebook], Exception), alone[notebook]
        assert alone[notebook].scores == graded[AGREEMENT_LESSON][version], version
        assert alone[notebook].review == [], f"{version}: {alone[notebook].review}"


def test_questions_keep_the_notebooks_order(generated):
    """The grader lists a chapter's questions in the order of the distributed notebook,
    whatever order a submission has."""
    autograder = assignments.grading.Autograder.load(generated["04_alibi"] / "autograder" / "autograder.zip")
    assert autograder.order == ["ex-04-slopes", "ex-04-mean", "ex-04-twelve"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_checks_build_their_own_inputs(path):
    """A check reads only its question's answers from the submission: every parameter of
    a check is a name the student's lines of that question define. A check that read a
    question's inputs (a symbol, a matrix, a table defined in the chapter) from the
    notebook would grade against whatever the submission redefined them to."""
    for question in assignments.read_lesson(path).questions:
        if question.manual:
            continue
        assert question.answer_names, f"{question.name}: no answer names found"
        foreign = [name for name in question.check_parameters if name not in question.answer_names]
        assert not foreign, (f"{question.name}: the checks read {foreign} from the notebook, which the "
                             f"student's lines do not define; build them inside the check")


def test_answer_names_are_the_students_lines():
    """The rule above is not vacuous: given lines are not answers, a student's are."""
    source = ('lam = sp.Symbol("lambda")\n\ndef prefactor(m, n):\n    return lam ** (m + n)  # SOLUTION\n'
              "table = {}\nfor k in (1, 2):\n    # BEGIN SOLUTION\n    table[k] = k\n    # END SOLUTION\n")
    names = assignments.answer_names(source)
    assert {"prefactor", "table"} <= names and "lam" not in names
    assert assignments.check_parameters("def test_x(prefactor, lam):\n    pass\n") == ["prefactor", "lam"]
