"""Check a submission's answers in a process that runs none of its code.

The judge holds the autograder's checks (otter's exception-based test files, hidden
ones included) and the real ``companion``. It talks to the runner in the sandbox over
two pipes (:mod:`grading.wire`): when the runner reaches ``grader.check("q")`` (or the
end of the notebook, for questions no cell checked), the judge asks for the values of
the names q's checks take, reads them back as data, and runs q's checks on them. Where a
check calls one of the submission's functions, it calls a :class:`SubmittedFunction`:
the call goes to the runner, which calls the function in the sandbox and sends the
result back as data. Every comparison, every expected value and the scoring happen here,
with otter's own scoring code, so nothing the submission does in its process (patching
NumPy, ``builtins``, ``companion`` or otter, swapping ``sys.modules``) reaches them.

The grader forks each judge from a server with the libraries already imported
(:func:`serve`); ``python -m grading.judge TESTS FROM_RUNNER TO_RUNNER MEMORY`` does the
same in a fresh process: it reads the test files from ``TESTS`` (a JSON object ``{file
name: source}``), talks on the two pipe descriptors and prints the result as JSON:
``{"questions": {q: {"score", "possible", "output"}}, "events": [...]}``, or
``{"error": reason}`` when the run broke off.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import resource
import sys
import types
from pathlib import Path
from typing import Callable

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


class SubmittedFunction:
    """One of the submission's functions, as the checks see it: calling it sends the
    arguments (as data) to the runner, which calls the function in the sandbox."""

    def __init__(self, judge: "Judge", handle: str, name: str):
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
    :class:`grading.runner.Answers`).
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
        """Run every check of ``question`` on the submission's values; otter scores them."""
        test_file = self.checks[question]
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
            cpu = event.get("cpu") if isinstance(event.get("cpu"), (int, float)) else None
            return {"questions": results, "events": events, "run_cpu_seconds": cpu}
        else:
            raise RunBroken(f"unexpected message from the run: {str(event)[:100]}")


def judge_submission(sources: dict[str, str], from_runner: int, to_runner: int, memory_bytes: int) -> dict:
    """The whole of one submission's judging: the checks of ``sources`` (``{file name:
    source}``), talking to the runner on two pipes; the result, or ``{"error": reason}``."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    checks = load_checks(sources)
    import companion  # noqa: F401  (the checks use it: loaded while the notebook runs)
    try:
        result = judge_run(checks, Pipes(from_runner, to_runner))
    except RunBroken as error:
        result = {"error": str(error)}
    except MemoryError:
        result = {"error": "the checks ran out of memory"}
    own = resource.getrusage(resource.RUSAGE_SELF)
    result["judge_cpu_seconds"] = own.ru_utime + own.ru_stime
    return result


def serve(sources: dict[str, str], from_runner, to_runner, result, memory_bytes: int) -> None:
    """:func:`judge_submission` in a process forked from a server that has the libraries
    loaded already (``multiprocessing``'s forkserver, see :mod:`grading.grade`): the
    pipes come as ``multiprocessing`` connections, the result goes back as JSON bytes."""
    outcome = judge_submission(sources, from_runner.fileno(), to_runner.fileno(), memory_bytes)
    result.send_bytes(json.dumps(outcome).encode())


def main(argv: list[str]) -> int:
    tests, from_runner, to_runner, memory = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    outcome = judge_submission(json.loads(Path(tests).read_text()), from_runner, to_runner, memory)
    sys.stdout.write(json.dumps(outcome))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
