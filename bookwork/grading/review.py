"""What in a submission's code deserves the instructor's look: a report beside the grade.

The report never changes a grade: the sandbox and the judge are the defence, and they
do not depend on it. It points at code that tried something a solution does not need,
so that an instructor can read it. Two parts:

- **cells compared with the distributed notebook** (the idea of nbgrader's checksums of
  locked cells): a given cell edited, deleted, or a cell added. The autograder carries
  the student notebook's code cells (``distributed.json``, written by ``generate``);
- **a scan of the syntax tree** of every cell the student wrote or changed: assignments
  to the attributes of imported modules (``np.allclose = ...``, ``checks.close = ...``,
  ``builtins.abs = ...``), ``sys.modules``, ``exec``/``eval``/``compile``/``__import__``,
  ``setattr``, classes derived from ``BaseException`` directly, exits, processes, files
  written, imports of modules a solution has no use for (otter, ``sys``, ``subprocess``,
  ``socket``, ``ctypes``, ``pickle``, ...), strings naming places outside the notebook
  (``/proc``, ``site-packages``, ``.ssh``), and names the checks read defined outside
  their question's answer cells.

A determined student can write code this scan misses (obfuscation beyond ``exec`` is
possible); it is a reading aid, not a proof.

The review reads code a student wrote, so it is bounded like a run: the grader runs it in
the judges' sandbox (:func:`bookwork.grading.judge.serve`) under the run's memory limit and a
share of its time, and it skips, with a finding that says so, a cell over
:data:`MAX_CELL` characters or a notebook over :data:`MAX_CODE`, and a cell that cannot
be parsed or is nested too deeply to walk.
"""
from __future__ import annotations

import ast
import builtins
import difflib
import re

#: The member of ``autograder.zip`` holding the distributed notebook's code cells.
DISTRIBUTED = "distributed.json"
#: The longest cell scanned, and the most code compared and scanned, in characters
#: (the longest cell of a chapter's solution is about 4,000).
MAX_CELL = 100_000
MAX_CODE = 2_000_000

CHECK_CELL = re.compile(r'grader\.check\(\s*"([^"]+)"\s*\)')
SENSITIVE_MODULES = {
    "otter", "sys", "builtins", "importlib", "ctypes", "cffi", "subprocess", "socket", "urllib", "http", "requests",
    "pickle", "dill", "marshal", "shelve", "site", "signal", "multiprocessing", "threading", "_thread",
    "jupyter_client", "zmq", "inspect", "gc", "os", "shutil", "tempfile", "atexit", "code", "codeop", "runpy",
    "types", "io", "pathlib", "glob", "base64", "zlib", "IPython", "ipykernel", "asyncio", "mmap", "fcntl", "pty",
}
SENSITIVE_CALLS = {"exec", "eval", "compile", "__import__", "setattr", "delattr", "globals", "vars", "locals",
                   "breakpoint", "exit", "quit", "open"}
#: Attributes worth a look wherever they appear, and those worth one on a module.
SENSITIVE_ATTRIBUTES = {"__builtins__", "__globals__", "__code__", "__subclasses__", "__bases__", "__mro__",
                        "f_back", "f_globals", "f_locals", "tb_frame", "gi_frame", "run_line_magic",
                        "run_cell_magic"}
MODULE_ATTRIBUTES = {"_exit", "exit", "system", "fork", "kill", "killpg", "popen", "spawnv", "execv", "modules",
                     "write_text", "write_bytes", "unlink", "remove", "rename", "rmtree", "__dict__", "environ"}
SENSITIVE_TEXT = ("/proc", "site-packages", ".pth", ".ssh", "/home", "/root", "/etc/", "autograder",
                  "127.0.0.1", "localhost", "http://", "https://", "otter")
BUILTIN_NAMES = set(dir(builtins))
BASE_EXCEPTIONS = {"BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit"}


def distributed_cells(cells: list[tuple[str, bool]]) -> dict:
    """The content of ``distributed.json``: each code cell's source, and whether it is
    an answer cell (one the student is asked to fill in)."""
    return {"cells": [{"source": source, "answer": answer} for source, answer in cells]}


def checked_questions(distributed: dict) -> list[str]:
    """The questions of the distributed notebook, in the order of their check cells."""
    found = [m.group(1) for cell in distributed["cells"] if (m := CHECK_CELL.fullmatch(cell["source"].strip()))]
    return list(dict.fromkeys(found))


def check_parameters(tests: dict[str, str]) -> dict[str, set[str]]:
    """Question -> the names its checks read (their parameters), from the test files' text."""
    found = {}
    for source in tests.values():
        tree = ast.parse(source)
        name = next((node.value.value for node in tree.body if isinstance(node, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "name" for t in node.targets)
                     and isinstance(node.value, ast.Constant)), None)
        found[str(name)] = {arg.arg for node in tree.body if isinstance(node, ast.FunctionDef)
                            for arg in node.args.args}
    return found


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _label(index: int, source: str) -> str:
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return f"code cell {index + 1} ({first[:50]!r})"


def _python(source: str):
    """The cell as Python's syntax tree (IPython's ``!`` and ``%`` lines made calls), or
    None when it cannot be read (a syntax error, too many magics, nesting too deep)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except (Exception, RecursionError, MemoryError):  # IPython raises RuntimeError past 500 magics
        return None


def _root(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node) -> str:
    try:
        return ast.unparse(node)[:60]
    except Exception:
        return "?"


class _Scan(ast.NodeVisitor):
    """The findings in one cell's syntax tree."""

    def __init__(self, imported: set[str], check_names: set[str], own: set[str]):
        self.imported, self.check_names, self.own = imported, check_names, own
        self.found: list[str] = []

    def note(self, text: str) -> None:
        if text not in self.found:
            self.found.append(text)

    def _target(self, target, verb: str) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element, verb)
        elif isinstance(target, ast.Starred):
            self._target(target.value, verb)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            root = _root(target)
            if root in self.imported or root in ("sys", "builtins", "__builtins__"):
                self.note(f"{verb} {_dotted(target)} (monkeypatching a module)")
            elif root in BUILTIN_NAMES and isinstance(target, ast.Attribute):
                self.note(f"{verb} {_dotted(target)} (monkeypatching a built-in type)")
        elif isinstance(target, ast.Name) and target.id in self.check_names - self.own:
            self.note(f"defines `{target.id}`, which the checks read, outside its answer cells")

    def visit_Assign(self, node):
        for target in node.targets:
            self._target(target, "changes")
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._target(node.target, "changes")
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._target(node.target, "changes")
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._target(target, "deletes")
        self.generic_visit(node)

    def visit_For(self, node):
        self._target(node.target, "changes")
        self.generic_visit(node)

    def _definition(self, node):
        if node.name in self.check_names - self.own:
            self.note(f"defines `{node.name}`, which the checks read, outside its answer cells")

    def visit_FunctionDef(self, node):
        self._definition(node)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._definition(node)
        bases = {_dotted(base).split(".")[-1] for base in node.bases}
        if bases & BASE_EXCEPTIONS:
            self.note(f"class {node.name} derives from {', '.join(sorted(bases & BASE_EXCEPTIONS))}, "
                      "which escapes `except Exception`")
        self.generic_visit(node)

    def _import(self, module: str) -> None:
        if module.split(".")[0] in SENSITIVE_MODULES:
            self.note(f"imports {module}")

    def visit_Import(self, node):
        for alias in node.names:
            self._import(alias.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        self._import(node.module or "")
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in SENSITIVE_CALLS:
            self.note(f"calls {node.func.id}()")
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("system", "getoutput") \
                and _root(node.func) == "get_ipython":
            self.note("runs a shell command (!)")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr in SENSITIVE_ATTRIBUTES or (node.attr in MODULE_ATTRIBUTES and _root(node) in self.imported):
            self.note(f"uses {_dotted(node)}")
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in ("__builtins__", "__import__", "__loader__", "__spec__"):
            self.note(f"uses {node.id}")

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            hits = [word for word in SENSITIVE_TEXT if word in node.value]
            if hits:
                self.note(f"names {', '.join(hits)} in a string")


def _imported_names(trees) -> set[str]:
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _alignment(given: list[dict], submitted: list[str]):
    """(distributed index or None, submitted index or None, same?) for every cell of either."""
    matcher = difflib.SequenceMatcher(None, [_normal(c["source"]) for c in given],
                                      [_normal(s) for s in submitted], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = list(range(i1, i2)), list(range(j1, j2))
        for k in range(max(len(left), len(right))):
            yield (left[k] if k < len(left) else None, right[k] if k < len(right) else None, tag == "equal")


def given_cells(distributed: list[dict], cells: list[str]) -> list[bool]:
    """For each submitted cell, whether it is a cell of the distributed notebook that the
    student was not asked to write, unchanged (the setup, the imports, the given code)."""
    given = [False] * len(cells)
    for index_given, index, same in _alignment(distributed, cells):
        if same and index is not None and index_given is not None and not distributed[index_given]["answer"]:
            given[index] = True
    return given


def _owners(given: list[dict]) -> list[str | None]:
    """The question each distributed cell belongs to: the next check cell's."""
    owners, question = [None] * len(given), None
    for index in range(len(given) - 1, -1, -1):
        match = CHECK_CELL.fullmatch(given[index]["source"].strip())
        question = match.group(1) if match else question
        owners[index] = question
    return owners


def review(submission, distributed: list[dict] | None, tests: dict[str, str]) -> list[str]:
    """The findings for one submission (an :class:`bookwork.grading.intake.Submission`)."""
    parameters = check_parameters(tests)
    check_names = set().union(*parameters.values()) if parameters else set()
    cells = submission.cells
    if sum(len(source) for source in cells) > MAX_CODE:
        return [f"its code is {sum(len(s) for s in cells):,} characters, more than the {MAX_CODE:,} the review "
                "reads: not compared with the distributed notebook, not scanned"]
    changes, deleted = list(submission.notes), []
    to_scan: list[tuple[int, set[str]]] = []
    if distributed is None:
        changes.append("the autograder holds no copy of the distributed notebook: cells not compared")
        to_scan = [(i, check_names) for i, tags in enumerate(submission.tags) if "otter_answer_cell" in tags]
    else:
        owners = _owners(distributed)
        for given, index, same in _alignment(distributed, cells):
            if same:
                continue
            if index is None:
                if not distributed[given]["answer"]:
                    deleted.append(given + 1)
                continue
            if given is None:
                changes.append(f"adds {_label(index, cells[index])}")
                to_scan.append((index, set()))
            elif distributed[given]["answer"]:
                to_scan.append((index, parameters.get(owners[given], set())))
            else:
                changes.append(f"edits the given {_label(index, cells[index])}")
                to_scan.append((index, set()))
    if deleted:
        shown = ", ".join(map(str, deleted[:12])) + (", ..." if len(deleted) > 12 else "")
        changes.append(f"deletes {len(deleted)} given code cell(s) of the distributed notebook ({shown})")
    trees = [_python(source) if len(source) <= MAX_CELL else None for source in cells]
    imported = _imported_names(tree for tree in trees if tree is not None)
    found = []
    for index, own in to_scan:
        if len(cells[index]) > MAX_CELL:
            found.append(f"{_label(index, cells[index])}: {len(cells[index]):,} characters, more than the "
                         f"{MAX_CELL:,} the review reads: not scanned")
            continue
        if trees[index] is None:
            found.append(f"{_label(index, cells[index])}: not Python the review can read: not scanned")
            continue
        scan = _Scan(imported, check_names, own)
        try:
            scan.visit(trees[index])
        except RecursionError:
            scan.note("nested too deeply to scan in full")
        found += [f"{_label(index, cells[index])}: {text}" for text in scan.found]
    return found + changes  # what the code does first, then how the notebook changed
