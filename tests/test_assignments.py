"""The lessons as graded assignments (:mod:`bookwork.assignments`, otter-grader's format).

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

A lesson's versions are graded in one kernel (the ``graded`` fixture,
:mod:`tests.support.assignments`); the grader itself, which grades each submission in a
sandbox, is tested in tests/grading/, where submissions written to cheat are graded too.
"""
from __future__ import annotations

import re
import shutil
import zipfile

import nbformat
import pytest
import yaml

from bookwork import assignments, myst_markdown
from bookwork.book_targets import book_targets, page_titles
from bookwork.grading.classroom import failure_messages
from tests.support.assignments import ROOT, honest_variants, wrong_answers

LESSONS = assignments.all_lessons()


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
        messages = failure_messages(s["output"])
        assert messages, f"{name}: no failure message"
        for message in messages:
            assert message.startswith("CheckFailed: "), f"{name}: not a check's message: {message}"


def public_cases(lesson: str, question: str) -> list[int]:
    """The numbers otter gives the public checks of ``question`` ("<question> - 2 result"):
    its test cells count from 1 in the notebook's order, and a hidden one starts with # HIDDEN."""
    nb = nbformat.read(ROOT / "lessons" / f"{lesson}.ipynb", as_version=4)
    inside, current, numbers, count = False, None, [], 0
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
    assert assignments.questions_table() in page, "regenerate: python -m bookwork.assignments questions --markdown"


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
    out = myst_markdown.myst_to_markdown(text, myst_markdown.labels(text))
    assert out.startswith("# 3. RoPE")
    assert "**Definition: Rotary position embedding**\n\nTurn pairs." in out
    assert "[su2024roformer] and Rotary position embedding," in out and "`companion.rope.rotate`" in out
    assert "figure 2" in out and "<chapter" not in out
    assert "chapter 0 and references; a KV cache and wavelengths." in out
    assert "### Exercise: Coding: RoPE" in out and ":label:" not in out and "```" not in out and "{" not in out


def test_references_read_as_on_the_site():
    """A cross-reference in a student notebook reads as the site shows it: a figure by its
    number, a chapter in parentheses by its title, a page by its title; and the check that
    generating runs (:func:`bookwork.myst_markdown.leftovers`) sees each way it once read."""
    targets = book_targets(LESSONS)
    references = {label: target.reference() for label, target in targets.items()}
    text = ("**You need**: chapter 0 ({doc}`00_why_positions`). {numref}`fig-06-context-extension`'s criterion; "
            "Chapter 10 ({ref}`chapter-10`) reads them. Full entries are on the {doc}`../book/references` page.")
    out = myst_markdown.myst_to_markdown(text, references, documents=page_titles())
    titles = page_titles()
    assert out == (f"**You need**: chapter 0 ({titles['00_why_positions']}). "
                   f"{references['fig-06-context-extension']}'s criterion; "
                   f"Chapter 10 ({titles['10_what_your_model_runs']}) reads them. "
                   "Full entries are on the References page.")
    assert references["fig-06-context-extension"].startswith("Figure 6.")
    assert myst_markdown.leftovers(out, targets) == []
    for slip in ("chapter 0 (chapter 0): the softmax", "fig-06-context-extension's criterion",
                 "Full entries are on the the references page", "Chapter 10 (Chapter 10 (What your model runs))",
                 "a role left as it was, {numref}`fig-06-context-extension`"):
        assert myst_markdown.leftovers(slip, targets), slip
    for clean in ("for $N = 3$ and $N = 4$ and the layer", "`fig-06-context-extension` as code", "the conventions"):
        assert myst_markdown.leftovers(clean, targets) == [], clean


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_student_notebook_reads_cleanly(path, generated):
    """No markup of the book is left in a student notebook's text: no role, label or
    directive, no doubled word, no reference repeated in its own parentheses."""
    targets = book_targets(LESSONS)
    nb = nbformat.read(generated[path.stem] / "student" / path.name, as_version=4)
    left = {index: myst_markdown.leftovers(cell.source, targets) for index, cell in enumerate(nb.cells)
            if cell.cell_type == "markdown"}
    assert {index: found for index, found in left.items() if found} == {}
    # a folded check of a worked solution's numbers asks for nothing: it says so, with no '...' to fill in
    emptied = [index for index, cell in enumerate(nb.cells) if cell.cell_type == "code"
               and cell.source.lstrip().startswith("# Check:") and "..." in cell.source.split()]
    assert emptied == []


def test_markers_are_checked(tmp_path):
    nb = nbformat.read(ROOT / "lessons" / "03_rope.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "raw" and "END QUESTION" in c.source)
    del nb.cells[index]
    broken = tmp_path / "03_rope.ipynb"
    nbformat.write(nb, broken)
    with pytest.raises(ValueError, match="BEGIN QUESTION inside another question|never ended"):
        assignments.read_lesson(broken)


def test_command_line_generates_and_lists(tmp_path, capsys):
    """The commands of the instructors' page: generate, questions."""
    assert assignments.main(["generate", str(ROOT / "lessons" / "03_rope.ipynb"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "03_rope" / "03_rope-student.zip").is_file()
    assert (tmp_path / "03_rope" / "autograder" / "autograder.zip").is_file()
    assert assignments.main(["questions"]) == 0
    assert "ex-03-rotate" in capsys.readouterr().out


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
