"""The book as one PDF (make pdf): Jupyter Book's LaTeX builder with XeLaTeX.

Built once per run from the site's build (its execution cache and parsed pages are
copied, so nothing runs or is read twice), in a folder of its own, in the background
from the moment the site is built (tests/conftest.py), while other tests run. Checks: every chapter's title
is in the table of contents, numbered as in the book; no "??" (an unresolved reference)
and no undefined reference or citation; every figure file LaTeX includes exists, and each
chapter with an interactive figure prints its static fallback image; no character is
missing from the fonts (Greek, stars, accents); math is typeset, not printed as source;
the bibliography is there. The page count, size and build time are reported.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, TEX_TOOLS, pdf_folder

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from editions import NUMBERED_TITLE, PDF_NAME  # noqa: E402

pytestmark = pytest.mark.pdf

LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))


def lesson_text(lesson: Path) -> str:
    return "\n".join(cell.source for cell in nbformat.read(lesson, as_version=4).cells)


def normal(text: str) -> str:
    """Text compared as printed: one space for any run of white space, straight quotes."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="session")
def built_pdf(built_site, tmp_path_factory):
    """The PDF, built in the background as soon as the site was (conftest.start_pdf_build,
    tests/pdf_build.py)."""
    missing = [tool for tool in TEX_TOOLS if shutil.which(tool) is None]
    if missing:
        message = f"TeX tools missing ({', '.join(missing)}): install them with tools/install_tex.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    out = pdf_folder(tmp_path_factory)
    returncode = out / "returncode"
    if not out.is_dir():
        pytest.fail("the PDF build was not started with the site's build (conftest.book_build)")
    deadline = time.monotonic() + 1800
    while not returncode.is_file():
        if time.monotonic() > deadline:
            pytest.fail(f"the PDF build did not start or did not end (see {out})")
        time.sleep(1)
    seconds = returncode.stat().st_mtime - float((out / "started").read_text())
    reused = (out / "reused").is_file()
    log = (out / "build.log").read_text(errors="replace")
    latex = out / "_build" / "latex"
    if returncode.read_text().strip() != "0" or not (latex / PDF_NAME).is_file():
        pytest.fail("the PDF build failed:\n" + log[-10000:])
    assert "Executing notebook" not in log, \
        "the PDF build executed notebooks again instead of reusing the site's results"
    text = subprocess.run(["pdftotext", "-enc", "UTF-8", str(latex / PDF_NAME), "-"],
                          capture_output=True, text=True, check=True).stdout
    info = subprocess.run(["pdfinfo", str(latex / PDF_NAME)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))
    return {"folder": latex, "text": text, "pages": pages, "seconds": seconds, "reused": reused,
            "tex": (latex / PDF_NAME).with_suffix(".tex").read_text(),
            "log": (latex / PDF_NAME).with_suffix(".log").read_text(errors="replace")}


def test_every_chapter_is_in_the_contents_with_its_number(built_pdf, capsys):
    pdf = built_pdf["folder"] / PDF_NAME
    with capsys.disabled():
        print(f"\nPDF: {built_pdf['pages']} pages, {pdf.stat().st_size / 1e6:.1f} MB, "
              f"built in {built_pdf['seconds']:.0f} s"
              + (" (XeLaTeX's result for the same LaTeX reused: tests/pdf_build.py)" if built_pdf["reused"] else ""))
    text = normal(built_pdf["text"])
    for lesson in LESSONS:
        title = nbformat.read(lesson, as_version=4).cells[0].source.splitlines()[-1].lstrip("# ")
        assert NUMBERED_TITLE.match(title), f"{lesson.name}: a chapter's title starts with its number"
        number, name = title.split(". ", 1)
        assert f"{number} {normal(name)}" in text, f"{lesson.name}: '{number} {name}' is not in the contents"
        assert f"Chapter {number}. {normal(name)}" in text, f"{lesson.name}: its pages are not headed chapter {number}"
    assert built_pdf["pages"] > 10 * len(LESSONS)


def test_references_and_citations_resolve(built_pdf):
    assert "??" not in built_pdf["text"]
    undefined = re.findall(r"LaTeX Warning: (?:Reference|Citation|Hyper reference) .* undefined", built_pdf["log"])
    assert not undefined, undefined[:5]
    text = normal(built_pdf["text"])
    assert re.search(r"\[Su et al\., 2024\]", text), "author-year citations"
    assert "RoFormer: enhanced transformer with rotary position embedding" in text.replace("\u00ad", "")
    assert re.search(r"Theorem \d+", text) and re.search(r"Exercise \d+", text)


def test_every_figure_is_printed(built_pdf):
    folder, tex, log = built_pdf["folder"], built_pdf["tex"], built_pdf["log"]
    missing = re.findall(r"File `[^']+' not found", log)
    assert not missing, missing[:5]
    included = re.findall(r"\\sphinxincludegraphics(?:\[[^\]]*\])?\{\{([^}]*)\}(\.\w+)\}", tex)
    assert included and all((folder / (stem + ext)).is_file() for stem, ext in included)
    assert "<Figure size" not in built_pdf["text"], "a plot printed as its text form"
    chapters = re.split(r"\\chapter\{", tex)
    for lesson in LESSONS:
        if "from companion.figures import" not in lesson_text(lesson):
            continue
        (chapter,) = [part for part in chapters if f"\\label{{\\detokenize{{lessons/{lesson.stem}::doc}}}}" in part]
        fallbacks = re.findall(r"\\sphinxincludegraphics(?:\[[^\]]*\])?\{\{([0-9a-f]{16})\}\.png\}", chapter)
        assert fallbacks, f"{lesson.name}: its interactive figure has no printed fallback image"


def test_fonts_have_every_character_and_math_is_typeset(built_pdf):
    missing = sorted(set(re.findall(r"Missing character: There is no (.) ", built_pdf["log"])))
    assert not missing, f"characters missing from the fonts: {missing}"
    text = normal(built_pdf["text"])
    assert "θ" in text and "é" in text, "Greek letters and accents are printed"
    for symbol in "★∎≈×→":
        if any(symbol in lesson_text(lesson) for lesson in LESSONS):
            assert symbol in text, f"{symbol} is in a chapter but not in the PDF"
    source = re.findall(r".{60}\\(?:frac|mathsf|operatorname|theta)\b.{20}", text)
    assert not source, f"math printed as LaTeX source: {source[:3]}"
