"""Keep the build's terminal output to what its reader must act on.

At the start of every build myst-parser and myst-nb each log their whole
configuration, one line of a few thousand characters (``myst v3.0.1:
MdParserConfig(...)``, ``myst-nb v1.4.0: NbParserConfig(...)``), which buries the
warnings. Their two modules' loggers are set to show warnings and errors only; the
build's own progress and every warning are untouched.
"""
from __future__ import annotations

import logging

from sphinx.application import Sphinx

CONFIGURATION_LOGGERS = ("sphinx.myst_parser.sphinx_ext.main", "sphinx.myst_nb.sphinx_ext")


def setup(app: Sphinx) -> dict:
    for name in CONFIGURATION_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
