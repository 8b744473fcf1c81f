"""Serve every front-end file the book needs from the book itself.

By default a Jupyter Book page loads require.js, the Jupyter widget manager,
anywidget's front end and MathJax from public CDNs; with no network (or behind a
school firewall) the widgets vanish and the math stays raw LaTeX. This extension
copies pinned copies of those files into ``_static/vendor/`` and points the pages
at them:

* ``requirejs``, ``@jupyter-widgets/html-manager`` and ``mathjax`` come from
  ``node_modules/`` (installed from ``package.json`` / ``package-lock.json`` with
  ``npm ci``; nothing third-party is committed);
* anywidget's front end is the file shipped inside the installed ``anywidget``
  Python package, so it always matches the Python side that wrote the widget state.

``vendor/widgets-config.js`` maps the widget module names to those local files for
require.js (without it the manager would fall back to a CDN).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

VENDOR = "vendor"

# (path under node_modules, path under _static/vendor); directories are copied whole.
NPM_FILES = [
    ("requirejs/require.js", "require.js"),
    ("@jupyter-widgets/html-manager/dist/embed-amd.js", "html-manager/embed-amd.js"),
    ("mathjax/es5/tex-mml-chtml.js", "mathjax/tex-mml-chtml.js"),
    ("mathjax/es5/output/chtml/fonts/woff-v2", "mathjax/output/chtml/fonts/woff-v2"),
    ("mathjax/es5/input/tex/extensions", "mathjax/input/tex/extensions"),
]
# The widget manager's icon fonts sit next to embed-amd.js under hashed names.
FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")

WIDGETS_CONFIG_JS = """\
// Written by book/_ext/offline_assets.py: resolve widget modules to this site's copies.
(function () {
  var here = document.currentScript.src;
  var base = here.slice(0, here.lastIndexOf("/") + 1);
  window.require.config({
    paths: {
      "anywidget": base + "anywidget/index",
      "@jupyter-widgets/base": base + "html-manager/base",
      "@jupyter-widgets/controls": base + "html-manager/controls",
      "@jupyter-widgets/html-manager": base + "html-manager/index",
      // The manager finds its icon fonts next to this module's URL.
      "@jupyter-widgets/html-manager/dist": base + "html-manager"
    }
  });
})();
"""


def stage_vendor(root: Path, vendor: Path) -> None:
    """Copy the pinned front-end files into ``vendor`` (emptied first).

    Used by the book build below and by ``tools/preview_figure.py``.
    """
    node_modules = root / "node_modules"
    if not (node_modules / "requirejs").is_dir():
        raise ExtensionError(
            "offline_assets: node_modules/ is missing; run `npm ci` in the repository root "
            "(the README's build command does this for you)"
        )
    if vendor.exists():
        shutil.rmtree(vendor)
    vendor.mkdir(parents=True)
    for source, dest in NPM_FILES:
        _copy(node_modules / source, vendor / dest)
    manager_dist = node_modules / "@jupyter-widgets/html-manager/dist"
    for font in manager_dist.iterdir():
        if font.suffix in FONT_SUFFIXES:
            _copy(font, vendor / "html-manager" / font.name)

    import anywidget  # the installed package is the one that wrote the widget state

    _copy(Path(anywidget.__file__).parent / "nbextension" / "index.js", vendor / "anywidget" / "index.js")
    (vendor / "widgets-config.js").write_text(WIDGETS_CONFIG_JS)


def _stage(app: Sphinx, config) -> None:
    staging = Path(app.outdir).parent / "offline_assets"
    stage_vendor(Path(app.confdir), staging / VENDOR)
    config.html_static_path.append(str(staging))
    config.mathjax_path = f"{VENDOR}/mathjax/tex-mml-chtml.js"
    config.nb_ipywidgets_js = {
        f"{VENDOR}/require.js": {},
        f"{VENDOR}/widgets-config.js": {},
        f"{VENDOR}/html-manager/embed-amd.js": {},
    }


def _drop_duplicate_scripts(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Put each inline or file script on a page once.

    sphinx-thebe registers its configuration script twice, and a second
    ``const THEBE_JS_URL`` declaration is a JavaScript error on every page.
    """
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = repr(_script_key(script))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _script_key(script):
    # Registry entries are (filename, attributes) pairs, builder entries objects; an
    # inline script's filename is None in one place and "" in the other.
    if isinstance(script, str):
        filename, attributes = script, {}
    elif isinstance(script, tuple):
        filename, attributes = script
    else:
        filename, attributes = script.filename, script.attributes
    return (filename or "", sorted((k, str(v)) for k, v in attributes.items() if k != "priority"))


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
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
