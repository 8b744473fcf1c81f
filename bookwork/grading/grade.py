"""Grade one submission: take it in, review it, run it in the sandbox, check it in the judge, verify.

:func:`grade` is the whole path of one submission:

1. :mod:`bookwork.grading.intake` reads it (one notebook, or the zip of ``grader.export``) and
   refuses anything else;
2. :mod:`bookwork.grading.review` lists what in its code deserves a look, in a child of the
   judges' server (:class:`Judges`), sandboxed and under the run's memory limit and a
   share of its time;
3. the runner (:mod:`bookwork.grading.runner`) executes its code cells in a sandbox
   (:mod:`bookwork.grading.sandbox`) while a judge (:mod:`bookwork.grading.judge`), a separate, sandboxed
   process that runs none of the submission's code and reads no text as code, checks
   each question on the values the runner sends as data;
4. the result is accepted only if it has exactly the autograder's questions and points
   and no cell the student did not write failed (which would be the grading
   environment's fault, not the student's), and the autograder is checked to be the
   file it was (its SHA-256) after every submission.

Everything one submission triggers is bounded by ``--timeout``, counted from the moment
its file is taken in. Whatever goes wrong with one submission raises
:class:`GradingError` with the reason; the caller goes on with the others.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from . import intake, review, sandbox


class GradingError(RuntimeError):
    """A submission that could not be graded: refused, too slow, or its run broke off.
    ``review`` holds what the review found in its code, when it got that far."""

    def __init__(self, message: str, review: list[str] | None = None):
        super().__init__(message)
        self.review = review or []


class AutograderChanged(GradingError):
    """The autograder's file changed while grading: no later grade can be trusted."""


# --- text from a submission, made safe to print ------------------------------------------------

#: Control characters (terminal escapes among them), bidirectional marks and overrides
#: (which make a viewer show text in another order), zero-width characters, and the
#: line and paragraph separators.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, max_line: int = 300, max_lines: int = 40) -> str:
    """``text`` with every control, bidirectional and invisible character written as its
    escape (``\\x1b``, ``\\u202e``), so that what a terminal or a spreadsheet shows is
    what the text holds, each line cut at ``max_line`` characters and at most
    ``max_lines`` lines kept."""
    lines = _CONTROL.sub(_escape, str(text).replace("\r\n", "\n").replace("\t", "    ")).split("\n")
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
    def load(cls, path: Path) -> Autograder:
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


def _end(process: subprocess.Popen, grace: float, uid: int | None = None) -> None:
    """Give ``process`` ``grace`` seconds to exit, then kill the processes it started and
    its process group, then reap it.

    ``process`` is bubblewrap; the run is its child, the first process of the sandbox's own
    process namespace, in a session of its own, and killing it ends every process of the
    sandbox. Bubblewrap asks the kernel to end the run when bubblewrap dies, but the run
    gives that up when it leaves root for the job's user, so the grader kills it itself
    (found by its parent's id, before bubblewrap dies and the run passes to another
    parent). The group is killed before the process is reaped, so that no id can have
    passed to another process. And where the run had a user id of its own (``uid``, as
    root), every process left with that id is killed too: whatever became of the run's
    parentage, nothing it started outlives it."""
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
    if uid is not None:
        _kill_user(uid)


def _kill_user(uid: int, seconds: float = 2.0) -> None:
    """Kill every process whose real user id is ``uid`` (one run's own), until none is left."""
    deadline = time.monotonic() + seconds
    while True:
        left = _processes_of(uid)
        if not left or time.monotonic() > deadline:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)


def _processes_of(uid: int) -> list[int]:
    """The ids of the processes whose real user id is ``uid`` (from ``/proc``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                line = next(line for line in handle if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(line.split()[1]) == uid:
            found.append(int(entry))
    return found


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


# --- the judges' server -------------------------------------------------------------------------

#: The largest result a judge or the review may send back, in bytes.
MAX_RESULT = 64 * 2**20
#: The share of ``--timeout`` the review may take (at least REVIEW_SECONDS_MIN seconds).
REVIEW_SHARE, REVIEW_SECONDS_MIN = 0.25, 5.0


class Judges:
    """The judges' server of one grading (:func:`bookwork.grading.judge.serve`), started in its
    sandbox (:func:`bookwork.grading.sandbox.judges_command`) with the autograder's checks, used
    by every submission of the class, and ended, with every judge it started, on
    :meth:`close` (or when this process ends: the server stops when its socket closes).
    Thread-safe: each request is one message on a socket of whole messages."""

    def __init__(self, autograder: Autograder, use_sandbox: bool = True, start_seconds: float = 120.0):
        self.folder = tempfile.TemporaryDirectory(prefix="judges-")
        self.uid = sandbox.judges_user_id() if use_sandbox and os.geteuid() == 0 else None
        setup = Path(self.folder.name) / "setup.json"
        setup.write_text(json.dumps({"tests": autograder.tests, "distributed": autograder.distributed}))
        setup.chmod(0o644)
        self.control, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        passed = [there.fileno()]
        if use_sandbox:
            seccomp_fd = sandbox.seccomp_descriptor()
            passed.append(seccomp_fd)
            command, env = sandbox.judges_command(setup, there.fileno(), seccomp_fd), None
        else:
            command = sandbox.plain_judges_command(setup, there.fileno())
            env = sandbox.judges_environment()
        self.process = subprocess.Popen(command, pass_fds=passed, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                        start_new_session=True)
        for fd in passed[1:]:
            os.close(fd)
        there.close()
        self.errors = _Tail(self.process.stderr, 8192)
        self.lock = threading.Lock()
        self.jobs = itertools.count()
        if not select.select([self.control], [], [], start_seconds)[0] or not self.control.recv(4096):
            self.close()
            raise sandbox.SandboxUnavailable("the judges' server did not start: "
                                             + clean(self.errors.text(), max_lines=6).replace("\n", " | "))

    def _send(self, request: dict, fds: list[int]) -> int:
        job = next(self.jobs)
        try:
            with self.lock:
                socket.send_fds(self.control, [json.dumps({**request, "job": job}).encode()], fds)
        except OSError as error:
            raise GradingError(f"the judges' server stopped ({type(error).__name__}: {error}); "
                               + clean(self.errors.text(), max_lines=4).replace("\n", " | ")) from None
        return job

    def judge(self, from_runner: int, to_runner: int, result: int, limits: sandbox.Limits) -> int:
        """Start a judge on the pipes of one run; its result comes on ``result``."""
        return self._send({"op": "judge", "memory_bytes": limits.memory_bytes, "cpu_seconds": limits.cpu_seconds},
                          [from_runner, to_runner, result])

    def review(self, source: int, result: int, limits: sandbox.Limits, seconds: float) -> int:
        """Start the review of the submission in file ``source``; findings come on ``result``."""
        return self._send({"op": "review", "memory_bytes": limits.memory_bytes,
                           "cpu_seconds": int(seconds) + 1}, [source, result])

    def kill(self, job: int) -> None:
        try:
            with self.lock:
                self.control.send(json.dumps({"op": "kill", "job": job}).encode())
        except OSError:
            pass

    def close(self) -> None:
        """End the server and every judge it started, and wait for them."""
        self.control.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        _end(self.process, grace=0, uid=self.uid)
        self.errors.join(timeout=5)
        self.folder.cleanup()

    def __enter__(self) -> Judges:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_result(fd: int, seconds: float) -> dict | None:
    """The JSON a judge or the review writes on ``fd``, read to its end (``None`` when it
    ended without writing); ``TimeoutError`` after ``seconds``. Closes ``fd``."""
    deadline, parts, size = time.monotonic() + max(seconds, 0.0), [], 0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 2**20)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
            if size > MAX_RESULT:
                raise GradingError(f"a result of more than {MAX_RESULT // 2**20} MiB")
    finally:
        os.close(fd)
    if not parts:
        return None
    try:
        result = json.loads(b"".join(parts))
    except ValueError:
        raise GradingError("a judge's result that is not JSON") from None
    return result if isinstance(result, dict) else None


# --- one submission --------------------------------------------------------------------------------

def review_submission(judges: Judges, notebook: intake.Submission, limits: sandbox.Limits,
                      seconds: float) -> list[str]:
    """The review's findings (:func:`bookwork.grading.review.review`), computed by a child of the
    judges' server within ``seconds`` and the run's memory limit; a review that does not
    finish says so in a finding instead."""
    with tempfile.TemporaryFile() as handle:
        handle.write(json.dumps({"cells": notebook.cells, "tags": notebook.tags, "notes": notebook.notes}).encode())
        handle.flush()
        handle.seek(0)
        result_r, result_w = os.pipe()
        job = judges.review(handle.fileno(), result_w, limits, seconds)
        os.close(result_w)
        try:
            result = _read_result(result_r, seconds)
        except TimeoutError:
            judges.kill(job)
            return [f"the review of its code did not finish within {seconds:.0f} s: not scanned"]
    findings = result.get("findings") if result else None
    if not isinstance(findings, list):
        return ["the review of its code stopped before the end (out of memory?): not scanned"]
    return [str(finding)[:500] for finding in findings[:200]]


def run_and_judge(judges: Judges, cells: list[str], limits: sandbox.Limits, seconds: float,
                  use_sandbox: bool = True, run: int = 0) -> dict:
    """Run ``cells`` in a sandbox while a judge checks them, for at most ``seconds``;
    return the judge's result."""
    with tempfile.TemporaryDirectory(prefix="grading-") as tmp:
        tmp = Path(tmp)
        to_judge_r, to_judge_w = os.pipe()
        to_runner_r, to_runner_w = os.pipe()
        result_r, result_w = os.pipe()
        (tmp / "work").mkdir()
        job = {"cells": cells, "limits": limits.for_runner(),
               "uid": sandbox.user_id(run) if use_sandbox else None,
               "from_judge": to_runner_r, "to_judge": to_judge_w,
               "workdir": sandbox.WORKDIR if use_sandbox else str(tmp / "work")}
        (tmp / "job.json").write_text(json.dumps(job))
        passed = [to_runner_r, to_judge_w]
        if use_sandbox:
            seccomp_fd = sandbox.seccomp_descriptor()
            passed.append(seccomp_fd)
            command = sandbox.bwrap_command(tmp / "job.json", sandbox.write_accounts(tmp, sandbox.user_id(run)),
                                            limits, seccomp_fd)
            env = None
        else:
            command = sandbox.plain_command(tmp / "job.json")
            env = {**sandbox.environment(), "PATH": os.environ.get("PATH", ""),
                   **{name: str(tmp / "work") for name in ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR")}}
        try:
            judge = judges.judge(to_judge_r, to_runner_w, result_w, limits)
        finally:
            for fd in (to_judge_r, to_runner_w, result_w):  # the judge holds its own copies
                os.close(fd)
        runner = subprocess.Popen(command, pass_fds=passed, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, cwd=tmp / "work", env=env, start_new_session=True)
        for fd in passed:
            os.close(fd)
        output = _Tail(runner.stdout, limits.output_bytes)
        try:
            result = _read_result(result_r, seconds)
        except TimeoutError:
            raise GradingError(f"still running after {limits.timeout:g} s (an endless loop?)") from None
        finally:
            judges.kill(judge)
            _end(runner, grace=5, uid=sandbox.user_id(run) if use_sandbox and os.geteuid() == 0 else None)
            output.join(timeout=10)
        if result is None:
            raise GradingError("the checks stopped before the end (out of memory or CPU time?)")
        if "error" in result:
            last = [line for line in clean(output.text(), max_lines=10_000).splitlines() if line.strip()][-6:]
            raise GradingError(f"the notebook's run broke off before the end ({result['error']}, exit status "
                               f"{runner.returncode}); its last output: " + " | ".join(last))
        return result


#: Exceptions of a cell the student did not write that mean the grading environment,
#: not the student, is at fault wherever they happen.
ENVIRONMENT_FAULTS = ("ImportError", "ModuleNotFoundError")


def environment_faults(autograder: Autograder, cells: list[str], raised: list[list]) -> list[str]:
    """The cells the student did not write (given, unchanged) whose failure is the
    grading environment's fault: any exception before the first cell the student wrote
    (the setup and imports), an import error anywhere."""
    if autograder.distributed is None:
        return []
    given = review.given_cells(autograder.distributed, cells)
    first_written = next((i for i, same in enumerate(given) if not same), len(cells))
    return [f"code cell {index + 1} raised {name}" for index, name in raised
            if 0 <= index < len(cells) and given[index] and (index < first_written or name in ENVIRONMENT_FAULTS)]


def grade(autograder: Autograder, submission: Path, judges: Judges, limits: sandbox.Limits = sandbox.Limits(),
          use_sandbox: bool = True, run: int = 0, max_bytes: int = intake.MAX_BYTES) -> Graded:
    """Grade one submission (see the module's docstring); GradingError if it cannot be."""
    try:
        return _grade(autograder, submission, judges, limits, use_sandbox, run, max_bytes)
    finally:
        autograder.verify()  # after every submission, graded or not


def _grade(autograder: Autograder, submission: Path, judges: Judges, limits: sandbox.Limits, use_sandbox: bool,
           run: int, max_bytes: int) -> Graded:
    deadline = time.monotonic() + limits.timeout
    try:
        notebook = intake.read_submission(submission, autograder.assignment, max_bytes)
    except intake.Refused as error:
        raise GradingError(f"refused: {error}") from None
    review_seconds = min(deadline - time.monotonic(), max(REVIEW_SECONDS_MIN, REVIEW_SHARE * limits.timeout))
    findings = review_submission(judges, notebook, limits, review_seconds)
    try:
        result = run_and_judge(judges, notebook.cells, limits, deadline - time.monotonic(), use_sandbox, run)
    except GradingError as error:
        raise GradingError(str(error), findings) from None
    scores = result["questions"]
    got = {q: s.get("possible") for q, s in scores.items()}
    if got != autograder.points:
        raise GradingError(f"the checks gave questions or points {got}, not the autograder's "
                           f"{autograder.points}", findings)
    faults = environment_faults(autograder, notebook.cells, result.get("raised", []))
    if faults:
        raise GradingError("not graded: a cell the student did not write failed (" + "; ".join(faults[:3])
                           + "), which the grading environment causes, not the student (is companion installed "
                           "where the sandbox can read it?)", findings)
    findings += [f"the run reported: {clean(event, max_lines=1)}" for event in result["events"]]
    findings += [f"a check met a value it could not use without {what}: refused, and the check failed"
                 for what in dict.fromkeys(result.get("refused", []))]
    ordered = {q: scores[q] for q in autograder.order}
    cpu = result.get("run_cpu_seconds")
    return Graded(ordered, findings, cpu + result["judge_cpu_seconds"] if cpu is not None else None)
