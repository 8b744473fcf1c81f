"""The tests' warm kernels (:mod:`tests.support.warm_kernels`) behave as kernels Jupyter starts itself.

Each is a new process whose namespace holds nothing, forked from the server; an
interrupt reaches the code it runs; it ends when Jupyter shuts it down or kills the
process Jupyter started; and a kernel asked for under other import-time settings is an
ordinary one.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager


def _started(env: dict | None = None, cwd: Path | None = None):
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(**({"env": env} if env else {}), **({"cwd": str(cwd)} if cwd else {}))
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    return manager, client


def _run(client, code: str, timeout: float = 60) -> tuple[str, dict]:
    printed = []

    def keep(message):
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
    reply = client.execute_interactive(code, output_hook=keep, timeout=timeout)
    return "".join(printed), reply["content"]


def _command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text():
            return True
        time.sleep(0.05)
    return False


PROBE = "import os, sys\nprint(os.getpid(), os.getppid(), 'torch' in sys.modules, 'earlier' in dir())"


def test_each_kernel_is_a_new_process_forked_from_the_server_with_an_empty_namespace():
    seen = []
    for _ in range(2):
        manager, client = _started()
        try:
            printed, reply = _run(client, PROBE)
            assert reply["status"] == "ok"
            pid, parent, torch_loaded, earlier = printed.split()
            assert "warm_kernels import serve" in _command_line(int(parent)), "not forked from the server"
            assert torch_loaded == "True" and earlier == "False"
            _run(client, "earlier = 1")
            seen.append(int(pid))
        finally:
            client.stop_channels()
            manager.shutdown_kernel()
        assert _gone(int(pid), within=10), "the kernel outlived its shutdown"
    assert seen[0] != seen[1]


def test_a_kernel_imports_from_its_own_folder_as_an_ordinary_one(tmp_path):
    """A kernel started in a folder finds the modules there; the folder the server started
    in (the repository) is not on its search path."""
    (tmp_path / "beside_the_notebook.py").write_text("WHERE = 'here'\n")
    root = str(Path(__file__).resolve().parent.parent)
    manager, client = _started(cwd=tmp_path)
    try:
        printed, reply = _run(client, "import os, sys, beside_the_notebook\n"
                                      "print(beside_the_notebook.WHERE, "
                                      f"{root!r} in [os.path.abspath(p) for p in sys.path])")
        assert reply["status"] == "ok", reply
        assert printed.split() == ["here", "False"]
        assert "warm_kernels import serve" in _command_line(int(_run(client, PROBE)[0].split()[1]))
    finally:
        client.stop_channels()
        manager.shutdown_kernel()


def test_an_interrupt_reaches_the_running_cell():
    manager, client = _started()
    try:
        asked = client.execute("import time\nprint('asleep', flush=True)\ntime.sleep(60)")
        while not (client.get_iopub_msg(timeout=60)["content"].get("text") or "").startswith("asleep"):
            pass
        start = time.monotonic()
        manager.interrupt_kernel()
        while (message := client.get_shell_msg(timeout=20))["parent_header"].get("msg_id") != asked:
            pass   # a reply to an earlier request (waiting for the kernel may ask twice)
        reply = message["content"]
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - start < 10
        for _ in range(50):   # a kernel aborts what it is asked just after an error, for a moment
            after = client.execute_interactive("", user_expressions={"two": "1 + 1"}, timeout=60)["content"]
            if after["status"] != "aborted":
                break
            time.sleep(0.2)
        assert after["status"] == "ok", f"the kernel does not go on after an interrupt: {after}"
        assert after["user_expressions"]["two"]["data"]["text/plain"] == "2"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_the_kernel_ends_when_the_process_jupyter_started_is_killed():
    manager, client = _started()
    try:
        pid = int(_run(client, PROBE)[0].split()[0])
        launcher = manager.provisioner.process
        assert launcher.pid != pid and "warm_kernels.py launch" in _command_line(launcher.pid)
        launcher.kill()
        launcher.wait(10)
        assert _gone(pid, within=10), "the kernel outlived the process Jupyter knows"
    finally:
        client.stop_channels()
        manager.cleanup_resources()


@pytest.mark.parametrize("setting", ["OMP_NUM_THREADS", "PYTHONPATH"])
def test_other_import_time_settings_get_an_ordinary_kernel(setting, tmp_path):
    env = dict(os.environ, **{setting: "3" if setting != "PYTHONPATH" else str(tmp_path)})
    manager, client = _started(env)
    try:
        printed, _ = _run(client, PROBE)
        pid, parent, torch_loaded, _ = printed.split()
        assert int(pid) == manager.provisioner.process.pid, "the launcher became the kernel"
        assert int(parent) == os.getpid() and torch_loaded == "False"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
