"""Checks for exercise answers, with feedback a student can act on.

The exercises of every chapter are also assignment questions (see the instructors'
page). Their checks call the functions below instead of a bare ``assert``, so that a
wrong answer is met with a sentence that says what was expected -- which name is
missing, which shape, which sign, which identity failed -- rather than an
``AssertionError`` with no message.

Every function either returns quietly (the answer passes) or raises
:class:`CheckFailed`, a subclass of ``AssertionError`` whose message starts with the
name of the answer being checked::

    >>> import numpy as np
    >>> from companion import checks
    >>> checks.close("slopes", [0.5, 0.25], [0.5, 0.25])
    >>> checks.close("slopes", [0.25, 0.125], [0.5, 0.25],
    ...              wrong={"each slope is half the right one": [0.25, 0.125]})
    Traceback (most recent call last):
    ...
    companion.checks.CheckFailed: slopes: each slope is half the right one

``wrong`` maps a diagnosis to the answer a typical mistake produces (a flipped sign, an
index off by one); when the student's answer matches one of them, that diagnosis is the
message.
"""
from __future__ import annotations

import numbers
import sys
from typing import Mapping

import numpy as np
import sympy as sp

from . import symbolic
from .symbolic import sympy_from_data


class CheckFailed(AssertionError):
    """An answer did not pass its check; the message says why and what was expected."""


def _fail(name: str, message: str):
    raise CheckFailed(f"{name}: {message}")


def _is_placeholder(value) -> bool:
    return value is Ellipsis or value is None


def answer(name: str, value):
    """Return ``value``, or fail if it is missing or still the ``...`` placeholder.

    Args:
        name: the variable's name as the exercise states it.
        value: the student's value (``None`` when the name is not defined at all).
    """
    if value is None:
        _fail(name, f"no value found. Define `{name}` as the exercise asks (and run its cell).")
    if value is Ellipsis:
        _fail(name, "still `...`. Replace the `...` with your answer and run the cell.")
    return value


def function(name: str, value):
    """Return ``value`` if it is callable, else fail with what to define."""
    answer(name, value)
    if not callable(value):
        _fail(name, f"should be a function, but it is a {type(value).__name__}. "
                    f"Define it with `def {name}(...):`.")
    return value


def result(call: str, value):
    """Return a function's return value, or fail if it returned ``None`` or ``...``.

    Args:
        call: the call as text, e.g. ``"rotate(x, positions)"``, for the message.
        value: what the call returned.
    """
    if value is None:
        _fail(call, "returned None. Replace any `...` in the function with your code, and end it "
                    "with a `return` statement.")
    if value is Ellipsis:
        _fail(call, "returned `...`. Replace the `...` in the function with your code.")
    return value


def _as_array(name: str, value) -> np.ndarray:
    """The answer as a float64 array; text, complex numbers and things that are not
    numbers fail with a message (NumPy alone would read ``"0.5"`` as 0.5)."""
    if _is_placeholder(value):
        answer(name, value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu().to(torch.float64).numpy() if not value.is_complex() else value.detach().numpy()
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged lists and the like
        _fail(name, f"should be numbers (an array or a float), but it is a {type(value).__name__} "
                    "that is not a rectangular array.")
    text = raw.dtype.kind in "US" or (raw.dtype.kind == "O" and any(isinstance(x, (str, bytes)) for x in raw.flat))
    if text:
        _fail(name, "should be numbers (an array or a float), but it holds text. Write the number itself, "
                    "not a string.")
    if raw.dtype.kind == "O" and not _numbers_only(raw):
        _fail(name, f"should be numbers (an array or a float), but it is {_kind(value)}.")
    if raw.dtype.kind == "c":
        _fail(name, "should be real numbers, but it holds complex numbers.")
    return np.asarray(raw, dtype=np.float64)


def _numbers_only(raw: np.ndarray) -> bool:
    """Whether an object array holds only real numbers (SymPy numbers among them)."""
    return all(isinstance(item, (numbers.Real, np.number)) and not isinstance(item, (bool, np.bool_))
               or (isinstance(item, sp.Expr) and item.is_number and item.is_real) for item in raw.flat)


def shape(name: str, value, expected: tuple, meaning: str = ""):
    """Fail unless ``value`` has the shape ``expected``; ``meaning`` names the axes.

    Example: ``shape("rotate(x, positions)", out, (6, 8), "(tokens, dimensions)")``.
    """
    arr = _as_array(name, value)
    if arr.shape != tuple(expected):
        axes = f" {meaning}" if meaning else ""
        hint = " Did you swap the axes?" if sorted(arr.shape) == sorted(expected) else ""
        _fail(name, f"should have shape {tuple(expected)}{axes}, but has shape {arr.shape}.{hint}")
    return arr


def _matches(actual: np.ndarray, expected, atol: float, rtol: float) -> bool:
    expected = np.asarray(expected, dtype=np.float64)
    return actual.shape == expected.shape and bool(np.allclose(actual, expected, atol=atol, rtol=rtol))


def close(name: str, value, expected, *, atol: float = 1e-8, rtol: float = 1e-6,
          meaning: str = "", wrong: Mapping[str, object] | None = None):
    """Fail unless ``value`` equals ``expected`` up to ``atol + rtol * |expected|``.

    Args:
        name: what is being checked, as the student wrote it (``"slopes"``,
            ``"rotate(x, positions)"``).
        value: the student's number or array (lists and torch tensors are accepted).
        expected: the right answer.
        atol, rtol: tolerances, as in ``numpy.allclose``.
        meaning: the meaning of the axes, used in a shape message.
        wrong: diagnoses of typical mistakes, ``{message: answer that mistake gives}``;
            tried, in order, before the generic message.
    """
    arr = _as_array(name, value)
    expected = np.asarray(expected, dtype=np.float64)
    if arr.shape != expected.shape:
        shape(name, arr, expected.shape, meaning)
    if not np.all(np.isfinite(arr)):
        _fail(name, "contains nan or inf. Look for a division by zero or a log of 0.")
    if np.allclose(arr, expected, atol=atol, rtol=rtol):
        return
    for diagnosis, mistaken in (wrong or {}).items():
        if _matches(arr, mistaken, atol, rtol):
            _fail(name, diagnosis)
    if arr.ndim == 0:
        _fail(name, f"expected {float(expected):.6g}, got {float(arr):.6g}.")
    gap = np.abs(arr - expected)
    index = np.unravel_index(int(np.argmax(gap)), gap.shape)
    where = index[0] if len(index) == 1 else tuple(int(i) for i in index)
    _fail(name, f"wrong values. At index {where} expected {expected[index]:.6g}, got {arr[index]:.6g} "
                f"({int(np.sum(~np.isclose(arr, expected, atol=atol, rtol=rtol)))} of {arr.size} "
                f"entries differ).")


def equal(name: str, value, expected, *, wrong: Mapping[str, object] | None = None):
    """Fail unless ``value`` equals ``expected`` exactly (integers, index arrays, lists).

    ``wrong`` works as in :func:`close`.
    """
    answer(name, value)
    torch = sys.modules.get("torch")
    if isinstance(value, (np.ndarray, np.generic)) or (torch is not None and isinstance(value, torch.Tensor)):
        value = value.tolist()
    expected = expected.tolist() if hasattr(expected, "tolist") else expected
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(expected, tuple):
        expected = list(expected)
    if value == expected:
        return
    for diagnosis, mistaken in (wrong or {}).items():
        mistaken = mistaken.tolist() if hasattr(mistaken, "tolist") else mistaken
        if value == (list(mistaken) if isinstance(mistaken, tuple) else mistaken):
            _fail(name, diagnosis)
    if isinstance(expected, list) and isinstance(value, list):
        if len(value) != len(expected):
            _fail(name, f"should have {len(expected)} entries, but has {len(value)}.")
        first = next(i for i, (a, b) in enumerate(zip(value, expected)) if a != b)
        _fail(name, f"entry {first} should be {expected[first]!r}, but is {value[first]!r}.")
    _fail(name, f"expected {expected!r}, got {value!r}.")


def integer(name: str, value, expected: int, *, wrong: Mapping[str, int] | None = None):
    """Fail unless ``value`` is the whole number ``expected`` (``3`` and ``3.0`` both pass)."""
    answer(name, value)
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        _fail(name, f"should be a whole number, but it is a {type(value).__name__}.")
    if not np.isfinite(float(value)) or float(value) != round(float(value)):
        _fail(name, f"should be a whole number, got {value!r}.")
    equal(name, int(value), int(expected), wrong=wrong)


def expression(name: str, value, what: str = ""):
    """The answer ``value`` as a SymPy expression or matrix, or fail with a message.

    A SymPy object is taken as it is; a Python or NumPy number becomes the SymPy number
    of the same value. Text is never read as an expression (SymPy would evaluate it as
    Python code): a string, or anything else, fails and says what to write instead.

    Args:
        name: the variable's name as the exercise states it.
        value: the student's answer.
        what: what the expression stands for, for the message (``"the mean distance"``).
    """
    answer(name, value)
    try:
        converted = sympy_from_data(value)
    except TypeError:
        if isinstance(value, (str, bytes, np.str_, np.bytes_)):
            _fail(name, f"should be a SymPy expression{' for ' + what if what else ''}, but it is text. Build it "
                        "with SymPy (sp.Symbol, sp.Rational, sp.exp, ...): a string is not read as one.")
        _fail(name, f"should be a SymPy expression{' for ' + what if what else ''}, but it is {_kind(value)}.")
    if isinstance(converted, sp.Basic) and converted.has(sp.nan, sp.zoo):
        _fail(name, "is not a number (nan or complex infinity): look for a division by zero.")
    return converted


def _kind(value) -> str:
    """``a <type>``, or, for a value a grader could not read back as data (its class
    derives from one named ``Unreadable`` and says why), what went wrong."""
    if any(cls.__name__ == "Unreadable" for cls in type(value).__mro__) and getattr(value, "why", ""):
        return f"a {type(value).__name__} that could not be read ({value.why})"
    return f"a {type(value).__name__}"


def matrix(name: str, value, what: str = "") -> sp.Matrix:
    """The answer ``value`` as a SymPy matrix (from a SymPy matrix, or nested lists of SymPy
    expressions or numbers, each entry as in :func:`expression`), or fail with a message."""
    answer(name, value)
    if isinstance(value, sp.MatrixBase):
        return sp.Matrix(value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        value = value.tolist()
    rows = value if isinstance(value, (list, tuple)) and len(value) > 0 else None
    if rows is None:
        _fail(name, f"should be a SymPy matrix{' for ' + what if what else ''}, but it is {_kind(value)}.")
    nested = all(isinstance(row, (list, tuple)) for row in rows)
    entries = [[expression(name, entry, what) for entry in row] for row in rows] if nested else \
        [expression(name, entry, what) for entry in rows]
    try:
        return sp.Matrix(entries)
    except (ValueError, sp.ShapeError):
        _fail(name, f"should be a SymPy matrix{' for ' + what if what else ''}, but its rows differ in length.")


def zero(name: str, expr, identity: str):
    """Fail unless the SymPy expression (or matrix) ``expr`` simplifies to 0.

    Args:
        name: the variable holding the difference.
        expr: left side minus right side of the identity.
        identity: the identity in words or symbols, e.g. ``"R(a) R(b) = R(a + b)"``.
    """
    answer(name, expr)
    if isinstance(expr, (list, tuple, np.ndarray)):
        expr = matrix(name, expr, f"left side minus right side of {identity}")
    else:
        expr = expression(name, expr, f"left side minus right side of {identity}")
    if not symbolic.is_zero(expr):
        shown = sp.simplify(expr)
        text = str(shown)
        if len(text) > 160:
            text = text[:157] + "..."
        _fail(name, f"{identity} does not hold: the difference simplifies to {text}, not 0.")


def symbolic_equal(name: str, value, expected, what: str = "", *,
                   wrong: Mapping[str, object] | None = None):
    """Fail unless the SymPy expression (or matrix) ``value`` equals ``expected`` identically.

    ``value`` is read as in :func:`expression` (or :func:`matrix` when ``expected`` is a
    matrix), never from text. ``wrong`` maps a diagnosis to the expression a typical
    mistake gives, as in :func:`close`.
    """
    answer(name, value)
    as_matrix = isinstance(expected, sp.MatrixBase) or isinstance(value, sp.MatrixBase)
    got = matrix(name, value, what) if as_matrix else expression(name, value, what)

    def difference(a, b):
        if as_matrix:
            return sp.Matrix(a) - sp.Matrix(b)
        return a - sympy_from_data(b)

    try:
        gap = difference(got, expected)
    except (TypeError, ValueError, sp.ShapeError):
        _fail(name, f"should be a SymPy {'matrix' if as_matrix else 'expression'}"
                    f"{' for ' + what if what else ''} of the right shape.")
    if symbolic.is_zero(gap):
        return
    for diagnosis, mistaken in (wrong or {}).items():
        try:
            if symbolic.is_zero(difference(got, mistaken)):
                _fail(name, diagnosis)
        except (TypeError, ValueError, sp.ShapeError):
            continue
    _fail(name, f"should equal {expected}{' (' + what + ')' if what else ''}; "
                f"yours differs from it by {sp.simplify(gap)}.")


def holds(condition: bool, name: str, message: str):
    """Fail with ``message`` unless ``condition`` is true (for checks of another kind)."""
    if not condition:
        _fail(name, message)
