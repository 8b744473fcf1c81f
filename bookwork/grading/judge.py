"""Check a submission's answers in a process that runs none of its code.

The judge holds the autograder's checks (otter's exception-based test files, hidden
ones included) and the real ``companion``. It talks to the runner in the sandbox over
two pipes (:mod:`bookwork.grading.wire`): when the runner reaches ``grader.check("q")`` (or the
end of the notebook, for questions no cell checked), the judge asks for the values of
the names q's checks take, reads them back as data, and runs q's checks on them. Where a
check calls one of the submission's functions, it calls a :class:`SubmittedFunction`:
the call goes to the runner, which calls the function in the sandbox and sends the
result back as data. Every comparison, every expected value and the scoring happen here,
with otter's own scoring code, so nothing the submission does in its process (patching
NumPy, ``builtins``, ``companion`` or otter, swapping ``sys.modules``) reaches them.

**The judge never reads text as code.** Values arrive as data (:mod:`bookwork.grading.wire`), and
the checks turn an answer into SymPy only from data (:func:`companion.checks.expression`).
But SymPy reads a string wherever one meets an expression (``{"a": "..."} - x``,
``Matrix(["..."])``, ``N("...")``: ``sympify`` of a string is ``eval``), so a check
written without that in mind would evaluate a submitted string. While the judge checks,
an audit hook (:func:`refusing`) therefore refuses, for the whole process, everything
a check never needs: compiling text into code (``eval``, ``exec``, ``compile``,
``ast.parse``, SymPy's ``parse_expr``; only two library code generators that fill a
fixed template of their own are allowed, :data:`CODE_GENERATORS`), unpickling, starting
processes, opening connections and writing files. What it refused fails the check that
tried it and is reported to the instructor.

**The judge runs in a sandbox of its own.** :func:`serve` is a server that the grader
starts once per class in bubblewrap (``python -m bookwork.grading.judge SETUP``, see
:mod:`bookwork.grading.sandbox`): read-only, no network, no home folder, an empty environment,
an unprivileged user, the system calls of the kernel's keyring and others refused. It
imports the libraries once, then forks one judge per submission (and one reviewer,
:mod:`bookwork.grading.review`, which parses the submission's code under the same limits), so
that a judge starts in milliseconds. The grader hands each job the ends of its pipes
over a Unix socket; the judge writes its result as JSON on one of them:
``{"questions": {q: {"score", "possible", "output"}}, "events": [...], "refused":
[...]}``, or ``{"error": reason}`` when the run broke off.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import resource
import select
import signal
import socket
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path

from . import wire


class RunBroken(BaseException):
    """The runner stopped answering, or answered out of turn: the grading cannot go on.

    A BaseException, so that a check's ``except Exception`` does not take it for the
    submission's error.
    """


def exception_test_file():
    """otter's ``ExceptionTestFile`` (the format of the autograder's checks and its
    scoring), loaded without the rest of otter, whose import takes seconds (nbconvert).

    The generated test files start with ``from otter.test_files import test_case``, so
    that name is provided too.
    """
    if "otter.test_files.exception_test" not in sys.modules:
        root = Path(importlib.util.find_spec("otter").origin).parent
        for name, folder in (("otter", root), ("otter.test_files", root / "test_files")):
            if name not in sys.modules:
                package = types.ModuleType(name)
                package.__path__ = [str(folder)]
                sys.modules[name] = package
        importlib.import_module("otter.test_files.exception_test")
    module = sys.modules["otter.test_files.exception_test"]
    if not hasattr(sys.modules["otter.test_files"], "test_case"):
        sys.modules["otter.test_files"].test_case = module.test_case
    return module.ExceptionTestFile


def load_checks(sources: dict[str, str]) -> dict:
    """The autograder's test files, by question name: ``{file name: source}`` -> ``{q: test file}``."""
    loader = exception_test_file()
    files = [loader.from_string(source, path=f"tests/{name}") for name, source in sorted(sources.items())]
    return {test.name: test for test in files}


def parameters(test_file) -> list[str]:
    """The names the checks of a test file take (each check's parameters, in order)."""
    names = []
    for case in test_file.test_cases:
        names += [n for n in inspect.signature(case.body.test_func).parameters if n not in names]
    return names


# --- what the judge never does --------------------------------------------------------------

class Refused(RuntimeError):
    """The judge refused something no check needs (reading text as code, unpickling, a
    process, a connection, writing a file): the check that tried it fails."""


#: The places where Python or a library the checks use writes Python code from a fixed
#: template of its own and compiles it (file, function): SymPy's polynomial arithmetic
#: builds its monomial operations for each number of variables; ``collections.namedtuple``
#: and ``dataclasses`` build the methods of a class a module defines (a check may import
#: a module on first use). No template holds anything of a submission: the judge defines
#: no class from a submission's data (:mod:`bookwork.grading.wire` builds records with ``type``).
CODE_GENERATORS = {("sympy/polys/monomials.py", "_build"), ("collections/__init__.py", "namedtuple"),
                   ("dataclasses.py", "_create_fn")}
#: Readers that parse text but evaluate nothing in it: ``ast.literal_eval`` (NumPy reads
#: the header of every ``.npy`` array with it) builds only literals, and
#: ``typing.ForwardRef`` compiles a type named in a string only to check its syntax
#: (torch's profiler writes ``Optional["..."]`` each time an optimiser starts a step).
#: Every other compilation is refused while the judge checks.
LITERAL_READERS = {("ast.py", "literal_eval")}
SYNTAX_CHECKS = {("typing.py", "ForwardRef.__init__")}
#: The audit events refused while the judge checks, and what each one means.
REFUSED_EVENTS = {
    "compile": "reading text as code", "pickle.find_class": "unpickling",
    "subprocess.Popen": "starting a process", "os.system": "starting a process", "os.exec": "starting a process",
    "os.posix_spawn": "starting a process", "os.spawn": "starting a process", "os.fork": "starting a process",
    "os.forkpty": "starting a process", "pty.spawn": "starting a process", "socket.connect": "opening a connection",
    "socket.bind": "opening a connection", "socket.sendto": "opening a connection",
    "socket.sendmsg": "opening a connection", "socket.getaddrinfo": "opening a connection",
    "urllib.Request": "opening a connection", "ctypes.dlopen": "loading native code",
    "ctypes.dlsym": "loading native code", "sys.addaudithook": "adding an audit hook",
}
def modules_to_import_first() -> list[str]:
    """The modules imported before the guard is first switched on: every module of
    companion (a check may import one on first use, and a module's import compiles text
    of its own: the contracts read their annotations, dataclasses build their methods)
    and SymPy's units (``simplify`` imports them on first use, and they build their
    prefixes with ``sympify("yotta")``)."""
    import pkgutil

    import companion

    found = [info.name for info in pkgutil.walk_packages(companion.__path__, "companion.")
             if not info.name.endswith("__main__")]
    return ["sympy.physics.units", *sorted(found)]


_GUARD = threading.local()
#: What was refused in this process, in order (at most 20 entries).
refusals: list[str] = []
_HOOKED = False


def _is(frame, places: set) -> bool:
    """Whether ``frame`` runs one of ``places`` (file, function or Class.method)."""
    if frame is None:
        return False
    filename = frame.f_code.co_filename.replace(os.sep, "/")
    return any(filename.endswith("/" + path) and name in (frame.f_code.co_name, frame.f_code.co_qualname)
               for path, name in places)


def _allowed_compile(caller) -> bool:
    """Whether the Python code that asked to compile (``caller``) is one of
    :data:`CODE_GENERATORS` or :data:`SYNTAX_CHECKS`, or ``ast.parse`` called by one of
    :data:`LITERAL_READERS`."""
    return (_is(caller, CODE_GENERATORS | SYNTAX_CHECKS)
            or (_is(caller, {("ast.py", "parse")}) and _is(caller.f_back, LITERAL_READERS)))


def _audit(event: str, args: tuple) -> None:
    if not getattr(_GUARD, "on", False):
        return
    what = REFUSED_EVENTS.get(event)
    if event == "open" and len(args) >= 3:
        mode, flags = str(args[1] or ""), args[2] or 0
        if any(c in mode for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            what = "writing a file"
    if what is None:
        return
    try:
        caller = sys._getframe(1)
    except ValueError:  # asked for from C with no Python frame above
        caller = None
    if event == "compile" and caller is not None and _allowed_compile(caller):
        return
    if len(refusals) < 20:
        refusals.append(what)
    where = "/".join(caller.f_code.co_filename.replace(os.sep, "/").split("/")[-2:]) if caller else "?"
    raise Refused(f"the judge does not allow {what} while it checks (audit event {event} in {where}, "
                  f"{caller.f_code.co_name if caller else '?'})")


@contextlib.contextmanager
def refusing():
    """Within this block, in this thread, refuse what no check needs (:data:`REFUSED_EVENTS`).

    An audit hook (PEP 578) sees every one of these operations wherever it is asked
    for, in the checks, in SymPy or NumPy, or in Python itself: it is the one place
    that catches a string reaching ``eval`` by a route nobody foresaw. Hooks cannot be
    removed, so it is added once per process and consults a thread-local switch.
    """
    global _HOOKED
    if not _HOOKED:
        for name in modules_to_import_first():
            importlib.import_module(name)
        sys.addaudithook(_audit)
        _HOOKED = True
    was = getattr(_GUARD, "on", False)
    _GUARD.on = True
    try:
        yield
    finally:
        _GUARD.on = was


@contextlib.contextmanager
def trusting():
    """Within this block, in this thread, allow what :func:`refusing` refuses (the tests'
    one-kernel grading calls the submission's functions in the judge's own process)."""
    was = getattr(_GUARD, "on", False)
    _GUARD.on = False
    try:
        yield
    finally:
        _GUARD.on = was


class SubmittedFunction:
    """One of the submission's functions, as the checks see it: calling it sends the
    arguments (as data) to the runner, which calls the function in the sandbox."""

    def __init__(self, judge: Judge, handle: str, name: str):
        self.judge, self.handle, self.__name__ = judge, handle, name

    def __repr__(self):
        return f"<function {self.__name__} of the submission>"

    def __call__(self, *args, **kwargs):
        encoder = wire.Encoder(lambda obj: obj.handle if isinstance(obj, SubmittedFunction) else None)
        request = {"op": "call", "handle": self.handle, "args": [encoder(a) for a in args],
                   "kwargs": [[name, encoder(value)] for name, value in kwargs.items()]}
        reply, blobs = self.judge.request(request, encoder.blobs)
        if isinstance(reply.get("raised"), str):
            raise wire.raised(reply["raised"])
        if "value" not in reply:
            raise RunBroken("the runner answered a call with neither a value nor an exception")
        return self.judge.decode(reply["value"], blobs)


class Judge:
    """Runs the checks of a question on the submission's values.

    ``request(message, blobs)`` sends a request to the runner and returns its reply
    (over the pipes, :class:`Pipes`; in the tests' one-kernel grading, directly to a
    :class:`bookwork.grading.runner.Answers`).
    """

    def __init__(self, checks: dict, request: Callable[[dict, list[bytes]], tuple[dict, list[bytes]]]):
        self.checks, self.request = checks, request

    def decode(self, node, blobs: list[bytes]):
        return wire.Decoder(blobs, stub=lambda handle, name: SubmittedFunction(self, handle, name))(node)

    def values(self, names: list[str]) -> dict:
        """The submission's values of ``names`` (a name it does not define is left out)."""
        reply, blobs = self.request({"op": "values", "names": names}, [])
        values = reply.get("values")
        if not isinstance(values, dict):
            raise RunBroken("the runner answered a request for values with something else")
        decoder = wire.Decoder(blobs, stub=lambda handle, name: SubmittedFunction(self, handle, name))
        return {name: decoder(node) for name, node in values.items() if name in names}

    def check(self, question: str) -> dict:
        """Run every check of ``question`` on the submission's values (refusing, meanwhile,
        what no check needs: :func:`refusing`); otter scores them."""
        test_file = self.checks[question]
        with refusing():
            test_file.run(self.values(parameters(test_file)))
        return {"score": float(test_file.score), "possible": float(test_file.possible),
                "output": test_file.summary()}


class Pipes:
    """The judge's side of the two pipes to the runner."""

    def __init__(self, from_runner: int, to_runner: int):
        self.from_runner, self.to_runner = from_runner, to_runner

    def receive(self) -> tuple[dict, list[bytes]]:
        try:
            return wire.read_message(self.from_runner)
        except (EOFError, OSError, wire.WireError) as error:
            raise RunBroken(f"the run stopped answering ({type(error).__name__}: {error})") from None

    def send(self, message: dict, blobs: list[bytes] = ()) -> None:
        try:
            wire.write_message(self.to_runner, message, blobs)
        except (OSError, wire.WireError) as error:
            raise RunBroken(f"the run stopped listening ({type(error).__name__})") from None

    def request(self, message: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        self.send(message, blobs)
        return self.receive()


def judge_run(checks: dict, pipes: Pipes) -> dict:
    """Check each question when the runner hands it over, and the rest at the end."""
    judge = Judge(checks, pipes.request)
    results: dict[str, dict] = {}
    while True:
        event, _ = pipes.receive()
        if event.get("event") == "check":
            question = event.get("question")
            if question in checks and question not in results:
                results[question] = judge.check(question)
            pipes.send({"op": "done"})
        elif event.get("event") == "end":
            for question in checks:
                if question not in results:
                    results[question] = judge.check(question)
            pipes.send({"op": "finish"})
            events = event.get("events")
            events = [str(e)[:300] for e in events[:50]] if isinstance(events, list) else []
            raised = event.get("raised")
            raised = [[r[0], str(r[1])[:80]] for r in raised[:200] if isinstance(r, list) and len(r) == 2
                      and type(r[0]) is int] if isinstance(raised, list) else []
            cpu = event.get("cpu") if isinstance(event.get("cpu"), (int, float)) else None
            return {"questions": results, "events": events, "raised": raised, "run_cpu_seconds": cpu}
        else:
            raise RunBroken(f"unexpected message from the run: {str(event)[:100]}")


def judge_submission(checks: dict, from_runner: int, to_runner: int) -> dict:
    """The whole of one submission's judging: ``checks`` (:func:`load_checks`), talking to
    the runner on two pipes; the result, or ``{"error": reason}``. Everything after the
    checks were loaded runs under :func:`refusing`."""
    with refusing():
        try:
            result = judge_run(checks, Pipes(from_runner, to_runner))
        except RunBroken as error:
            result = {"error": str(error)}
        except MemoryError:
            result = {"error": "the checks ran out of memory"}
    own = resource.getrusage(resource.RUSAGE_SELF)
    result["judge_cpu_seconds"] = own.ru_utime + own.ru_stime
    result["refused"] = list(refusals)
    return result


# --- the judges' server ----------------------------------------------------------------------

#: What the server imports before it forks the first judge, besides every module of
#: companion (:func:`modules_to_import_first`; with them NumPy, SymPy and torch): the
#: review and IPython's reader of cells, which it uses, and the part of torch that its
#: optimisers import on first use (chapter 5's checks train a probe), whose import
#: compiles text of its own.
PRELOAD = ["bookwork.grading.review", "IPython.core.inputtransformer2", "torch._dynamo"]
#: The largest request on the server's socket, and the most descriptors one carries.
MAX_REQUEST, MAX_FDS = 2**16, 4


def _write_json(fd: int, value: dict) -> None:
    data = memoryview(json.dumps(value).encode())
    while data:
        data = data[os.write(fd, data):]


def _limit(memory_bytes: int, cpu_seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))


def _judge_job(checks: dict, request: dict, fds: list[int]) -> None:
    """In a forked child: judge one submission, write the result on ``fds[2]``."""
    from_runner, to_runner, result = fds
    _limit(int(request["memory_bytes"]), int(request["cpu_seconds"]))
    _write_json(result, judge_submission(checks, from_runner, to_runner))


def _review_job(setup: dict, request: dict, fds: list[int]) -> None:
    """In a forked child: review one submission's code (read from the file ``fds[0]``),
    write the findings on ``fds[1]``."""
    from . import intake, review

    source, result = fds
    _limit(int(request["memory_bytes"]), int(request["cpu_seconds"]))
    with os.fdopen(source, "rb") as handle:
        submission = json.load(handle)
    cells = intake.Submission(submission["cells"], submission["tags"], None, submission["notes"])
    findings = review.review(cells, setup.get("distributed"), setup["tests"])
    _write_json(result, {"findings": findings})


def serve(setup_path: str, control_fd: int) -> None:
    """The judges' server: load the checks of ``setup_path`` (``{"tests": {file name:
    source}, "distributed": [...]}``), import :data:`PRELOAD`, say so on the control
    socket, then fork a child for each request (``{"op": "judge" | "review", "job": n,
    "memory_bytes", "cpu_seconds"}`` with the job's descriptors attached; ``{"op":
    "kill", "job": n}`` ends one). It ends, with every child, when the grader closes
    the socket."""
    control = socket.socket(fileno=control_fd)
    setup = json.loads(Path(setup_path).read_text())
    checks = load_checks(setup["tests"])
    for name in PRELOAD + modules_to_import_first():
        importlib.import_module(name)
    children: dict[int, int] = {}
    control.sendall(json.dumps({"ready": True}).encode())
    while True:
        for job, pid in list(children.items()):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    del children[job]
            except ChildProcessError:
                del children[job]
        if not select.select([control], [], [], 0.5)[0]:
            continue
        message, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, MAX_FDS)
        if not message:  # the grader closed the socket: end every judge, then stop
            break
        request = json.loads(message)
        if request.get("op") == "kill":
            pid = children.get(request.get("job"))
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
            continue
        pid = os.fork()
        if pid == 0:  # the child: one job, then exit without running any cleanup of the server's
            code = 0
            try:
                control.close()
                if request["op"] == "judge" and len(fds) == 3:
                    _judge_job(checks, request, fds)
                elif request["op"] == "review" and len(fds) == 2:
                    _review_job(setup, request, fds)
            except BaseException:
                code = 1
            os._exit(code)
        children[request.get("job")] = pid
        for fd in fds:
            os.close(fd)
    for pid in children.values():
        os.kill(pid, signal.SIGKILL)
    for pid in children.values():
        os.waitpid(pid, 0)


def leave_root(uid: int) -> None:
    """Started as root (the grader runs as root): take the unprivileged user id ``uid``,
    every capability going with it, before anything of a submission arrives."""
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("the judges' server would still be root")


def main(argv: list[str]) -> int:
    """``python -m bookwork.grading.judge SETUP CONTROL_FD [UID]``: the judges' server (:func:`serve`),
    as user ``UID`` when started as root."""
    if len(argv) > 2:
        leave_root(int(argv[2]))
    serve(argv[0], int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
