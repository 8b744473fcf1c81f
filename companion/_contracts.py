r"""Each parameter's contract, declared once in the signature and checked before the body runs.

A public function names the kind of each parameter in its signature and lists the
rules that tie parameters together beside it::

    @contract(keys_after_queries)
    def causal_mask(n_queries: Size, n_keys: Size | None = None) -> np.ndarray:
        ...

``Size`` is ``typing.Annotated[int, Integer(1, MAX_POSITION)]``: to a reader and a
type checker an ``int``, to :func:`contract` a :class:`Kind` that converts the
argument (numpy integers to ``int``, lists and tensors to float64 or int64 arrays)
or raises ``ValueError`` naming the parameter, the values it accepts and why:
``d must be an even integer in 2..4294967296 (components come in pairs), got 7``. A
parameter whose default is ``None`` also accepts ``None`` (``Size | None``). A rule
is a function whose parameters are named like the function's: it gets their
converted values and raises when they do not fit together (``n_keys >= n_queries``,
shapes that must broadcast). ``result=Finite(...)`` declares that an overflow of the
result is the fault of the inputs it names. So the body receives arguments that are
already what it needs, and holds nothing but the math.

**Inside the package, functions call each other as any caller does**:
``scaling.yarn`` computes ``rope.inv_freq(d, base)``, and the call is checked like
any other (a few microseconds, ``benchmarks/bench_contracts.py``). A value the body
computed and handed on is therefore checked where it is used; a function that
declares ``result=Finite(...)`` reports such a refusal (scores that overflowed to
``inf``, refused by ``softmax``) as the fault of its own inputs, through
:class:`ArgumentError`, the ``ValueError`` every refusal here raises. An argument
left at its default is not converted: a test holds every default to its own kind
(``tests/test_contracts.py``).

Why a small decorator of our own rather than a library. Measured on this package
(``benchmarks/bench_contracts.py``; Python 3.11, pydantic 2.14, beartype 0.23):

* **Messages.** pydantic's ``validate_call`` with the same converters as
  ``BeforeValidator`` keeps the message but wraps it in its own report
  (``1 validation error for inv_freq / d / Value error, d must be ... [type=value_error,
  input_value=7, input_type=int]``), and its built-in constraints say ``Input should
  be greater than or equal to 2`` without the range or the reason; in its default lax
  mode it turns the string ``"8"`` into 8. beartype checks types and ``Is[...]``
  predicates but converts nothing, and reports ``parameter d=7 violates type hint
  typing.Annotated[int, Is[...]]``: the hint, not the range or why.
* **Speed.** Per call on small arrays (best of many runs on a shared 2-core machine):
  ``rope.rotate`` at n = 64, d = 16 takes 27 us as bare numpy, 52 us with this
  decorator (65 us when the checks were in the body), 51 us with pydantic and the
  same converters, 40 us with beartype, which converts nothing (lists and tensors
  are refused); ``rope.inv_freq(16)``: 2.5 us unchecked, 4.3 us here, 3.7 us with
  pydantic, 3.0 us with beartype. At n = 4096, d = 128 all four are within the noise
  of bare numpy. Speed does not decide between them.
* **Reading.** The three read alike in a signature (``typing.Annotated`` aliases);
  only this one converts, names the parameter in the package's own words, and puts
  cross-argument rules beside the parameters without a model class.

Two limits hold everywhere:

* :data:`MAX_POSITION`, the supported range of positions and distances. Every
  angle ``m * theta`` with ``|m| <= 2**32`` and ``|theta| <= 1`` is held by float64
  to within half a unit in its last place, ``2**-21`` rad (about ``4.8e-7``) at
  worst, so cosines and sines keep six correct digits. Beyond it a float64 angle
  loses a digit with every factor of ten, and near ``2**53`` it is off by a whole
  radian; positions there are refused rather than wrapped or rounded. The longest
  contexts in use (``10**7`` tokens) lie 400 times inside.
* :data:`MAX_ENTRIES`, the largest array a function will build: ``2**28`` entries
  (2 GiB of float64). A size whose result would be larger is refused with the
  product named (:func:`entries`), instead of a ``MemoryError``.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated

import numpy as np

#: Largest supported position or distance (in tokens): float64 angles stay within 2**-21 rad.
MAX_POSITION = 2**32
#: Largest number of entries a function will allocate (2 GiB of float64).
MAX_ENTRIES = 2**28


# ---------------------------------------------------------------------------
# Kinds: what one parameter accepts
# ---------------------------------------------------------------------------

class Kind:
    """A kind of parameter: ``kind(name, value)`` returns the value converted, or raises naming ``name``."""

    def __call__(self, name: str, value):
        raise NotImplementedError

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={_shown(v)}" for k, v in vars(self).items()
                          if v is not None and v is not False and v != "")
        return f"{type(self).__name__}({shown})"


def _shown(value) -> str:
    """A value as a signature on the reference pages shows it: a class by its name."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, tuple) and value and all(isinstance(v, type) for v in value):
        return "(" + ", ".join(v.__name__ for v in value) + ")"
    return repr(value)


class Integer(Kind):
    """A whole number (``bool`` refused; numpy integers accepted) in ``lo..hi``, even if ``even``, a multiple
    of ``multiple`` when given."""

    def __init__(self, lo: int | None = None, hi: int | None = None, even: bool = False, why: str = "",
                 multiple: int | None = None):
        self.lo, self.hi, self.even, self.why, self.multiple = lo, hi, even, why, multiple

    def describe(self) -> str:
        what = f"a multiple of {self.multiple}" if self.multiple else "an even integer" if self.even else "an integer"
        if self.lo is not None and self.hi is not None:
            what += f" in {self.lo}..{self.hi}"
        elif self.lo is not None:
            what += f" >= {self.lo}"
        elif self.hi is not None:
            what += f" <= {self.hi}"
        return what + (f" ({self.why})" if self.why else "")

    def __call__(self, name, value):
        if (type(value) is not int and (isinstance(value, bool) or not isinstance(value, numbers.Integral))) or \
                (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi) or \
                (self.even and value % 2) or (self.multiple and value % self.multiple):
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}")
        return int(value)


class Real(Kind):
    """A finite real number (``bool`` refused) with the bounds given: ``gt``/``ge`` below, ``lt``/``le`` above."""

    def __init__(self, gt: float | None = None, ge: float | None = None, lt: float | None = None,
                 le: float | None = None, why: str = ""):
        self.gt, self.ge, self.lt, self.le, self.why = gt, ge, lt, le, why

    def describe(self) -> str:
        low = f"> {self.gt}" if self.gt is not None else f">= {self.ge}" if self.ge is not None else ""
        high = f"< {self.lt}" if self.lt is not None else f"<= {self.le}" if self.le is not None else ""
        if low and high:
            left = "(" if self.gt is not None else "["
            right = ")" if self.lt is not None else "]"
            bounds = f" in {left}{self.gt if self.gt is not None else self.ge}, " \
                     f"{self.lt if self.lt is not None else self.le}{right}"
        else:
            bounds = f" {low or high}" if low or high else ""
        return "a finite real number" + bounds + (f" ({self.why})" if self.why else "")

    def __call__(self, name, value):
        if type(value) is not float and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}")
        value = float(value)
        if not np.isfinite(value) or (self.gt is not None and value <= self.gt) or \
                (self.ge is not None and value < self.ge) or (self.lt is not None and value >= self.lt) or \
                (self.le is not None and value > self.le):
            raise ValueError(f"{name} must be {self.describe()}, got {value}")
        return value


class Boolean(Kind):
    """``True`` or ``False`` (numpy's too), returned as ``bool``."""

    def __call__(self, name, value):
        if not isinstance(value, bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {value!r}")
        return bool(value)


class OneOf(Kind):
    """One of the listed values (compared with their own type: ``1`` is not ``True``)."""

    def __init__(self, *choices):
        self.choices = choices

    def __call__(self, name, value):
        try:
            known = any(isinstance(value, type(a)) and value == a for a in self.choices)
        except (TypeError, ValueError):
            known = False
        if not known:
            listed = ", ".join(repr(a) for a in self.choices)
            raise ValueError(f"{name} must be one of {listed}; got {value!r}")
        return value


class Array(Kind):
    """A float64 array of finite real numbers (lists, numpy arrays, torch tensors; ``None``, strings,
    booleans and complex numbers refused).

    ``ndim_at_least``/``ndim``: dimensions; ``nonempty``: at least one entry;
    ``neg_inf``: an entry may be ``-inf`` (a masked score); ``positive``: every entry
    > 0 (``nonnegative``: >= 0), and at most ``at_most`` (below ``below``) when given
    (``why`` says why); ``bounded``: every ``|entry| <= MAX_POSITION``, named as ``what``.
    """

    def __init__(self, ndim_at_least: int = 0, ndim: int | None = None, nonempty: bool = False,
                 neg_inf: bool = False, positive: bool = False, bounded: bool = False, what: str = "entries",
                 at_most: float | None = None, why: str = "", nonnegative: bool = False, below: float | None = None):
        self.ndim_at_least, self.ndim, self.nonempty = ndim_at_least, ndim, nonempty
        self.neg_inf, self.positive, self.bounded, self.what = neg_inf, positive, bounded, what
        self.at_most, self.why, self.nonnegative, self.below = at_most, why, nonnegative, below

    def bounds(self) -> str:
        """The range every entry must lie in, as a reader writes it: ``> 0``, ``in (0, 1)``, ``<= 2``."""
        low = "(0" if self.positive else "[0" if self.nonnegative else ""
        high = f"{self.at_most:g}]" if self.at_most is not None else f"{self.below:g})" if self.below is not None \
            else ""
        if low and high:
            return f"in {low}, {high}"
        if low:
            return ("> 0" if self.positive else ">= 0")
        return f"<= {self.at_most:g}" if self.at_most is not None else f"< {self.below:g}"

    def __call__(self, name, value):
        out = _real_array(name, value)
        if out.ndim < self.ndim_at_least:
            got = "a scalar" if out.ndim == 0 else f"shape {out.shape}"
            plural = "s" if self.ndim_at_least > 1 else ""
            raise ValueError(f"{name} must have at least {self.ndim_at_least} dimension{plural}, got {got}")
        if self.ndim is not None and out.ndim != self.ndim:
            want = {0: "a single number (a scalar)", 1: "a 1-D array", 2: "a 2-D matrix"}.get(
                self.ndim, f"an array of {self.ndim} dimensions")
            raise ValueError(f"{name} must be {want}, got shape {out.shape}")
        if self.nonempty and out.size == 0:
            raise ValueError(f"{name} must have at least one entry, got shape {out.shape}")
        if self.neg_inf:
            if np.any(np.isnan(out)) or np.any(out == np.inf):
                raise ValueError(f"{name} must not contain nan or +inf (-inf is allowed and masks an entry out)")
        elif not np.all(np.isfinite(out)):
            raise ValueError(f"{name} must contain only finite numbers (no nan or inf)")
        if (self.positive and np.any(out <= 0)) or (self.nonnegative and np.any(out < 0)) or \
                (self.at_most is not None and np.any(out > self.at_most)) or \
                (self.below is not None and np.any(out >= self.below)):
            raise ValueError(f"{name} must contain only numbers {self.bounds()}{f' ({self.why})' if self.why else ''}, "
                             f"got values from {out.min()} to {out.max()}")
        if self.bounded and out.size and np.max(np.abs(out)) > MAX_POSITION:
            _beyond_range(name, self.what, np.max(np.abs(out)))
        return out


class WholeNumbers(Kind):
    """An int64 array of whole numbers within ``±MAX_POSITION``; non-negative unless ``signed``, and at
    least ``minimum`` when given.

    Integer arrays (numpy, lists, torch) are accepted, and float arrays whose entries
    are whole numbers unless ``floats`` is false. ``what`` names the entries in messages.
    """

    def __init__(self, signed: bool = False, floats: bool = True, what: str = "", minimum: int | None = None):
        self.signed, self.floats, self.minimum = signed, floats, minimum
        self.what = what or ("integers" if signed else "non-negative integers")

    def __call__(self, name, value):
        if not self.floats:
            raw = _numeric(name, value, dtype=np.int64)
            if raw.size and raw.dtype.kind in "fc":
                raise ValueError(f"{name} must contain {self.what}, got dtype {raw.dtype}")
        arr = _whole_numbers(name, value, self.what)
        if not self.signed and np.any(arr < 0):
            raise ValueError(f"{name} must be non-negative integers, got a minimum of {arr.min()}")
        if self.minimum is not None and np.any(arr < self.minimum):
            raise ValueError(f"{name} must be integers >= {self.minimum}, got a minimum of {arr.min()}")
        return arr


class PositiveCounts(Kind):
    """A non-empty sequence of integers >= 1 (all different if ``distinct``; ``length`` of them when given,
    ``what`` naming them), returned as a list of ints. With ``single``, one integer is a list of one; with
    ``empty``, the sequence may be empty."""

    def __init__(self, distinct: bool = False, length: int | None = None, what: str = "", single: bool = False,
                 empty: bool = False):
        self.distinct, self.length, self.what, self.single, self.empty = distinct, length, what, single, empty

    def __call__(self, name, value):
        if self.single and isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = [value]
        try:
            items = list(value)
        except TypeError as err:
            raise ValueError(f"{name} must be a non-empty list of integers >= 1, got {value!r}") from err
        if not items and not self.empty:
            raise ValueError(f"{name} must be a non-empty list of integers >= 1, got an empty one")
        for item in items:
            if isinstance(item, bool) or not isinstance(item, numbers.Integral) or item < 1:
                raise ValueError(f"{name} must hold integers >= 1 only, got {item!r} in {items!r}")
        out = [int(item) for item in items]
        if self.length is not None and len(out) != self.length:
            raise ValueError(f"{name} must be {self.length} integers >= 1 {self.what}, got {value!r}")
        if self.distinct and len(set(out)) != len(out):
            raise ValueError(f"{name} must not repeat, got {items!r}")
        return out


class ComplexArray(Kind):
    """A complex128 array of finite entries, at least ``ndim_at_least``-dimensional."""

    def __init__(self, ndim_at_least: int = 0):
        self.ndim_at_least = ndim_at_least

    def __call__(self, name, value):
        raw = _numeric(name, value, dtype=np.complex128)
        try:
            out = np.asarray(raw, dtype=np.complex128)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be an array of complex numbers, got {type(value).__name__}") from err
        if not np.all(np.isfinite(out)):
            raise ValueError(f"{name} must contain only finite numbers (no nan or inf)")
        if out.ndim < self.ndim_at_least or (self.ndim_at_least and out.shape[-1] < 1):
            raise ValueError(f"{name} must have at least {self.ndim_at_least} dimension with >= 1 entry, "
                             f"got shape {out.shape}")
        return out


class FrequencyVector(Kind):
    """A non-empty 1-D float64 array of finite frequencies, one per pair (all > 0 if ``positive``)."""

    def __init__(self, positive: bool = False):
        self.positive = positive

    def __call__(self, name, value):
        theta = _real_array(name, value)
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"{name} must contain only finite numbers (no nan or inf)")
        if theta.ndim != 1 or theta.size == 0 or (self.positive and np.any(theta <= 0)):
            low = f", minimum {theta.min()}" if self.positive and theta.size else ""
            what = "frequencies > 0" if self.positive else "frequencies (one per pair)"
            raise ValueError(f"{name} must be a non-empty 1-D array of {what}, got shape {theta.shape}{low}")
        return theta


class BooleanMask(Kind):
    """A boolean array (``True`` = may attend); numpy or torch. Its shape is a rule's business."""

    def __call__(self, name, value):
        if _is_tensor(value):
            value = value.detach().cpu().numpy()
        m = np.asarray(value) if not isinstance(value, (str, bytes)) else np.asarray(None)
        if m.dtype != np.bool_:
            got = "None" if value is None else f"dtype {m.dtype}" if m.dtype != np.object_ else type(value).__name__
            raise ValueError(f"{name} must be a boolean array (True = may attend), got {got}")
        return m


class InstanceOf(Kind):
    """An instance of ``types`` (``TypeError`` otherwise, like Python's own, or the ``error`` given): a record
    the package builds."""

    def __init__(self, types, what: str, error: type = TypeError):
        self.types, self.what, self.error = types, what, error

    def __repr__(self) -> str:
        return f"InstanceOf({_shown(self.types)})"

    def __call__(self, name, value):
        if not isinstance(value, self.types):
            raise self.error(f"{name} must be {self.what}, got {type(value).__name__}")
        return value


class Either(Kind):
    """A value of one of ``kinds`` (the first that takes it, converted by it); ``what`` says what is accepted."""

    def __init__(self, *kinds: Kind, what: str):
        self.kinds, self.what = kinds, what

    def __call__(self, name, value):
        for kind in self.kinds:
            try:
                return kind(name, value)
            except (TypeError, ValueError):
                continue
        raise ValueError(f"{name} must be {self.what}, got {value!r}")


class Text(Kind):
    """A string (a non-empty one when ``nonempty``)."""

    def __init__(self, nonempty: bool = False):
        self.nonempty = nonempty

    def __call__(self, name, value):
        if not isinstance(value, str) or (self.nonempty and not value.strip()):
            raise ValueError(f"{name} must be a {'non-empty ' if self.nonempty else ''}string, got {value!r}")
        return value


class Texts(Kind):
    """A non-empty sequence of non-empty strings (not one string); returned as a tuple."""

    def __call__(self, name, value):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value \
                or not all(isinstance(item, str) and item.strip() for item in value):
            raise ValueError(f"{name} must be a non-empty list of non-empty strings, got {value!r}")
        return tuple(value)


class Anything(Kind):
    """Any value at all, unchanged."""

    def __call__(self, name, value):
        return value


# ---------------------------------------------------------------------------
# The kinds the package uses most, by name
# ---------------------------------------------------------------------------

#: A length, count or width: an integer in 1..2**32.
Size = Annotated[int, Integer(1, MAX_POSITION)]
#: A count with no upper limit (layers, heads): an integer >= 1.
Count = Annotated[int, Integer(1)]
#: The width of a rotated or sinusoidal vector: an even integer in 2..2**32.
EvenSize = Annotated[int, Integer(2, MAX_POSITION, even=True, why="components come in pairs")]
#: An integer >= 0.
NonNegative = Annotated[int, Integer(0)]
#: An offset or distance of either sign within the supported range.
Offset = Annotated[int, Integer(-MAX_POSITION, MAX_POSITION)]
#: A random seed: an integer in 0..2**63 - 1.
Seed = Annotated[int, Integer(0, 2**63 - 1, why="torch's seeds are 64-bit")]
#: A finite real number > 0.
Positive = Annotated[float, Real(gt=0)]
#: A finite real number >= 0.
NonNegativeReal = Annotated[float, Real(ge=0.0)]
#: An extension factor ``s >= 1`` (target length ``s L``).
Factor = Annotated[float, Real(ge=1.0)]
#: ``True`` or ``False``.
Flag = Annotated[bool, Boolean()]
#: Real numbers, any shape.
Reals = Annotated[np.ndarray, Array()]
#: Vectors ``(..., d)``.
Vectors = Annotated[np.ndarray, Array(ndim_at_least=1)]
#: Sequences of vectors ``(..., n, d)``.
Sequences = Annotated[np.ndarray, Array(ndim_at_least=2)]
#: A matrix.
Matrix = Annotated[np.ndarray, Array(ndim=2)]
#: Real distances or offsets within the supported range, any shape.
Distances = Annotated[np.ndarray, Array(bounded=True)]
#: Non-negative integer positions, any shape.
Positions = Annotated[np.ndarray, WholeNumbers()]
#: Integers of either sign (distances) within the supported range, any shape.
Integers = Annotated[np.ndarray, WholeNumbers(signed=True)]
#: A frequency vector ``(d/2,)``.
Frequencies = Annotated[np.ndarray, FrequencyVector()]
#: A frequency vector ``(d/2,)`` of frequencies > 0.
PositiveFrequencies = Annotated[np.ndarray, FrequencyVector(positive=True)]
#: Complex contents, one per pair.
Contents = Annotated[np.ndarray, ComplexArray()]
#: A boolean mask, ``True`` = may attend.
Mask = Annotated[np.ndarray, BooleanMask()]
#: A string (a label, a name).
Label = Annotated[str, Text()]
#: A confidence level or probability strictly between 0 and 1.
Level = Annotated[float, Real(gt=0.0, lt=1.0)]
#: Any value at all (a device, an option passed on as it is).
AnyValue = Annotated[object, Anything()]


# ---------------------------------------------------------------------------
# Rules between parameters, and the result
# ---------------------------------------------------------------------------

def rule(names: tuple, check: Callable) -> Callable:
    """``check`` as a rule on the arguments ``names`` (for rules built by a function below, or a
    rule written for other names): a new function, so that ``check`` itself is unchanged."""

    def named(*values):
        return check(*values)

    named.names, named.__name__, named.__doc__ = tuple(names), getattr(check, "__name__", "rule"), check.__doc__
    return named


def limit(label: str, count: Callable, most: int, within: str) -> Callable:
    """A rule: ``count`` (a function of arguments, by name) is at most ``most``; ``label`` says what is
    counted (``"n_queries * n_keys"``), ``within`` what the limit is."""
    def check(*values):
        n = count(*values)
        if n > most:
            raise ValueError(f"{label} must stay within {within}; got {n:,}")
    return rule(tuple(inspect.signature(count).parameters), check)


def entries(label: str, count: Callable) -> Callable:
    """A rule: the array that ``count`` sizes has at most :data:`MAX_ENTRIES` entries."""
    return limit(label, count, MAX_ENTRIES, f"2**28 = {MAX_ENTRIES:,} entries (2 GiB of float64), the largest "
                                            "array this package builds")


def keys_after_queries(n_queries, n_keys) -> None:
    """``n_keys >= n_queries`` (``None`` meaning ``n_queries``): the queries are the last positions."""
    if n_keys is not None and n_keys < n_queries:
        raise ValueError(f"n_keys must be >= n_queries ({n_queries}): the queries are the last positions, "
                         f"got n_keys={n_keys}")


def leading_dims_broadcast(*names: str) -> Callable:
    """A rule: the leading (batch, head) dimensions of the arrays ``names``, all but the last two, broadcast."""
    def check(*arrays):
        try:
            np.broadcast_shapes(*(tuple(a.shape[:-2]) for a in arrays))
        except ValueError as err:
            shapes = " and ".join(f"{n} {tuple(a.shape)}" for n, a in zip(names, arrays))
            raise ValueError(f"{_listed(names)} must have leading (batch, head) dimensions that broadcast, "
                             f"got {shapes}") from err
    return rule(names, check)


def _with_axis(spec, axis: int):
    return (spec, axis) if isinstance(spec, str) else spec


def same_size(*names, axis: int = -1, what: str = "size") -> Callable:
    """A rule: the arrays ``names`` have the same size (at least 1) along ``axis``; a name may be a pair
    ``(name, axis)`` of its own."""
    specs = [_with_axis(n, axis) for n in names]

    def check(*arrays):
        sizes = [a.shape[ax] if a.ndim else None for a, (_, ax) in zip(arrays, specs)]
        if None in sizes or len(set(sizes)) > 1 or sizes[0] == 0:
            shapes = " and ".join(f"{n} {tuple(a.shape)}" for (n, _), a in zip(specs, arrays))
            raise ValueError(f"{_listed([n for n, _ in specs])} must have the same {what} >= 1, got {shapes}")
    return rule(tuple(n for n, _ in specs), check)


def same_last_dim(first: str, second: str, what: str = "d") -> Callable:
    """A rule: the arrays ``first`` and ``second`` have the same last dimension ``what``, at least 1."""
    return same_size(first, second, what=f"last dimension {what}")


def same_shape(reference: str, *names: str, why: str = "") -> Callable:
    """A rule: each of the arrays ``names`` has the shape of the array ``reference``."""
    def check(ref, *arrays):
        for name, a in zip(names, arrays):
            if a.shape != ref.shape:
                raise ValueError(f"{name} must have the shape of {reference} {ref.shape}{why}, got {a.shape}")
    return rule((reference, *names), check)


def rows_fit(x: str, *matrices: str) -> Callable:
    """A rule: each matrix of ``matrices`` has as many rows as ``x`` has columns (its last dimension)."""
    def check(v, *ws):
        for name, w in zip(matrices, ws):
            if w.shape[0] != v.shape[-1]:
                raise ValueError(f"{name} must be a matrix with {v.shape[-1]} rows (the width of {x}), "
                                 f"got shape {w.shape}")
    return rule((x, *matrices), check)


def pairs_fit(*names: str, axis: int = -1) -> Callable:
    """A rule: the arrays ``names`` have ``d = 2 len(inv_freq)`` entries along ``axis``: one pair per frequency."""
    where = "columns" if axis == 1 else "as last dimension"

    def check(theta, *arrays):
        for name, x in zip(names, arrays):
            if x.shape[axis] != 2 * theta.size:
                raise ValueError(f"{name} must have d = 2 * len(inv_freq) = {2 * theta.size} {where}, "
                                 f"got shape {x.shape}")
    return rule(("inv_freq", *names), check)


def square(name: str, even: bool = False) -> Callable:
    """A rule: the matrix ``name`` is square, ``d x d`` with ``d >= 1`` (even if ``even``)."""
    def check(M):
        if M.shape[0] != M.shape[1] or M.shape[0] == 0 or (even and M.shape[0] % 2):
            raise ValueError(f"{name} must be a square d x d matrix with d{' even and' if even else ''} >= "
                             f"{2 if even else 1}, got shape {M.shape}")
    return rule((name,), check)


def layer_width(attribute: str, *names: str) -> Callable:
    """A rule for a layer's method: the tensors ``names`` have the layer's width ``self.<attribute>`` as
    their last dimension."""
    def check(layer, *tensors):
        width = getattr(layer, attribute)
        for name, x in zip(names, tensors):
            if x.shape[-1] != width:
                raise ValueError(f"{name} must have shape (..., n, {attribute}) with {attribute} = {width}, "
                                 f"got {tuple(x.shape)}")
    return rule(("self", *names), check)


def same_dtype(*names: str) -> Callable:
    """A rule: the tensors ``names`` share one dtype and one device."""
    def check(*tensors):
        if len({t.dtype for t in tensors}) > 1 or len({t.device for t in tensors}) > 1:
            got = ", ".join(f"{t.dtype} on {t.device}" for t in tensors)
            raise ValueError(f"{_listed(names)} must share one dtype and device, got {got}")
    return rule(names, check)


def one_per_pair(*names: str, required: bool = True) -> Callable:
    """A rule: the arrays ``names`` hold one entry per pair, shape ``(d/2,)`` for the argument ``d``
    (``None`` passes unless ``required``)."""
    def check(d, *arrays):
        for name, a in zip(names, arrays):
            if a is None and required:
                raise ValueError(f"{name} must be given: d/2 = {d // 2} entries, one per pair")
            if a is not None and a.shape != (d // 2,):
                raise ValueError(f"{name} must have d/2 = {d // 2} entries (one per pair), got shape {a.shape}")
    return rule(("d", *names), check)


def broadcast(*names) -> Callable:
    """A rule: the arrays ``names`` have shapes that broadcast together; a name may be a pair ``(name, k)``
    whose last ``k`` dimensions are left out (a vector's width)."""
    specs = [_with_axis(n, 0) for n in names]

    def check(*arrays):
        shapes = [tuple(np.shape(a))[:len(np.shape(a)) - k] for a, (_, k) in zip(arrays, specs)]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError as err:
            raise ValueError(f"{_listed([n for n, _ in specs])} must have shapes that broadcast together, "
                             f"got {', '.join(str(s) for s in shapes)}") from err
    return rule(tuple(n for n, _ in specs), check)


def ordered(low: str, high: str, strict: bool = True, why: str = "") -> Callable:
    """A rule: the number ``high`` is greater than ``low`` (or equal, unless ``strict``)."""
    def check(a, b):
        if b < a or (strict and b == a):
            raise ValueError(f"{high} must be {'greater than' if strict else 'at least'} {low} ({a}){why}, got {b}")
    return rule((low, high), check)


def multiples(divisor: str, *names: str) -> Callable:
    """A rule: the integers ``names`` are whole multiples of the integer ``divisor``."""
    def check(k, *values):
        if any(v % k for v in values):
            got = ", ".join(f"{n} = {v}" for n, v in zip(names, values))
            raise ValueError(f"{_listed(names)} must be multiples of {divisor} = {k}, got {got}")
    return rule((divisor, *names), check)


def broadcast_to_leading(positions: str, x: str, drop: int = 1, why: str = "", onto: bool = False) -> Callable:
    """A rule: the array ``positions`` broadcasts with ``x.shape[:-drop]`` (one position per vector of ``x``;
    with ``drop = 2``, one per matrix, such as one per head); with ``onto``, to that shape exactly."""
    def check(m, v):
        if m is None:
            return
        try:
            if onto:
                np.broadcast_to(m, v.shape[:-drop])
            else:
                np.broadcast_shapes(tuple(m.shape), tuple(v.shape[:-drop]))
        except ValueError as err:
            raise ValueError(f"{positions} of shape {tuple(m.shape)} must broadcast to {x}.shape[:-{drop}] = "
                             f"{tuple(v.shape[:-drop])}{why}") from err
    return rule((positions, x), check)


def mask_and_bias_fit(q, k, mask, bias=None) -> None:
    """``mask`` and ``bias`` fit the scores ``(..., n_queries, n_keys)`` of ``q`` and ``k``, and leave every
    query a key."""
    shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    if bias is not None:
        try:
            shape = np.broadcast_shapes(shape, bias.shape)
        except ValueError as err:
            raise ValueError(f"bias of shape {bias.shape} must broadcast with the scores of shape {shape} "
                             "(..., n_queries, n_keys)") from err
    open_keys = np.ones(shape, dtype=bool)
    if mask is not None:
        try:
            open_keys = np.broadcast_to(mask, shape)
        except ValueError as err:
            raise ValueError(f"mask of shape {mask.shape} must broadcast to the score shape {shape} "
                             "(..., n_queries, n_keys)") from err
        if not np.all(open_keys.any(axis=-1)):
            raise ValueError("mask must leave every query a key to attend to; a row of mask is all False")
    if bias is not None and not np.all((open_keys & (bias > -np.inf)).any(axis=-1)):
        raise ValueError("mask and bias must leave every query a key to attend to: "
                         "some row of the scores is entirely masked or -inf")


def permutation(perm) -> None:
    """``perm`` (a 1-D integer array) holds each of ``0..n-1`` exactly once."""
    if perm.ndim != 1 or perm.size == 0:
        raise ValueError(f"perm must be a non-empty 1-D sequence of indices, got shape {perm.shape}")
    if perm.size ** 2 > MAX_ENTRIES:
        raise ValueError(f"len(perm) ** 2 must stay within 2**28 = {MAX_ENTRIES:,} entries (2 GiB of float64), "
                         f"the largest array this package builds; got {perm.size ** 2:,}")
    if not np.array_equal(np.sort(perm), np.arange(perm.size)):
        raise ValueError(f"perm must contain each of 0..{perm.size - 1} exactly once, got {perm.tolist()}")


class ArgumentError(ValueError):
    """An argument refused by its kind or a rule (a ``ValueError``, whose message names the
    parameter): the type lets a function that declares ``result=Finite(...)`` tell a value
    its own body computed, and handed to another checked function, from its caller's."""


class Finite:
    """A result rule: an overflow (``inf``/``nan`` in the result) is the fault of the inputs ``names``.

    The function's body runs with floating-point overflow ignored; an ``OverflowError``,
    a ``FloatingPointError``, a non-finite result, or a value computed in the body that
    a checked function it calls refuses (:class:`ArgumentError`: scores that overflowed
    to ``inf`` and a softmax that refuses them) is reported as the fault of ``names``.
    """

    def __init__(self, names: str, hint: str = "scale the inputs down"):
        self.names, self.hint = names, hint

    def __call__(self, result):
        if isinstance(result, dict):
            parts = result.values()
        elif isinstance(result, tuple):
            parts = result
        elif dataclasses.is_dataclass(result):
            parts = [getattr(result, f.name) for f in dataclasses.fields(result)]
        else:
            parts = (result,)
        numeric = [p for p in parts if isinstance(p, (numbers.Real, np.ndarray)) and not isinstance(p, bool)]
        if not all(np.all(np.isfinite(part)) for part in numeric):
            self.fail()
        return result

    def fail(self):
        raise ArgumentError(f"{self.names} must be small enough for a finite result: it overflows float64 "
                            f"(inf or nan); {self.hint}")


# ---------------------------------------------------------------------------
# The decorator
# ---------------------------------------------------------------------------

class Contract(typing.NamedTuple):
    """What :func:`contract` declared for one function: ``kinds[name]``, ``optional`` names, rules, result rule."""

    kinds: dict
    optional: frozenset
    rules: tuple
    result: object
    varargs: tuple = ()


def contract(*rules, result: Finite | None = None):
    """Check the arguments of the decorated function (or class) against their declared kinds and ``rules``.

    Used bare (``@contract``) or with rules (``@contract(rule, ...)``). Every parameter
    but ``self`` and ``**options`` must be annotated with a :class:`Kind` (a
    ``typing.Annotated`` alias); the body receives the converted values. A
    ``*sources`` parameter may be annotated too: its kind gets the tuple of the
    extra positional arguments (``varargs``). A class is
    decorated by its ``__init__`` (a dataclass's generated one too). The declaration
    is kept as ``f.__contract__``.
    """
    if len(rules) == 1 and result is None and _is_declaration(rules[0]):
        return _declare(rules[0], (), None)
    return lambda target: _declare(target, rules, result)


def _is_declaration(obj) -> bool:
    """A class, or a function with annotated parameters: ``@contract`` used bare (rules are not annotated)."""
    return inspect.isclass(obj) or any(p.annotation is not inspect.Parameter.empty
                                       for p in inspect.signature(obj).parameters.values())


def _declare(target, rules, result):
    if inspect.isclass(target):
        target.__init__ = _checked(target.__init__, rules, result, sys.modules[target.__module__].__dict__)
        target.__contract__ = target.__init__.__contract__
        return target
    return _checked(target, rules, result, target.__globals__)


def _checked(fn, rules, result, namespace):
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    extra = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    kinds, optional, defaults = {}, set(), {}
    leading = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    var = next((p for p in params if p.kind is p.VAR_POSITIONAL and p.annotation is not p.empty), None)
    varargs = (var.name, _kind_of(fn, var, namespace)[0]) if var is not None else ()
    for p in params:
        if p.name in ("self", "cls") or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        kind, allows_none = _kind_of(fn, p, namespace)
        kinds[p.name] = kind
        if allows_none:
            optional.add(p.name)
        if p.default is not p.empty:
            defaults[p.name] = p.default
    checks = tuple((r, getattr(r, "names", None) or tuple(inspect.signature(r).parameters)) for r in rules)
    for r, needed in checks:
        unknown = set(needed) - set(names)
        if unknown:
            raise TypeError(f"rule {r.__name__} of {fn.__qualname__} names no parameter {sorted(unknown)}")
    positional, known = len(leading), frozenset(names)  # keyword-only parameters are never filled by position

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        rest = ()
        if varargs:
            args, rest = args[:len(leading)], varargs[1](varargs[0], tuple(args[len(leading):]))
        if len(args) > positional or (kwargs and not extra and not kwargs.keys() <= known):
            return fn(*args, **kwargs)  # Python's own TypeError
        values = dict(zip(leading, args))
        options = {}
        for key, value in kwargs.items():
            if key in values:
                return fn(*args, **kwargs)  # "got multiple values"
            if key in kinds or key in ("self", "cls"):
                values[key] = value
            else:
                options[key] = value
        try:
            for name, kind in kinds.items():
                if name in values:
                    value = values[name]
                    if (name in defaults and value is defaults[name]) or (value is None and name in optional):
                        continue
                    values[name] = kind(name, value)
                elif name in defaults:
                    values[name] = defaults[name]
                else:
                    return fn(*args, **kwargs)  # "missing a required argument"
            for check, needed in checks:
                check(*(values[n] for n in needed))
        except ArgumentError:
            raise
        except ValueError as error:
            raise ArgumentError(*error.args) from None
        if varargs:
            return fn(*(values.pop(n) for n in leading), *rest, **values, **options)
        if result is None:
            return fn(**values, **options)
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                out = fn(**values, **options)
        except (OverflowError, FloatingPointError, ArgumentError):
            result.fail()
        return result(out)

    checked.__contract__ = Contract(kinds, frozenset(optional), tuple(r for r, _ in checks), result, varargs)
    return checked


def _kind_of(fn, param, namespace) -> tuple[Kind, bool]:
    """The :class:`Kind` a parameter's annotation declares, and whether it also accepts ``None``."""
    annotation = param.annotation
    if isinstance(annotation, str):
        annotation = eval(annotation, namespace)  # noqa: S307 -- the package's own annotations
    allows_none = False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        allows_none = len(members) < len(typing.get_args(annotation))
        annotation = members[0] if len(members) == 1 else annotation
    kinds = [m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, Kind)]
    if not kinds:
        raise TypeError(f"{fn.__qualname__}: parameter {param.name} has no declared kind "
                        f"(annotate it with a typing.Annotated alias of a Kind), got {param.annotation!r}")
    return kinds[0], allows_none


# ---------------------------------------------------------------------------
# Converting arrays
# ---------------------------------------------------------------------------

def _numeric(name: str, value, dtype=np.float64) -> np.ndarray:
    """``value`` as a numpy array (a torch tensor is detached and copied to the CPU), or raise."""
    if value is None:
        raise ValueError(f"{name} must be an array of numbers, got None")
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be an array of numbers, got the string {value!r}")
    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    try:
        raw = np.asarray(value) if not isinstance(value, np.ndarray) else value
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(
            f"{name} must be an array of numbers (nested lists of equal lengths), got {type(value).__name__}"
        ) from err
    if raw.dtype == np.bool_:
        raise ValueError(f"{name} must be an array of numbers, got booleans")
    if raw.dtype.kind in "USV":
        raise ValueError(f"{name} must be an array of numbers, got dtype {raw.dtype}")
    if raw.dtype == np.object_ and raw.size and all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in raw.ravel()
    ):
        return raw  # integers beyond int64: the range checks name them
    if raw.dtype.kind == "O" and raw.size:
        try:
            return np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__}") from err
    return raw


def _real_array(name: str, value) -> np.ndarray:
    raw = _numeric(name, value)
    if raw.dtype.kind == "c":
        raise ValueError(f"{name} must be an array of real numbers, got complex numbers")
    try:
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of real numbers, got {type(value).__name__}") from err


def _whole_numbers(name: str, value, what: str) -> np.ndarray:
    if value is None:
        raise ValueError(f"{name} must be {what}, got None")
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be {what}, got the string {value!r}")
    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"{name} must be {what}, got {type(value).__name__}") from err
    if arr.dtype == np.object_ and arr.size and all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr.ravel()
    ):
        _beyond_range(name, what, max(abs(int(v)) for v in arr.ravel()))  # beyond int64
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be {what}, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must be {what} (whole numbers), got non-integer values")
    if arr.size and (arr.max() > MAX_POSITION or arr.min() < -MAX_POSITION):
        _beyond_range(name, what, arr.max() if arr.max() > MAX_POSITION else arr.min())
    return arr.astype(np.int64)


def _beyond_range(name: str, what: str, worst) -> None:
    raise ValueError(
        f"{name} must have {what} of size at most 2**32 = {MAX_POSITION:,} (the supported range, "
        f"where float64 angles stay within 5e-7 rad), got {float(worst):.6g}"
    )


def _listed(names) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _is_tensor(value) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch when it is not loaded."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)
