"""Shared fixtures: the book build, the built site, and a browser; the tests' order.

Under pytest-xdist (``make test`` runs ``pytest -n auto``) every worker is its own
process; work that many tests share, such as the book build, is done once per test run
by whichever worker needs it first (:func:`tests.support.runs.once_per_run`). The
helpers behind the fixtures are in :mod:`tests.support`.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.support import warm_kernels
from tests.support.assignments import Generated, Graded
from tests.support.book import BUILD_HTML, ROOT, TEX_TOOLS, build_book, pdf_folder, start_pdf_build, use_warm_kernels
from tests.support.browser import CHROMIUM_FLAGS, open_offline, serve
from tests.support.runs import once_per_run, shared_folder


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


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Generated:
    """The lessons' assignments, each generated on first use (tests/test_assignments.py,
    tests/grading/)."""
    return Generated(tmp_path_factory.mktemp("assignments"))


@pytest.fixture(scope="session")
def graded(generated, tmp_path_factory) -> Graded:
    """Every version of each lesson graded in one kernel, once per run, on first use."""
    return Graded(generated, tmp_path_factory.mktemp("graded"), tmp_path_factory)


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
    :mod:`bookwork.preview_figure` instead, which needs no book build (for working on a
    figure).
    """
    opened, stops = [], []

    def _open(name: str, **kwargs):
        if os.environ.get("COMPANION_FIGURES_FROM") == "preview":
            from bookwork.preview_figure import write_preview

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
