r"""Scaled dot-product attention, the operation every later chapter modifies.

Vaswani et al. (2017), "Attention Is All You Need", eq. (1):

.. math::

    \operatorname{Attn}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^{\mathsf T}}{\sqrt{d_k}}\right) V ,

with the softmax taken along each row. Nothing in this formula looks at the order of
the rows, which is why a transformer needs positional information at all
(chapter 0). Everything here is plain numpy in float64, written to be read next to
the math.

Shapes follow the usual convention: ``q`` is ``(..., n_queries, d_k)``, ``k`` is
``(..., n_keys, d_k)``, ``v`` is ``(..., n_keys, d_v)``; leading dimensions (batch,
heads) broadcast.
"""
from __future__ import annotations

import numpy as np

from . import _checks

__all__ = [
    "softmax",
    "causal_mask",
    "permutation_matrix",
    "scaled_dot_product_attention",
    "self_attention",
]


def softmax(scores, axis: int = -1) -> np.ndarray:
    r"""Numerically stable softmax along ``axis``.

    .. math:: \operatorname{softmax}(s)_j = \frac{e^{s_j - \max_l s_l}}{\sum_k e^{s_k - \max_l s_l}}

    Subtracting the row maximum does not change the result (it cancels between
    numerator and denominator) but keeps every exponent <= 0, so nothing overflows.
    Entries equal to ``-inf`` (masked positions) get weight exactly 0; a slice that is
    entirely ``-inf`` has no valid softmax and raises ``ValueError``.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 0:
        raise ValueError("scores must have at least 1 dimension, got a scalar")
    if not -s.ndim <= axis < s.ndim:
        raise ValueError(f"axis must be in [{-s.ndim}, {s.ndim - 1}] for scores of shape {s.shape}, got {axis}")
    if np.any(np.isnan(s)) or np.any(s == np.inf):
        raise ValueError("scores must not contain nan or +inf (use -inf only to mask an entry out)")
    peak = np.max(s, axis=axis, keepdims=True)
    if np.any(peak == -np.inf):
        raise ValueError("scores has a slice along `axis` that is entirely -inf: no entry is left to attend to")
    e = np.exp(s - peak)
    return e / np.sum(e, axis=axis, keepdims=True)


def causal_mask(n_queries: int, n_keys: int | None = None) -> np.ndarray:
    r"""Boolean mask, ``True`` where query ``i`` may look at key ``j``.

    A causal (autoregressive) model lets token ``i`` see tokens ``0..i``:
    ``mask[i, j] = (j <= i)``. When there are more keys than queries (keys cached
    from earlier steps, the last query being the newest token) the queries are the
    *last* ``n_queries`` positions: ``mask[i, j] = (j <= i + n_keys - n_queries)``.

    Shape ``(n_queries, n_keys)``; ``n_keys`` defaults to ``n_queries`` and must be
    ``>= n_queries``.
    """
    n_queries = _checks.positive_int("n_queries", n_queries)
    n_keys = n_queries if n_keys is None else _checks.positive_int("n_keys", n_keys)
    if n_keys < n_queries:
        raise ValueError(
            f"n_keys must be >= n_queries ({n_queries}) so that every query sees at least one key, got {n_keys}"
        )
    offset = n_keys - n_queries
    i = np.arange(n_queries)[:, None]
    j = np.arange(n_keys)[None, :]
    return j <= i + offset


def permutation_matrix(perm) -> np.ndarray:
    r"""The permutation matrix ``P`` that reorders rows: ``(P X)[i] = X[perm[i]]``.

    ``P[i, perm[i]] = 1`` and every other entry is 0. For tokens ``[A, B, C]`` stored as
    the rows of ``X``, ``perm = [2, 0, 1]`` gives ``P X = [C, A, B]``. ``P`` is
    orthogonal: ``P.T @ P = I``.
    """
    p = np.asarray(perm)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"perm must be a non-empty 1-D sequence of indices, got shape {p.shape}")
    if not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"perm must contain integers 0..n-1, got dtype {p.dtype}")
    n = p.size
    if sorted(p.tolist()) != list(range(n)):
        raise ValueError(f"perm must contain each of 0..{n - 1} exactly once, got {p.tolist()}")
    P = np.zeros((n, n))
    P[np.arange(n), p] = 1.0
    return P


def scaled_dot_product_attention(q, k, v, mask=None, bias=None):
    r"""Attention outputs and weights: ``softmax(q k^T / sqrt(d_k) + bias, masked) v``.

    .. math::

        S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} + b_{ij}, \qquad
        A = \operatorname{softmax}_j(S \text{ with } S_{ij} = -\infty \text{ where mask}_{ij} \text{ is False}), \qquad
        \text{out} = A v .

    Parameters
    ----------
    q, k, v : arrays of shape ``(..., n_queries, d_k)``, ``(..., n_keys, d_k)``, ``(..., n_keys, d_v)``.
    mask : optional boolean array broadcastable to ``(..., n_queries, n_keys)``;
        ``True`` means "may attend". Every query must keep at least one key.
    bias : optional real array that broadcasts with ``(..., n_queries, n_keys)`` (it may
        add leading dimensions, e.g. one bias per head), added to
        the scores before the softmax (relative-position biases such as T5's and
        ALiBi's enter here). ``-inf`` entries mask a key out, like ``mask``.

    Returns
    -------
    out : ``(..., n_queries, d_v)`` and weights : ``(..., n_queries, n_keys)``; each
    row of ``weights`` sums to 1.
    """
    q = _checks.array("q", q, ndim_at_least=2)
    k = _checks.array("k", k, ndim_at_least=2)
    v = _checks.array("v", v, ndim_at_least=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same last dimension d_k, got q {q.shape} and k {k.shape}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of rows n_keys, got k {k.shape} and v {v.shape}"
        )
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if bias is not None:
        bias = np.asarray(bias, dtype=np.float64)
        if np.any(np.isnan(bias)) or np.any(bias == np.inf):
            raise ValueError("bias must not contain nan or +inf (-inf is allowed and masks an entry out)")
        try:
            scores = scores + bias
        except ValueError as err:
            raise ValueError(
                f"bias of shape {bias.shape} cannot broadcast with the scores of shape {scores.shape} "
                "(..., n_queries, n_keys)"
            ) from err
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype != np.bool_:
            raise ValueError(f"mask must be a boolean array (True = may attend), got dtype {m.dtype}")
        m = _broadcast("mask", m, scores.shape)
        if not np.all(m.any(axis=-1)):
            raise ValueError("mask leaves some query with no key to attend to (a row of mask is all False)")
        scores = np.where(m, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def self_attention(x, w_q, w_k, w_v, mask=None, bias=None):
    r"""Single-head self-attention of a sequence ``x`` (``n x d_model``).

    ``q = x W_Q``, ``k = x W_K``, ``v = x W_V``, then :func:`scaled_dot_product_attention`.
    The rows of ``x`` are the token vectors in order; nothing here tells the rows
    where they stand.

    Returns ``(out, weights)`` as :func:`scaled_dot_product_attention` does.
    """
    x = _checks.array("x", x, ndim_at_least=2)
    w_q, w_k, w_v = (_checks.projection(name, w, x.shape[-1]) for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)))
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask=mask, bias=bias)


def _broadcast(name: str, a: np.ndarray, shape: tuple) -> np.ndarray:
    try:
        return np.broadcast_to(a, shape)
    except ValueError as err:
        raise ValueError(
            f"{name} of shape {a.shape} cannot broadcast to the score shape {shape} (..., n_queries, n_keys)"
        ) from err
