"""The book as one PDF (make pdf): Jupyter Book's LaTeX builder with XeLaTeX.

Built once per run from the site's build (its execution cache and parsed pages are
copied, so nothing runs or is read twice), in a folder of its own, in the background
from the moment the site is built (tests/conftest.py), while other tests run. Checks: every chapter's title
is in the table of contents, numbered as in the book; no "??" (an unresolved reference)
and no undefined reference or citation; every figure file LaTeX includes exists, and each
chapter with an interactive figure prints its static fallback image; no character is
missing from the fonts (Greek, stars, accents); math is typeset, not printed as source;
the bibliography is there. The page count, size and build time are reported.

And the PDF is a printed book (:mod:`bookwork.sphinx.print_book`): captions and front matter say
nothing about dragging or clicking, nothing runs past the margin (no overfull box over
10 pt), no line of code or output wrapped with a continuation mark and chapter 10's
configurations set as a table, every box has a title and proofs are text, no box header
alone at the foot of a page, a real title page and no release in the running heads,
solutions at the end of each chapter with a pointer under each exercise, the results
listed by number and title, no stray near-empty page, and a sample of pages turned into
images keeps its ink inside the margins.

And it is set as a book: plots and interactive figures printed from their vector print
versions, their text a little below the body's size and any pixels at 300 per inch; a
measure of 65 to 90 characters; FreeSerif with STIX Two Math, code in DejaVu Sans Mono
in colours that read on paper; empty pages empty; a titled preface; the API left to the
website, an index of concepts; results as numbered tables; exercises on a live figure
that say where it is live.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import unicodedata
import zlib
from pathlib import Path

import nbformat
import pytest

from bookwork.sphinx.editions import PDF_NAME
from bookwork.sphinx.print_book import CODE_OUTSET, NUMBERED_TITLE, PAPER_WIDTH
from companion.plotting import PRINT_WIDTH
from tests.support.book import ROOT, TEX_TOOLS, pdf_folder

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
        live = [body for body in re.findall(r"\\begin\{figure\}(.*?)\\end\{figure\}", chapter, re.S)
                if re.search(r"fig-\d\d-(permutation-explorer|position-term|rope-rotation|alibi-heatmap|"
                             r"context-extension)", body)]
        assert live, f"{lesson.name}: its interactive figure is not printed as a figure"
        for body in live:  # its print version, a vector PDF, at the width it was drawn for
            assert re.search(r"\\sphinxincludegraphics\[width=[\d.]+in\]\{\{[0-9a-f]{64}\}\.pdf\}", body), \
                f"{lesson.name}: an interactive figure prints without its print version"


def test_fonts_have_every_character_and_math_is_typeset(built_pdf):
    missing = sorted(set(re.findall(r"Missing character: There is no (.) ", built_pdf["log"])))
    assert not missing, f"characters missing from the fonts: {missing}"
    text = normal(built_pdf["text"])
    assert "θ" in text and "é" in text, "Greek letters and accents are printed"
    for symbol in "★∎≈×→":
        if any(symbol in lesson_text(lesson) for lesson in LESSONS):
            assert symbol in text, f"{symbol} is in a chapter but not in the PDF"
    # in the LaTeX source, outside the code a chapter shows (whose strings may hold math for
    # a table's Markdown), a backslash printed before a math command is math set as text
    tex = re.sub(r"\\begin\{sphinxuseclass\}\{cell_input\}\s*\\begin\{sphinxVerbatim\}.*?\\end\{sphinxVerbatim\}", "",
                 built_pdf["tex"], flags=re.S)
    source = re.findall(r".{60}(?:\\textbackslash\{\}|\\PYGZbs\{\})(?:frac|mathsf|operatorname|theta)\b.{20}", tex)
    assert not source, f"math printed as LaTeX source: {source[:3]}"


# --- the PDF as a printed book ------------------------------------------------------------

def page_texts(pdf: Path) -> list[str]:
    """The text of every page, in order (pdftotext's form feeds separate the pages)."""
    text = subprocess.run(["pdftotext", "-layout", "-enc", "UTF-8", str(pdf), "-"],
                          capture_output=True, text=True, check=True).stdout
    return text.split("\f")


def latex_captions(tex: str) -> list[str]:
    """The text of every ``\\caption{...}`` in the LaTeX source (the captions as printed)."""
    captions = []
    for match in re.finditer(r"\\caption\{", tex):
        depth, end = 1, match.end()
        while depth and end < len(tex):
            depth += {"{": 1, "}": -1}.get(tex[end], 0)
            end += 1
        captions.append(tex[match.end():end - 1])
    return captions


def test_print_says_nothing_about_dragging_or_clicking(built_pdf):
    """Captions and front matter are written for paper: no dragging, clicking or dropdowns."""
    screen = re.compile(r"\b(drag\w*|click\w*|tap|hover\w*|dropdowns?)\b", re.IGNORECASE)
    captions = latex_captions(built_pdf["tex"])
    assert len(captions) > 30, len(captions)
    said = [caption[:100] for caption in captions if screen.search(caption)]
    assert said == [], said
    front = normal(built_pdf["text"]).split("Chapter 0.", 1)[0]
    said = [m.group(0) for m in screen.finditer(re.sub(r":class:\s+dropdown", "", front))]
    assert said == [], f"the front matter speaks of the screen: {said}"


def test_no_line_runs_past_the_margin(built_pdf):
    """No overfull box wider than 10 pt in XeLaTeX's log (a table or a line past the margin)."""
    overfull = [float(width) for width in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", built_pdf["log"])]
    assert [width for width in overfull if width > 10] == [], sorted(overfull)[-5:]


def test_every_box_has_a_title_and_proofs_are_text(built_pdf):
    """Every definition, theorem, exercise or solution box has a title; a proof is printed
    as text ("Proof." and the argument), not as a box with an empty title bar."""
    tex = built_pdf["tex"]
    opened = len(re.findall(r"\\begin\{sphinxadmonition\}\{note\}", tex))
    untitled = re.findall(r"\\begin\{sphinxadmonition\}\{note\}(?!\{[^}\s])", tex)
    assert opened > 100 and untitled == [], f"{len(untitled)} of {opened} boxes have no title"
    assert tex.count(r"\sphinxstyleemphasis{Proof.}") > 40


def test_a_real_title_page_and_no_release_in_running_heads(built_pdf):
    pages = page_texts(built_pdf["folder"] / PDF_NAME)
    assert "Positions in Transformers" in pages[0] and "Release" not in pages[0]
    assert not any("Release 0." in page for page in pages), "a running head or page names the release"


def test_solutions_at_the_end_of_each_chapter(built_pdf):
    """Each chapter prints its solutions after its last section; each exercise says where."""
    text = normal(built_pdf["text"])
    chapters = re.split(r"\nChapter \d+\. ", built_pdf["text"])
    pointers = len(re.findall(r"Solution on page \d+", text))
    solutions = len(re.findall(r"Solution to Exercise \d+\.\d+", text))
    assert pointers >= 60 and pointers == solutions, (pointers, solutions)
    for lesson in LESSONS:
        number = int(lesson.name[:2])
        part = text.split(f"Chapter {number}. ", 1)[-1].split(f"Chapter {number + 1}. ", 1)[0]
        first_solution = part.find("Solution to Exercise")
        if first_solution >= 0:
            assert part.rfind(f"Exercise {number}.", 0, first_solution) >= 0
            assert "Solutions" in part[:first_solution], lesson.name
    assert chapters


def test_results_are_listed_by_number_and_title(built_pdf):
    """The list of definitions and results names each by its number and title, not its label."""
    text = normal(built_pdf["text"]).replace("\u00ad", "")
    listed = text.split("Definitions and results", 1)[-1]
    assert "Corollary 1.1 (The dot product cannot tell before from after)" in listed
    assert "cor-01-even" not in text and "Proof Index" not in text and "PROOF INDEX" not in text


def test_no_stray_near_empty_pages(built_pdf):
    """No page holds only a figure and its caption, or a few lines of a page that has
    nothing else to say (a chapter opening page and an empty left-hand page are fine)."""
    pdf = built_pdf["folder"] / PDF_NAME
    stray = []
    for number, page in enumerate(page_texts(pdf)[2:-1], start=3):
        lines = [line.strip() for line in page.splitlines() if line.strip()]
        body = lines[1:-1] if len(lines) > 2 else []  # without the running head and the folio
        if not body or any(line.startswith(("Chapter ", "CHAPTER", "Part ")) for line in lines):
            continue
        if lines[-1].split()[-1:] == ["Index"]:
            continue  # the index's last page holds what is left of the alphabet
        if len(lines) == 1 or sum(bool(re.search(r"\d+$", line)) for line in lines) > len(lines) / 2:
            continue  # a part's title page, or the table of contents
        if len(" ".join(body)) < 250 or (body[0].startswith("Figure ") and len(" ".join(body)) < 500):
            stray.append(f"page {number}: {' / '.join(body)[:100]}")
    assert stray == [], stray


def test_sample_pages_render(built_pdf, tmp_path):
    """A sample of pages, turned into images: each has ink, and none is ink to the edge."""
    from PIL import Image

    pdf = built_pdf["folder"] / PDF_NAME
    sample = sorted({1, 2, *range(10, built_pdf["pages"], max(1, built_pdf["pages"] // 12))})
    for number in sample:
        subprocess.run(["pdftoppm", "-r", "30", "-gray", "-f", str(number), "-l", str(number), "-png", str(pdf),
                        str(tmp_path / f"p{number}")], check=True)
    for image_path in sorted(tmp_path.glob("p*.png")):
        image = Image.open(image_path).convert("L")
        width, height = image.size
        inked = image.point(lambda v: 255 if v < 200 else 0).getbbox()
        if inked is None:
            continue  # an empty left-hand page before a chapter
        left, top, right, bottom = inked
        # nothing in the outer margins: ink stays 3 % of the page from the paper's edge
        assert left > 0.03 * width and right < 0.97 * width, (image_path.name, inked, image.size)


def test_figures_are_numbered_within_chapters_as_on_the_site(built_pdf):
    """Chapter 0's figures are "Figure 0.1" and "Figure 0.2" too, and every chapter's
    captions count 1, 2, ... (plots and interactive figures in one sequence)."""
    text = normal(built_pdf["text"])
    numbers = re.findall(r"Figure (\d+)\.(\d+): ", text)
    assert ("0", "1") in numbers and ("0", "2") in numbers, numbers[:5]
    assert not re.search(r"Figure \d+: ", text), "a caption numbered without its chapter"
    by_chapter: dict[str, set[int]] = {}
    for chapter, k in numbers:  # captions, and the text's "In Figure 1.4: ..."
        by_chapter.setdefault(chapter, set()).add(int(k))
    for chapter, ks in by_chapter.items():
        assert sorted(ks) == list(range(1, len(ks) + 1)), (chapter, sorted(ks))


def test_wide_outputs_are_tables_not_wrapped_lines(built_pdf):
    """No line of code or output is too wide for the page, so none is broken with a
    continuation mark (↪); chapter 10's published configurations print as a table."""
    wrapped = [line.strip()[:90] for line in built_pdf["text"].splitlines() if "\u21aa" in line]
    assert wrapped == [], f"{len(wrapped)} lines wrapped in the PDF: {wrapped[:5]}"
    tex = built_pdf["tex"]
    chapter = tex.split(r"\label{\detokenize{lessons/10_what_your_model_runs::doc}}", 1)[1].split(r"\chapter{", 1)[0]
    tables = [body for _, body in re.findall(r"\\begin\{(tabulary|longtable|tabular)\}(.*?)\\end\{\1\}", chapter, re.S)]
    published = [body for body in tables if "Llama 2 7B" in body and r"gpt\sphinxhyphen{}oss\sphinxhyphen{}20b" in body]
    assert len(published) == 1, f"chapter 10's configurations are not one table ({len(tables)} tables in the chapter)"
    assert published[0].count(r"\\") >= 14, "a row per configuration, and the header"


#: The first line of a box as printed: its kind and number ("Theorem 3.1 (...)").
BOX_TITLE = re.compile(r"^(Definition|Theorem|Lemma|Corollary|Proposition|Exercise|Solution to Exercise|Example|Remark)"
                       r"\s+\d+\.\d+\b")


def test_no_box_header_is_stranded_at_the_foot_of_a_page(built_pdf):
    """A box's header never ends a page with its content on the next (print_book.py keeps
    it with its first lines); the list of results, whose lines are titles, is not a box."""
    stranded = []
    for number, page in enumerate(page_texts(built_pdf["folder"] / PDF_NAME), start=1):
        lines = [line.strip() for line in page.splitlines() if line.strip()]
        body = lines[1:-1] if len(lines) > 2 else []  # without the running head and the folio
        # a line of text that happens to start with a result's name ends as a sentence does
        if body and BOX_TITLE.match(body[-1]) and ". . ." not in body[-1] and body[-1][-1] not in ".,;?":
            stranded.append(f"page {number}: {body[-1][:80]}")
    assert stranded == [], stranded


# --- print craft: figures, measure, type, page furniture, front and back matter -----------

def test_print_images_are_vector_or_300_ppi(built_pdf):
    """What prints as pixels (a heat map's cells inside a plot's vector PDF) has 300 pixels
    per inch or more on the page: ``pdfimages -list`` gives each image's resolution as placed."""
    if shutil.which("pdfimages") is None:
        pytest.skip("pdfimages (poppler) is not installed")
    listing = subprocess.run(["pdfimages", "-list", str(built_pdf["folder"] / PDF_NAME)], capture_output=True,
                             text=True, check=True).stdout.splitlines()[2:]
    soft = [line.split() for line in listing if line.strip()
            and min(float(line.split()[12]), float(line.split()[13])) < 300]
    assert soft == [], f"{len(soft)} images under 300 ppi (page, width, height, ppi): " \
                       f"{[(row[0], row[3], row[4], row[12]) for row in soft[:6]]}"


def _figure_files(tex: str) -> list[tuple[str, float]]:
    """Each plot's PDF the LaTeX source includes, with the width it is printed at (inches)."""
    return [(name, float(width)) for width, name in
            re.findall(r"\\sphinxincludegraphics\[width=([\d.]+)in\]\{\{([0-9a-f]{64})\}\.pdf\}", tex)]


def _text_sizes(path: Path) -> list[float]:
    """The size of every run of text a PDF sets (the operand of each ``Tf`` in its content
    streams), in the PDF's points: a word box of a Type 3 font is its font's whole box,
    not the text's size."""
    sizes = []
    for stream in re.findall(rb"stream\r?\n(.*?)endstream", path.read_bytes(), re.S):
        try:
            content = zlib.decompress(stream)
        except zlib.error:  # an image's or a font's stream, or one not compressed
            continue
        sizes += [float(size) for size in re.findall(rb"/F\d+ ([\d.]+) Tf", content)]
    return sizes


def test_figure_text_prints_a_little_below_the_body(built_pdf):
    """In every plot printed at the width its output gives, the text measures 7 to 10 points
    (the body is 11): the median size its runs of text are set in, in the plot's PDF,
    scaled as printed."""
    from statistics import median

    figures = _figure_files(built_pdf["tex"])
    assert len(figures) > 40, len(figures)
    sizes = {}
    for name, printed in figures:
        path = built_pdf["folder"] / f"{name}.pdf"
        info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
        drawn = float(re.search(r"Page size:\s+([\d.]+) x", info).group(1)) / 72
        runs = _text_sizes(path)
        if runs:
            sizes[name[:12]] = median(runs) * printed / drawn
    assert len(sizes) > 40
    off = {name: round(size, 1) for name, size in sizes.items() if not 7 <= size <= 10}
    assert off == {}, f"plots whose text prints outside 7-10 pt: {off}"


def test_the_measure_is_a_books(built_pdf):
    """A full line of body text holds about 65 to 90 characters: the median of the long
    prose lines (justified, so full) of the chapters' pages."""
    from statistics import median

    pages = page_texts(built_pdf["folder"] / PDF_NAME)
    text = "\n".join(pages[len(pages) // 8: len(pages) // 2])
    prose = [line.strip() for line in subprocess.run(
        ["pdftotext", "-f", str(len(pages) // 8), "-l", str(len(pages) // 2), "-enc", "UTF-8",
         str(built_pdf["folder"] / PDF_NAME), "-"], capture_output=True, text=True, check=True).stdout.splitlines()]
    full = [line for line in prose if len(line) >= 50 and line.count(" ") >= 7 and not line.startswith(("#", ">>>"))
            and not re.search(r"[=(){}\[\]]{2}|\bdef\b|\bimport\b", line)]
    assert len(full) > 500 and text
    assert 65 <= median(len(line) for line in full) <= 90, median(len(line) for line in full)


def test_text_and_math_fonts_match_and_code_prints_dark(built_pdf):
    """FreeSerif (a Times design) with STIX Two Math (drawn to match Times) and code in
    DejaVu Sans Mono; neither Latin Modern Math beside it nor thin FreeMono."""
    fonts = subprocess.run(["pdffonts", str(built_pdf["folder"] / PDF_NAME)], capture_output=True, text=True,
                           check=True).stdout
    assert "STIXTwoMath" in fonts and "DejaVuSansMono" in fonts and "FreeSerif" in fonts
    assert "LatinModernMath" not in fonts and "FreeMono" not in fonts
    style = (built_pdf["folder"] / "sphinxhighlight.sty").read_text()
    pale = []
    for token, rgb in re.findall(r"\\@namedef\{PYG@tok@(\w+)\}.*?\\textcolor\[rgb\]\{([\d.,]+)\}", style):
        red, green, blue = (float(v) for v in rgb.split(","))
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (red, green, blue)]
        luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
        if (0.93 + 0.05) / (luminance + 0.05) < 4.5 and token not in ("w", "err"):  # on the code's light grey
            pale.append(token)
    assert pale == [], f"syntax colours under 4.5:1 on the code background: {pale}"


def test_empty_pages_are_empty_and_the_preface_is_titled(built_pdf):
    """A page left empty before a chapter carries no running head or folio; the preface has
    its title and its own running head, and "Contents" heads only the contents."""
    pages = page_texts(built_pdf["folder"] / PDF_NAME)
    furnished = [number for number, page in enumerate(pages, start=1)
                 if 0 < len([line for line in page.splitlines() if line.strip()]) <= 2
                 and re.search(r"^\s*\d+\s*$", page, re.MULTILINE)]
    assert furnished == [], f"pages with only a running head or a folio: {furnished}"
    preface = next(number for number, page in enumerate(pages) if re.search(r"^\s*Preface\s*$", page, re.M))
    assert "Chapter map" in "".join(pages[preface:preface + 6])
    contents_pages = [number for number, page in enumerate(pages) if re.search(r"\bCONTENTS\b|^\s*Contents\s*$",
                                                                               page, re.M)]
    assert all(number < preface for number in contents_pages), contents_pages


def test_the_api_is_left_to_the_website_and_the_index_is_of_concepts(built_pdf):
    """No validator signature is printed; the API appendix is the table of modules and a
    pointer; the index lists the book's concepts (YaRN, NTK-aware scaling, ...) with pages
    in the chapters, in the text's type, and few code names."""
    text = normal(built_pdf["text"])
    assert "Annotated[" not in text and "WholeNumbers(" not in text
    pages = page_texts(built_pdf["folder"] / PDF_NAME)
    start = next(n for n, page in enumerate(pages) if "help(companion.rope)" in page)
    glossary = next(n for n in range(start, len(pages)) if re.search(r"^\s*Glossary\s*$", pages[n], re.M))
    assert glossary - start <= 8, f"the API appendix takes {glossary - start} pages"
    index = next(n for n in range(glossary, len(pages)) if re.search(r"^\s*Index\s*$", pages[n], re.M))
    entries = " ".join(pages[index:]).replace("\u00ad", "")
    for concept in ("YaRN", "NTK-aware", "ALiBi", "Rotary position embedding", "KV cache"):
        assert re.search(re.escape(concept) + r"[^\n]*?\d", entries, re.I), concept
    # the index has two columns: an entry is a cell of a line split at wide gaps
    cells = [cell.strip() for line in entries.splitlines() for cell in re.split(r"\s{3,}", line)]
    lines = [cell for cell in cells if re.search(r",\s\d+", cell)]
    code = [line for line in lines if "companion." in line or "()" in line]
    assert len(lines) > 60 and len(code) <= len(lines) // 20, (len(lines), code[:5])
    assert r"\spxentry" not in built_pdf["tex"] or "\\def\\sphinxstyleindexentry#1{#1}" in built_pdf["tex"]


def test_results_are_numbered_tables_and_the_pdf_has_a_title(built_pdf):
    text = normal(built_pdf["text"])
    numbers = re.findall(r"Table (\d+)\.(\d+): ", text)
    assert ("10", "1") in numbers and ("2", "1") in numbers, numbers[:8]
    info = subprocess.run(["pdfinfo", str(built_pdf["folder"] / PDF_NAME)], capture_output=True, text=True,
                          check=True).stdout
    assert re.search(r"^Title:\s+Positions in Transformers", info, re.M)
    assert re.search(r"^Author:\s+\S", info, re.M)


#: The interactive figures' labels; an exercise built on one must say where it is live.
LIVE_FIGURES = re.compile(r"fig-\d\d-(permutation-explorer|position-term|rope-rotation|alibi-heatmap|"
                          r"context-extension)|chapter-\d\d-try-it")


def test_exercises_on_a_live_figure_work_on_paper_or_say_where():
    """Every exercise built on an interactive figure can be done on paper or says where
    the figure is live (the website and the notebook); none asks the reader to drag or
    switch something on the page without saying so."""
    exercises = []
    for lesson in LESSONS:
        exercises += re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)\n(.*?)\n```", lesson_text(lesson), re.S)
    reading = re.compile(r"\b(drag|move|switch|choose|look at|note|read|step|try)\b", re.I)
    on_figures = [(label, body) for label, body in exercises if LIVE_FIGURES.search(body) and reading.search(body)]
    assert len(on_figures) >= 5, [label for label, _ in on_figures]
    unsaid = [label for label, body in on_figures if not re.search(r"website", body) or "notebook" not in body]
    assert unsaid == [], f"exercises on a live figure that do not say where it is live: {unsaid}"


def _page_lines(pdf: Path) -> list[list[tuple[float, float, str]]]:
    """Each page's lines as pdftotext places them: (left edge, right edge, text), in points."""
    xml = subprocess.run(["pdftotext", "-bbox-layout", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    line = re.compile(r'<line xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">(.*?)</line>', re.S)
    return [[(float(left), float(right), " ".join(re.findall(r">([^<]*)</word>", words)))
             for left, right, words in line.findall(page)] for page in xml.split("<page ")[1:]]


def test_box_titles_and_lines_stay_inside_the_text_block(built_pdf):
    """A box's title wraps inside its box (Sphinx sets it on one line, which ran a long
    "Solution to Exercise 2.4 (Coding: ...)" past the box and into the margin), and no
    line of any page reaches further out than a wide table may (CODE_OUTSET past the text)."""
    left = (PAPER_WIDTH - PRINT_WIDTH) / 2 * 72
    right = left + PRINT_WIDTH * 72
    outset = CODE_OUTSET * 72
    titles, outside = [], []
    for number, lines in enumerate(_page_lines(built_pdf["folder"] / PDF_NAME), start=1):
        for x0, x1, text in lines:
            if BOX_TITLE.match(text) and x1 > right + 1:
                titles.append(f"page {number}: {text[:70]} ({x1 - right:.0f} pt past the text)")
            if x0 < left - outset - 1 or x1 > right + outset + 1:
                outside.append(f"page {number}: {text[:70]}")
    assert titles == [], f"{len(titles)} box titles run past their box: {titles[:5]}"
    assert outside == [], f"{len(outside)} lines run into the outer margin: {outside[:5]}"


def test_a_continued_table_is_named_only_if_it_has_a_name(built_pdf):
    """On the pages a long table continues on, its head says "Table N.M - continued from
    previous page" only for a table captioned "Table N.M" where it starts; a table without a
    caption (the preface's chapter map) is not given the number of the last table before it."""
    pages = page_texts(built_pdf["folder"] / PDF_NAME)
    head = re.compile(r"^\s*(?:(Table [\w.]+) \u2013 )?continued from previous page", re.M)
    wrong = []
    for number, page in enumerate(pages):
        named = head.search(page)
        if not named or not named.group(1):
            continue
        start = number - 1
        while start > 0 and head.search(pages[start]):
            start -= 1
        if f"{named.group(1)}:" not in normal(pages[start]):
            wrong.append(f"page {number + 1}: {named.group(1)}, not captioned on page {start + 1}")
    assert wrong == [], wrong


def test_a_code_block_split_by_a_page_break_prints_nothing_at_the_break(built_pdf):
    """A block of code that a page break splits says nothing there: not "(continues on next
    page)", nor the empty "()" that the style around an empty message printed."""
    marks = [number for number, page in enumerate(page_texts(built_pdf["folder"] / PDF_NAME), start=1)
             if re.search(r"^\s*\((continue[sd][^)]*)?\)\s*$", page, re.M)]
    assert marks == [], f"pages with a mark where a block of code breaks: {marks[:10]}"
