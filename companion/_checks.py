"""Argument checks shared by every module.

Each check raises ``ValueError`` whose message names the parameter and the allowed
values, so that a reader who passes something wrong learns what to pass instead.

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
  product named, instead of a ``MemoryError`` or an allocator failure.
"""
from __future__ import annotations

import numbers

import numpy as np

#: Largest supported position or distance (in tokens): float64 angles stay within 2**-21 rad.
MAX_POSITION = 2**32
#: Largest number of entries a function will allocate (2 GiB of float64).
MAX_ENTRIES = 2**28


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


def size(name: str, value, minimum: int = 1, maximum: int = MAX_POSITION) -> int:
    """Return ``value`` as an int, or raise if it is not an integer in ``minimum..maximum``.

    For lengths, counts and widths; the default maximum is :data:`MAX_POSITION`.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer in {minimum}..{maximum}, got {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an integer in {minimum}..{maximum}, got {value}")
    return int(value)


def entries(names: str, count: int) -> int:
    """Raise if an array of ``count`` entries, sized by ``names``, exceeds :data:`MAX_ENTRIES`."""
    if count > MAX_ENTRIES:
        raise ValueError(
            f"{names} must stay within 2**28 = {MAX_ENTRIES:,} entries (2 GiB of float64), the largest "
            f"array this package builds; got {count:,}"
        )
    return count


def positive_ints(name: str, values, distinct: bool = False) -> list[int]:
    """Return ``values`` as a non-empty list of ints >= 1 (all different if ``distinct``),
    or raise naming the parameter."""
    try:
        items = list(values)
    except TypeError as err:
        raise ValueError(f"{name} must be a non-empty list of integers >= 1, got {values!r}") from err
    if not items:
        raise ValueError(f"{name} must be a non-empty list of integers >= 1, got an empty one")
    for value in items:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must hold integers >= 1 only, got {value!r} in {items!r}")
    out = [int(value) for value in items]
    if distinct and len(set(out)) != len(out):
        raise ValueError(f"{name} must not repeat, got {items!r}")
    return out


def even_positive_int(name: str, value, maximum: int = MAX_POSITION) -> int:
    """Return ``value`` as an int, or raise if it is not an even integer in ``2..maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 2 <= value <= maximum \
            or value % 2:
        raise ValueError(
            f"{name} must be an even integer in 2..{maximum} (components come in pairs), got {value!r}"
        )
    value = int(value)
    return value


def boolean(name: str, value) -> bool:
    """Return ``value`` as a bool, or raise if it is not ``True`` or ``False`` (numpy's too)."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def numeric(name: str, value, dtype=np.float64) -> np.ndarray:
    """``value`` as a numpy array (a torch tensor is detached and copied to the CPU), or raise.

    Refuses ``None``, strings, booleans and anything numpy cannot read as numbers,
    with a message that names the parameter.
    """
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


def array(name: str, value, ndim_at_least: int = 0, neg_inf: bool = False) -> np.ndarray:
    """Return ``value`` as a float64 array with finite entries and enough dimensions.

    Lists, numpy arrays and torch tensors (detached, also those that require grad) are
    accepted; ``None``, strings, booleans and complex numbers are not. With
    ``neg_inf`` an entry may be ``-inf`` (a masked score).
    """
    raw = numeric(name, value)
    if raw.dtype.kind == "c":
        raise ValueError(f"{name} must be an array of real numbers, got complex numbers")
    try:
        out = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of real numbers, got {type(value).__name__}") from err
    if out.ndim < ndim_at_least:
        raise ValueError(
            f"{name} must have at least {ndim_at_least} dimensions, got shape {out.shape}"
        )
    if neg_inf:
        if np.any(np.isnan(out)) or np.any(out == np.inf):
            raise ValueError(f"{name} must not contain nan or +inf (-inf is allowed and masks an entry out)")
    elif not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must contain only finite numbers (no nan or inf)")
    return out


def mask(name: str, value, shape: tuple) -> np.ndarray:
    """``value`` as a boolean array broadcast to ``shape`` (``True`` = may attend), every row
    keeping at least one key; or raise."""
    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    m = np.asarray(value) if not isinstance(value, (str, bytes)) else np.asarray(None)
    if m.dtype != np.bool_:
        raise ValueError(f"{name} must be a boolean array (True = may attend), got {_kind(value, m)}")
    try:
        m = np.broadcast_to(m, shape)
    except ValueError as err:
        raise ValueError(
            f"{name} of shape {m.shape} must broadcast to the score shape {shape} (..., n_queries, n_keys)"
        ) from err
    if not np.all(m.any(axis=-1)):
        raise ValueError(f"{name} must leave every query a key to attend to; a row of {name} is all False")
    return m


def _kind(value, arr: np.ndarray) -> str:
    return "None" if value is None else f"dtype {arr.dtype}" if arr.dtype != np.object_ else type(value).__name__


def complex_array(name: str, value) -> np.ndarray:
    """Return ``value`` as a complex128 array with finite entries, or raise."""
    raw = numeric(name, value, dtype=np.complex128)
    try:
        out = np.asarray(raw, dtype=np.complex128)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of complex numbers, got {type(value).__name__}") from err
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must contain only finite numbers (no nan or inf)")
    return out


def bounded(name: str, values: np.ndarray, what: str = "entries") -> np.ndarray:
    """Raise unless every ``|value| <= MAX_POSITION``, the supported range of positions and distances."""
    if values.size and np.max(np.abs(values)) > MAX_POSITION:
        _beyond_range(name, what, np.max(np.abs(values)))
    return values


def _beyond_range(name: str, what: str, worst) -> None:
    raise ValueError(
        f"{name} must have {what} of size at most 2**32 = {MAX_POSITION:,} (the supported range, "
        f"where float64 angles stay within 5e-7 rad), got {float(worst):.6g}"
    )


def positive_float(name: str, value) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number > 0, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite real number > 0, got {value}")
    return value


def greater_than(name: str, value, minimum: float) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number > ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number > {minimum}, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= minimum:
        raise ValueError(f"{name} must be a finite real number > {minimum}, got {value}")
    return value


def at_least(name: str, value, minimum: float) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number >= {minimum}, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < minimum:
        raise ValueError(f"{name} must be a finite real number >= {minimum}, got {value}")
    return value


def one_of(name: str, value, allowed) -> object:
    """Return ``value`` if it is in ``allowed``, else raise listing the allowed values."""
    try:
        known = any(isinstance(value, type(a)) and value == a for a in allowed)
    except (TypeError, ValueError):
        known = False
    if not known:
        listed = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def positions(name: str, value) -> np.ndarray:
    """Return ``value`` as an int64 array of non-negative integer positions, or raise.

    Accepts integer arrays (numpy, lists, torch) and float arrays whose entries are
    whole numbers, each at most :data:`MAX_POSITION`.
    """
    arr = _whole_numbers(name, value, "non-negative integers")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative integers, got a minimum of {arr.min()}")
    return arr


def integers(name: str, value) -> np.ndarray:
    """Return ``value`` as an int64 array of whole numbers of either sign (e.g. distances), or raise.

    Each entry must lie in ``-MAX_POSITION..MAX_POSITION``.
    """
    return _whole_numbers(name, value, "integers")


def projection(name: str, value, rows: int) -> np.ndarray:
    """Return ``value`` as a float64 matrix with ``rows`` rows (a projection of x), or raise."""
    w = array(name, value)
    if w.ndim != 2 or w.shape[0] != rows:
        raise ValueError(f"{name} must be a matrix with {rows} rows (the width of x), got shape {w.shape}")
    return w


def tensor_integers(name: str, values, what: str = "integers", floats: bool = True):
    """``values`` as an int64 tensor of whole numbers within ``±2**32``, or ValueError naming ``name``.

    Tensors (detached), lists and numpy arrays are accepted; floating-point values
    only when ``floats`` and whole.
    """
    import torch

    if isinstance(values, torch.Tensor):
        p = values.detach()
    else:
        try:
            if not floats and np.issubdtype(numeric(name, values).dtype, np.floating):
                raise ValueError(f"{name} must be {what}, got floating-point values")
            p = torch.as_tensor(integers(name, values))
        except ValueError as err:
            raise ValueError(str(err).replace("integers", what, 1)) from None
    if p.dtype == torch.bool or p.is_complex() or (p.is_floating_point() and not floats):
        raise ValueError(f"{name} must be a tensor of {what}, got dtype {p.dtype}")
    if p.is_floating_point():
        if not bool(torch.all(torch.isfinite(p) & (p == torch.round(p)))):
            raise ValueError(f"{name} must be {what} (whole numbers), got non-integer values")
    if p.numel() and bool(torch.any(p.abs() > MAX_POSITION)):
        raise ValueError(
            f"{name} must have {what} of size at most 2**32 (the supported range), got {p.abs().max().item():.6g}"
        )
    return p.long()


def finite_result(names: str, value, hint: str = "scale the inputs down"):
    """Raise if a computed ``value`` overflowed float64 (inf or nan): the inputs named are too large."""
    parts = value if isinstance(value, tuple) else (value,)
    if not all(np.all(np.isfinite(part)) for part in parts):
        raise ValueError(f"{names} must be small enough for a finite result: it overflows float64 "
                         f"(inf or nan); {hint}")
    return value


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


def _is_tensor(value) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch when it is not loaded."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)
