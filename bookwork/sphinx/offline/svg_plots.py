"""The notebooks' SVG plots, slimmed with SVGO (``assets/slim_svg.cjs``).

Matplotlib writes coordinates with many decimals and metadata a browser does not use;
SVGO (npm ``svgo``, pinned in ``package.json``) writes the same drawing with fewer
decimals and no metadata, in about half the bytes.
"""
from __future__ import annotations

import json
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from bookwork.sphinx.offline.vendor_files import run_node

logger = logging.getLogger(__name__)


def slim_plots(app: Sphinx) -> None:
    """Rewrite every SVG plot of the built site in place."""
    plots = sorted(str(p) for p in (Path(app.outdir) / "_images").glob("*.svg"))
    if plots:
        result = json.loads(run_node(Path(app.confdir), "slim_svg.cjs", {"files": plots}))
        saved = sum(item["before"] - item["after"] for item in result)
        if saved:
            logger.info(f"offline: {len(plots)} plots slimmed, {saved / 1e3:.0f} kB less")
