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
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from . import intake, review, sandbox

CODE_PARENT = Path(__file__).resolve().parent.parent  # the folder holding this package


class GradingError(RuntimeError):
    """A submission that could not be graded: refused, too slow, or its run broke off.
    ``review`` holds what the review found in its code, when it got that far."""

    def __init__(self, message: str, review: list[str] | None = None):
        super().__init__(message)
        self.review = review or []


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


def _end(process: subprocess.Popen, grace: float) -> None:
    """Give ``process`` ``grace`` seconds to exit, then kill the processes it started and
    its process group, then reap it.

    ``process`` is bubblewrap; the run is its child, the first process of the sandbox's own
    process namespace, in a session of its own, and killing it ends every process of the
    sandbox. Bubblewrap asks the kernel to end the run when bubblewrap dies, but the run
    gives that up when it leaves root for the job's user, so the grader kills it itself
    (found by its parent's id, before bubblewrap dies and the run passes to another
    parent). The group is killed before the process is reaped, so that no id can have
    passed to another process."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
        except ChildProcessError:
            break
        time.sleep(0.02)
    for child in _children(process.pid):
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _children(pid: int) -> list[int]:
    """The ids of the processes whose parent is ``pid`` (from ``/proc``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                # pid (command) state ppid ...: the command may hold spaces and parentheses
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


_SERVER_LOCK = threading.Lock()
_SERVER = None


#: What the judges' server imports before it forks the first judge: the judge and every
#: module of companion, and with them NumPy, SymPy and torch. ``import companion`` alone
#: loads no module of the package (each is imported on first use), so the package's
#: modules are named one by one.
JUDGE_PRELOAD = ["grading.judge", "companion.checks", "companion.symbolic", "companion.exercises",
                 "companion.attention", "companion.absolute", "companion.relative", "companion.rope",
                 "companion.alibi", "companion.nope", "companion.scaling", "companion.trained_range",
                 "companion.interpolation", "companion.sampling", "companion.configs", "companion.precision",
                 "companion.mrope", "companion.layers", "companion.sinks", "companion.remap"]


def judges():
    """The ``multiprocessing`` context that forks each judge from one server process,
    started once, which has imported the checks' libraries (:data:`JUDGE_PRELOAD`): a
    judge then starts in milliseconds instead of importing them again, seconds for each
    submission. The server never sees a submission; each judge is a fresh fork of it."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(JUDGE_PRELOAD)
            _SERVER = context
        return _SERVER


def run_and_judge(autograder: Autograder, cells: list[str], limits: sandbox.Limits,
                  use_sandbox: bool = True, slot: int = 0) -> dict:
    """Run ``cells`` in a sandbox while a judge checks them; return the judge's result."""
    from . import judge as judging

    context = judges()
    with tempfile.TemporaryDirectory(prefix="grading-") as tmp:
        tmp = Path(tmp)
        to_judge_r, to_judge_w = os.pipe()
        to_runner_r, to_runner_w = os.pipe()
        (tmp / "work").mkdir()
        job = {"cells": cells, "limits": limits.for_runner(),
               "uid": sandbox.user_id(slot) if use_sandbox else None,
               "from_judge": to_runner_r, "to_judge": to_judge_w,
               "workdir": sandbox.WORKDIR if use_sandbox else str(tmp / "work")}
        (tmp / "job.json").write_text(json.dumps(job))
        if use_sandbox:
            command = sandbox.bwrap_command(tmp / "job.json", sandbox.write_accounts(tmp, sandbox.user_id(slot)),
                                            limits)
            env = None
        else:
            command = sandbox.plain_command(tmp / "job.json")
            env = {**sandbox.environment(), "PYTHONPATH": str(CODE_PARENT), "PATH": os.environ.get("PATH", ""),
                   **{name: str(tmp / "work") for name in ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR")}}
        results_r, results_w = context.Pipe(duplex=False)
        judge_ends = (multiprocessing.connection.Connection(to_judge_r, writable=False),
                      multiprocessing.connection.Connection(to_runner_w, readable=False))
        judge = context.Process(target=judging.serve, daemon=True,
                                args=(autograder.tests, *judge_ends, results_w, limits.memory_bytes))
        judge.start()
        runner = subprocess.Popen(command, pass_fds=(to_runner_r, to_judge_w), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp / "work",
                                  env=env, start_new_session=True)
        for end in (*judge_ends, results_w):  # the children hold their own copies
            end.close()
        os.close(to_runner_r)
        os.close(to_judge_w)
        output = _Tail(runner.stdout, limits.output_bytes)
        try:
            if not results_r.poll(limits.timeout):
                raise GradingError(f"still running after {limits.timeout:g} s (an endless loop?)")
            result = json.loads(results_r.recv_bytes())
        except EOFError:
            raise GradingError(f"the checks stopped (exit status {judge.exitcode}): out of memory?") from None
        finally:
            if judge.is_alive():
                judge.kill()
            judge.join()
            results_r.close()
            _end(runner, grace=5)  # it ends on its own once the judge is done
            output.join(timeout=10)
        if "error" in result:
            last = [line for line in clean(output.text(), max_lines=10_000).splitlines() if line.strip()][-6:]
            raise GradingError(f"the notebook's run broke off before the end ({result['error']}, exit status "
                               f"{runner.returncode}); its last output: " + " | ".join(last))
        return result


def grade(autograder: Autograder, submission: Path, limits: sandbox.Limits = sandbox.Limits(),
          use_sandbox: bool = True, slot: int = 0, max_bytes: int = intake.MAX_BYTES) -> Graded:
    """Grade one submission (see the module's docstring); GradingError if it cannot be."""
    try:
        return _grade(autograder, submission, limits, use_sandbox, slot, max_bytes)
    finally:
        autograder.verify()  # after every submission, graded or not


def _grade(autograder: Autograder, submission: Path, limits: sandbox.Limits, use_sandbox: bool, slot: int,
           max_bytes: int) -> Graded:
    try:
        notebook = intake.read_submission(submission, autograder.assignment, max_bytes)
    except intake.Refused as error:
        raise GradingError(f"refused: {error}") from None
    findings = review.review(notebook, autograder.distributed, autograder.tests)
    try:
        result = run_and_judge(autograder, notebook.cells, limits, use_sandbox, slot)
    except GradingError as error:
        raise GradingError(str(error), findings) from None
    scores = result["questions"]
    got = {q: s.get("possible") for q, s in scores.items()}
    if got != autograder.points:
        raise GradingError(f"the checks gave questions or points {got}, not the autograder's "
                           f"{autograder.points}", findings)
    findings += [f"the run reported: {clean(event, max_lines=1)}" for event in result["events"]]
    ordered = {q: scores[q] for q in autograder.order}
    cpu = result.get("run_cpu_seconds")
    return Graded(ordered, findings, cpu + result["judge_cpu_seconds"] if cpu is not None else None)
