"""What a test run shares between its pytest-xdist workers, and what it must not leave behind.

Under pytest-xdist (``make test`` runs ``pytest -n auto``) every worker is its own
process; work that many tests share, such as the book build, is done once per test run
by whichever worker needs it first (:func:`once_per_run`), in a folder every worker
sees (:func:`shared_folder`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from filelock import FileLock


def shared_folder(tmp_path_factory) -> Path:
    """A folder of this test run that every pytest-xdist worker sees."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def once_per_run(name: str, produce, tmp_path_factory):
    """``produce()`` (a JSON value) computed once in this test run and shared by every
    pytest-xdist worker: the first worker to ask computes it while the others wait for
    it (pytest-xdist's recipe for a fixture that runs once). When it raises, the
    others get the error instead of trying again. Without xdist it is simply computed."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return produce()
    shared = tmp_path_factory.getbasetemp().parent / f"{name}.json"
    with FileLock(f"{shared}.lock"):
        if shared.is_file():
            stored = json.loads(shared.read_text())
            if "error" in stored:
                raise RuntimeError(f"{name}, computed by another worker, failed: {stored['error']}")
            return stored["value"]
        try:
            value = produce()
        except Exception as error:
            shared.write_text(json.dumps({"error": f"{type(error).__name__}: {error}"}))
            raise
        shared.write_text(json.dumps({"value": value}))
        return value


def processes_with(marker: str) -> list[str]:
    """The ids of the processes whose command line holds ``marker`` (to show that a
    sandboxed run left nothing behind)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found
