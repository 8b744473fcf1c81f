"""Run a submitted notebook inside the sandbox, and answer the judge's questions about it.

This is the only grading code that runs next to a submission's code, inside the sandbox
that ``sandbox.py`` builds; ``python -m bookwork.grading.runner JOB`` starts it there. It:

1. sets the limits of the job (CPU seconds, memory, processes, file size, open files)
   and, when the sandbox starts it as root, takes the job's unprivileged user id, all
   before any of the submission's code runs;
2. executes the notebook's code cells in order in an IPython shell (a cell that raises
   does not stop the run, as in a Jupyter kernel). ``grader`` is a stand-in for otter's
   :class:`Grader`: where the notebook calls ``grader.check("q")`` (its cell under each
   question), the run stops and the judge checks question ``q`` against the state at
   that point; after the last cell the judge checks the questions no cell asked for;
3. while the judge checks a question it answers two requests: the values of names
   (written as data by :mod:`bookwork.grading.wire`; a function is sent as a handle) and calls of
   the submission's functions on the judge's inputs (the result sent back as data, or the
   type of the exception it raised).

It never learns a result: the judge sends back no score and no message. Whatever the
submission does to this process (patching NumPy, the package, this module, faking the
answers to the judge) changes only what it sends: data, which the judge checks itself.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import types

from . import wire

#: Where the run writes: the scratch folder (a size-capped tmpfs) of the sandbox.
SCRATCH = "/tmp"


class Answers:
    """Answers the judge's requests about a namespace: the values of names (as data, a
    function as a handle), and calls of the functions handed out (the result as data,
    or the type of the exception raised)."""

    def __init__(self, namespace: dict):
        self.namespace = namespace
        self.functions: dict[str, object] = {}

    def _handle(self, function) -> str:
        handle = f"f{len(self.functions)}"
        self.functions[handle] = function
        return handle

    def answer(self, request: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        """The reply to one request: ``{"op": "values", "names": [...]}`` or
        ``{"op": "call", "handle": h, "args": [...], "kwargs": [[name, value], ...]}``."""
        operation = request.get("op")
        if operation == "values" and isinstance(request.get("names"), list):
            encoder = wire.Encoder(self._handle)
            values = {name: encoder(self.namespace[name]) for name in request["names"]
                      if isinstance(name, str) and name in self.namespace}
            return {"values": values}, encoder.blobs
        if operation == "call" and request.get("handle") in self.functions:
            decoder = wire.Decoder(blobs, stub=lambda handle, name: self.functions[handle], trusted=True)
            args = [decoder(node) for node in request["args"]]
            kwargs = {str(name): decoder(node) for name, node in request["kwargs"]}
            try:
                result = self.functions[request["handle"]](*args, **kwargs)
            except BaseException as error:  # SystemExit and the like too: only the type crosses
                return {"raised": type(error).__name__}, []
            encoder = wire.Encoder(self._handle)
            node = encoder(result)
            if sum(len(b) for b in encoder.blobs) > wire.MAX_MESSAGE // 2:
                return {"value": {"t": "opaque", "name": type(result).__name__, "why": "too large"}}, []
            return {"value": node}, encoder.blobs
        raise wire.WireError(f"unexpected request {str(operation)[:40]!r}")


class Grader:
    """Stands in for otter's ``grader``: ``check(q)`` hands question ``q`` to the judge."""

    def __init__(self, namespace: dict, from_judge: int, to_judge: int):
        self.answers = Answers(namespace)
        self.from_judge, self.to_judge = from_judge, to_judge
        self.checked: set[str] = set()
        self.serving = False
        self.events: list[str] = []
        self.raised: list[list] = []  # [cell index, exception type] of the cells that raised

    def check(self, question, *args, **kwargs):
        """Let the judge check ``question`` now (once: later checks of it are ignored)."""
        question = str(question)
        if self.serving or question in self.checked:
            return None
        self.checked.add(question)
        wire.write_message(self.to_judge, {"event": "check", "question": question})
        self._serve(until="done")
        return None

    def check_all(self, *args, **kwargs):
        return None

    def export(self, *args, **kwargs):
        return None

    def finish(self) -> None:
        """After the last cell: the judge checks the questions that were not checked yet."""
        wire.write_message(self.to_judge, {"event": "end", "events": self.events[:50], "raised": self.raised[:200],
                                           "cpu": _cpu_seconds()})
        self._serve(until="finish")

    def _serve(self, until: str) -> None:
        self.serving = True
        try:
            while True:
                request, blobs = wire.read_message(self.from_judge)
                if request.get("op") == until:
                    return
                wire.write_message(self.to_judge, *self.answers.answer(request, blobs))
        finally:
            self.serving = False


def _cpu_seconds() -> float:
    """CPU time of this process and its children so far (for the grader's cost figures)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _limit(job: dict) -> None:
    """Set the job's limits, then leave root for the job's user (the sandbox started as root)."""
    limits = job["limits"]
    for name, value in (("RLIMIT_CPU", limits["cpu_seconds"]), ("RLIMIT_AS", limits["memory_bytes"]),
                        ("RLIMIT_NPROC", limits["processes"]), ("RLIMIT_FSIZE", limits["file_bytes"]),
                        ("RLIMIT_NOFILE", limits["open_files"]), ("RLIMIT_CORE", 0)):
        resource.setrlimit(getattr(resource, name), (value, value))
    if job["uid"] is None:  # no sandbox: a notebook the instructor trusts, run as the instructor
        return
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(job["uid"])
        os.setuid(job["uid"])  # from root to another user: every capability goes with it
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("the run would still be root")


def _watch(grader: Grader) -> None:
    """Note what the run tries outside the notebook's business (writing outside the
    scratch folder, processes, network, native code). Advisory only: the submission runs
    in this process and could hide its traces; the sandbox, not this list, is the defence."""
    watched = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.fork", "os.forkpty",
               "os.kill", "os.killpg", "socket.connect", "socket.bind", "ctypes.dlopen", "sys.addaudithook"}
    stdlib = os.path.dirname(os.__file__) + os.sep

    def in_stdlib(filename: str) -> bool:
        return filename.startswith("<frozen") or (filename.startswith(stdlib) and "-packages" not in filename)

    def from_a_cell() -> bool:
        """Whether the nearest caller outside the standard library is the notebook's code
        (a library's own work, such as torch loading its native code, is not reported)."""
        frame = sys._getframe(2)
        while frame is not None and in_stdlib(frame.f_code.co_filename):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith("<ipython-input")

    def hook(event: str, args: tuple) -> None:
        if len(grader.events) >= 50:
            return
        if event == "open" and len(args) >= 3 and isinstance(args[0], str):
            path, mode, flags = args[0], str(args[1] or ""), args[2] or 0
            writes = any(c in mode for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            if writes and not os.path.abspath(path).startswith(SCRATCH + "/") and path != os.devnull \
                    and from_a_cell():
                grader.events.append(f"tried to write {path[:200]}")
        elif event in watched and not (event == "ctypes.dlopen" and args[:1] == (None,)) and from_a_cell():
            grader.events.append(f"{event} {str(args)[:200]}")

    sys.addaudithook(hook)


def run(job: dict) -> None:
    """Execute the job's cells with ``grader`` standing in for otter's, then finish."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    grader = Grader(shell.user_ns, job["from_judge"], job["to_judge"])
    otter = types.ModuleType("otter", "Stands in for otter-grader while a notebook is graded.")
    otter.Notebook = lambda *args, **kwargs: grader
    sys.modules["otter"] = otter
    shell.user_ns["grader"] = grader
    _watch(grader)
    for index, source in enumerate(job["cells"]):
        outcome = shell.run_cell(source, store_history=False)
        error = outcome.error_before_exec or outcome.error_in_exec
        if error is not None:
            grader.raised.append([index, type(error).__name__[:80]])
    grader.finish()


def main(path: str) -> None:
    with open(path) as handle:
        job = json.load(handle)
    _limit(job)
    os.chdir(job["workdir"])
    run(job)
    sys.stdout.flush()
    os._exit(0)  # without running the submission's atexit handlers


if __name__ == "__main__":
    main(sys.argv[1])
