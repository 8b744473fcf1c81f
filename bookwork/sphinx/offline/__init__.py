"""Serve every front-end file the book needs from the book itself, and keep pages light.

By default a Jupyter Book page loads require.js, the Jupyter widget manager,
anywidget's front end and MathJax from public CDNs; with no network (or behind a
school firewall) the widgets vanish and the math stays raw LaTeX. Served from the
site instead, those files weighed 3 to 7 MB a page. This extension keeps every page
offline and light, one step per module:

* **Figures** (:mod:`~bookwork.sphinx.offline.vendor_files`). Every figure is an
  anywidget whose drawing module travels in the page's saved widget state.
  ``assets/anywidget-static.js`` (a few kilobytes) draws them from that state, in
  place of the general widget manager; it is loaded ``defer`` so it never blocks the page.
* **Math** (:mod:`~bookwork.sphinx.offline.math_typesetting`). The TeX is typeset as
  MathML when the book is built; the glyphs come from STIX Two Math, cut to the
  characters the site uses (:mod:`~bookwork.sphinx.offline.font_subsets`).
* **Icons** (:mod:`~bookwork.sphinx.offline.icons`). The theme's Font Awesome CSS
  and fonts cut down to the icons the site shows; its 1.5 MB script version of the
  same icons is taken off the pages (:mod:`~bookwork.sphinx.offline.page_scripts`).
* **No Thebe, no MathJax** (:mod:`~bookwork.sphinx.offline.page_scripts`): the
  scripts Jupyter Book adds anyway are left off the pages.
* **Plots** (:mod:`~bookwork.sphinx.offline.svg_plots`): the SVG plots at half the bytes.
* **Unused CSS** (:mod:`~bookwork.sphinx.offline.css_purge`): the theme's
  stylesheets cut to the rules the site can match.
* **Look.** ``assets/book.css`` (phone layout, wrapping, dropdowns),
  ``assets/book.js`` (a formula wider than a phone's column scrolls in place),
  ``assets/favicon.svg``, and ``assets/search_scorer.js`` (search ranks a chapter and
  the glossary above the API entries named after a method).

When the build starts, the files are staged and the pages pointed at them; when it has
finished, the written pages are finished in the order above. Every page is finished,
not only those written now: a page left untouched by a failed run is finished by the
next one (each step leaves a finished page as it is).
"""
from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from bookwork.sphinx.offline import css_purge, font_subsets, icons, math_typesetting, page_scripts, svg_plots
from bookwork.sphinx.offline.vendor_files import (
    FAVICON,
    MATH_FONT,
    MATH_FONT_SOURCE,
    SEARCH_SCORER,
    VENDOR,
    WIDGET_LOADER,
    stage_vendor,
)


def _stage(app: Sphinx, config) -> None:
    staging = Path(app.outdir).parent / "offline_assets"
    stage_vendor(Path(app.confdir), staging / VENDOR)
    config.html_static_path.append(str(staging))
    config.html_css_files.append((f"{VENDOR}/book.css", {"priority": 900}))
    config.html_js_files.append((f"{VENDOR}/book.js", {"defer": "defer"}))
    if not config.html_favicon:
        config.html_favicon = str(FAVICON)
    if not config.html_search_scorer:
        config.html_search_scorer = str(SEARCH_SCORER)
    # Figures: the small loader instead of require.js and the general widget manager.
    config.nb_ipywidgets_js = {WIDGET_LOADER: {"defer": "defer"}}


def _finish(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    pages = [p for p in site.rglob("*.html") if "_static" not in p.parts]
    originals = {page: page.read_text(encoding="utf-8") for page in pages}
    texts = {page: page_scripts.without_icon_script(text) for page, text in originals.items()}
    texts = icons.slim_icons(site, texts)
    with_math = [page for page, text in texts.items() if math_typesetting.has_math(text)]
    if with_math:
        math_typesetting.typeset_pages(app, {page: texts[page] for page in with_math}, texts)
    for page, text in texts.items():
        if text != originals[page]:
            page.write_text(text, encoding="utf-8")
    font_subsets.subset_math_font(Path(app.confdir) / "node_modules" / MATH_FONT_SOURCE, texts.values(),
                                  site / MATH_FONT)
    svg_plots.slim_plots(app)
    css_purge.purge_stylesheets(app)


def setup(app: Sphinx) -> dict:
    # Run after myst-nb and sphinx.ext.mathjax have registered their defaults.
    app.connect("config-inited", _stage, priority=900)
    app.connect("html-page-context", page_scripts.page_scripts, priority=900)
    app.connect("build-finished", _finish)
    return {"version": "3.0", "parallel_read_safe": True, "parallel_write_safe": False}
