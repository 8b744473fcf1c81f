"""Serve every front-end file the book needs from the book itself, and keep pages light.

By default a Jupyter Book page loads require.js, the Jupyter widget manager,
anywidget's front end and MathJax from public CDNs; with no network (or behind a
school firewall) the widgets vanish and the math stays raw LaTeX. Served from the
site instead, those files weighed 3 to 7 MB a page. This extension keeps every page
offline and light:

* **Figures.** Every figure is an anywidget whose drawing module travels in the
  page's saved widget state. ``assets/anywidget-static.js`` (a few kilobytes) draws
  them from that state, in place of the general widget manager; it is loaded
  ``defer`` so it never blocks the page.
* **Math.** The TeX is typeset when the book is built, as MathML, by Temml (npm
  ``temml``, pinned in ``package.json``; ``assets/typeset.cjs``): the browser lays
  MathML out itself and screen readers read it, so a page carries no typesetting
  script, and MathML is a fifth the size of MathJax's HTML output. The glyphs come from
  STIX Two Math (npm ``@fontsource/stix-two-math``, SIL Open Font License), cut with
  fontTools to the characters the site uses (about 35 kB; :func:`subset_math_font`),
  with Temml's stylesheet for MathML in the browsers. A TeX error fails the build.
* **Icons.** The theme draws its icons with Font Awesome's CSS and web fonts; its
  1.5 MB script version of the same icons is taken off the pages, and the CSS and
  fonts are cut down to the icons the site shows (``icons.py``).
* **No Thebe.** The launch menu has no "Live Code" (``launch_buttons.thebe: false``);
  sphinx-thebe's files, which Jupyter Book adds anyway, are left off the pages.
* **Plots.** The notebooks' SVG plots are slimmed with SVGO (``assets/slim_svg.cjs``):
  fewer decimals and no metadata, the same drawing at half the bytes.
* **Unused CSS.** The theme's stylesheets (Bootstrap's above all) are cut to the rules
  the site's pages and scripts can match, with PurgeCSS (``assets/purge.cjs``).
* **Look.** ``assets/book.css`` (phone layout, wrapping, dropdowns),
  ``assets/book.js`` (a formula wider than a phone's column scrolls in place) and
  ``assets/favicon.svg``.

Pinned npm files come from ``node_modules/`` (``npm ci`` with ``package.json`` /
``package-lock.json``; nothing third-party is committed).
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

sys.path.insert(0, str(Path(__file__).parent))
import icons  # noqa: E402  (book/_ext/icons.py)

logger = logging.getLogger(__name__)

VENDOR = "vendor"
ASSETS = Path(__file__).parent / "assets"

# (path under node_modules, path under _static/vendor); directories are copied whole.
NPM_FILES = [
    ("@fontsource/stix-two-math/LICENSE", "math/OFL.txt"),
]
#: The math font, whole (cut to the site's characters at the end of the build), and
#: Temml's stylesheet for it, which is served as MATH_CSS with the font's address changed.
MATH_FONT_SOURCE = "@fontsource/stix-two-math/files/stix-two-math-latin-400-normal.woff"
TEMML_CSS = "temml/dist/Temml-STIX2.css"
#: Files of this extension served with the site (under _static/vendor).
SITE_FILES = ["anywidget-static.js", "book.css", "book.js"]
FAVICON = "book/_ext/assets/favicon.svg"
WIDGET_LOADER = f"{VENDOR}/anywidget-static.js"
MATH_CSS = f"_static/{VENDOR}/math/temml.css"
MATH_FONT = f"_static/{VENDOR}/math/book-math.woff"


def stage_vendor(root: Path, vendor: Path) -> None:
    """Copy the pinned front-end files and this extension's assets into ``vendor`` (emptied first).

    Used by the book build below and by ``tools/preview_figure.py``.
    """
    node_modules = root / "node_modules"
    if not (node_modules / "temml").is_dir() or not (node_modules / MATH_FONT_SOURCE).is_file():
        raise ExtensionError(
            "offline_assets: node_modules/ is missing or out of date; run `npm ci` in the repository "
            "root (the README's build command does this for you)"
        )
    if vendor.exists():
        shutil.rmtree(vendor)
    vendor.mkdir(parents=True)
    for source, dest in NPM_FILES:
        _copy(node_modules / source, vendor / dest)
    for name in SITE_FILES:
        _copy(ASSETS / name, vendor / name)
    (vendor / "math" / "temml.css").write_text(math_stylesheet(node_modules / TEMML_CSS), encoding="utf-8")


def math_stylesheet(temml_css: Path) -> str:
    """Temml's stylesheet for STIX Two Math, with the font served by the site (cut to its
    characters, :func:`subset_math_font`) and never a copy installed on the reader's machine,
    so that every reader sees the same glyphs."""
    css = temml_css.read_text(encoding="utf-8")
    font_face = re.compile(r"src:\s*local\('STIXTwoMath'\),\s*url\('\./STIXTwoMath\.woff2'\);")
    if not font_face.search(css):
        raise ExtensionError(f"offline_assets: {temml_css} no longer has the @font-face this extension rewrites")
    return font_face.sub(f"src: url('{Path(MATH_FONT).name}') format('woff');", css)


def _stage(app: Sphinx, config) -> None:
    staging = Path(app.outdir).parent / "offline_assets"
    stage_vendor(Path(app.confdir), staging / VENDOR)
    config.html_static_path.append(str(staging))
    config.html_css_files.append((f"{VENDOR}/book.css", {"priority": 900}))
    config.html_js_files.append((f"{VENDOR}/book.js", {"defer": "defer"}))
    if not config.html_favicon:
        config.html_favicon = str(Path(app.confdir) / FAVICON)
    # Figures: the small loader instead of require.js and the general widget manager.
    config.nb_ipywidgets_js = {WIDGET_LOADER: {"defer": "defer"}}


def _page_scripts(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Each script on a page once; no browser-side MathJax (the math is typeset already), no Thebe.

    sphinx-thebe registers its configuration script twice, and a second
    ``const THEBE_JS_URL`` declaration would be a JavaScript error.
    """
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


# ---- after the build: typeset the math, drop the icon script -------------------------

INLINE_MATH = re.compile(r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>', re.S)
# Display math, and the LaTeX output of a code cell (a SymPy result: "output text_latex math").
DISPLAY_MATH = re.compile(r'(<div class="(?:output text_latex )?math notranslate nohighlight"[^>]*>)\s*\\\[(.*?)\\\]\s*</div>', re.S)
ICON_SCRIPT = re.compile(r'\s*<script[^>]*src="[^"]*(?:fontawesome[^"]*all\.min\.js|scripts/fontawesome\.js)[^"]*"[^>]*></script>')
ICON_PRELOAD = re.compile(r'\s*<link rel="preload" as="font"[^>]*fontawesome[^>]*/>')


def _finish(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    # Every page, not only those written now: a page left untouched by a failed run is
    # finished by the next one (each step leaves a finished page as it is).
    pages = [p for p in Path(app.outdir).rglob("*.html") if "_static" not in p.parts]
    originals = {page: page.read_text(encoding="utf-8") for page in pages}
    texts = dict(originals)
    texts = {page: ICON_PRELOAD.sub("", ICON_SCRIPT.sub("", text)) for page, text in texts.items()}
    texts = icons.slim_icons(Path(app.outdir), texts)
    with_math = [page for page, text in texts.items() if INLINE_MATH.search(text) or DISPLAY_MATH.search(text)]
    if with_math:
        typeset_pages(app, {page: texts[page] for page in with_math}, texts)
    for page, text in texts.items():
        if text != originals[page]:
            page.write_text(text, encoding="utf-8")
    subset_math_font(Path(app.confdir) / "node_modules" / MATH_FONT_SOURCE, texts.values(), Path(app.outdir) / MATH_FONT)
    slim_plots(app)
    purge_stylesheets(app)


#: The theme's stylesheets, cut to the rules the site's pages and scripts can match.
PURGED_CSS = ["styles/bootstrap.css", "styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css",
              "sphinx-design.min.css", "mystnb.*.css", "pygments.css", "togglebutton.css", "proof.css",
              "exercise.css"]


def slim_plots(app: Sphinx) -> None:
    """The notebooks' SVG plots, slimmed in place with SVGO (``assets/slim_svg.cjs``)."""
    plots = sorted(str(p) for p in (Path(app.outdir) / "_images").glob("*.svg"))
    if plots:
        result = json.loads(_node(app, "slim_svg.cjs", {"files": plots}))
        saved = sum(item["before"] - item["after"] for item in result)
        if saved:
            logger.info(f"offline_assets: {len(plots)} plots slimmed, {saved / 1e3:.0f} kB less")


def purge_stylesheets(app: Sphinx) -> None:
    static = Path(app.outdir) / "_static"
    css = sorted({str(p) for pattern in PURGED_CSS for p in static.glob(pattern)})
    content = [str(Path(app.outdir) / "**" / "*.html"), str(static / "**" / "*.js")]
    result = _node(app, "purge.cjs", {"content": content, "css": css})
    saved = sum(item["before"] - item["after"] for item in json.loads(result))
    logger.info(f"offline_assets: unused CSS rules removed, {saved / 1e3:.0f} kB less per page")


def _node(app: Sphinx, script: str, request: dict) -> str:
    env = dict(os.environ, NODE_PATH=str(Path(app.confdir) / "node_modules"))
    result = subprocess.run(["node", str(ASSETS / script)], input=json.dumps(request), capture_output=True,
                            text=True, env=env, cwd=app.confdir)
    if result.returncode != 0:
        raise ExtensionError(f"offline_assets: {script} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def typeset_pages(app: Sphinx, sources: dict[Path, str], texts: dict[Path, str]) -> None:
    """Replace each page's TeX with MathML (in ``texts``); TeX errors are build errors."""
    outdir = Path(app.outdir)
    request_pages, order = [], []
    for page, text in sources.items():
        formulas = [{"tex": html.unescape(tex), "display": display} for tex, display in _formulas(text)]
        request_pages.append({"formulas": formulas})
        order.append(page)
    request = {"macros": _macros(app), "pages": request_pages}
    for page, typeset in zip(order, json.loads(_node(app, "typeset.cjs", request))):
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


#: Characters the browser may draw for a letter in ``<mi>`` although the MathML has the
#: plain letter: a one-letter identifier is set in mathematical italic (MathML Core's
#: ``math-auto`` text transform), so the font keeps the italic Latin and Greek alphabets.
MATH_ITALIC = {0x210E, *range(0x1D434, 0x1D468), *range(0x1D6E2, 0x1D71C)}
#: Characters the browser draws that are in no element's text:
#: - U+221A, the radical sign of ``<msqrt>`` and ``<mroot>`` (MathML Core draws it from the
#:   font's MATH table: the sign itself, its larger sizes and the parts of its stretched
#:   form, which fontTools keeps with the character);
#: - the digits and parentheses of the equation numbers, which Temml's stylesheet writes
#:   with a CSS counter, ``"(" counter(tmlEqnNo) ")"``;
#: - the upright Latin and Greek alphabets: when some of their letters are missing,
#:   Chromium places accents, radicals and fractions up to a twelfth of an em away from
#:   where the whole font puts them (found by rendering each construct in both fonts, as
#:   ``tests/test_site.py`` does); about a hundred small glyphs.
#: A fence, an accent or an arrow is the text of an ``<mo>``, so it is kept with the text,
#: and with it its sizes and stretched forms.
DRAWN_WITHOUT_TEXT = {0x221A, *map(ord, "()0123456789"), *range(0x41, 0x5B), *range(0x61, 0x7B),
                      *range(0x391, 0x3A2), *range(0x3A3, 0x3AA), *range(0x3B1, 0x3CA)}
MATHML = re.compile(r"<math\b.*?</math>", re.S)


def subset_math_font(source: Path, pages, dest: Path) -> None:
    """Write to ``dest`` the math font cut to the characters of every page's MathML and those
    the browser draws without text (:data:`DRAWN_WITHOUT_TEXT`, :data:`MATH_ITALIC`), keeping
    its OpenType MATH table (the stretchy and large variants of the characters kept)."""
    from fontTools import subset

    characters = set()
    for text in pages:
        for formula in MATHML.findall(text):
            characters |= set(html.unescape(re.sub(r"<[^>]+>", "", formula)))
    options = subset.Options()
    options.layout_features = ["*"]
    options.flavor = "woff"
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes={ord(c) for c in characters if not c.isspace()} | MATH_ITALIC | DRAWN_WITHOUT_TEXT)
    subsetter.subset(font)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(dest), options)


def _macros(app: Sphinx) -> dict:
    config = app.config.mathjax3_config or {}
    return dict(config.get("tex", {}).get("macros", {}))


def _copy(source: Path, dest: Path) -> None:
    if not source.exists():
        raise ExtensionError(f"offline_assets: expected {source} (run `npm ci` to install pinned assets)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest)
    else:
        shutil.copy2(source, dest)


def setup(app: Sphinx) -> dict:
    # Run after myst-nb and sphinx.ext.mathjax have registered their defaults.
    app.connect("config-inited", _stage, priority=900)
    app.connect("html-page-context", _page_scripts, priority=900)
    app.connect("build-finished", _finish)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": False}
