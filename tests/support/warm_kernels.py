"""Kernels for the tests that start warm: each a fresh process, forked from one that has imported the libraries.

Every chapter starts by importing NumPy, SymPy, Matplotlib, torch and the package,
about three seconds of a core in each new kernel, and the tests start about forty
kernels (the book build, the grading of each chapter's versions, the reader's edition
run chapter by chapter). Here a server process imports those modules once and forks a
kernel for each request: the kernel is a new process, its namespace empty, nothing of
any notebook run in it before; only its ``import`` statements find their modules
loaded already.

A kernel specification (:func:`write_kernel_spec`) makes Jupyter start this file as
the kernel, with ``launch``: it asks the server (started on first use, with the same
Python) for a kernel, hands it its standard streams, working folder and environment,
and stays in place as the process Jupyter knows: the signals Jupyter sends it (an
interrupt, a termination) go on to the kernel, and when either of the two ends, the
other does; it also ends when the process that started it does, as a kernel does.
Where the server cannot be reached, it starts an ordinary kernel instead. The server
leaves when no kernel has been asked of it for ``IDLE_SECONDS``.

The launcher imports nothing beyond the standard library and runs with ``-I -S``, so it
starts in milliseconds. The server runs with ``-E -s -c``, started in the repository so
that it imports this module by name; its first search path is then the current folder,
``""``. It moves to its socket's folder before it imports anything else, so that the
kernels' modules come from the environment, and each kernel it forks moves to its own
folder, which ``""`` then names, as for a kernel Jupyter starts there.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time

IDLE_SECONDS = 300
#: What ipykernel sets before the first import of Matplotlib, so that plots are shown
#: in the notebook; the server imports Matplotlib, so it sets it first too.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
#: Settings read when a module is imported: a request whose values differ gets an
#: ordinary kernel, since the server imported its modules under its own.
READ_AT_IMPORT = ("PYTHONPATH", "PYTHONHASHSEED", "MPLBACKEND", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                  "OPENBLAS_NUM_THREADS")
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: The repository: the server starts there and imports this module by name.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: What the server runs (``python -c``, with the socket path and the modules to import).
SERVER = "import sys; from tests.support.warm_kernels import serve; serve(sys.argv[1], sys.argv[2])"


def write_kernel_spec(folder, name: str, python: str, server: str, preload: list[str]) -> None:
    """A kernel specification ``folder/name/kernel.json`` whose kernels ``python`` forks
    from a server at the socket path ``server`` that has imported ``preload``."""
    spec = os.path.join(str(folder), name)
    os.makedirs(spec, exist_ok=True)
    argv = [python, "-I", "-S", os.path.abspath(__file__), "launch", server, ",".join(preload),
            "-f", "{connection_file}"]
    with open(os.path.join(spec, "kernel.json"), "w") as out:
        json.dump({"argv": argv, "display_name": f"{name} (warm)", "language": "python",
                   "metadata": {"debugger": False}}, out)


# --- the launcher: the process Jupyter starts ----------------------------------------------


def launch(server: str, preload: str, kernel_args: list[str]) -> None:
    connection = _connect(server) or _start_server(server, preload)
    if connection is None:
        _ordinary_kernel(kernel_args)
    request = json.dumps({"argv": kernel_args, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    try:
        socket.send_fds(connection, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
        reply = connection.recv(1)
    except OSError:
        reply = b""
    if reply != b"+":   # the server was leaving as we asked
        _ordinary_kernel(kernel_args)
    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, lambda signum, frame: _send(connection, signum))
    parent = os.getppid()
    connection.settimeout(1.0)
    while os.getppid() == parent:   # until the kernel ends (its end of the socket closes), or Jupyter does
        try:
            if connection.recv(64) == b"":
                break
        except (TimeoutError, InterruptedError):
            continue
        except OSError:
            break
    os._exit(0)


def _send(connection, signum: int) -> None:
    try:
        connection.sendall(bytes([signum]))
    except OSError:
        pass


def _connect(server: str):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(server)
        return connection
    except OSError:
        connection.close()
        return None


def _start_server(server: str, preload: str):
    """Start the server (one at a time: a lock beside the socket) and connect to it."""
    with open(server + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        connection = _connect(server)
        if connection is not None:
            return connection
        with open(os.devnull, "r+b") as null:
            subprocess.Popen([sys.executable, "-E", "-s", "-c", SERVER, server, preload], cwd=ROOT,
                             stdin=null, stdout=null, stderr=null, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            connection = _connect(server)
            if connection is not None:
                return connection
            time.sleep(0.05)
    return None


def _ordinary_kernel(kernel_args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *kernel_args])


# --- the server ------------------------------------------------------------------------------


def serve(server: str, preload: str) -> None:
    os.chdir(os.path.dirname(os.path.abspath(server)))  # out of the repository: "" names this folder now
    imported_under = {name: os.environ.get(name) for name in READ_AT_IMPORT}
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    import importlib

    import ipykernel.kernelapp  # noqa: F401  (what every kernel runs)

    for module in filter(None, preload.split(",")):
        try:
            importlib.import_module(module)
        except Exception:   # the kernel meets the error itself, where the notebook imports it
            pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # the kernels are nobody's to wait for
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(server)
    listener.listen(16)
    with open(server + ".pid", "w") as out:
        out.write(str(os.getpid()))
    listener.settimeout(IDLE_SECONDS)
    kernels: set[int] = set()
    while True:
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            kernels = {pid for pid in kernels if _alive(pid)}
            if kernels:   # a kernel whose server left would take it for its parent's end
                continue
            with open(server + ".lock", "w") as lock:   # no launcher may find a socket that is going
                fcntl.flock(lock, fcntl.LOCK_EX)
                os.unlink(server)
                os.unlink(server + ".pid")
                listener.close()
            return
        connection.settimeout(None)
        try:
            request, streams = _receive(connection)
        except (OSError, ValueError):
            connection.close()
            continue
        if any(request["env"].get(name) != imported_under[name] for name in READ_AT_IMPORT):
            connection.sendall(b"-")
        else:
            pid = os.fork()
            if pid == 0:
                listener.close()
                _become_kernel(connection, request, streams)
            kernels.add(pid)
        for stream in streams:
            os.close(stream)
        connection.close()


def stop_server(pid_file) -> None:
    """Stop the server whose process id ``pid_file`` holds (its kernels go on to their end)."""
    try:
        pid = int(open(pid_file).read())
        if "warm_kernels" in open(f"/proc/{pid}/cmdline").read():
            os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _receive(connection):
    head, streams, _, _ = socket.recv_fds(connection, 8, 3)
    if len(head) != 8 or len(streams) != 3:
        raise ValueError("not a kernel request")
    size, data = int.from_bytes(head, "big"), b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ValueError("the request ended early")
        data += chunk
    return json.loads(data), streams


def _become_kernel(connection, request, streams) -> None:
    """In the forked process: take the launcher's streams, folder and environment, follow
    its signals and its end, and run the kernel."""
    import threading

    for target, stream in enumerate(streams):
        os.dup2(stream, target)
        os.close(stream)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    connection.sendall(b"+")

    def follow_the_launcher():
        while True:
            try:
                data = connection.recv(64)
            except OSError:
                data = b""
            if not data:
                os._exit(1)   # the launcher is gone: so is the kernel
            for signum in data:
                os.kill(os.getpid(), signum)

    threading.Thread(target=follow_the_launcher, daemon=True).start()
    sys.argv = ["ipykernel_launcher", *request["argv"]]
    code = 0
    try:
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else 0
    except BaseException:
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    if sys.argv[1] == "launch":
        launch(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(f"usage: {sys.argv[0]} launch SERVER PRELOAD KERNEL-ARGS...")
