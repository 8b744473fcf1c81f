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

import numbers

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
    s = _checks.array("scores", scores, neg_inf=True)
    if s.ndim == 0:
        raise ValueError("scores must have at least 1 dimension, got a scalar")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -s.ndim <= axis < s.ndim:
        raise ValueError(f"axis must be an integer in [{-s.ndim}, {s.ndim - 1}] for scores of shape {s.shape}, "
                         f"got {axis!r}")
    if s.shape[axis] == 0:
        raise ValueError(f"scores must have at least one entry along axis {axis}, got shape {s.shape}")
    peak = np.max(s, axis=axis, keepdims=True)
    if np.any(peak == -np.inf):
        raise ValueError("scores must keep a finite entry in every slice along `axis`: "
                         "a slice that is entirely -inf leaves nothing to attend to")
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
    n_queries = _checks.size("n_queries", n_queries)
    n_keys = n_queries if n_keys is None else _checks.size("n_keys", n_keys)
    if n_keys < n_queries:
        raise ValueError(
            f"n_keys must be >= n_queries ({n_queries}) so that every query sees at least one key, got {n_keys}"
        )
    _checks.entries("n_queries * n_keys", n_queries * n_keys)
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
    raw = _checks.numeric("perm", perm, dtype=np.int64)
    if raw.size and raw.dtype.kind in "fc":
        raise ValueError(f"perm must contain integers 0..n-1, got dtype {raw.dtype}")
    p = _checks.integers("perm", raw)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"perm must be a non-empty 1-D sequence of indices, got shape {p.shape}")
    n = p.size
    _checks.entries("len(perm) ** 2", n * n)
    if not np.array_equal(np.sort(p), np.arange(n)):
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
    if q.shape[-1] != k.shape[-1] or q.shape[-1] == 0:
        raise ValueError(
            f"q and k must have the same last dimension d_k >= 1, got q {q.shape} and k {k.shape}"
        )
    if k.shape[-2] != v.shape[-2] or k.shape[-2] == 0:
        raise ValueError(
            f"k and v must have the same number of rows n_keys >= 1, got k {k.shape} and v {v.shape}"
        )
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError as err:
        raise ValueError(
            f"q, k and v must have leading (batch, head) dimensions that broadcast, got q {q.shape}, "
            f"k {k.shape} and v {v.shape}"
        ) from err
    return _attend(q, k, v, mask, bias, "q and k")


def _attend(q, k, v, mask, bias, sources: str):
    """The attention of validated ``q``, ``k``, ``v``; overflow is blamed on ``sources``."""
    with np.errstate(over="ignore", invalid="ignore"):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    _checks.finite_result(sources, scores, "q k^T / sqrt(d_k) overflows: scale them down")
    if bias is not None:
        bias = _checks.array("bias", bias, neg_inf=True)
        try:
            scores = scores + bias
        except ValueError as err:
            raise ValueError(
                f"bias of shape {bias.shape} must broadcast with the scores of shape {scores.shape} "
                "(..., n_queries, n_keys)"
            ) from err
        _checks.finite_result("bias and q k^T", np.where(scores == -np.inf, 0.0, scores))
    if mask is not None:
        m = _checks.mask("mask", mask, scores.shape)
        scores = np.where(m, scores, -np.inf)
    if np.any(np.all(scores == -np.inf, axis=-1)):
        raise ValueError("mask and bias must leave every query a key to attend to: "
                         "some row of the scores is entirely masked or -inf")
    weights = softmax(scores, axis=-1)
    out = weights @ v
    return out, weights


def self_attention(x, w_q, w_k, w_v, mask=None, bias=None):
    r"""Single-head self-attention of a sequence ``x`` (``n x d_model``).

    ``q = x W_Q``, ``k = x W_K``, ``v = x W_V``, then :func:`scaled_dot_product_attention`.
    The rows of ``x`` are the token vectors in order; nothing here tells the rows
    where they stand.

    Returns ``(out, weights)`` as :func:`scaled_dot_product_attention` does.
    """
    x = _checks.array("x", x, ndim_at_least=2)
    w_q, w_k, w_v = (_checks.projection(name, w, x.shape[-1]) for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)))
    if w_k.shape[1] != w_q.shape[1] or w_q.shape[1] == 0:
        raise ValueError(f"w_k must have as many columns as w_q (d_k = {w_q.shape[1]} >= 1), got shape {w_k.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
    _checks.finite_result("x and its projections", (q, k, v))
    return _attend(q, k, v, mask, bias, "x, w_q and w_k")
