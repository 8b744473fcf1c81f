"""The book's other editions, as the site links them: the reader's edition and the PDF.

The reader's edition: the chapters as plain notebooks in ``notebooks/`` (written by
:mod:`bookwork.edition`), which is what Colab and Binder can show. The Colab and
Binder launch buttons of a chapter's page open that notebook instead of the lesson,
whose MyST markup those front ends would show as raw text.

The PDF (``make pdf``, the LaTeX build: :mod:`bookwork.sphinx.print_book`): when it has
been built (``_build/latex/<name>.pdf``), the HTML build copies it into the site and
adds it to every page's download menu, whose entry that prints the page says so.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

#: Where the reader's edition lives, relative to the repository root.
EDITION = "notebooks"
#: The PDF's file name, in ``_build/latex`` and at the root of the site.
PDF_NAME = "positions-in-transformers.pdf"


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
    app.connect("env-get-outdated", _note_pdf)
    app.connect("html-page-context", _launch_edition, priority=502)  # after the theme's buttons
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
