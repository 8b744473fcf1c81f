"""Preview one figure in a browser without building the book.

    python -m bookwork.preview_figure alibi_heatmap [key=value ...]

calls the figure function ``companion.figures.<name>`` with the given keyword
arguments (values parsed as Python literals), writes ``_build/preview/<name>.html``
with the widget state embedded and the loader the book uses to draw it
(``bookwork/sphinx/assets/anywidget-static.js``), and prints the page's path. Serve it
with ``python -m http.server --directory _build/preview --bind 127.0.0.1 8001``.
"""
from __future__ import annotations

import ast
import html
import importlib
import json
import sys
from pathlib import Path

from bookwork import ROOT
from bookwork.sphinx.offline.vendor_files import stage_vendor

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<script defer src="vendor/anywidget-static.js"></script>
<script type="application/vnd.jupyter.widget-state+json">{state}</script>
</head><body style="margin:1rem">
<h1 style="font:600 1.2rem system-ui">{title}</h1>
<script type="application/vnd.jupyter.widget-view+json">{view}</script>
{fallback}
</body></html>
"""


def write_preview(name: str, out_dir: Path = ROOT / "_build" / "preview", **kwargs) -> Path:
    """Write the preview page of the figure ``companion.figures.<name>`` and return its path."""
    from ipywidgets.embed import embed_data

    function_name = name
    package = importlib.import_module("companion.figures")
    if hasattr(package, name):
        function = getattr(package, name)
    else:  # a figure still being written, not yet listed in companion.figures
        function = getattr(importlib.import_module(f"companion.figures.{name}"), name)
    figure = function(**kwargs)
    data = embed_data(views=[figure], drop_defaults=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not (out_dir / "vendor" / "anywidget-static.js").exists():
        stage_vendor(ROOT, out_dir / "vendor")
    page = out_dir / f"{function_name}.html"
    page.write_text(
        PAGE.format(
            title=html.escape(function_name),
            state=json.dumps(data["manager_state"]),
            view=json.dumps(data["view_specs"][0]),
            fallback=figure.fallback_html() if hasattr(figure, "fallback_html") else "",
        ),
        encoding="utf-8",
    )
    return page


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    name = argv[0]
    kwargs = {}
    for item in argv[1:]:
        key, _, value = item.partition("=")
        kwargs[key] = ast.literal_eval(value)
    print(write_preview(name, **kwargs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
