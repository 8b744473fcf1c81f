"""Re-execute every notebook when the ``companion`` package changes.

The executed book caches notebook outputs keyed on the notebooks' own code, so an
edit to ``companion`` alone would leave stale outputs (and stale figures) on the
pages. This extension keeps a fingerprint of the package's source files next to the
build; when it differs, it empties the execution cache and marks every page as
changed, so the next build runs every notebook again and re-reads the API pages
that document the package.
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from sphinx.application import Sphinx

PACKAGE = "companion"


def fingerprint(root: Path) -> str:
    """SHA-256 of the package's code and data files (paths and contents).

    Data counts too: the lab's stored results (``companion/lab/stored/*.json``) are
    what chapters 7 and 9 print.
    """
    digest = hashlib.sha256()
    for path in sorted((root / PACKAGE).rglob("*")):
        if path.suffix in {".py", ".js", ".css", ".json"} and path.is_file():
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _stamp(app: Sphinx) -> Path:
    return Path(app.outdir).parent / f"{PACKAGE}.sha256"


def _compare(app: Sphinx, config) -> None:
    current = fingerprint(Path(app.confdir))
    stamp = _stamp(app)
    app.package_changed = stamp.exists() and stamp.read_text() != current
    app.package_fingerprint = current
    if app.package_changed:
        cache = Path(config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache")
        shutil.rmtree(cache, ignore_errors=True)


def _outdated(app: Sphinx, env, added, changed, removed) -> list[str]:
    if not getattr(app, "package_changed", False):
        return []
    return sorted(set(env.found_docs) - set(added))


def _record(app: Sphinx, exception) -> None:
    if exception is None:
        _stamp(app).write_text(app.package_fingerprint)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _compare)
    app.connect("env-get-outdated", _outdated)
    app.connect("build-finished", _record)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
