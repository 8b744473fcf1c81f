"""The book's other editions, as the site offers them: the reader's edition and the PDF.

The reader's edition: the chapters as plain notebooks in ``notebooks/`` (written by
:mod:`bookwork.edition`), which is what Colab and Binder can show. The Colab and
Binder launch buttons of a chapter's page open that notebook instead of the lesson,
whose MyST markup those front ends would show as raw text. The site serves the edition
itself (``notebooks/`` at its root, and all of it as one zip file): a chapter's download
menu offers its notebook (in place of the lesson's source, which holds the book's markup
and the assignments' markers), and every page's menu offers the whole edition.

The PDF (``make pdf``, the LaTeX build: :mod:`bookwork.sphinx.print_book`): when it has
been built (``_build/latex/<name>.pdf``), the HTML build copies it into the site and
adds it to every page's download menu, whose entry that prints the page says so.
"""
from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

#: Where the reader's edition lives, relative to the repository root.
EDITION = "notebooks"
#: The PDF's file name, in ``_build/latex`` and at the root of the site.
PDF_NAME = "positions-in-transformers.pdf"
#: The whole reader's edition as one file, in the site's ``notebooks/``.
EDITION_ZIP = "positions-in-transformers-notebooks.zip"


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
            _edition_entries(app, pagename, context, group)
        if group.get("label") == "download-buttons" and getattr(app.env, "editions_pdf", False):
            group["buttons"].append({
                "type": "link",
                "text": "Book (.pdf)",
                "tooltip": "Download the whole book as a PDF",
                "icon": "fas fa-book",
                "url": context["pathto"](PDF_NAME, 1),
                "label": "download-book-pdf-button",
            })


def _edition_entries(app: Sphinx, pagename: str, context: dict, group: dict) -> None:
    """A chapter's notebook is its reader's edition; every page offers the whole edition."""
    stem = pagename.split("/", 1)[1] if pagename.startswith("lessons/") else None
    if stem is not None and (Path(app.srcdir) / EDITION / f"{stem}.ipynb").exists():
        for button in group["buttons"]:
            if button.get("label") == "download-source-button" and str(button.get("url", "")).endswith(".ipynb"):
                button["url"] = context["pathto"](f"{EDITION}/{stem}.ipynb", 1)
                button["text"] = "Notebook (.ipynb)"
                button["tooltip"] = "Download this chapter as a notebook (the reader's edition)"
    if (Path(app.srcdir) / EDITION).is_dir():
        group["buttons"].append({
            "type": "link",
            "text": "All notebooks (.zip)",
            "tooltip": "Download every chapter as a notebook (the reader's edition)",
            "icon": "fas fa-file-zipper",
            "url": context["pathto"](f"{EDITION}/{EDITION_ZIP}", 1),
            "label": "download-edition-button",
        })


def _note_pdf(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Rewrite every page of the site when the PDF has appeared or gone since its last build."""
    if app.builder.format != "html":
        return []
    had = getattr(env, "editions_pdf", None)
    env.editions_pdf = _built_pdf(app).is_file()
    return sorted(env.found_docs) if had is not None and had != env.editions_pdf else []


def _copy_editions(app: Sphinx, exception) -> None:
    """Into the site: the PDF, when built, and the reader's edition, its files and a zip of them."""
    if exception is not None or app.builder.format != "html":
        return
    if getattr(app.env, "editions_pdf", False):
        shutil.copy2(_built_pdf(app), Path(app.outdir) / PDF_NAME)
    source = Path(app.srcdir) / EDITION
    if not source.is_dir():
        return
    target = Path(app.outdir) / EDITION
    target.mkdir(exist_ok=True)
    files = sorted(p for p in source.iterdir() if p.is_file() and p.suffix in (".ipynb", ".md", ".txt"))
    with zipfile.ZipFile(target / EDITION_ZIP, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            shutil.copy2(path, target / path.name)
            archive.write(path, f"{EDITION}/{path.name}")


def setup(app: Sphinx) -> dict:
    app.connect("env-get-outdated", _note_pdf)
    app.connect("html-page-context", _launch_edition, priority=502)  # after the theme's buttons
    app.connect("build-finished", _copy_editions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
