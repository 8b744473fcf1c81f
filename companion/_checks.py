"""The argument checks :mod:`companion.lab` calls in its bodies, until it declares contracts.

Every other module declares its parameters with :func:`companion._contracts.contract`;
these functions are the same kinds called by hand (``positive_int("steps", steps)``),
so that the lab's messages come from the one place that words them. Nothing outside
``companion/lab`` uses this module (``tests/test_contracts.py`` holds it to that).
"""
from __future__ import annotations

from ._contracts import Array, Integer, OneOf, PositiveCounts, Real


def positive_int(name: str, value) -> int:
    """``value`` as an int >= 1, or ``ValueError`` naming ``name``."""
    return Integer(1)(name, value)


def positive_float(name: str, value) -> float:
    """``value`` as a finite float > 0, or ``ValueError`` naming ``name``."""
    return Real(gt=0)(name, value)


def at_least(name: str, value, minimum: float) -> float:
    """``value`` as a finite float >= ``minimum``, or ``ValueError`` naming ``name``."""
    return Real(ge=minimum)(name, value)


def one_of(name: str, value, allowed):
    """``value`` if it is one of ``allowed``, else ``ValueError`` listing them."""
    return OneOf(*allowed)(name, value)


def array(name: str, value, ndim_at_least: int = 0):
    """``value`` as a float64 array of finite numbers, or ``ValueError`` naming ``name``."""
    return Array(ndim_at_least=ndim_at_least)(name, value)


def positive_ints(name: str, values, distinct: bool = False) -> list[int]:
    """``values`` as a non-empty list of ints >= 1 (all different if ``distinct``), or ``ValueError``."""
    return PositiveCounts(distinct)(name, values)
