"""Argument checking versus math in the math modules of ``companion``, counted line by line.

For each module: its lines, its docstring lines, the code lines of its function bodies
(comments, blank lines and docstrings left out), and how many of those check
arguments: a ``raise``; an ``if`` whose branches only raise or return a message with
"must"; the ``try``/``except`` lines that re-raise; any statement calling a checking
helper (a ``_checks``/``_contracts`` function, or a private function of the package
that does nothing but check, found by fixpoint). A rule declared beside a function
is a function body too, and counts. The contract declarations themselves (decorator
lines and annotations) are not function bodies. The target of the package's style is
at most 15 % in all.

    .venv/bin/python -m benchmarks.count_checks              # the package (math modules, then the lab)
    .venv/bin/python -m benchmarks.count_checks path/to/companion
"""
from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

MODULES = ["attention", "absolute", "absolute_torch", "relative", "relative_torch", "rope", "rope_torch", "alibi",
           "alibi_torch", "nope", "scaling", "trained_range", "interpolation", "integer_positions", "configs/reading",
           "configs/rope_types", "configs/applied", "configs/catalogue", "precision", "mrope", "layer_plans", "sinks",
           "remap", "symbolic"]
#: The lab's modules (``companion/lab``), reported as a block of their own.
LAB_MODULES = ["settings", "schemes", "runs", "provenance", "experiments", "evals", "stdlib_corpus", "tasks", "train",
               "models", "stats", "claims", "results", "fingerprint", "kinds", "usage"]
CHECK_PREFIXES = ("_checks.", "_contracts.")


def code_lines(source: str) -> set[int]:
    """Lines that hold code (not blank, not only a comment)."""
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines


def docstring_lines(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.update(range(first.lineno, first.end_lineno + 1))
    return out


def span(node) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def calls_check(node, validators: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = ast.unparse(sub.func)
            if name.startswith(CHECK_PREFIXES) or name.split(".")[-1] in validators:
                return True
    return False


def is_message_return(stmt) -> bool:
    return isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.JoinedStr | ast.Constant) and \
        "must" in ast.unparse(stmt.value)


class Classifier:
    def __init__(self, validators):
        self.validators = validators

    def checking(self, stmt) -> set[int]:
        """Lines of ``stmt`` that check arguments."""
        if isinstance(stmt, ast.Raise) or is_message_return(stmt):
            return span(stmt)
        if isinstance(stmt, ast.If):
            inner = [self.checking(s) == span(s) for s in stmt.body + stmt.orelse]
            if all(inner):
                return span(stmt)
            lines = set()
            for s in stmt.body + stmt.orelse:
                lines |= self.checking(s)
            if calls_check(stmt.test, self.validators):
                lines.add(stmt.lineno)
            return lines
        if isinstance(stmt, ast.Try):
            lines = set()
            for s in stmt.body + stmt.orelse + stmt.finalbody:
                lines |= self.checking(s)
            reraises = [h for h in stmt.handlers if any(isinstance(s, ast.Raise) for s in ast.walk(h))]
            if reraises:
                lines.add(stmt.lineno)
                for h in stmt.handlers:
                    lines |= span(h)
            return lines
        if isinstance(stmt, (ast.For, ast.While, ast.With)):
            lines = set()
            for s in stmt.body + getattr(stmt, "orelse", []):
                lines |= self.checking(s)
            if all(self.checking(s) == span(s) for s in stmt.body) and stmt.body:
                lines |= span(stmt)
            return lines
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return set()
        if calls_check(stmt, self.validators):
            return span(stmt)
        return set()


def body_statements(fn):
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def find_validators(trees) -> set[str]:
    """Private helpers that only check (and hand back what they checked): fixpoint over all modules."""
    validators: set[str] = set()
    while True:
        cls = Classifier(validators)
        found = set(validators)
        for tree in trees:
            for fn in functions(tree):
                if not fn.name.startswith("_") or fn.name.startswith("__"):
                    continue
                body = body_statements(fn)
                if not body:
                    continue
                rest = body[:-1] if isinstance(body[-1], ast.Return) else body
                last_ok = not isinstance(body[-1], ast.Return) or body[-1].value is None or \
                    isinstance(body[-1].value, ast.Name | ast.Tuple | ast.Constant) or \
                    calls_check(body[-1], validators) or \
                    (isinstance(body[-1].value, ast.Call)
                     and ast.unparse(body[-1].value.func) in ("int", "float", "bool"))
                if rest and last_ok and all(cls.checking(s) == span(s) for s in rest) or \
                        (not rest and calls_check(body[-1], validators)):
                    found.add(fn.name)
        if found == validators:
            return validators
        validators = found


def count(path: Path, validators) -> dict:
    source = path.read_text()
    tree = ast.parse(source)
    code = code_lines(source)
    docs = docstring_lines(tree)
    cls = Classifier(validators)
    body, checking = set(), set()
    decorators = set()
    for fn in functions(tree):
        for d in fn.decorator_list:
            decorators |= span(d)
        for stmt in body_statements(fn):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            body |= span(stmt) & code
            checking |= cls.checking(stmt) & code
    # annotations of parameters (the declarations, outside the bodies)
    return {"lines": len(source.splitlines()), "code": len(code - docs), "docstrings": len(docs),
            "body": len(body - docs), "checking": len(checking - docs)}


def report(title: str, paths: list[Path], validators) -> None:
    """One block of the table: a line per module and their sum."""
    total = {"lines": 0, "docstrings": 0, "body": 0, "checking": 0}
    print(f"{title:14} {'lines':>6} {'docstr':>7} {'body':>6} {'checking':>9} {'share':>6}")
    for p in paths:
        c = count(p, validators)
        for k in total:
            total[k] += c[k]
        print(f"{p.stem:14} {c['lines']:6} {c['docstrings']:7} {c['body']:6} {c['checking']:9} "
              f"{c['checking'] / c['body']:6.0%}")
    print(f"{'sum':14} {total['lines']:6} {total['docstrings']:7} {total['body']:6} {total['checking']:9} "
          f"{total['checking'] / total['body']:6.0%}")


def main(folder: Path) -> None:
    sources = [*folder.glob("*.py"), *folder.glob("configs/*.py"), *folder.glob("lab/*.py")]
    trees = [ast.parse(p.read_text()) for p in sources]
    validators = find_validators(trees)
    report("module", [folder / f"{m}.py" for m in MODULES if (folder / f"{m}.py").exists()], validators)
    lab = [folder / "lab" / f"{m}.py" for m in LAB_MODULES if (folder / "lab" / f"{m}.py").exists()]
    if lab:
        print()
        report("lab", lab, validators)
    print()
    for extra in ("_checks", "_contracts"):
        p = folder / f"{extra}.py"
        if p.exists():
            print(f"{extra}.py: {len(p.read_text().splitlines())} lines")
    print("validators:", ", ".join(sorted(validators)))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "companion")
