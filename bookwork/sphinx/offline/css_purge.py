"""The theme's stylesheets cut to the rules the site's pages and scripts can match.

Bootstrap above all brings rules for components the site never shows. PurgeCSS (npm
``purgecss``, pinned in ``package.json``; ``assets/purge.cjs``) keeps a rule when every
class, id and element it names occurs in the site's pages or scripts, so that classes
the theme's scripts add later (a drawer's "show", the dark theme) stay.
"""
from __future__ import annotations

import json
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from bookwork.sphinx.offline.vendor_files import run_node

logger = logging.getLogger(__name__)

#: The theme's stylesheets, cut to the rules the site's pages and scripts can match.
PURGED_CSS = ["styles/bootstrap.css", "styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css",
              "sphinx-design.min.css", "mystnb.*.css", "pygments.css", "togglebutton.css", "proof.css",
              "exercise.css"]


def purge_stylesheets(app: Sphinx) -> None:
    """Rewrite :data:`PURGED_CSS` of the built site in place."""
    static = Path(app.outdir) / "_static"
    css = sorted({str(p) for pattern in PURGED_CSS for p in static.glob(pattern)})
    content = [str(Path(app.outdir) / "**" / "*.html"), str(static / "**" / "*.js")]
    result = run_node(Path(app.confdir), "purge.cjs", {"content": content, "css": css})
    saved = sum(item["before"] - item["after"] for item in json.loads(result))
    logger.info(f"offline: unused CSS rules removed, {saved / 1e3:.0f} kB less per page")
