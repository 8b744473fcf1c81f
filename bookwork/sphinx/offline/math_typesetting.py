"""The book's TeX typeset as MathML when the book is built.

Temml (npm ``temml``, pinned in ``package.json``; ``assets/typeset.cjs``) turns every
formula of a written page into MathML: the browser lays MathML out itself and screen
readers read it, so a page carries no typesetting script, and MathML is a fifth the
size of MathJax's HTML output. The macros are the book's (``mathjax3_config`` in
``_config.yml``, which the PDF build defines for LaTeX too). A TeX error is a build
warning, which ``-W`` makes an error. Each page links Temml's stylesheet for STIX Two
Math (:func:`bookwork.sphinx.offline.vendor_files.math_stylesheet`).
"""
from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from bookwork.sphinx.offline.vendor_files import MATH_CSS, run_node

logger = logging.getLogger(__name__)

INLINE_MATH = re.compile(r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>', re.S)
# Display math, and the LaTeX output of a code cell (a SymPy result: "output text_latex math").
DISPLAY_MATH = re.compile(r'(<div class="(?:output text_latex )?math notranslate nohighlight"[^>]*>)\s*\\\[(.*?)\\\]'
                          r"\s*</div>", re.S)


def has_math(page: str) -> bool:
    return bool(INLINE_MATH.search(page) or DISPLAY_MATH.search(page))


def typeset_pages(app: Sphinx, sources: dict[Path, str], texts: dict[Path, str]) -> None:
    """Replace each page's TeX with MathML (in ``texts``); TeX errors are build warnings."""
    outdir = Path(app.outdir)
    request_pages, order = [], []
    for page, text in sources.items():
        formulas = [{"tex": html.unescape(tex), "display": display} for tex, display in _formulas(text)]
        request_pages.append({"formulas": formulas})
        order.append(page)
    request = {"macros": _macros(app), "pages": request_pages}
    for page, typeset in zip(order, json.loads(run_node(Path(app.confdir), "typeset.cjs", request))):
        rel = page.relative_to(outdir)
        for error in typeset["errors"]:
            logger.warning(f"TeX error: {error}", location=str(rel), type="math", subtype="tex")
        stylesheet = os.path.relpath(outdir / MATH_CSS, page.parent).replace(os.sep, "/")
        texts[page] = _insert(texts[page], typeset["html"], stylesheet)


def _formulas(text: str):
    """The page's TeX, in the order ``_insert`` puts the MathML back."""
    for match in INLINE_MATH.finditer(text):
        yield match.group(1), False
    for match in DISPLAY_MATH.finditer(text):
        yield match.group(2), True


def _insert(text: str, mathml: list[str], stylesheet: str) -> str:
    rendered = iter(mathml)
    text = INLINE_MATH.sub(lambda m: f'<span class="math notranslate nohighlight">{next(rendered)}</span>', text)
    text = DISPLAY_MATH.sub(lambda m: f"{m.group(1)}{next(rendered)}</div>", text)
    return text.replace("</head>", f'<link rel="stylesheet" href="{stylesheet}" />\n</head>', 1)


def _macros(app: Sphinx) -> dict:
    config = app.config.mathjax3_config or {}
    return dict(config.get("tex", {}).get("macros", {}))
