r"""RoPE in low precision: the angle ``m * theta_i``, its cosine and sine, and the score they give.

A floating-point number with ``p`` significant bits holds a value ``x`` to within
half a unit in the last place, ``|x| 2^-p``. An angle ``m theta_i`` formed in that
format from a rounded ``theta_i`` (and an exact ``m``) is rounded twice, so it is off by
at most ``2 m theta_i 2^-p`` radians: the error can grow with the position, and a
rotation cannot hide it (unlike ``2 pi`` itself, it does not wrap away). The bound is
not the error: the fastest pair, ``theta_0 = 1``, is exact in float32 for every integer
``m < 2^24`` (both factors and their product are stored exactly), and in a Llama 3 head
(base 500000) the worst float32 angle at ``m = 131071`` is pair 2's, ``2.8e-3`` rad,
about a quarter of that pair's bound. With ``p = 8`` (bfloat16) even the position ``m``
cannot be stored exactly past 256, and float16 overflows past 65504 (Micikevicius et al.
2018 on the formats; IEEE 754). Libraries therefore form the angles in float32 whatever the
model's dtype (Hugging Face Transformers: ``position_ids.float() @ inv_freq.float()``
with autocast disabled) and cast only ``cos`` and ``sin`` to the model's dtype, whose
rounding (``2^-9`` relative in bfloat16) does not grow with the position.

Every function takes the dtype names ``"float64"``, ``"float32"``, ``"bfloat16"``
and ``"float16"`` and does the arithmetic in torch in that dtype, so the rounding
is the hardware's (CPU here), not a model of it. Reference values are float64
(:func:`companion.rope.angles`).
"""
from __future__ import annotations

from typing import Annotated

import numpy as np
import torch

from . import rope
from ._contracts import (
    Array,
    Frequencies,
    NonNegative,
    OneOf,
    Positions,
    Sequences,
    broadcast_to_leading,
    contract,
    entries,
    pairs_fit,
    rule,
    same_shape,
)

__all__ = [
    "DTYPES",
    "significant_bits",
    "angles_in",
    "angle_error",
    "table_error",
    "rotate_like_library",
    "score_error",
]

#: The formats compared, by name.
DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16,
          "float16": torch.float16}

#: The name of a format, one of :data:`DTYPES`.
DtypeName = Annotated[str, OneOf(*DTYPES)]

_ANGLES = entries("positions.size * len(inv_freq)", lambda positions, inv_freq: positions.size * inv_freq.size)


def _angles_held(positions, inv_freq, angle_dtype) -> None:
    """The angles ``m theta_i`` fit in ``angle_dtype`` (beyond, their cosines are nan)."""
    # each factor is cast to angle_dtype before the product: a frequency it cannot hold is inf
    # even at position 0, where the product would hide it (0 * inf = nan)
    position, frequency = float(np.max(positions, initial=0)), float(np.max(np.abs(inv_freq), initial=0))
    limit = torch.finfo(DTYPES[angle_dtype]).max
    largest = max(position, frequency, position * frequency)
    if largest > limit:
        raise ValueError(f"positions and inv_freq must give angles that angle_dtype {angle_dtype} can hold "
                         f"(at most {limit:.4g}), got {largest:.4g}")


def _held_in(*names: str):
    """A rule: the arrays ``names`` hold numbers that ``table_dtype`` can represent."""
    def check(table_dtype, *arrays):
        top = torch.finfo(DTYPES[table_dtype]).max
        for name, x in zip(names, arrays):
            if x.size and np.max(np.abs(x)) > top:
                raise ValueError(f"{name} must hold numbers that table_dtype {table_dtype} can represent "
                                 f"(|x| <= {top:.4g}), got {np.max(np.abs(x)):.4g}")
    return rule(("table_dtype", *names), check)


@contract
def significant_bits(dtype: DtypeName) -> int:
    """Bits of precision ``p`` of a format (stored mantissa bits + 1): 53, 24, 8, 11."""
    return {"float64": 53, "float32": 24, "bfloat16": 8, "float16": 11}[dtype]


@contract(_ANGLES)
def angles_in(positions: Positions, inv_freq: Frequencies, dtype: DtypeName = "float32") -> np.ndarray:
    r"""The angles ``m * theta_i`` formed in ``dtype``, returned as float64.

    The positions and the frequencies are rounded to ``dtype`` and multiplied in
    ``dtype`` (one rounding more), as a library does that forms ``position_ids`` times
    ``inv_freq`` in that format. ``positions``: non-negative integers, shape ``P``;
    ``inv_freq``: ``(d/2,)``. Shape ``P + (d/2,)``; ``inf`` where ``dtype`` overflows
    (float16 beyond 65504).
    """
    t = DTYPES[dtype]
    # m and theta_i rounded to dtype, their product rounded again: shape P + (d/2,)
    product = torch.as_tensor(positions, dtype=torch.float64).to(t)[..., None] * torch.as_tensor(inv_freq).to(t)
    return product.double().numpy()


@contract(_ANGLES)
def angle_error(positions: Positions, inv_freq: Frequencies, dtype: DtypeName = "float32") -> np.ndarray:
    r"""How far the rotation by :func:`angles_in` is from the exact one, in radians.

    ``|wrap(angle_dtype - m theta_i)|`` with the difference wrapped into ``[-pi, pi]``
    (a rotation sees its angle modulo ``2 pi``); ``inf`` where the format overflowed.
    Shape ``P + (d/2,)``, float64.
    """
    low = angles_in(positions, inv_freq, dtype)
    exact = rope.angles(positions, inv_freq)
    with np.errstate(invalid="ignore"):
        # |wrap(angle_dtype - m theta_i)|, wrapped into [-pi, pi]
        diff = np.abs(np.angle(np.exp(1j * (low - exact))))
    # inf where the format overflowed
    return np.where(np.isfinite(low), diff, np.inf)


@contract(_ANGLES, _angles_held)
def table_error(positions: Positions, inv_freq: Frequencies, angle_dtype: DtypeName = "float32",
                table_dtype: DtypeName = "bfloat16") -> np.ndarray:
    r"""The error of the ``cos``/``sin`` tables a library feeds to the rotation.

    Angles formed in ``angle_dtype`` (:func:`angles_in`), their cosine and sine
    computed in ``angle_dtype`` and cast to ``table_dtype`` (the model's dtype); the
    result is ``max(|cos - cos_exact|, |sin - sin_exact|)`` per position and pair,
    against float64. Shape ``P + (d/2,)``.
    """
    cos, sin = _tables(positions, inv_freq, angle_dtype, table_dtype)
    exact = rope.angles(positions, inv_freq)
    # max(|cos - cos_exact|, |sin - sin_exact|)
    return np.maximum(np.abs(cos.double().numpy() - np.cos(exact)), np.abs(sin.double().numpy() - np.sin(exact)))


@contract(pairs_fit("x"), broadcast_to_leading("positions", "x"), _ANGLES, _angles_held, _held_in("x"))
def rotate_like_library(x: Sequences, positions: Positions, inv_freq: Frequencies, angle_dtype: DtypeName = "float32",
                        table_dtype: DtypeName = "bfloat16") -> np.ndarray:
    r"""Rotate ``x`` (``(..., n, d)``, split layout) with tables and arithmetic in low precision.

    ``x`` is cast to ``table_dtype``, the tables are those of :func:`table_error`, and
    ``x cos + rotate_half(x) sin`` is computed in ``table_dtype``, as Hugging Face's
    ``apply_rotary_pos_emb`` does in the model's dtype. ``positions``: ``(n,)``.
    Returns float64 of the shape of ``x``.
    """
    cos, sin = _tables(positions, inv_freq, angle_dtype, table_dtype)
    xt = torch.tensor(np.array(x)).to(DTYPES[table_dtype])
    half = inv_freq.size
    x1, x2 = xt[..., :half], xt[..., half:]
    # x cos + rotate_half(x) sin, in table_dtype
    out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.double().numpy()


def _queries_after_keys(query_positions, distance) -> None:
    if query_positions.ndim != 1 or query_positions.size == 0 or query_positions.min() < distance:
        raise ValueError(f"query_positions must be a non-empty 1-D array of integers >= distance ({distance})")


@contract(same_shape("q", "k"), _queries_after_keys, pairs_fit("q"),
          rule(("query_positions", "inv_freq", "angle_dtype"), _angles_held), _held_in("q", "k"),
          entries("query_positions.size * d", lambda query_positions, q: query_positions.size * q.size))
def score_error(q: Annotated[np.ndarray, Array(ndim=1)], k: Annotated[np.ndarray, Array(ndim=1)],
                query_positions: Positions,
                distance: NonNegative, inv_freq: Frequencies, angle_dtype: DtypeName = "float32",
                table_dtype: DtypeName = "bfloat16") -> np.ndarray:
    r"""Error of the score ``q . k`` for a query at ``m`` and a key at ``m - distance``, per ``m``.

    Both vectors are rotated by :func:`rotate_like_library`; their dot product is taken
    in float64, so only the position encoding's rounding is measured (the matrix
    product's own rounding comes on top). The exact score is RoPE's, which depends on
    the distance alone (:func:`companion.rope.relative_score`). ``q``, ``k``: ``(d,)``;
    ``query_positions``: integers ``>= distance``, shape ``(P,)``. Returns ``(P,)``.
    """
    m = query_positions
    # q rotated at m, k at m - distance, with the library's rounding
    rq = rotate_like_library(np.broadcast_to(q, (m.size, q.size)), m, inv_freq, angle_dtype, table_dtype)
    rk = rotate_like_library(np.broadcast_to(k, (m.size, k.size)), m - distance, inv_freq, angle_dtype,
                                         table_dtype)
    # the exact score depends on the distance alone: q^T R_{-distance} k
    exact = rope.relative_score(q, k, np.asarray(-distance), inv_freq, layout="split")
    return np.sum(rq * rk, axis=-1) - exact


def _tables(positions, inv_freq, angle_dtype, table_dtype):
    """``cos`` and ``sin`` of the angles formed in ``angle_dtype``, computed there, cast to ``table_dtype``."""
    phi = torch.as_tensor(angles_in(positions, inv_freq, angle_dtype)).to(DTYPES[angle_dtype])
    return torch.cos(phi).to(DTYPES[table_dtype]), torch.sin(phi).to(DTYPES[table_dtype])
