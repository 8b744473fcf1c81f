"""Grade one submission: take it in, run it in the sandbox, check it in the judge, verify.

:func:`grade` is the whole path of one submission:

1. :mod:`grading.intake` reads it (one notebook, or the zip of ``grader.export``) and
   refuses anything else; :mod:`grading.review` lists what in its code deserves a look;
2. the runner (:mod:`grading.runner`) executes its code cells in a sandbox
   (:mod:`grading.sandbox`) while the judge (:mod:`grading.judge`), a separate process
   that runs none of the submission's code, checks each question on the values the
   runner sends as data;
3. the result is accepted only if it has exactly the autograder's questions and points,
   and the autograder is checked to be the file it was (its SHA-256) after every
   submission.

A submission that cannot be graded raises :class:`GradingError` with the reason; the
caller goes on with the others.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from . import intake, review, sandbox

CODE_PARENT = Path(__file__).resolve().parent.parent  # the folder holding this package


class GradingError(RuntimeError):
    """A submission that could not be graded: refused, too slow, or its run broke off."""


class AutograderChanged(GradingError):
    """The autograder's file changed while grading: no later grade can be trusted."""


# --- text from a submission, made safe to print ------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def clean(text: str, max_line: int = 300, max_lines: int = 40) -> str:
    """``text`` without control characters (terminal escapes, bidirectional overrides),
    each line cut at ``max_line`` characters and at most ``max_lines`` lines kept."""
    lines = _CONTROL.sub("?", str(text).replace("\r\n", "\n").replace("\t", "    ")).split("\n")
    kept = [line if len(line) <= max_line else line[:max_line - 3] + "..." for line in lines[:max_lines]]
    if len(lines) > max_lines:
        kept.append(f"... ({len(lines) - max_lines} more lines)")
    return "\n".join(kept)


# --- the autograder ------------------------------------------------------------------------------

def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class Autograder:
    """An ``autograder.zip`` as the grader reads it once: its checks, points and notebook."""

    path: Path
    sha256: str
    assignment: str
    tests: dict[str, str]                    # test file name -> source
    points: dict[str, float]                 # question -> points possible
    order: list[str]                         # questions in the notebook's order
    distributed: list[dict] | None = None    # the student notebook's code cells

    @classmethod
    def load(cls, path: Path) -> "Autograder":
        from . import judge

        path = Path(path).resolve()
        digest = sha256(path)
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            config = json.loads(archive.read("otter_config.json"))
            tests = {Path(n).name: archive.read(n).decode() for n in names
                     if n.startswith("tests/") and n.endswith(".py")}
            distributed = json.loads(archive.read(review.DISTRIBUTED)) if review.DISTRIBUTED in names else None
        checks = judge.load_checks(tests)
        points = {name: float(test.possible) for name, test in checks.items()}
        checked = review.checked_questions(distributed) if distributed else []
        order = [q for q in checked if q in points] + sorted(q for q in points if q not in checked)
        return cls(path, digest, str(config.get("assignment_name")), tests, points, order,
                   distributed["cells"] if distributed else None)

    def verify(self) -> None:
        """Raise AutograderChanged unless the file is still the one loaded."""
        if sha256(self.path) != self.sha256:
            raise AutograderChanged(f"{self.path} changed while grading (its SHA-256 is no longer "
                                    f"{self.sha256[:16]}...): stop, and regenerate it")


# --- one submission ------------------------------------------------------------------------------

@dataclass
class Graded:
    """The grade of one submission: points per question, and what its review found."""

    scores: dict[str, dict]
    review: list[str] = field(default_factory=list)
    cpu_seconds: float | None = None   # the run's (as it reports it) and the judge's


class _Tail(threading.Thread):
    """Reads a pipe to its end, keeping its first and last ``limit / 2`` bytes only."""

    def __init__(self, stream, limit: int):
        super().__init__(daemon=True)
        self.stream, self.limit = stream, limit
        self.head, self.tail, self.dropped = b"", b"", 0
        self.start()

    def run(self):
        half = self.limit // 2
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            if len(self.head) < half:
                take = half - len(self.head)
                self.head, chunk = self.head + chunk[:take], chunk[take:]
            self.tail += chunk
            if len(self.tail) > half:
                self.dropped += len(self.tail) - half
                self.tail = self.tail[-half:]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output left out ...]\n" if self.dropped else ""
        return (self.head + middle.encode() + self.tail).decode("utf-8", "replace")


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def run_and_judge(autograder: Autograder, cells: list[str], limits: sandbox.Limits,
                  use_sandbox: bool = True, slot: int = 0) -> dict:
    """Run ``cells`` in a sandbox while the judge checks them; return the judge's result."""
    with tempfile.TemporaryDirectory(prefix="grading-") as tmp:
        tmp = Path(tmp)
        to_judge_r, to_judge_w = os.pipe()
        to_runner_r, to_runner_w = os.pipe()
        workdir = sandbox.WORKDIR if use_sandbox else str(tmp / "work")
        (tmp / "work").mkdir()
        job = {"cells": cells, "limits": limits.for_runner(),
               "uid": sandbox.FIRST_UID + slot if use_sandbox else None,
               "from_judge": to_runner_r, "to_judge": to_judge_w, "workdir": workdir}
        (tmp / "job.json").write_text(json.dumps(job))
        (tmp / "tests.json").write_text(json.dumps(autograder.tests))
        env = {**sandbox.environment(), "PYTHONPATH": str(CODE_PARENT), "PATH": os.environ.get("PATH", "")}
        if use_sandbox:
            command = sandbox.bwrap_command(tmp / "job.json", sandbox.write_accounts(tmp, sandbox.FIRST_UID + slot),
                                            limits)
        else:
            command = sandbox.plain_command(tmp / "job.json")
            env.update(HOME=str(tmp / "work"), TMPDIR=str(tmp / "work"), MPLCONFIGDIR=str(tmp / "work"),
                       IPYTHONDIR=str(tmp / "work"))
        judge = subprocess.Popen([sys.executable, "-s", "-m", "grading.judge", str(tmp / "tests.json"),
                                  str(to_judge_r), str(to_runner_w), str(limits.memory_bytes)],
                                 pass_fds=(to_judge_r, to_runner_w), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, cwd=tmp, env=env, start_new_session=True)
        runner = subprocess.Popen(command, pass_fds=(to_runner_r, to_judge_w), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp / "work",
                                  env=env, start_new_session=True)
        for fd in (to_judge_r, to_judge_w, to_runner_r, to_runner_w):
            os.close(fd)
        output = _Tail(runner.stdout, limits.output_bytes)
        try:
            result, errors = judge.communicate(timeout=limits.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(judge)
            raise GradingError(f"still running after {limits.timeout:g} s (an endless loop?)") from None
        finally:
            try:
                runner.wait(timeout=5)  # it ends on its own once the judge is done
            except subprocess.TimeoutExpired:
                pass
            _kill_group(runner)
            output.join(timeout=10)
        if judge.returncode != 0:
            raise GradingError(f"the checks failed to run: {clean(errors.decode(errors='replace'))[-800:]}")
        result = json.loads(result)
        if "error" in result:
            last = [line for line in clean(output.text(), max_lines=10_000).splitlines() if line.strip()][-6:]
            raise GradingError(f"the notebook's run broke off before the end ({result['error']}, exit status "
                               f"{runner.returncode}); its last output: " + " | ".join(last))
        return result


def grade(autograder: Autograder, submission: Path, limits: sandbox.Limits = sandbox.Limits(),
          use_sandbox: bool = True, slot: int = 0, max_bytes: int = intake.MAX_BYTES) -> Graded:
    """Grade one submission (see the module's docstring); GradingError if it cannot be."""
    try:
        notebook = intake.read_submission(submission, autograder.assignment, max_bytes)
    except intake.Refused as error:
        raise GradingError(f"refused: {error}") from None
    findings = review.review(notebook, autograder.distributed, autograder.tests)
    try:
        result = run_and_judge(autograder, notebook.cells, limits, use_sandbox, slot)
    finally:
        autograder.verify()
    scores = result["questions"]
    got = {q: s.get("possible") for q, s in scores.items()}
    if got != autograder.points:
        raise GradingError(f"the checks gave questions or points {got}, not the autograder's "
                           f"{autograder.points}")
    findings += [f"the run reported: {clean(event, max_lines=1)}" for event in result["events"]]
    ordered = {q: scores[q] for q in autograder.order}
    cpu = result.get("run_cpu_seconds")
    return Graded(ordered, findings, cpu + result["judge_cpu_seconds"] if cpu is not None else None)
