r"""What every page says about itself: a description, sharing tags, the version and build date.

* ``<meta name="description">`` and Open Graph tags (title, description, type,
  site name), so a shared link or a search result shows what the page is about. The
  description is the page's first paragraph, cut at a word near 160 characters; a
  page without one gets the book's description (``book_description``).
* The footer names the book's version (the ``companion`` package's, which the pages
  are computed with) and the date the pages were built, so a reader citing the book
  can say which edition they read. ``SOURCE_DATE_EPOCH`` fixes the date for a
  reproducible build.

Why not sphinxext-opengraph (which writes ``<meta name="description">`` since 0.7.5):
its description, computed from the same pages (0.13.0, on every page of the built
book), differs on all 61 pages. It joins every text node from the top of the page, so
an API page's description runs on into the module docstring's second paragraph; it
cuts at the length inside a word ("nothing in that compariso..."), and it puts no
space between a word and the math beside it ("their dot product,|q|\,|k|\cos\gamma",
"heads-m_h"). This module takes the first paragraph that reads as prose and cuts at
a word. The version and date in the footer are no job of that extension either.
"""
from __future__ import annotations

import datetime as _dt
import html
import os
import re

from docutils import nodes
from sphinx.application import Sphinx

DESCRIPTION_LENGTH = 160


def build_date() -> _dt.date:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return _dt.datetime.fromtimestamp(int(epoch), tz=_dt.UTC).date()
    return _dt.date.today()


def shorten(text: str, limit: int = DESCRIPTION_LENGTH) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters."""
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def first_paragraph(doctree) -> str:
    """The text of the page's first paragraph that reads as prose (not a code cell or a box)."""
    if doctree is None:
        return ""
    for paragraph in doctree.findall(nodes.paragraph):
        if paragraph.next_node(nodes.literal_block) is not None:
            continue
        parent, boxed = paragraph.parent, False
        while parent is not None:
            if isinstance(parent, (nodes.Admonition, nodes.table, nodes.footnote, nodes.citation)) or \
                    "cell" in parent.get("classes", []):
                boxed = True
                break
            parent = parent.parent
        text = paragraph.astext()
        if not boxed and len(text) > 40:
            return text
    return ""


def _version(app: Sphinx, config) -> None:
    try:
        import companion

        version = companion.__version__
    except Exception:  # the package not importable: the build fails elsewhere, loudly
        version = config.release or ""
    config.version = config.release = version
    built = build_date()
    stamp = f"Version {version} · built {built.day} {built:%B %Y}" if version else f"Built {built.day} {built:%B %Y}"
    footer = config.html_theme_options.get("extra_footer", "") or ""
    config.html_theme_options["extra_footer"] = f'{footer}<p class="book-edition">{html.escape(stamp)}</p>'
    config.html_context = {**(config.html_context or {}), "book_edition": stamp}


def _meta(app: Sphinx, pagename, templatename, context, doctree) -> None:
    description = shorten(first_paragraph(doctree)) or app.config.book_description
    title = re.sub(r"<[^>]+>", "", context.get("title") or "")
    tags = [
        f'<meta name="description" content="{html.escape(description)}">',
        f'<meta property="og:title" content="{html.escape(html.unescape(title))}">',
        f'<meta property="og:description" content="{html.escape(description)}">',
        '<meta property="og:type" content="book">',
        f'<meta property="og:site_name" content="{html.escape(app.config.html_title or app.config.project)}">',
    ]
    context["metatags"] = context.get("metatags", "") + "\n" + "\n".join(tags)


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_description", "", "html")
    app.connect("config-inited", _version)
    app.connect("html-page-context", _meta)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
