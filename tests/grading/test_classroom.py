"""The grader's command line: a class's submissions graded, reported and written as CSV.

Each submission runs in the sandbox and is checked by the judge
(:mod:`bookwork.grading.classroom`); the grades of the chapters' own versions, graded in
one kernel (the ``graded`` fixture), stand in for those the command would compute where
a test is about the report, not the grading. Submissions written to cheat are graded in
tests/grading/test_attacks.py.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import nbformat

from bookwork.grading import classroom, grade
from tests.support.runs import processes_with


def test_command_line_grades_and_writes_the_csv(tmp_path, graded, monkeypatch, capsys):
    """The command of the instructors' page: points per question, messages, the review,
    a CSV written at once with its SHA-256 printed."""
    results = {Path("right.ipynb"): grade.Graded(graded["03_rope"]["solution"]),
               Path("=cmd|calc.ipynb"): grade.Graded(graded["03_rope"]["untouched"],
                                                     ["code cell 3 ('x'): calls exec()"])}
    monkeypatch.setattr(classroom, "grade_all", lambda *args, **kwargs: results)
    csv_path = tmp_path / "grades.csv"
    assert classroom.main(["autograder.zip", "right.ipynb", "=cmd|calc.ipynb", "--csv", str(csv_path)]) == 0
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
    real_grade = grade.grade
    monkeypatch.setattr(grade, "grade", lambda autograder, submission, *args: (
        grade.Graded(graded["03_rope"]["solution"]) if Path(submission).name == "right.ipynb"
        else real_grade(autograder, submission, *args)))
    names = ["corrupt.ipynb", "other-chapter.ipynb", "loop.ipynb", "right.ipynb"]
    csv_path = tmp_path / "grades.csv"
    status = classroom.main([str(folder / "autograder" / "autograder.zip"), *[str(tmp_path / n) for n in names],
                             "--csv", str(csv_path), "--timeout", "10", "--jobs", "3"])
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



#: A chapter whose answers cross the sandbox as numbers, arrays and SymPy matrices, and whose
#: notebook runs in seconds (each of its two versions runs once more, alone, in the sandbox).
AGREEMENT_LESSON = "00_why_positions"


def test_grading_in_one_kernel_agrees_with_the_grader(generated, graded):
    """The grades the tests use (every version of a lesson in one kernel,
    :mod:`bookwork.grading.versions`) are those that the grader gives each notebook
    alone, run in the sandbox and checked by the judge: same questions, points and
    messages."""
    folder = generated[AGREEMENT_LESSON]
    notebooks = {"solution": folder / "autograder" / f"{AGREEMENT_LESSON}.ipynb",
                 "untouched": folder / "student" / f"{AGREEMENT_LESSON}.ipynb"}
    alone = classroom.grade_all(folder / "autograder" / "autograder.zip", list(notebooks.values()), jobs=2)
    for version, notebook in notebooks.items():
        assert not isinstance(alone[notebook], Exception), alone[notebook]
        assert alone[notebook].scores == graded[AGREEMENT_LESSON][version], version
        assert alone[notebook].review == [], f"{version}: {alone[notebook].review}"


def test_questions_keep_the_notebooks_order(generated):
    """The grader lists a chapter's questions in the order of the distributed notebook,
    whatever order a submission has."""
    autograder = grade.Autograder.load(generated["04_alibi"] / "autograder" / "autograder.zip")
    assert autograder.order == ["ex-04-slopes", "ex-04-mean", "ex-04-twelve"]
