"""The front-end files the site serves itself: the pinned npm files and this package's assets.

The pinned npm files come from ``node_modules/`` (``npm ci`` with ``package.json`` and
``package-lock.json``; nothing third-party is committed), the book's own from
``bookwork/sphinx/assets/``. They are copied into one folder that the build serves
under ``_static/vendor`` (:func:`stage_vendor`); the Node scripts among the assets,
which the build runs on its output, run with the pinned packages (:func:`run_node`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from sphinx.errors import ExtensionError

#: The book's own front-end files and the Node scripts the build runs.
ASSETS = Path(__file__).resolve().parent.parent / "assets"
#: The folder under ``_static`` the staged files are served from.
VENDOR = "vendor"
#: (path under node_modules, path under the staged folder); directories are copied whole.
NPM_FILES = [
    ("@fontsource/stix-two-math/LICENSE", "math/OFL.txt"),
]
#: The math font, whole (cut to the site's characters at the end of the build), and
#: Temml's stylesheet for it, which is served as MATH_CSS with the font's address changed.
MATH_FONT_SOURCE = "@fontsource/stix-two-math/files/stix-two-math-latin-400-normal.woff"
TEMML_CSS = "temml/dist/Temml-STIX2.css"
#: The assets served with the site (under _static/vendor).
SITE_FILES = ["anywidget-static.js", "book.css", "book.js"]
FAVICON = ASSETS / "favicon.svg"
SEARCH_SCORER = ASSETS / "search_scorer.js"
WIDGET_LOADER = f"{VENDOR}/anywidget-static.js"
MATH_CSS = f"_static/{VENDOR}/math/temml.css"
MATH_FONT = f"_static/{VENDOR}/math/book-math.woff"


def stage_vendor(root: Path, vendor: Path) -> None:
    """Copy the pinned front-end files (from ``root/node_modules``) and the assets into
    ``vendor`` (emptied first). Used by the book build and by :mod:`bookwork.preview_figure`."""
    node_modules = root / "node_modules"
    if not (node_modules / "temml").is_dir() or not (node_modules / MATH_FONT_SOURCE).is_file():
        raise ExtensionError(
            "offline: node_modules/ is missing or out of date; run `npm ci` in the repository "
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
    characters, :func:`bookwork.sphinx.offline.font_subsets.subset_math_font`) and never a
    copy installed on the reader's machine, so that every reader sees the same glyphs."""
    css = temml_css.read_text(encoding="utf-8")
    font_face = re.compile(r"src:\s*local\('STIXTwoMath'\),\s*url\('\./STIXTwoMath\.woff2'\);")
    if not font_face.search(css):
        raise ExtensionError(f"offline: {temml_css} no longer has the @font-face this extension rewrites")
    return font_face.sub(f"src: url('{Path(MATH_FONT).name}') format('woff');", css)


def run_node(root: Path, script: str, request: dict) -> str:
    """Run the asset ``script`` with Node and the pinned packages of ``root/node_modules``,
    ``request`` as JSON on its standard input; returns what it printed."""
    env = dict(os.environ, NODE_PATH=str(root / "node_modules"))
    result = subprocess.run(["node", str(ASSETS / script)], input=json.dumps(request), capture_output=True,
                            text=True, env=env, cwd=root)
    if result.returncode != 0:
        raise ExtensionError(f"offline: {script} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def _copy(source: Path, dest: Path) -> None:
    if not source.exists():
        raise ExtensionError(f"offline: expected {source} (run `npm ci` to install pinned assets)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest)
    else:
        shutil.copy2(source, dest)
