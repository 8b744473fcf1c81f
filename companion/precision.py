r"""RoPE in low precision: the angle ``m * theta_i``, its cosine and sine, and the score they give.

A floating-point number with ``p`` significant bits holds a value ``x`` to within
half a unit in the last place, ``|x| 2^-p``. An angle ``m theta_i`` formed in that
format is therefore off by about ``m theta_i 2^-p`` radians: the error grows with the
position, and a rotation cannot hide it (unlike ``2 pi`` itself, it does not wrap
away). With ``p = 24`` (float32) that is about ``8e-3`` rad for the fastest pair at
``m = 131072``; with ``p = 8`` (bfloat16) even the position ``m`` cannot be stored
exactly past 256, and float16 overflows past 65504 (Micikevicius et al. 2018 on the
formats; IEEE 754). Libraries therefore form the angles in float32 whatever the
model's dtype (Hugging Face Transformers: ``position_ids.float() @ inv_freq.float()``
with autocast disabled) and cast only ``cos`` and ``sin`` to the model's dtype, whose
rounding (``2^-9`` relative in bfloat16) does not grow with the position.

Every function takes the dtype names ``"float64"``, ``"float32"``, ``"bfloat16"``
and ``"float16"`` and does the arithmetic in torch in that dtype, so the rounding
is the hardware's (CPU here), not a model of it. Reference values are float64
(:func:`companion.rope.angles`).
"""
from __future__ import annotations

import numpy as np
import torch

from . import _checks
from . import rope

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


def significant_bits(dtype: str) -> int:
    """Bits of precision ``p`` of a format (stored mantissa bits + 1): 53, 24, 8, 11."""
    return {"float64": 53, "float32": 24, "bfloat16": 8, "float16": 11}[_dtype_name(dtype)]


def angles_in(positions, inv_freq, dtype: str = "float32") -> np.ndarray:
    r"""The angles ``m * theta_i`` formed in ``dtype``, returned as float64.

    The positions and the frequencies are rounded to ``dtype`` and multiplied in
    ``dtype`` (one rounding more), as a library does that forms ``position_ids`` times
    ``inv_freq`` in that format. ``positions``: non-negative integers, shape ``P``;
    ``inv_freq``: ``(d/2,)``. Shape ``P + (d/2,)``; ``inf`` where ``dtype`` overflows
    (float16 beyond 65504).
    """
    m = _checks.positions("positions", positions)
    theta = _frequencies(inv_freq)
    t = DTYPES[_dtype_name(dtype)]
    product = torch.as_tensor(m, dtype=torch.float64).to(t)[..., None] * torch.as_tensor(theta).to(t)
    return product.double().numpy()


def angle_error(positions, inv_freq, dtype: str = "float32") -> np.ndarray:
    r"""How far the rotation by :func:`angles_in` is from the exact one, in radians.

    ``|wrap(angle_dtype - m theta_i)|`` with the difference wrapped into ``[-pi, pi]``
    (a rotation sees its angle modulo ``2 pi``); ``inf`` where the format overflowed.
    Shape ``P + (d/2,)``, float64.
    """
    low = angles_in(positions, inv_freq, dtype)
    exact = rope.angles(positions, _frequencies(inv_freq))
    with np.errstate(invalid="ignore"):
        diff = np.abs(np.angle(np.exp(1j * (low - exact))))
    return np.where(np.isfinite(low), diff, np.inf)


def table_error(positions, inv_freq, angle_dtype: str = "float32", table_dtype: str = "bfloat16") -> np.ndarray:
    r"""The error of the ``cos``/``sin`` tables a library feeds to the rotation.

    Angles formed in ``angle_dtype`` (:func:`angles_in`), their cosine and sine
    computed in ``angle_dtype`` and cast to ``table_dtype`` (the model's dtype); the
    result is ``max(|cos - cos_exact|, |sin - sin_exact|)`` per position and pair,
    against float64. Shape ``P + (d/2,)``.
    """
    cos, sin = _tables(positions, inv_freq, angle_dtype, table_dtype)
    exact = rope.angles(positions, _frequencies(inv_freq))
    return np.maximum(np.abs(cos.double().numpy() - np.cos(exact)), np.abs(sin.double().numpy() - np.sin(exact)))


def rotate_like_library(x, positions, inv_freq, angle_dtype: str = "float32",
                        table_dtype: str = "bfloat16") -> np.ndarray:
    r"""Rotate ``x`` (``(..., n, d)``, split layout) with tables and arithmetic in low precision.

    ``x`` is cast to ``table_dtype``, the tables are those of :func:`table_error`, and
    ``x cos + rotate_half(x) sin`` is computed in ``table_dtype``, as Hugging Face's
    ``apply_rotary_pos_emb`` does in the model's dtype. ``positions``: ``(n,)``.
    Returns float64 of the shape of ``x``.
    """
    x = _checks.array("x", x, ndim_at_least=2)
    theta = _frequencies(inv_freq)
    if x.shape[-1] != 2 * theta.size:
        raise ValueError(f"x must have last dimension d = 2 * len(inv_freq) = {2 * theta.size}, got {x.shape}")
    cos, sin = _tables(positions, theta, angle_dtype, table_dtype)
    t = DTYPES[_dtype_name(table_dtype)]
    xt = torch.tensor(np.array(x)).to(t)
    half = theta.size
    x1, x2 = xt[..., :half], xt[..., half:]
    out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.double().numpy()


def score_error(q, k, query_positions, distance: int, inv_freq, angle_dtype: str = "float32",
                table_dtype: str = "bfloat16") -> np.ndarray:
    r"""Error of the score ``q . k`` for a query at ``m`` and a key at ``m - distance``, per ``m``.

    Both vectors are rotated by :func:`rotate_like_library`; their dot product is taken
    in float64, so only the position encoding's rounding is measured (the matrix
    product's own rounding comes on top). The exact score is RoPE's, which depends on
    the distance alone (:func:`companion.rope.relative_score`). ``q``, ``k``: ``(d,)``;
    ``query_positions``: integers ``>= distance``, shape ``(P,)``. Returns ``(P,)``.
    """
    q = _checks.array("q", q)
    k = _checks.array("k", k)
    if q.ndim != 1 or q.shape != k.shape:
        raise ValueError(f"q and k must be vectors of the same length d, got shapes {q.shape} and {k.shape}")
    m = _checks.positions("query_positions", query_positions)
    distance = int(_checks.at_least("distance", distance, 0))
    if m.ndim != 1 or m.size == 0 or m.min() < distance:
        raise ValueError(f"query_positions must be a non-empty 1-D array of integers >= distance ({distance})")
    theta = _frequencies(inv_freq)
    rq = rotate_like_library(np.broadcast_to(q, (m.size, q.size)), m, theta, angle_dtype, table_dtype)
    rk = rotate_like_library(np.broadcast_to(k, (m.size, k.size)), m - distance, theta, angle_dtype, table_dtype)
    exact = rope.relative_score(q, k, -distance, theta, layout="split")
    return np.sum(rq * rk, axis=-1) - exact


def _tables(positions, inv_freq, angle_dtype, table_dtype):
    t_angle, t_table = DTYPES[_dtype_name(angle_dtype)], DTYPES[_dtype_name(table_dtype)]
    phi = torch.as_tensor(angles_in(positions, inv_freq, angle_dtype)).to(t_angle)
    return torch.cos(phi).to(t_table), torch.sin(phi).to(t_table)


def _frequencies(inv_freq) -> np.ndarray:
    theta = _checks.array("inv_freq", inv_freq)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"inv_freq must be a non-empty 1-D array (one frequency per pair), got shape {theta.shape}")
    return theta


def _dtype_name(dtype) -> str:
    return _checks.one_of("dtype", dtype, tuple(DTYPES))
