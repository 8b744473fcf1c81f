"""The book's other editions, as the site and the LaTeX build see them.

The reader's edition: the chapters as plain notebooks in ``notebooks/`` (written by
``tools/reader_edition.py``), which is what Colab and Binder can show. The Colab and
Binder launch buttons of a chapter's page open that notebook instead of the lesson,
whose MyST markup those front ends would show as raw text.

The PDF: ``make pdf`` builds the whole book with the LaTeX builder and XeLaTeX. For
that build this extension

- prefers SVG plots (converted to PDF by ``sphinxcontrib.rsvgconverter``) and drops the
  live view of each interactive figure, whose printed form is its static fallback: the
  PNG that every figure embeds in an HTML block (``companion.figures._base``), which is
  turned into an image here;
- defines the math macros of ``mathjax3_config`` for LaTeX too, so the two builds
  typeset the same formulas;
- numbers the chapters as the book does (chapter 0 to 9, the front matter unnumbered,
  the reference pages as appendices);
- supplies a stand-in for the ``bbm`` package that Jupyter Book's LaTeX class loads
  (``latex/bbm.sty``), so that Debian's large ``texlive-fonts-extra`` is not needed.

When the PDF has been built (``_build/latex/<name>.pdf``), the HTML build copies it
into the site and adds it to every page's download menu.
"""
from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent

#: Where the reader's edition lives, relative to the repository root.
EDITION = "notebooks"
#: The PDF's file name, in ``_build/latex`` and at the root of the site.
PDF_NAME = "positions-in-transformers.pdf"

#: myst-nb picks one output per mime bundle by these priorities (lower wins). For the
#: LaTeX build, an SVG plot becomes a PDF image, and a widget's view (which only a
#: browser can draw) wins over its text form, so that neither is printed.
LATEX_MIME_PRIORITIES = [
    ("latex", "application/vnd.jupyter.widget-view+json", 5),
    ("latex", "image/svg+xml", 15),
]

FALLBACK_IMAGE = re.compile(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"[^>]*>')
ALT = re.compile(r'alt="([^"]*)"')


#: A lesson's own numbering in a title, "3. " or "3.1 ", which LaTeX prints itself.
NUMBERED_TITLE = re.compile(r"^\d+\.(\d+)?\s+")


# --- the PDF -------------------------------------------------------------------------------

def _latex_settings(app: Sphinx, config) -> None:
    config.nb_mime_priority_overrides = list(config.nb_mime_priority_overrides) + LATEX_MIME_PRIORITIES
    # makeindex instead of xindy (not needed for a book without an index of terms).
    config.latex_use_xindy = False
    macros = (config.mathjax3_config or {}).get("tex", {}).get("macros", {})
    definitions = ""
    for name, body in macros.items():  # "body", or [body, number of arguments]
        body, arguments = (body[0], f"[{body[1]}]") if isinstance(body, list) else (body, "")
        definitions += rf"\providecommand{{\{name}}}{arguments}{{{body}}}" + "\n"
    elements = dict(config.latex_elements or {})
    elements["preamble"] = elements.get("preamble", "") + "\n" + definitions
    config.latex_elements = elements
    config.latex_additional_files = list(config.latex_additional_files) + [str(HERE / "latex" / "bbm.sty")]


def _print_fallbacks(app: Sphinx, doctree: nodes.document) -> None:
    """Give each interactive figure's fallback block an image the LaTeX builder can use.

    The fallback is an HTML output (the site shows it in print); next to it in the same
    mime bundle goes an ``image/png`` alternative holding the same picture (the figure's
    Markdown caption follows it). The HTML builder still picks the HTML (it ranks first
    there).
    """
    folder = Path(app.outdir).parent / "jupyter_execute" / "print_fallbacks"
    for raw in list(doctree.findall(nodes.raw)):
        if "companion-fallback" not in raw.astext():
            continue
        container = raw.parent
        bundle = container.parent if container is not None else None
        if bundle is None or bundle.get("nb_element") != "mime_bundle":
            continue
        match = FALLBACK_IMAGE.search(raw.astext())
        if not match:
            LOGGER.warning("an interactive figure's fallback has no PNG image", location=raw)
            continue
        alt = ALT.search(match.group(0))
        png = base64.b64decode(match.group(1))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{hashlib.sha256(png).hexdigest()[:16]}.png"
        if not path.exists():
            path.write_bytes(png)
        uri = "/" + Path(os.path.relpath(path, app.srcdir)).as_posix()  # as myst-nb writes them
        image = nodes.image(uri=uri, alt=html.unescape(alt.group(1)) if alt else "")
        alternative = nodes.container(nb_element="mime_type", mime_type="image/png")
        alternative += image  # the Markdown caption under the figure says what it shows
        bundle += alternative


def _chapter_numbers(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Number the PDF's chapters as the book does: front matter unnumbered, the lessons
    from chapter 0 (their titles carry the number, which LaTeX then prints), the
    reference pages as appendices."""
    if app.builder.name != "latex":
        return
    from sphinx import addnodes

    files = list(doctree.findall(addnodes.start_of_file))
    lessons = [node for node in files if node["docname"].startswith("lessons/")]
    if not lessons:
        return
    first, last = lessons[0], lessons[-1]
    doctree.insert(0, nodes.raw("", "\\edef\\booksecnumdepth{\\arabic{secnumdepth}}"
                                    "\\setcounter{secnumdepth}{-1}\n", format="latex"))
    first.insert(0, nodes.raw("", "\\setcounter{secnumdepth}{\\booksecnumdepth}"
                                  "\\setcounter{chapter}{-1}\n", format="latex"))
    after = files.index(last) + 1
    if after < len(files):
        files[after].insert(0, nodes.raw("", "\\appendix\n", format="latex"))
    for lesson in lessons:
        for title in lesson.findall(nodes.title):
            text = title.children[0] if title.children else None
            if isinstance(text, nodes.Text) and NUMBERED_TITLE.match(text):
                title.replace(text, nodes.Text(NUMBERED_TITLE.sub("", text, count=1)))


# --- the site --------------------------------------------------------------------------------

def _built_pdf(app: Sphinx) -> Path:
    return Path(app.outdir).parent / "latex" / PDF_NAME


def _launch_edition(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Point a chapter's Binder and Colab buttons at its reader's edition; add the PDF."""
    if app.builder.format != "html":
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons" and pagename.startswith("lessons/"):
            stem = pagename.split("/", 1)[1]
            edition = Path(app.srcdir) / EDITION / f"{stem}.ipynb"
            if not edition.exists():
                LOGGER.warning(f"{pagename} has no reader's edition {EDITION}/{stem}.ipynb: "
                               "run 'make edition'", location=pagename)
                continue
            for button in group["buttons"]:
                if button.get("text") in ("Binder", "Colab"):
                    button["url"] = button["url"].replace(f"{pagename}.ipynb", f"{EDITION}/{stem}.ipynb")
        if group.get("label") == "download-buttons":
            # the theme's ".pdf" entry prints the page: say so
            for button in group["buttons"]:
                if button.get("label") == "download-pdf-button":
                    button["text"] = "Print this page"
                    button["tooltip"] = "Print this page, or save it as a PDF"
                    button["icon"] = "fas fa-print"
        if group.get("label") == "download-buttons" and getattr(app.env, "editions_pdf", False):
            group["buttons"].append({
                "type": "link",
                "text": "Book (.pdf)",
                "tooltip": "Download the whole book as a PDF",
                "icon": "fas fa-book",
                "url": context["pathto"](PDF_NAME, 1),
                "label": "download-book-pdf-button",
            })


def _note_pdf(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Rewrite every page of the site when the PDF has appeared or gone since its last build."""
    if app.builder.format != "html":
        return []
    had = getattr(env, "editions_pdf", None)
    env.editions_pdf = _built_pdf(app).is_file()
    return sorted(env.found_docs) if had is not None and had != env.editions_pdf else []


def _copy_pdf(app: Sphinx, exception) -> None:
    if exception is None and app.builder.format == "html" and getattr(app.env, "editions_pdf", False):
        shutil.copy2(_built_pdf(app), Path(app.outdir) / PDF_NAME)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinxcontrib.rsvgconverter")
    app.connect("config-inited", _latex_settings)
    app.connect("doctree-read", _print_fallbacks, priority=400)  # before the image collector
    app.connect("doctree-resolved", _chapter_numbers)
    app.connect("env-get-outdated", _note_pdf)
    app.connect("html-page-context", _launch_edition, priority=502)  # after the theme's buttons
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
