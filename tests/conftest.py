"""Shared fixtures: the repository root, the built site, and a browser."""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build the whole book once per test run (cached execution makes rebuilds fast)."""
    result = build_book(ROOT)
    if result.returncode != 0:
        pytest.fail(
            "jupyter-book build failed (warnings count as errors):\n"
            + result.stdout[-6000:]
            + result.stderr[-4000:]
        )
    return BUILD_HTML


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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
    """Serve the built site on 127.0.0.1 only; yields the base URL."""

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(built_site))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def pytest_terminal_summary(terminalreporter):
    """Report lesson execution times and the size of the built site."""
    try:
        from test_lessons import TIMINGS
    except ImportError:
        TIMINGS = {}
    if TIMINGS:
        terminalreporter.section("lesson execution times (fresh kernel)")
        for name, seconds in sorted(TIMINGS.items()):
            terminalreporter.write_line(f"{name:40s} {seconds:6.1f} s")
    if BUILD_HTML.is_dir():
        size = sum(p.stat().st_size for p in BUILD_HTML.rglob("*") if p.is_file())
        terminalreporter.section("built site")
        terminalreporter.write_line(f"{BUILD_HTML.relative_to(ROOT)}: {size / 1e6:.1f} MB")
