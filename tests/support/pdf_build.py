"""Build the book as one PDF for the tests, as ``make pdf`` does, and keep the result.

``python -m tests.support.pdf_build OUT`` builds into the folder ``OUT`` what ``jupyter-book build
--builder pdflatex`` builds, in its two steps: Sphinx writes the LaTeX (from the site's
build, whose executed and parsed pages are copied first, so nothing runs or is read twice),
then ``make all-pdf`` runs XeLaTeX on it (three passes and the index, about two minutes).

The second step is kept: the PDF and XeLaTeX's log are stored in ``_build/pdf-cache/``
under a hash of everything XeLaTeX reads (the LaTeX source, the style files, the figures)
and of the TeX installation's version. When the next run writes the same LaTeX, the stored
PDF is the one XeLaTeX would make again, and it is used; any change to a chapter, a figure
or the TeX installation makes a new one. ``OUT/build.log`` has the output, ``OUT/returncode``
the exit status (written last: tests/test_pdf.py waits for it), ``OUT/started`` the time
the build started and ``OUT/reused`` whether the stored PDF was used.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bookwork.sphinx.editions import PDF_NAME as PDF_FILE

ROOT = Path(__file__).resolve().parents[2]
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
CACHE = ROOT / "_build" / "pdf-cache"
PDF_NAME = Path(PDF_FILE).stem


def latex_inputs_hash(latex: Path) -> str:
    """A hash of the files in the LaTeX folder and of the TeX installation's version.

    Figures converted from SVG are named after the SVG's own hash, and the converter stamps
    the date inside them, so they count by name; every other file counts by its content."""
    digest = hashlib.sha256()
    digest.update(subprocess.run(["xelatex", "--version"], capture_output=True, text=True).stdout.encode())
    for path in sorted(p for p in latex.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(latex)).encode())
        if path.suffix != ".pdf":
            digest.update(path.read_bytes())
    return digest.hexdigest()


def build(out: Path, log) -> int:
    for folder in (".jupyter_cache", ".doctrees"):
        shutil.copytree(ROOT / "_build" / folder, out / "_build" / folder)
    latex_step = [str(JUPYTER_BOOK), "build", str(ROOT), "--builder", "latex", "-W", "-n", "--keep-going",
                  "--path-output", str(out)]
    result = subprocess.run(latex_step, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        return result.returncode
    latex = out / "_build" / "latex"
    key = latex_inputs_hash(latex)
    stored = CACHE / key
    if (stored / f"{PDF_NAME}.pdf").is_file():
        for suffix in (".pdf", ".log"):
            shutil.copy2(stored / f"{PDF_NAME}{suffix}", latex / f"{PDF_NAME}{suffix}")
        (out / "reused").write_text("yes")
        print(f"XeLaTeX's PDF for these inputs was stored: {stored}", file=log, flush=True)
        return 0
    result = subprocess.run(["make", "all-pdf"], cwd=latex, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode == 0 and (latex / f"{PDF_NAME}.pdf").is_file():
        shutil.rmtree(CACHE, ignore_errors=True)  # keep only the newest
        stored.mkdir(parents=True)
        for suffix in (".pdf", ".log"):
            shutil.copy2(latex / f"{PDF_NAME}{suffix}", stored / f"{PDF_NAME}{suffix}")
    return result.returncode


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "started").write_text(str(time.time()))
    with open(out / "build.log", "w") as log:
        try:
            status = build(out, log)
        except Exception as error:  # reported to the tests, which fail with it
            print(f"{type(error).__name__}: {error}", file=log)
            status = 1
    (out / "returncode").write_text(str(status))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
