"""Each script on a page once, and none the site does not need.

Jupyter Book puts on every page scripts this site has no use for: MathJax (the math is
typeset when the book is built, :mod:`bookwork.sphinx.offline.math_typesetting`),
sphinx-thebe's files (there is no "Live Code" button: ``launch_buttons.thebe: false``)
and Font Awesome's 1.5 MB script version of the icons the theme also draws with its
stylesheet and fonts (:mod:`bookwork.sphinx.offline.icons`). sphinx-thebe also
registers its configuration script twice, and a second ``const THEBE_JS_URL``
declaration would be a JavaScript error.
"""
from __future__ import annotations

import re

from sphinx.application import Sphinx

ICON_SCRIPT = re.compile(r'\s*<script[^>]*src="[^"]*(?:fontawesome[^"]*all\.min\.js|scripts/fontawesome\.js)[^"]*"'
                         r"[^>]*></script>")
ICON_PRELOAD = re.compile(r'\s*<link rel="preload" as="font"[^>]*fontawesome[^>]*/>')


def page_scripts(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """(``html-page-context``) Each script on a page once; no MathJax, no Thebe."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        filename, attributes = _script_parts(script)
        if _is_mathjax(app, filename, attributes) or _is_thebe(filename, attributes):
            continue
        key = repr((filename or "", sorted((k, str(v)) for k, v in attributes.items() if k != "priority")))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept
    if context.get("css_files"):
        context["css_files"] = [css for css in context["css_files"] if not _is_thebe(_script_parts(css)[0], {})]


def without_icon_script(page: str) -> str:
    """A written page without Font Awesome's script and its font preloads (the theme's
    template writes them itself, after the page's scripts are chosen)."""
    return ICON_PRELOAD.sub("", ICON_SCRIPT.sub("", page))


def _script_parts(script):
    # Registry entries are (filename, attributes) pairs, builder entries objects; an
    # inline script's filename is None in one place and "" in the other.
    if isinstance(script, str):
        return script, {}
    if isinstance(script, tuple):
        return script
    return script.filename, script.attributes


def _is_thebe(filename, attributes) -> bool:
    return "thebe" in (filename or "") or "THEBE_JS_URL" in str(attributes.get("body", ""))


def _is_mathjax(app: Sphinx, filename, attributes) -> bool:
    if filename and app.config.mathjax_path and filename.split("?")[0].endswith(app.config.mathjax_path):
        return True
    return str(attributes.get("body", "")).lstrip().startswith("window.MathJax")
