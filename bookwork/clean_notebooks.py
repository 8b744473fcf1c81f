"""Strip outputs and machine-specific metadata from the lesson notebooks.

Notebooks are committed clean: no outputs, no execution counts, cell metadata limited
to tags and myst-nb's figure options (``mystnb``: caption, name, alt text), and notebook
metadata limited to a standard Python 3 kernelspec. Run

    python -m bookwork.clean_notebooks            # rewrite lessons/*.ipynb and book/*.ipynb in place
    python -m bookwork.clean_notebooks --check    # exit 1 and list files that are not clean

The test suite runs the check.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bookwork import ROOT

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
# Cell metadata that belongs to the book: tags, and myst-nb's per-cell options for a
# plot (``{"mystnb": {"figure": {"caption": ..., "name": ...}, "image": {"alt": ...}}}``).
KEPT_CELL_METADATA = ("tags", "mystnb")
NOTEBOOK_METADATA = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}


def notebooks() -> list[Path]:
    """Every notebook of the book: the chapters and the book-level pages."""
    return sorted((ROOT / "lessons").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.ipynb"))


def clean(nb: dict) -> dict:
    """Return a copy of notebook ``nb`` in the committed form."""
    out = {"cells": [], "metadata": NOTEBOOK_METADATA, "nbformat": 4, "nbformat_minor": 5}
    for index, cell in enumerate(nb["cells"]):
        source = cell["source"]
        if isinstance(source, list):
            source = "".join(source)
        metadata = {key: value for key, value in cell.get("metadata", {}).items()
                    if key in KEPT_CELL_METADATA and value}
        new = {
            "cell_type": cell["cell_type"],
            "id": cell.get("id") or f"cell-{index}",
            "metadata": metadata,
            "source": source,
        }
        if cell["cell_type"] == "code":
            new["execution_count"] = None
            new["outputs"] = []
        out["cells"].append(new)
    return out


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report notebooks that are not clean")
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: lessons/*.ipynb, book/*.ipynb)")
    args = parser.parse_args(argv)
    paths = args.paths or notebooks()
    dirty = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        wanted = dumps(clean(json.loads(text)))
        if text != wanted:
            dirty.append(path)
            if not args.check:
                path.write_text(wanted, encoding="utf-8")
    if args.check and dirty:
        print("not clean (run `python -m bookwork.clean_notebooks`):", *dirty, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
