r"""SymPy objects the chapters reuse in their proofs.

The chapters prove identities by building both sides symbolically and asserting that
their difference simplifies to zero. The building blocks live here so that every
chapter uses the same definitions as the numerical code in :mod:`companion.attention`.
"""
from __future__ import annotations

from itertools import permutations

import sympy as sp

from . import _checks

__all__ = [
    "symbol_matrix",
    "permutation_matrix",
    "all_permutation_matrices",
    "causal_mask",
    "softmax_rows",
    "self_attention",
    "is_zero_matrix",
    "is_zero",
]


def symbol_matrix(name: str, rows: int, cols: int, **assumptions) -> sp.Matrix:
    r"""A ``rows x cols`` matrix of independent symbols ``name_{ij}`` (0-based)."""
    rows = _checks.positive_int("rows", rows)
    cols = _checks.positive_int("cols", cols)
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}", **assumptions))


def permutation_matrix(perm) -> sp.Matrix:
    r"""SymPy permutation matrix with ``(P X)[i] = X[perm[i]]``, i.e. ``P[i, perm[i]] = 1``.

    The same convention as :func:`companion.attention.permutation_matrix`.
    """
    perm = [int(p) for p in perm]
    n = len(perm)
    if n == 0 or sorted(perm) != list(range(n)):
        raise ValueError(f"perm must contain each of 0..n-1 exactly once, got {perm}")
    return sp.Matrix(n, n, lambda i, j: 1 if j == perm[i] else 0)


def all_permutation_matrices(n: int) -> list[tuple[tuple[int, ...], sp.Matrix]]:
    r"""Every ``(perm, P)`` for the ``n!`` permutations of ``0..n-1``."""
    n = _checks.positive_int("n", n)
    if n > 6:
        raise ValueError(f"n must be at most 6 (n! symbolic checks grow fast), got {n}")
    return [(p, permutation_matrix(p)) for p in permutations(range(n))]


def causal_mask(n: int) -> sp.Matrix:
    r"""The ``n x n`` causal mask as a 0/1 matrix: ``mask[i, j] = 1`` when ``j <= i``."""
    n = _checks.positive_int("n", n)
    return sp.Matrix(n, n, lambda i, j: 1 if j <= i else 0)


def softmax_rows(S: sp.Matrix, mask: sp.Matrix | None = None) -> sp.Matrix:
    r"""Row-wise softmax of a symbolic matrix: :math:`A_{ij} = e^{S_{ij}} / \sum_k e^{S_{ik}}`.

    With a 0/1 ``mask``, entries where ``mask[i, j] = 0`` get weight 0 and are left out
    of the row's sum (the symbolic counterpart of setting the score to :math:`-\infty`).
    """
    S = sp.Matrix(S)
    keep = sp.ones(S.rows, S.cols) if mask is None else sp.Matrix(mask)
    if keep.shape != S.shape:
        raise ValueError(f"mask must have the shape of S {S.shape}, got {keep.shape}")
    out = sp.zeros(S.rows, S.cols)
    for i in range(S.rows):
        denominator = sum(keep[i, k] * sp.exp(S[i, k]) for k in range(S.cols))
        if denominator == 0:
            raise ValueError(f"mask row {i} keeps no entry: nothing to attend to")
        for j in range(S.cols):
            out[i, j] = keep[i, j] * sp.exp(S[i, j]) / denominator
    return out


def self_attention(
    X: sp.Matrix, W_Q: sp.Matrix, W_K: sp.Matrix, W_V: sp.Matrix, mask: sp.Matrix | None = None
) -> sp.Matrix:
    r"""Symbolic single-head self-attention (unmasked unless a 0/1 ``mask`` is given):

    .. math:: \operatorname{Attn}(X) = \operatorname{softmax}\!\left(\frac{X W_Q (X W_K)^{\mathsf T}}{\sqrt{d_k}}\right) X W_V

    (Vaswani et al., 2017), the same formula as :func:`companion.attention.self_attention`.
    """
    Q, K, V = X * W_Q, X * W_K, X * W_V
    S = Q * K.T / sp.sqrt(W_K.cols)
    return softmax_rows(S, mask) * V


def is_zero_matrix(M: sp.Matrix) -> bool:
    r"""True when every entry of ``M`` simplifies to exactly 0."""
    return all(is_zero(entry) for entry in sp.Matrix(M))


def is_zero(expr) -> bool:
    r"""True when ``expr`` (an expression or a matrix) simplifies to exactly 0.

    Tries ``sympy.simplify``, then expands trigonometric and exponential
    functions (``expand_trig``, ``rewrite(exp)``) for identities that ``simplify``
    leaves in another form. A ``False`` means SymPy found no proof, not that the
    identity is false; the chapters assert ``True``.
    """
    if isinstance(expr, sp.MatrixBase):
        return is_zero_matrix(expr)
    expr = sp.sympify(expr)
    if sp.simplify(expr) == 0:
        return True
    if sp.simplify(sp.expand(sp.expand_trig(expr))) == 0:
        return True
    return sp.simplify(sp.expand(expr.rewrite(sp.exp))) == 0
