"""Argument checks shared by every module.

Each check raises ``ValueError`` whose message names the parameter and the allowed
values, so that a reader who passes something wrong learns what to pass instead.
"""
from __future__ import annotations

import numbers

import numpy as np


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


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


def even_positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not an even integer >= 2."""
    value = positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be an even integer >= 2 (components come in pairs), got {value}")
    return value


def array(name: str, value, ndim_at_least: int = 0) -> np.ndarray:
    """Return ``value`` as a float64 array with finite entries and enough dimensions."""
    try:
        out = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of real numbers, got {type(value).__name__}") from err
    if out.ndim < ndim_at_least:
        raise ValueError(
            f"{name} must have at least {ndim_at_least} dimensions, got shape {out.shape}"
        )
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must contain only finite numbers (no nan or inf)")
    return out


def positive_float(name: str, value) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number > 0, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite real number > 0, got {value}")
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
    if value not in allowed:
        listed = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def positions(name: str, value) -> np.ndarray:
    """Return ``value`` as an int64 array of non-negative integer positions, or raise.

    Accepts integer arrays and float arrays whose entries are whole numbers.
    """
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be non-negative integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must be non-negative integers (whole numbers), got non-integer values")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative integers, got a minimum of {arr.min()}")
    return arr.astype(np.int64)


def integers(name: str, value) -> np.ndarray:
    """Return ``value`` as an int64 array of whole numbers of either sign (e.g. distances), or raise."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
        raise ValueError(f"{name} must be integers (whole numbers), got non-integer values")
    return arr.astype(np.int64)


def projection(name: str, value, rows: int) -> np.ndarray:
    """Return ``value`` as a float64 matrix with ``rows`` rows (a projection of x), or raise."""
    w = array(name, value)
    if w.ndim != 2 or w.shape[0] != rows:
        raise ValueError(f"{name} must be a matrix with {rows} rows (the width of x), got shape {w.shape}")
    return w
