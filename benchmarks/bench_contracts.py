"""How the package checks its arguments, against two libraries that could do it: messages and speed.

The same two functions, ``rope.inv_freq(d, base)`` and ``rope.rotate(x, positions,
inv_freq, layout)``, with the same bodies, checked three ways:

* ``companion``: the package's own ``@contract`` (``companion._contracts``);
* ``pydantic``: ``pydantic.validate_call`` with the package's kinds as
  ``BeforeValidator`` converters (pydantic's own constraints are shown for ``d``);
  the cross-argument rules run in a wrapper, since ``validate_call`` has no place
  for them;
* ``beartype``: ``beartype`` with ``Is[...]`` validators; beartype converts nothing,
  so lists and tensors are refused and the body gets what the caller passed.

It prints the message each gives for three bad calls and the time per call at
n = 64, d = 16 (and n = 4096, d = 128) against the bare numpy rotation. A library
that is not installed is skipped (neither is a dependency of the package).

    .venv/bin/python -m benchmarks.bench_contracts
"""
from __future__ import annotations

import functools
import timeit
from typing import Annotated

import numpy as np

from companion import rope
from companion._contracts import Frequencies, OneOf, Positions, Vectors, broadcast_to_leading

BAD_CALLS = {
    "inv_freq(7)": ("inv_freq", (7,), {}),
    "inv_freq(d=7)": ("inv_freq", (), {"d": 7}),
    "a negative position": ("rotate", (np.ones((2, 16)), np.array([0, -1]), rope.inv_freq(16)), {}),
    "x of width 12 for 8 pairs": ("rotate", (np.ones((2, 12)), np.array([0, 1]), rope.inv_freq(16)), {}),
}


def _kind(alias):
    return alias.__metadata__[0]


def _rules(x, positions, inv_freq):
    if x.shape[-1] != 2 * inv_freq.size:
        raise ValueError(f"x must have last dimension d = 2 * len(inv_freq) = {2 * inv_freq.size}, got shape {x.shape}")
    broadcast_to_leading("positions", "x")(positions, x)


def companion_versions():
    return {"inv_freq": rope.inv_freq, "rotate": rope.rotate}


def pydantic_versions():
    import pydantic
    from pydantic import BeforeValidator, Field

    def kind(alias, name):
        return BeforeValidator(lambda v: _kind(alias)(name, v))

    config = pydantic.ConfigDict(arbitrary_types_allowed=True)

    @pydantic.validate_call(config=config)
    def inv_freq(d: Annotated[int, Field(ge=2, le=2**32, multiple_of=2)], base: Annotated[float, Field(gt=0)] = 1e4):
        return bare_inv_freq(d, base)

    @pydantic.validate_call(config=config)
    def checked_rotate(x: Annotated[np.ndarray, kind(Vectors, "x")],
                       positions: Annotated[np.ndarray, kind(Positions, "positions")],
                       inv_freq: Annotated[np.ndarray, kind(Frequencies, "inv_freq")],
                       layout: Annotated[str, BeforeValidator(lambda v: OneOf(*rope.LAYOUTS)("layout", v))]
                       = "adjacent"):
        _rules(x, positions, inv_freq)
        return bare_rotate(x, positions, inv_freq)

    return {"inv_freq": inv_freq, "rotate": checked_rotate}


def beartype_versions():
    from beartype import beartype
    from beartype.vale import Is

    Even = Annotated[int, Is[lambda d: 2 <= d <= 2**32 and d % 2 == 0]]
    Finite = Annotated[np.ndarray, Is[lambda a: a.ndim >= 1 and bool(np.all(np.isfinite(a)))]]
    NonNegative = Annotated[np.ndarray, Is[lambda a: a.dtype.kind in "iu" and bool(np.all(a >= 0))]]

    @beartype
    def inv_freq(d: Even, base: Annotated[float, Is[lambda b: b > 0]] = 1e4):
        return bare_inv_freq(d, base)

    @beartype
    def checked_rotate(x: Finite, positions: NonNegative, inv_freq: Finite, layout: str = "adjacent"):
        _rules(x, positions, inv_freq)
        return bare_rotate(x, positions, inv_freq)

    return {"inv_freq": inv_freq, "rotate": checked_rotate}


def bare_inv_freq(d, base=1e4):
    """The frequencies with nothing checked: numpy only."""
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def bare_rotate(x, positions, inv_freq):
    """The rotation with nothing checked: numpy only."""
    a, b = np.arange(0, x.shape[-1], 2), np.arange(1, x.shape[-1], 2)
    phi = np.multiply.outer(positions.astype(np.float64), inv_freq)
    c, s = np.cos(phi), np.sin(phi)
    out = np.empty_like(x)
    out[..., a] = x[..., a] * c - x[..., b] * s
    out[..., b] = x[..., a] * s + x[..., b] * c
    return out


def message(function, args, kwargs) -> str:
    try:
        function(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 -- what each mechanism raises is the point
        text = " / ".join(line.strip() for line in str(err).strip().splitlines())
        return f"{type(err).__name__}: {text}"
    return "accepted"


def best(call, number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=7)) / number


def main() -> None:
    versions = {"companion": companion_versions}
    for name, make in (("pydantic", pydantic_versions), ("beartype", beartype_versions)):
        try:
            versions[name] = make
        except ImportError:
            pass
    built = {}
    for name, make in versions.items():
        try:
            built[name] = make()
        except ImportError as err:
            print(f"{name}: not installed ({err.name}), skipped")
    print("\nmessages")
    for label, (function, args, kwargs) in BAD_CALLS.items():
        print(f"  {label}:")
        for name, functions in built.items():
            print(f"    {name:10} {message(functions[function], args, kwargs)}")
    rng = np.random.default_rng(0)
    for n, d in ((64, 16), (4096, 128)):
        x, m, theta = rng.normal(size=(n, d)), np.arange(n), rope.inv_freq(d)
        number = 2000 if n == 64 else 20
        bare = best(functools.partial(bare_rotate, x, m, theta), number)
        print(f"\nrotate, n = {n}, d = {d}: bare numpy {bare * 1e6:.1f} us")
        for name, functions in built.items():
            t = best(functools.partial(functions["rotate"], x, m, theta), number)
            print(f"  {name:10} {t * 1e6:9.1f} us  {t / bare:5.2f} x bare")
    print("\ninv_freq(16):")
    for name, functions in built.items():
        print(f"  {name:10} {best(functools.partial(functions['inv_freq'], 16), 20000) * 1e6:6.2f} us")
    print(f"  {'unchecked':10} {best(functools.partial(bare_inv_freq, 16, 1e4), 20000) * 1e6:6.2f} us")
    print("\nlists and tensors (valid spellings):")
    for name, functions in built.items():
        lists = (x[:2].tolist(), [0, 1], theta.tolist())
        print(f"  {name:10} rotate(list, list, list): {message(functions['rotate'], lists, {})[:60]}")


if __name__ == "__main__":
    main()
