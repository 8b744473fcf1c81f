"""The sandbox a submission runs in: bubblewrap, with a minimal view of the machine.

`bubblewrap <https://github.com/containers/bubblewrap>`_ (``bwrap``, the sandbox of
Flatpak) starts a process in new Linux namespaces with a file system built from bind
mounts. It needs no daemon and no image, runs the same Python and libraries as the
grader (so a submission meets the versions it was checked with), and starts in
milliseconds. What the submission's process sees:

- **no network**: a new network namespace, holding only its own loopback;
- **its own processes only**: a new PID namespace (``/proc`` shows nothing else, so no
  other grading, command line or kernel connection file), and every process in it is
  killed when the run ends or the grader stops it;
- **a read-only view of what it needs**: the system's programs and libraries
  (``/usr``), the Python installation and virtual environment, the ``companion``
  package and this grading package (:data:`PACKAGES`, each where the grader imports it
  from, which is where the sandbox imports it too: :func:`import_path`); the job (its
  cells) is copied in. Not the instructor's home, not the autograder, not the other
  submissions, not the book's other tools, not the environment variables (the
  environment is cleared and set anew);
- **a private scratch folder**: ``/tmp``, a tmpfs of limited size, gone at the end;
- **limits** the runner sets before any submitted code runs (CPU seconds, address
  space, processes, file size, open files), a wall-clock timeout the grader enforces,
  and an unprivileged user: as root the sandbox is set up as root and the runner then
  takes a user id of its own (:func:`user_id`: a new one for every run, so that a fork
  bomb in one run cannot use up another's process limit, and nothing kept per user
  passes from one submission to the next; the kernel does not apply that limit to root
  at all); otherwise bubblewrap maps the instructor to ``nobody`` in a user namespace of
  its own, where the limit counts that namespace's processes;
- **system calls refused** by a seccomp filter (:mod:`bookwork.grading.seccomp`): the
  kernel's keyring, which is not namespaced and would let one run leave a key for the
  next, and the calls that reach past a container, as Docker's default profile refuses them.

The judges (:mod:`bookwork.grading.judge`) run in a sandbox of the same kind
(:func:`judges_command`): no network, a read-only view of the same files, no home
folder, an empty environment, the same filter, a user id of their own, and only the
checks of the autograder added.

Why bubblewrap and not Docker, nor ``unshare``: Docker needs a daemon (and, to run it,
root-equivalent rights), an image to build and keep in step with the book's libraries,
and seconds per container; it is often missing on a teaching machine or JupyterHub.
``unshare`` with ``prlimit`` and ``setpriv`` gives the namespaces but no way to build a
minimal file system, so the submission would see the whole disk. bubblewrap is packaged
for every Linux distribution, is what Flatpak relies on, and does both.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: The packages a sandbox imports besides the environment's libraries: the book's
#: package (the chapters import it, the checks compare with it) and the grader's own
#: (the runner, and the judges), each mounted read-only where the grader imports it from.
PACKAGES = ("companion", "bookwork.grading")
#: Where the job is inside the sandbox, and where the judges' checks are (in theirs): a
#: folder every user may enter (bubblewrap makes the folders it creates 0700).
GRADING = "/grading"
JOB = f"{GRADING}/job.json"
SETUP = f"{GRADING}/setup.json"
WORKDIR = "/tmp/work"
HOME = "/tmp/home"
#: User ids for processes started as root come from the range set apart for containers'
#: users (524288 and up), which no account on the machine uses.
FIRST_UID = 524288


def user_id(run: int) -> int:
    """The user id of this grader's run number ``run``: a new one for each run (256 before
    one comes back, far more than run at once), and (by the grader's process id) apart
    from another grader's running beside it, so that the kernel's limit on one user's
    processes is each run's own and nothing the kernel keeps per user passes on."""
    return FIRST_UID + (os.getpid() % 65536) * 256 + run % 256


def judges_user_id() -> int:
    """The user id of this grader's judges: above every run's (:func:`user_id`)."""
    return FIRST_UID + 65536 * 256 + os.getpid() % 65536


@dataclass(frozen=True)
class Limits:
    """What one submission's run may use."""

    timeout: float = 600.0            # wall-clock seconds, run and checks together
    memory_bytes: int = 6 * 2**30     # address space of each process (torch reserves much)
    processes: int = 64               # processes and threads
    file_bytes: int = 64 * 2**20      # the largest file the run may write
    open_files: int = 256
    scratch_bytes: int = 512 * 2**20  # the size of /tmp
    output_bytes: int = 64 * 2**10    # what the grader keeps of the run's printed output

    @property
    def cpu_seconds(self) -> int:
        return int(self.timeout) + 1

    def for_runner(self) -> dict:
        return {"cpu_seconds": self.cpu_seconds, "memory_bytes": self.memory_bytes,
                "processes": self.processes, "file_bytes": self.file_bytes, "open_files": self.open_files}


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot build a sandbox here."""


def package_folder(name: str) -> Path:
    """The folder of an installed package (its real place, also for an editable install)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SandboxUnavailable(f"the package {name!r} is not installed in this environment")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def _system_mounts() -> list[str]:
    args = []
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/fonts", "/etc/alternatives",
                 "/etc/localtime"):
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _package_files() -> list[Path]:
    """The folders of :data:`PACKAGES`, and the ``__init__.py`` of the packages above
    them (``bookwork/__init__.py``): what the sandbox needs to import them, nothing beside."""
    files = []
    for name in PACKAGES:
        folder = package_folder(name)
        files += [folder.parents[level] / "__init__.py" for level in reversed(range(name.count(".")))]
        files.append(folder)
    return files


def import_path() -> list[str]:
    """The folders holding :data:`PACKAGES` that the environment does not search itself:
    the sandbox's ``PYTHONPATH``, so that it imports the very files the grader imports.

    Where the packages are installed in the environment, none. Where the grader imports
    them from a checkout (an editable install, or a ``PYTHONPATH`` of its own), the
    checkout; without it the sandbox would follow the environment's editable install,
    which may name another checkout, one the sandbox does not show."""
    environment = Path(sys.prefix).resolve()
    roots = [package_folder(name.split(".")[0]).parent for name in PACKAGES]
    return list(dict.fromkeys(str(root) for root in roots if not root.is_relative_to(environment)))


def _search_path() -> dict[str, str]:
    path = import_path()
    return {"PYTHONPATH": os.pathsep.join(path)} if path else {}


def _python_mounts() -> list[str]:
    """The interpreter, the virtual environment and :data:`PACKAGES`, read-only."""
    folders = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    folders = {f for f in folders if not str(f).startswith("/usr/")}
    args = []
    for folder in sorted(folders):
        args += ["--ro-bind", str(folder), str(folder)]
    for path in _package_files():
        if not any(path.is_relative_to(f) for f in folders):
            args += ["--ro-bind", str(path), str(path)]
    executable = Path(sys.executable)
    for link in (executable, executable.resolve()):  # the venv's python may point elsewhere
        if not any(link.is_relative_to(f) for f in folders) and not str(link).startswith("/usr/"):
            args += ["--ro-bind", str(link), str(link)]
    return args


def _parents(mounts: list[str]) -> list[str]:
    """Folders leading to the mount points, readable by all (bubblewrap makes them 0700)."""
    targets = [mounts[i + 2] for i, arg in enumerate(mounts) if arg in ("--ro-bind", "--symlink")]
    parents = sorted({str(p) for t in targets for p in Path(t).parents if str(p) not in ("/", "/tmp")})
    return [arg for parent in parents for arg in ("--perms", "0755", "--dir", parent)]


def _matplotlib_cache() -> list[str]:
    """matplotlib's list of fonts, so that each run does not build it again (seconds)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = os.environ.get("MPLCONFIGDIR") or cache / "matplotlib"
    found = sorted(Path(folder).glob("fontlist-v*.json")) if Path(folder).is_dir() else []
    return ["--ro-bind", str(found[-1]), f"/tmp/matplotlib/{found[-1].name}"] if found else []


def environment() -> dict[str, str]:
    """The run's whole environment: nothing of the instructor's."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "USER": "grader", "LOGNAME": "grader",
            "LANG": "C.UTF-8", "TMPDIR": "/tmp", **_search_path(), "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/matplotlib",
            "IPYTHONDIR": f"{HOME}/.ipython", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "TERM": "dumb"}


def _bwrap() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
    return bwrap


def _isolation() -> list[str]:
    if os.geteuid() == 0:  # set up as root, then the program takes its own user id
        return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return ["--unshare-all", "--uid", "65534", "--gid", "65534"]  # the instructor becomes nobody


def seccomp_descriptor() -> int:
    """A pipe's read end holding the seccomp filter (:mod:`bookwork.grading.seccomp`), for
    bubblewrap's ``--seccomp``; the caller passes it on and closes it."""
    from . import seccomp

    try:
        program = seccomp.filter_program()
    except RuntimeError as error:
        raise SandboxUnavailable(str(error)) from None
    read_end, write_end = os.pipe()
    os.write(write_end, program)  # a few hundred bytes: the pipe holds them
    os.close(write_end)
    return read_end


def bwrap_command(job: Path, passwd: Path, limits: Limits, seccomp_fd: int) -> list[str]:
    """The command that runs ``python -m bookwork.grading.runner`` on ``job`` in a new sandbox
    (``seccomp_fd``: :func:`seccomp_descriptor`, passed to the command)."""
    command = [_bwrap(), *_isolation(), "--as-pid-1", "--die-with-parent", "--new-session", "--clearenv",
               "--seccomp", str(seccomp_fd)]
    for name, value in environment().items():
        command += ["--setenv", name, value]
    # the scratch /tmp first, so that an environment or checkout under /tmp (a clone in
    # /tmp, say) is mounted on top of it rather than hidden by it
    command += ["--proc", "/proc", "--dev", "/dev",
                "--size", str(limits.scratch_bytes), "--perms", "1777", "--tmpfs", "/tmp"]
    mounts = _system_mounts() + _python_mounts()
    command += _parents(mounts) + mounts
    command += ["--perms", "0777", "--dir", WORKDIR, "--perms", "0777", "--dir", HOME,
                "--perms", "0777", "--dir", "/tmp/matplotlib", *_matplotlib_cache(),
                "--perms", "0755", "--dir", GRADING, "--ro-bind", str(job), JOB,
                "--ro-bind", str(passwd), "/etc/passwd",
                "--ro-bind", str(passwd.with_name("group")), "/etc/group",
                "--remount-ro", "/", "--chdir", WORKDIR,
                sys.executable, "-s", "-m", "bookwork.grading.runner", JOB]
    return command


def judges_environment() -> dict[str, str]:
    """The judges' whole environment: nothing of the instructor's, no home folder."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/tmp", **_search_path(),
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def judges_command(setup: Path, control_fd: int, seccomp_fd: int) -> list[str]:
    """The command that runs the judges' server (``python -m bookwork.grading.judge``) in its own
    sandbox: no network, its own processes, a read-only view of the system, the Python
    environment, ``companion`` and the grading code, the autograder's checks
    (``setup``) and nothing else; no home folder, an empty environment, the seccomp
    filter, a user id of its own; a 16 MiB scratch ``/tmp`` that no run shares."""
    command = [_bwrap(), *_isolation(), "--as-pid-1", "--die-with-parent", "--new-session", "--clearenv",
               "--seccomp", str(seccomp_fd)]
    for name, value in judges_environment().items():
        command += ["--setenv", name, value]
    command += ["--proc", "/proc", "--dev", "/dev", "--size", str(16 * 2**20), "--perms", "1777",
                "--tmpfs", "/tmp"]
    mounts = _system_mounts() + _python_mounts()
    command += _parents(mounts) + mounts
    command += ["--perms", "0755", "--dir", GRADING, "--ro-bind", str(setup), SETUP,
                "--remount-ro", "/", "--chdir", "/",
                sys.executable, "-s", "-m", "bookwork.grading.judge", SETUP, str(control_fd)]
    return command + ([str(judges_user_id())] if os.geteuid() == 0 else [])


def plain_command(job: Path) -> list[str]:
    """Without a sandbox (``--no-sandbox``): only for notebooks you trust."""
    return [sys.executable, "-s", "-m", "bookwork.grading.runner", str(job)]


def plain_judges_command(setup: Path, control_fd: int) -> list[str]:
    """The judges' server without a sandbox (``--no-sandbox``)."""
    return [sys.executable, "-s", "-m", "bookwork.grading.judge", str(setup), str(control_fd)]


def write_accounts(folder: Path, uid: int) -> Path:
    """``/etc/passwd`` and ``/etc/group`` for the sandbox, naming only its user."""
    passwd, group = folder / "passwd", folder / "group"
    passwd.write_text(f"root:x:0:0::/nonexistent:/usr/sbin/nologin\ngrader:x:{uid}:{uid}::{HOME}:/usr/sbin/nologin\n"
                      "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n")
    group.write_text(f"root:x:0:\ngrader:x:{uid}:\nnogroup:x:65534:\n")
    for path in (passwd, group):
        path.chmod(0o644)
    return passwd


def check_available(limits: Limits = Limits()) -> None:
    """Raise SandboxUnavailable, with bubblewrap's own words, unless a sandbox starts here."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.json"
        job.write_text("{}")
        seccomp_fd = seccomp_descriptor()
        try:
            command = bwrap_command(job, write_accounts(Path(tmp), user_id(0)), limits, seccomp_fd)
            probe = command[:command.index(sys.executable)] + ["/bin/sh", "-c", "exit 0"]
            try:
                result = subprocess.run(probe, capture_output=True, text=True, timeout=60, pass_fds=(seccomp_fd,))
            except (OSError, subprocess.TimeoutExpired) as error:
                raise SandboxUnavailable(f"bubblewrap did not start: {error}") from None
        finally:
            os.close(seccomp_fd)
        if result.returncode != 0:
            raise SandboxUnavailable(f"bubblewrap could not build the sandbox: {result.stderr.strip()[-500:]}")
