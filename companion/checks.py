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

A numeric check accepts the precision its question states, and no less: a tolerance
(``rtol``, ``atol``) or a number of significant figures (``figures``). An answer that is
close but not close enough (rounded too far, or computed in float32) is told so, with
the number of figures it gets right, instead of being called wrong; a failure message
prints the digits that show the difference. A check of an exercise's final answer, run
where the student sees its message before submitting, passes ``show_expected=False``:
its messages then say what is wrong (a sign, a factor, a missing term, the number of
figures) without printing the right answer, which could be copied.
"""
from __future__ import annotations

import numbers
import sys
from collections.abc import Mapping

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

    ``name`` is the variable's name as the exercise states it; ``value`` is the
    student's value (``None`` when the name is not defined at all).
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

    ``call`` is the call as text, e.g. ``"rotate(x, positions)"``, for the message;
    ``value`` is what the call returned.
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
    return _numbers(name, value)[0]


#: Floating-point types that hold fewer digits than float64, and about how many.
_LOW_PRECISION = {"float32": 7, "float16": 3, "bfloat16": 2}


def _numbers(name: str, value) -> tuple[np.ndarray, str | None]:
    """:func:`_as_array`, and the name of the answer's floating-point type when it holds
    fewer digits than float64 (``"float32"``), else None."""
    if _is_placeholder(value):
        answer(name, value)
    low = None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        kind = str(value.dtype).replace("torch.", "")
        low = kind if kind in _LOW_PRECISION else None
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
    if raw.dtype.name in _LOW_PRECISION:
        low = raw.dtype.name
    return np.asarray(raw, dtype=np.float64), low


def _numbers_only(raw: np.ndarray) -> bool:
    """Whether an object array holds only real numbers (SymPy numbers among them)."""
    return all(isinstance(item, (numbers.Real, np.number)) and not isinstance(item, (bool, np.bool_))
               or (isinstance(item, sp.Expr) and item.is_number and item.is_real) for item in raw.flat)


def shape(name: str, value, expected: tuple, meaning: str = ""):
    """Fail unless ``value`` has the shape ``expected``; ``meaning`` names the axes.

    For example, ``shape("rotate(x, positions)", out, (6, 8), "(tokens, dimensions)")``.
    """
    arr = _as_array(name, value)
    if arr.shape != tuple(expected):
        axes = f" {meaning}" if meaning else ""
        hint = " Did you swap the axes?" if sorted(arr.shape) == sorted(expected) else ""
        _fail(name, f"should have shape {tuple(expected)}{axes}, but has shape {arr.shape}.{hint}")
    return arr


def _tolerance(target: np.ndarray, atol: float, rtol: float, figures: int | None) -> np.ndarray:
    """How far an answer may lie from ``target``, entry by entry: ``atol + rtol |target|``,
    or, with ``figures``, one unit in the last of that many significant figures (so that a
    value rounded or cut to that many figures passes); ``atol`` where the target is 0."""
    target = np.abs(np.asarray(target, dtype=np.float64))
    if figures is None:
        return atol + rtol * target
    with np.errstate(divide="ignore"):
        unit = 10.0 ** (np.floor(np.log10(np.where(target > 0, target, 1.0))) - figures + 1)
    return np.where(target > 0, unit * (1 + 1e-9), atol)


def _within(actual: np.ndarray, target, atol: float, rtol: float, figures: int | None) -> bool:
    target = np.asarray(target, dtype=np.float64)
    return actual.shape == target.shape and bool(np.all(np.abs(actual - target)
                                                        <= _tolerance(target, atol, rtol, figures)))


def _agreeing_figures(actual: np.ndarray, expected: np.ndarray) -> int | None:
    """How many significant figures of ``expected`` the worst entry of ``actual`` gets
    right (within one unit of the last), or None where ``expected`` is 0."""
    nonzero = expected != 0
    if not np.any(nonzero):
        return None
    gap = np.abs(actual - expected)[nonzero]
    size = np.abs(expected)[nonzero]
    with np.errstate(divide="ignore"):
        figures = np.floor(np.log10(size)) + 1 - np.log10(np.where(gap > 0, gap, size * 1e-17))
    return int(np.floor(np.min(figures)))


def _looks_rounded(values: np.ndarray) -> bool:
    """Whether every value has ten significant digits or fewer, as a typed or rounded
    number has (a computed float64 usually needs 15 to 17 to be written exactly)."""
    def significant(value: float) -> int:
        mantissa = repr(float(value)).lstrip("-").split("e")[0].replace(".", "")
        return len(mantissa.strip("0")) or 1
    return bool(values.size) and all(significant(v) <= 10 for v in values.flat)


def _digits(expected: float, got: float) -> tuple[str, str]:
    """Both numbers with as many significant digits as it takes to tell them apart
    (six at least): 3.4289757 and 3.428976, not 3.42898 twice."""
    for places in range(6, 18):
        a, b = f"{expected:.{places}g}", f"{got:.{places}g}"
        if a != b:
            return a, b
    return repr(float(expected)), repr(float(got))


def _hints(arr: np.ndarray, expected: np.ndarray, atol: float, rtol: float, figures: int | None) -> str:
    """What is wrong, in words that do not give the right answer away: a sign, a power of
    ten or the factor between degrees and radians, an order reversed."""
    if _within(-arr, expected, atol, rtol, figures) and np.any(expected != 0):
        return " It has the wrong sign."
    if arr.ndim == 1 and arr.size > 1 and _within(arr[::-1], expected, atol, rtol, figures):
        return " Its entries are in reverse order."
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = arr / expected
    if np.all(np.isfinite(ratio)) and np.all(ratio > 0) and np.ptp(ratio) <= 1e-6 * np.max(ratio):
        factor = float(np.mean(ratio))
        power = np.log10(factor)
        if round(power) != 0 and abs(power - round(power)) < 1e-6:
            return f" It is off by a factor of 10^{round(power)}: check the units (a percentage?)."
        if min(abs(factor / (180 / np.pi) - 1), abs(factor * (180 / np.pi) - 1)) < 1e-6:
            return " It is off by the factor between degrees and radians."
        return " Every entry is off by the same factor." if arr.size > 1 else ""
    return ""


def close(name: str, value, expected, *, atol: float = 1e-8, rtol: float = 1e-6, figures: int | None = None,
          meaning: str = "", wrong: Mapping[str, object] | None = None, show_expected: bool = True):
    """Fail unless ``value`` equals ``expected`` up to ``atol + rtol * |expected|``, or, with
    ``figures``, to that many significant figures (within one unit of the last).

    ``name`` is what is being checked, as the student wrote it (``"slopes"``,
    ``"rotate(x, positions)"``); ``value`` is the student's number or array (lists and
    torch tensors are accepted) and ``expected`` the right answer. ``atol`` and
    ``rtol`` are tolerances, as in ``numpy.allclose``; ``figures``, the significant
    figures the question asks for, takes the place of ``rtol`` (``atol`` still applies
    where ``expected`` is 0). ``meaning`` is the meaning of the axes, used in a shape
    message. ``wrong`` holds diagnoses of typical mistakes, ``{message: answer that
    mistake gives}``, tried in order before the generic message. ``show_expected``
    says whether a message may print the right values: a public check of an
    exercise's answer passes False, so that its message cannot be copied.

    An answer that agrees with ``expected`` to three significant figures or more, but
    not to the precision asked for, gets a message that says so (and names float32 when
    the answer is float32), rather than one that calls it wrong.

    Shapes: ``value`` any shape, that of ``expected``; an answer of another shape fails
    with a message that names both shapes (and the axes, given ``meaning``).
    """
    arr, low = _numbers(name, value)
    expected = np.asarray(expected, dtype=np.float64)
    if arr.shape != expected.shape:
        shape(name, arr, expected.shape, meaning)
    if not np.all(np.isfinite(arr)):
        _fail(name, "contains nan or inf. Look for a division by zero or a log of 0.")
    if _within(arr, expected, atol, rtol, figures):
        return
    for diagnosis, mistaken in (wrong or {}).items():
        if _within(arr, mistaken, atol, rtol, figures):
            _fail(name, diagnosis)
    tolerance = _tolerance(expected, atol, rtol, figures)
    bad = np.abs(arr - expected) > tolerance
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(np.abs(arr - expected) / tolerance)), arr.shape))
    first = tuple(int(i) for i in np.argwhere(bad)[0])

    def at(index) -> str:
        return f"index {index[0] if len(index) == 1 else index}"

    count = f"{int(bad.sum())} of {arr.size} entries differ"
    shown = ""
    if show_expected:
        right, got = _digits(float(expected[worst]), float(arr[worst]))
        shown = f" Expected {right}, got {got}" + (f" at {at(worst)} ({count})." if arr.ndim else ".")
    agree = _agreeing_figures(arr[bad], expected[bad])
    needed = figures if figures is not None else int(np.ceil(-np.log10(rtol))) if rtol > 0 else None
    if agree is not None and needed is not None and 3 <= agree < needed:
        asked = (f"the question asks for {needed}" if figures is not None else
                 f"this check allows a relative error of {rtol:g}, about {needed} figures")
        if low is not None:
            cause = (f" Your answer is {low}, which holds about {_LOW_PRECISION[low]} significant figures: "
                     "compute in float64 (NumPy's default; torch.float64).")
        elif _looks_rounded(arr[bad]):
            cause = f" {'It looks' if arr.ndim == 0 else 'They look'} rounded: keep more figures."
        else:
            cause = (" Look for a small error: a step computed in float32 (which keeps about 7 figures), "
                     "a constant rounded, or a term off by one.")
        _fail(name, f"close, but not as precise as asked: it agrees with the right value{'s' if arr.ndim else ''} "
                    f"to {agree} significant figures, and {asked}.{cause}{shown}")
    if show_expected:
        if arr.ndim == 0:
            right, got = _digits(float(expected), float(arr))
            _fail(name, f"expected {right}, got {got}.")
        right, got = _digits(float(expected[worst]), float(arr[worst]))
        _fail(name, f"wrong values. At {at(worst)} expected {right}, got {got} ({count}).")
    hints = _hints(arr, expected, atol, rtol, figures)
    if arr.ndim == 0:
        _fail(name, f"{float(arr)!r} is not the right value.{hints}")
    _fail(name, f"wrong values ({count}; the first at {at(first)}).{hints}")


def equal(name: str, value, expected, *, wrong: Mapping[str, object] | None = None, show_expected: bool = True):
    """Fail unless ``value`` equals ``expected`` exactly (integers, index arrays, lists).

    ``wrong`` and ``show_expected`` work as in :func:`close`.
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
            if show_expected:
                _fail(name, f"should have {len(expected)} entries, but has {len(value)}.")
            _fail(name, f"has {len(value)} entries, {'more' if len(value) > len(expected) else 'fewer'} than "
                        "the right answer.")
        first = next(i for i, (a, b) in enumerate(zip(value, expected)) if a != b)
        if show_expected:
            _fail(name, f"entry {first} should be {expected[first]!r}, but is {value[first]!r}.")
        try:
            reordered = sorted(value) == sorted(expected)
        except TypeError:
            reordered = False
        order = " It holds the right entries in another order." if reordered else ""
        _fail(name, f"entry {first} ({value[first]!r}) is wrong.{order}")
    if show_expected:
        _fail(name, f"expected {expected!r}, got {value!r}.")
    _fail(name, f"{value!r} is not the right answer.")


def whole_number(name: str, value) -> int:
    """``value`` as an ``int`` if it is a whole number (``3``, ``np.int64(3)``, ``3.0``),
    else fail: text, ``True``, ``nan``, infinities and fractions are not whole numbers."""
    answer(name, value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        _fail(name, f"should be a whole number, but it is {_kind(value)}.")
    if not np.isfinite(float(value)) or float(value) != round(float(value)):
        _fail(name, f"should be a whole number, got {value!r}.")
    return int(value)


def integer(name: str, value, expected: int, *, wrong: Mapping[str, int] | None = None, show_expected: bool = True):
    """Fail unless ``value`` is the whole number ``expected`` (``3`` and ``3.0`` both pass).

    ``wrong`` and ``show_expected`` work as in :func:`close`.
    """
    equal(name, whole_number(name, value), int(expected), wrong=wrong, show_expected=show_expected)


def expression(name: str, value, what: str = ""):
    """The answer ``value`` as a SymPy expression or matrix, or fail with a message.

    A SymPy object is taken as it is; a Python or NumPy number becomes the SymPy number
    of the same value. Text is never read as an expression (SymPy would evaluate it as
    Python code): a string, or anything else, fails and says what to write instead.
    ``name`` is the variable's name as the exercise states it, ``value`` the student's
    answer, and ``what`` what the expression stands for, for the message (``"the mean
    distance"``).
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
    if isinstance(converted, sp.Basic) and converted.has(sp.oo, -sp.oo):
        _fail(name, "is infinite: look for a division by zero or a sum that does not converge.")
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

    ``name`` is the variable holding the difference, ``expr`` the left side minus the
    right side of the identity, and ``identity`` the identity in words or symbols,
    e.g. ``"R(a) R(b) = R(a + b)"``.
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
                   wrong: Mapping[str, object] | None = None, show_expected: bool = True):
    """Fail unless the SymPy expression (or matrix) ``value`` equals ``expected`` identically.

    ``value`` is read as in :func:`expression` (or :func:`matrix` when ``expected`` is a
    matrix), never from text. ``wrong`` maps a diagnosis to the expression a typical
    mistake gives, as in :func:`close`. With ``show_expected=False`` the message names
    what is wrong (the sign, a constant factor, a constant term) without printing
    ``expected``; ``what`` should then not spell it out either.
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
    if show_expected:
        _fail(name, f"should equal {expected}{' (' + what + ')' if what else ''}; "
                    f"yours differs from it by {sp.simplify(gap)}.")
    _fail(name, f"is not the right {'matrix' if as_matrix else 'expression'}{' for ' + what if what else ''}: "
                f"{_symbolic_hint(got, sympy_from_data(expected), as_matrix)}")


def _symbolic_hint(got, expected, as_matrix: bool) -> str:
    """What is wrong with ``got``, in words that do not give ``expected`` away."""
    if not as_matrix:
        if symbolic.is_zero(got + expected):
            return "it has the wrong sign."
        if sp.count_ops(got) + sp.count_ops(expected) <= 200:  # simplify is slow on large expressions
            ratio = sp.simplify(got / expected) if expected != 0 else None
            if ratio is not None and ratio.is_number:
                return "it is off by a constant factor."
            if sp.simplify(got - expected).is_number:
                return "it differs from the right one by a constant term."
        missing = (expected.free_symbols - got.free_symbols)
        if missing:
            return f"it does not depend on {', '.join(sorted(str(s) for s in missing))}, and the right one does."
        extra = (got.free_symbols - expected.free_symbols)
        if extra:
            return f"it depends on {', '.join(sorted(str(s) for s in extra))}, and the right one does not."
    return "it does not simplify to the right one."


def holds(condition: bool, name: str, message: str):
    """Fail with ``message`` unless ``condition`` is true (for checks of another kind)."""
    if not condition:
        _fail(name, message)
