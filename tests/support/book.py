"""The book as the tests build it: the executed site, the PDF, and the kernels they run in.

The site is built as the README builds it (:func:`build_book`); the PDF as ``make pdf``
does, in the background (:func:`start_pdf_build`, ``tests/support/pdf_build.py``); every
kernel the tests start is a warm one (:func:`use_warm_kernels`), forked from a server
that has imported what the lessons import (:func:`lesson_imports`).
"""
from __future__ import annotations

import ast
import atexit
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from tests.support import warm_kernels
from tests.support.runs import shared_folder

ROOT = Path(__file__).resolve().parents[2]
BUILD_HTML = ROOT / "_build" / "html"
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
#: What the PDF build needs of TeX's tools.
TEX_TOOLS = ("xelatex", "latexmk", "rsvg-convert", "pdfinfo", "pdftotext")


def build_book(root: Path) -> subprocess.CompletedProcess:
    """Build the book at ``root`` as the README does: executed, warnings are errors."""
    return subprocess.run(
        [str(JUPYTER_BOOK), "build", str(root), "-W", "-n", "--keep-going"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def pdf_folder(tmp_path_factory) -> Path:
    """Where this run builds the PDF: shared by the pytest-xdist workers."""
    return shared_folder(tmp_path_factory) / "pdf"


def start_pdf_build(out: Path) -> None:
    """Start the PDF build (:mod:`tests.support.pdf_build`) in the background, so that
    XeLaTeX's minutes overlap the tests that need no PDF; tests/test_pdf.py waits for its
    ``returncode`` file."""
    out.mkdir(parents=True)
    process = subprocess.Popen([sys.executable, "-m", "tests.support.pdf_build", str(out)], cwd=ROOT,
                               start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    atexit.register(lambda: process.poll() is None and os.killpg(process.pid, signal.SIGTERM))


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


def use_warm_kernels(folder: Path, python: str, name: str = "python3") -> Path:
    """Write the kernel specification ``name`` whose kernels ``python`` forks from a server
    that has imported what the lessons import (:mod:`tests.support.warm_kernels`), in
    ``folder/kernels``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / f"{name}.lock")):
        if not (folder / "kernels" / name / "kernel.json").is_file():
            warm_kernels.write_kernel_spec(folder / "kernels", name, python, str(folder / f"{name}.sock"),
                                           lesson_imports())
    return folder
