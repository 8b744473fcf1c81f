r"""A fingerprint of exactly the code the lab's experiments execute.

The stored results are only as good as the code that produced them. Hashing every
file of the package would call them stale after an edit that cannot change a
number (a new exercise check, a docstring); hashing too little would miss one that
does. This module finds the code by running it: :func:`executed_functions` calls a
function that runs the experiments (:func:`companion.lab.runs.code_hashes` passes one
that runs every kind of job at a tiny size) under ``sys.setprofile`` and records
every function of ``companion`` that is called, whichever module it lives in (the
lab's own modules and the math modules they use, such as :mod:`companion.rope` or
:mod:`companion.scaling`). It imports nothing of the lab but its parameter kinds, so
:mod:`companion.lab.runs` can import it without a circle.

:func:`source_hashes` hashes each of those functions, and the module-level
constants of their modules, as their syntax tree with docstrings removed
(``ast.dump``), so comments, docstrings and layout do not count, while any change
to what the code does counts. :func:`fingerprint` is one SHA-256 over them all. The
experiments store both with their results, and a test recomputes them: it fails,
naming the functions that changed, when the stored results are stale.
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from .._contracts import contract
from .kinds import Function

__all__ = ["executed_functions", "source_hashes", "fingerprint", "changed"]

_PACKAGE = Path(__file__).resolve().parent.parent   # the companion folder


@contract
def executed_functions(run: Annotated[Callable[[], object],
                                      Function("a function that runs the experiments, called with no arguments")]) \
        -> list[tuple[str, str]]:
    """``(module, qualified name)`` of every companion function that ``run()`` calls, sorted."""
    seen: set = set()

    def record(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(str(_PACKAGE)) and not code.co_name.startswith("<"):
                seen.add((code.co_filename, code.co_qualname, code.co_firstlineno))

    import torch

    threads = torch.get_num_threads()
    previous = sys.getprofile()
    sys.setprofile(record)
    try:
        run()
    finally:
        sys.setprofile(previous)
        torch.set_num_threads(threads)
    names = set()
    for filename, qualname, _ in seen:
        if Path(filename).name in ("fingerprint.py",):
            continue
        names.add((_module_name(Path(filename)), qualname.split(".<locals>")[0]))   # a closure counts as its maker
    return sorted(names)


def source_hashes(functions) -> dict:
    """``{"module:qualname": sha256}`` of each of ``functions``, and ``"module:<constants>"`` per module.

    ``functions`` are ``(module, qualified name)`` pairs (:func:`executed_functions`).
    A function is hashed as ``ast.dump`` of its definition with every docstring
    removed; a module's constants as the dump of its top-level statements that are
    not imports, functions or classes.
    """
    hashes, trees = {}, {}
    for module, qualname in functions:
        if module not in trees:
            trees[module] = ast.parse(Path(importlib.import_module(module).__file__).read_text())
        node = _find(trees[module], qualname.split("."))
        if node is None:
            raise ValueError(f"functions names {module}:{qualname}, which is not defined at the top of its module")
        hashes[f"{module}:{qualname}"] = _hash(node)
    for module, tree in trees.items():
        constants = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                                                  ast.AsyncFunctionDef, ast.ClassDef, ast.Expr))]
        hashes[f"{module}:<constants>"] = _hash(ast.Module(body=constants, type_ignores=[]))
    return dict(sorted(hashes.items()))


def fingerprint(hashes: dict) -> str:
    """One SHA-256 over :func:`source_hashes`."""
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


def changed(stored: dict, current: dict) -> list[str]:
    """The names whose hash differs between ``stored`` and ``current`` source hashes, or that one lacks."""
    return sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))


# --- private helpers -----------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = path.resolve().relative_to(_PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _find(tree, names):
    """The definition ``a.b.c`` (classes and functions nested in each other) in ``tree``."""
    body = tree.body
    node = None
    for name in names:
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            return None
        body = node.body
    return node


def _hash(node) -> str:
    return hashlib.sha256(ast.dump(_without_docstrings(node)).encode()).hexdigest()


def _without_docstrings(node):
    node = ast.parse(ast.unparse(node)) if not isinstance(node, ast.Module) else node
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
                    and isinstance(first.value.value, str):
                n.body = n.body[1:] or [ast.Pass()]
    return node
