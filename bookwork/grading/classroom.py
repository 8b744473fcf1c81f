"""Grade a class: every submission with one autograder, the grades on the terminal and as CSV.

    python -m bookwork.grading AUTOGRADER.zip SUBMISSION ... [--csv FILE] [--jobs N] [--timeout S]
                               [--max-size MIB] [--no-sandbox]

Each submission (a notebook, or the zip that the notebook's export cell writes) is
graded without trusting it (:func:`bookwork.grading.grade.grade`): the notebook runs in
a sandbox and the checks run in a separate process on the values it sends back as
data. The command prints the points per question, the checks' messages and a review of
code that deserves a look, and with ``--csv`` writes one row per submission (written at
once, its SHA-256 printed). A submission that cannot be graded (not a notebook, another
assignment's, still running after ``--timeout`` seconds) is reported and the others are
graded; the command then exits with status 1. Without bubblewrap it refuses to grade
(status 2), unless ``--no-sandbox`` is given for notebooks the instructor trusts.

otter-grader's own ``otter grade`` writes a CSV too, but runs the checks in the
submission's process (in a Docker container); here they never are (see
:mod:`bookwork.grading.judge`), so the class's loop, its report and its CSV are this
module's.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import io
import itertools
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import grade, intake, sandbox
from .grade import GradingError


def grade_all(autograder: Path, submissions: list[Path], timeout: float = 600, jobs: int = 1,
              use_sandbox: bool = True, max_bytes: int = intake.MAX_BYTES) -> dict[Path, grade.Graded | GradingError]:
    """Grade many submissions, ``jobs`` at a time, each within ``timeout`` seconds; one
    that cannot be graded, for whatever reason, gives a GradingError naming the cause in
    place of a grade and does not stop the others. If the autograder's file changes while
    grading, no later submission is graded. Every process the grading started has ended
    when this returns."""
    loaded = grade.Autograder.load(autograder)
    if use_sandbox:
        sandbox.check_available()
    limits = sandbox.Limits(timeout=timeout)
    runs = itertools.count()
    changed: list[GradingError] = []

    with grade.Judges(loaded, use_sandbox) as judges:
        def one(submission):
            if changed:
                return GradingError(f"not graded: {changed[0]}")
            try:
                return grade.grade(loaded, submission, judges, limits, use_sandbox, next(runs), max_bytes)
            except grade.AutograderChanged as error:
                changed.append(error)
                return error
            except GradingError as error:
                return error
            except Exception as error:  # a fault of the grader's on this file: a row for it, not a crash
                return GradingError(f"the grader failed on this file ({type(error).__name__}: {error})")

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return dict(zip(submissions, pool.map(one, submissions)))


def failure_messages(output: str) -> list[str]:
    """The messages of the failed checks in one question's grading output: in otter's
    summary, the line after a failed check's "Error at line N" and the line it quotes
    (only the first line of a message: the rest is the submission's to fill)."""
    lines = output.splitlines()
    return [lines[i + 2].strip() for i, line in enumerate(lines[:-2]) if line.strip().startswith("Error at line ")]


def spreadsheet_safe(value):
    """A CSV cell that a spreadsheet shows as text: one starting with = + - @ (or a tab or
    carriage return) would be read as a formula (a file name is the student's choice)."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def write_csv(path: Path, rows: list[dict], fields: list[str]) -> str:
    """Write the grades at once (a new file renamed over the old), return its SHA-256.
    Text from a submission (its file name, the error's words) comes in cleaned as on the
    terminal (:func:`bookwork.grading.grade.clean`: control and bidirectional characters as escapes)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows({k: spreadsheet_safe(v) for k, v in row.items()} for row in rows)
    data = buffer.getvalue().encode()
    path = Path(path)
    with tempfile.NamedTemporaryFile("wb", dir=path.parent or ".", prefix=f".{path.name}.", delete=False) as handle:
        handle.write(data)
    os.replace(handle.name, path)
    return hashlib.sha256(data).hexdigest()


def _print_review(findings: list[str]) -> None:
    if findings:
        print(f"  review: {len(findings)} finding(s) to read (they do not change the grade)")
        for finding in findings[:30]:
            print(f"      {grade.clean(finding, max_lines=1)}")


def print_grades(results: dict[Path, grade.Graded | GradingError]) -> list[dict]:
    """Print each submission's points, messages and review; return the CSV rows."""
    rows = []
    for submission, result in results.items():
        name = grade.clean(str(submission), max_lines=1)
        if isinstance(result, GradingError):
            print(f"{name}: could not grade: {grade.clean(str(result), max_lines=5)}")
            _print_review(getattr(result, "review", []))
            rows.append({"submission": name, "error": grade.clean(str(result), max_lines=1),
                         "review": len(getattr(result, "review", []))})
            continue
        scores = result.scores
        total = sum(s["score"] for s in scores.values())
        possible = sum(s["possible"] for s in scores.values())
        print(f"{name}: {total:g} / {possible:g}")
        for question, s in scores.items():
            print(f"  {question:32s} {s['score']:g} / {s['possible']:g}")
            for message in list(dict.fromkeys(failure_messages(s["output"])))[:8]:
                print(f"      {grade.clean(message, max_lines=1)}")
        _print_review(result.review)
        rows.append({"submission": name, **{q: s["score"] for q, s in scores.items()},
                     "total": total, "review": len(result.review)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookwork.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("autograder", type=Path, help="the autograder.zip of the assignment")
    parser.add_argument("submissions", nargs="+", type=Path, help="notebooks, or the zips their export cell wrote")
    parser.add_argument("--csv", type=Path, default=None, help="write the grades to this file too")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one submission may run (default 600)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--max-size", type=float, default=intake.MAX_BYTES / 2**20,
                        help="the largest submission accepted, in MiB (default %(default)g)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run the notebooks without the sandbox, as you, with your files and network: "
                             "only for notebooks you trust, such as your own solution")
    args = parser.parse_args(argv)
    try:
        results = grade_all(args.autograder, args.submissions, args.timeout, args.jobs,
                            use_sandbox=not args.no_sandbox, max_bytes=int(args.max_size * 2**20))
    except sandbox.SandboxUnavailable as error:
        print(f"cannot grade: {error}.\nThe notebooks run in a sandbox made with bubblewrap (Linux; "
              "Debian and Ubuntu: apt-get install bubblewrap). Without it, --no-sandbox runs them as "
              "you, with your files and network: only for notebooks you trust, such as your own "
              "solution.", file=sys.stderr)
        return 2
    rows = print_grades(results)
    failed = sum(1 for r in results.values() if isinstance(r, GradingError))
    if args.csv:
        fields = list(dict.fromkeys(k for row in rows for k in row if k not in ("total", "review", "error")))
        fields += ["total", "review"] + (["error"] if failed else [])
        digest = write_csv(args.csv, rows, fields)
        print(f"wrote {args.csv} (SHA-256 {digest})")
    if failed:
        print(f"{failed} of {len(rows)} submissions could not be graded", file=sys.stderr)
        return 1
    return 0
