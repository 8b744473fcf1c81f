"""Shared fixtures: the repository root, the book build, the built site, and a browser.

Under pytest-xdist (``make test`` runs ``pytest -n auto``) every worker is its own
process; work that many tests share, such as the book build, is done once per test run
by whichever worker needs it first (:func:`once_per_run`).
"""
from __future__ import annotations

import ast
import atexit
import functools
import http.server
import json
import os
import shutil
import signal
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import warm_kernels
from browser import CHROMIUM_FLAGS, open_offline  # noqa: F401  (the tests import them from here too)
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
BUILD_HTML = ROOT / "_build" / "html"
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")


def build_book(root: Path) -> subprocess.CompletedProcess:
    """Build the book at ``root`` as the README does: executed, warnings are errors."""
    return subprocess.run(
        [str(JUPYTER_BOOK), "build", str(root), "-W", "-n", "--keep-going"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=1800,
    )


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

def lesson_imports() -> list[str]:
    """Every module the lessons' code imports, in the order it first appears."""
    found = {}
    for lesson in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(lesson.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            try:
                tree = ast.parse("".join(cell["source"]))
            except SyntaxError:   # a cell with a shell command or magic imports nothing
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found.update(dict.fromkeys(alias.name for alias in node.names))
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    found[node.module] = None
    return list(found)


def shared_folder(tmp_path_factory) -> Path:
    """A folder of this test run that every pytest-xdist worker sees."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def use_warm_kernels(folder: Path, python: str, name: str = "python3") -> Path:
    """Write the kernel specification ``name`` whose kernels ``python`` forks from a server
    that has imported what the lessons import (tests/warm_kernels.py), in
    ``folder/kernels``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / f"{name}.lock")):
        if not (folder / "kernels" / name / "kernel.json").is_file():
            warm_kernels.write_kernel_spec(folder / "kernels", name, python, str(folder / f"{name}.sock"),
                                           lesson_imports())
    return folder


@pytest.fixture(scope="session", autouse=True)
def warm_kernel_spec(tmp_path_factory):
    """Every kernel this test run starts by its name ``python3`` (the book build, the
    grading) is a warm one: ``JUPYTER_PATH`` puts its specification first."""
    folder = use_warm_kernels(shared_folder(tmp_path_factory) / "warm-kernels", sys.executable)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(folder), os.environ.get("JUPYTER_PATH")]))


def pytest_unconfigure(config):
    """At the end of the run (in the process that started the workers), stop the kernel servers."""
    if "PYTEST_XDIST_WORKER" in os.environ or not hasattr(config, "_tmp_path_factory"):
        return
    try:
        base = config._tmp_path_factory.getbasetemp()
    except Exception:
        return
    for pid_file in base.glob("**/warm-kernels/*.sock.pid"):
        warm_kernels.stop_server(pid_file)


#: Whether this run has tests that read the PDF (set at collection, the same in every worker).
PDF_WANTED = False
TEX_TOOLS = ("xelatex", "latexmk", "rsvg-convert", "pdfinfo", "pdftotext")


def pdf_folder(tmp_path_factory) -> Path:
    """Where this run builds the PDF: shared by the pytest-xdist workers."""
    return shared_folder(tmp_path_factory) / "pdf"


def start_pdf_build(out: Path) -> None:
    """Start the PDF build (tests/pdf_build.py) in the background, so that XeLaTeX's minutes
    overlap the tests that need no PDF; tests/test_pdf.py waits for its ``returncode`` file."""
    out.mkdir(parents=True)
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "pdf_build.py"), str(out)], cwd=ROOT,
                               start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    atexit.register(lambda: process.poll() is None and os.killpg(process.pid, signal.SIGTERM))


@pytest.fixture(scope="session")
def book_build(tmp_path_factory) -> dict:
    """Build the whole book once per test run, as ``make book`` does; returns its exit
    status and the end of its output. Notebook execution is cached in
    ``_build/.jupyter_cache``, so a rebuild after a small change takes seconds, and the
    lesson tests read what the build executed (tests/test_lessons.py). When the run
    has PDF tests and TeX is installed, the PDF build starts as soon as this one is done."""

    def produce():
        result = build_book(ROOT)
        if result.returncode == 0 and PDF_WANTED and all(shutil.which(tool) for tool in TEX_TOOLS):
            start_pdf_build(pdf_folder(tmp_path_factory))
        return {"returncode": result.returncode, "log": result.stdout[-6000:] + result.stderr[-4000:]}

    return once_per_run("book-build", produce, tmp_path_factory)


@pytest.fixture(scope="session")
def built_site(book_build) -> Path:
    """The built site; fails when the build did (warnings count as errors)."""
    if book_build["returncode"] != 0:
        pytest.fail("jupyter-book build failed (warnings count as errors):\n" + book_build["log"])
    return BUILD_HTML


def pytest_configure(config):
    """Under pytest-xdist a worker runs on every core: each (with the kernels it starts)
    gets one thread for torch and the linear algebra libraries, since threads that share
    cores with other workers only wait for each other (companion.lab runs on one thread
    for the same reason)."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(variable, "1")


def needs_book(item) -> bool:
    return item.get_closest_marker("site") is not None or "book_build" in item.fixturenames


def graded_lesson(item) -> str | None:
    """The lesson whose grades a test reads (tests/test_assignments.py), if any."""
    if "graded" not in item.fixturenames or not hasattr(item, "callspec"):
        return None
    params = item.callspec.params
    return params["lesson"] if "lesson" in params else getattr(params.get("path"), "stem", None)


def pytest_collection_modifyitems(items):
    global PDF_WANTED
    PDF_WANTED = any(item.get_closest_marker("pdf") for item in items)
    _order(items)


def _order(items):
    """An order that keeps every pytest-xdist worker busy (it changes nothing else):
    first one test that needs the book, so that a worker starts the build at once; then
    the tests that need no build, those that read one lesson's grades next to each
    other (they share one grading); last the other tests that need the book, built by
    the time they run."""
    book = [item for item in items if needs_book(item)]
    rest = [item for item in items if not needs_book(item)]
    graded = [item for item in rest if graded_lesson(item)]
    if graded:
        lessons = list(dict.fromkeys(graded_lesson(item) for item in graded))
        graded.sort(key=lambda item: lessons.index(graded_lesson(item)))
        at = rest.index(graded[0])
        rest = [item for item in rest if not graded_lesson(item)]
        rest[at:at] = graded
    if book:  # one that builds at its setup (a browser test could be skipped first)
        first = next((item for item in book if "book_build" in item.fixturenames), book[0])
        book.remove(first)
        rest.insert(0, first)
    items[:] = rest + book


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (no browser download)."""
    executable = chromium_path()
    if executable is None:
        message = "Chromium not found (install it: tools/install_chromium.sh, or set CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 only, on a free port; returns (base URL, stop)."""

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(directory))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/", stop


@pytest.fixture(scope="session")
def site_server(built_site):
    """The built site, served on 127.0.0.1; yields the base URL."""
    url, stop = serve(built_site)
    yield url
    stop()


FIGURES_PAGE = "book/figures.html"


@pytest.fixture
def open_figure(browser, request, tmp_path_factory):
    """Open one figure, offline; returns ``(page, figure locator, problems)``.

    By default the figure is found on the built site's figures page. With
    ``COMPANION_FIGURES_FROM=preview`` it is opened on a page written by
    ``tools/preview_figure.py`` instead, which needs no book build (for working on a
    figure).
    """
    opened, stops = [], []

    def _open(name: str, **kwargs):
        if os.environ.get("COMPANION_FIGURES_FROM") == "preview":
            sys.path.insert(0, str(ROOT / "tools"))
            from preview_figure import write_preview

            out = tmp_path_factory.mktemp("preview")
            page_file = write_preview(name, out_dir=out, **kwargs)
            base, stop = serve(out)
            stops.append(stop)
            page, problems = open_offline(browser, base, page_file.name)
        else:
            assert not kwargs, "figures on the site are shown with their default arguments"
            base = request.getfixturevalue("site_server")
            page, problems = open_offline(browser, base, FIGURES_PAGE)
        opened.append(page)
        root = page.locator(f"[data-figure='{name}']")
        root.wait_for(state="attached", timeout=15000)
        root.scroll_into_view_if_needed()
        return page, root, problems

    yield _open
    for page in opened:
        page.context.close()
    for stop in stops:
        stop()


def pytest_terminal_summary(terminalreporter):
    """Report each lesson's execution time in the book build, and the size of the built site."""
    timings = {}
    for report in terminalreporter.stats.get("passed", []):
        properties = dict(report.user_properties)
        if "lesson_execution_seconds" in properties:
            timings[properties["lesson"]] = (properties["lesson_execution_seconds"], properties["executed"])
    if timings:
        terminalreporter.section("lesson execution times (book build, fresh kernel each)")
        for name, (seconds, executed) in sorted(timings.items()):
            terminalreporter.write_line(f"{name:40s} {seconds:6.1f} s   {executed}")
    if BUILD_HTML.is_dir():
        size = sum(p.stat().st_size for p in BUILD_HTML.rglob("*") if p.is_file())
        terminalreporter.section("built site")
        terminalreporter.write_line(f"{BUILD_HTML.relative_to(ROOT)}: {size / 1e6:.1f} MB")
