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
heads) broadcast. When there are more keys than queries (keys cached from earlier
steps, the last query being the newest token), the queries are the *last*
``n_queries`` positions (:func:`relative_positions`).
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from ._contracts import (
    Array,
    Finite,
    Integer,
    Mask,
    Matrix,
    Sequences,
    Size,
    WholeNumbers,
    contract,
    entries,
    keys_after_queries,
    leading_dims_broadcast,
    mask_and_bias_fit,
    permutation,
    rows_fit,
    rule,
    same_last_dim,
    same_size,
)

__all__ = [
    "softmax",
    "relative_positions",
    "causal_mask",
    "permutation_matrix",
    "scaled_dot_product_attention",
    "self_attention",
]

#: Scores: real numbers of at least one dimension, where ``-inf`` masks an entry out.
Scores = Annotated[np.ndarray, Array(ndim_at_least=1, neg_inf=True)]
#: A score bias: real numbers that broadcast with the scores, ``-inf`` masking a key out.
Bias = Annotated[np.ndarray, Array(neg_inf=True)]


def _axis_of_scores(scores, axis) -> None:
    if not -scores.ndim <= axis < scores.ndim:
        raise ValueError(f"axis must be an integer in [{-scores.ndim}, {scores.ndim - 1}] for scores of shape "
                         f"{scores.shape}, got {axis!r}")
    if scores.shape[axis] == 0:
        raise ValueError(f"scores must have at least one entry along axis {axis}, got shape {scores.shape}")
    if np.any(np.max(scores, axis=axis) == -np.inf):
        raise ValueError("scores must keep a finite entry in every slice along `axis`: "
                         "a slice that is entirely -inf leaves nothing to attend to")


@contract(_axis_of_scores)
def softmax(scores: Scores, axis: Annotated[int, Integer()] = -1) -> np.ndarray:
    r"""Numerically stable softmax along ``axis``.

    .. math:: \operatorname{softmax}(s)_j = \frac{e^{s_j - \max_l s_l}}{\sum_k e^{s_k - \max_l s_l}}

    Subtracting the row maximum does not change the result (it cancels between
    numerator and denominator) but keeps every exponent <= 0, so nothing overflows.
    Entries equal to ``-inf`` (masked positions) get weight exactly 0; a slice that is
    entirely ``-inf`` has no valid softmax and raises ``ValueError``. ``scores`` holds
    the scores :math:`s`; the weights sum to 1 along ``axis`` (the last by default).

    Shapes: ``scores`` any shape of at least one dimension; returns its shape, float64.
    """
    # max_l s_l, kept as an axis of length 1
    peak = np.max(scores, axis=axis, keepdims=True)
    # e^{s_j - max_l s_l}
    e = np.exp(scores - peak)
    # e^{s_j - max} / sum_k e^{s_k - max}
    return e / np.sum(e, axis=axis, keepdims=True)


@contract(keys_after_queries,
          entries("n_queries * n_keys", lambda n_queries, n_keys: n_queries * (n_keys or n_queries)))
def relative_positions(n_queries: Size, n_keys: Size | None = None) -> np.ndarray:
    r"""Key position minus query position, :math:`j - i`, for every pair.

    Query row ``r`` sits at position :math:`i = r + n_\text{keys} - n_\text{queries}`
    (the queries are the last positions, as with keys cached from earlier steps); key
    column ``j`` at position ``j``. ``n_keys`` defaults to ``n_queries`` and must be
    ``>= n_queries``. The result is 0 on the diagonal and negative for keys in the
    past (Shaw et al. 2018; Raffel et al. 2020).

    Shapes: returns ``(n_queries, n_keys)``, int64.
    """
    n_keys = n_queries if n_keys is None else n_keys
    # i = r + n_keys - n_queries, shape (n_queries, 1)
    i = np.arange(n_queries)[:, None] + (n_keys - n_queries)
    # j, shape (1, n_keys)
    j = np.arange(n_keys)[None, :]
    # j - i, shape (n_queries, n_keys)
    return j - i


@contract(keys_after_queries,
          entries("n_queries * n_keys", lambda n_queries, n_keys: n_queries * (n_keys or n_queries)))
def causal_mask(n_queries: Size, n_keys: Size | None = None) -> np.ndarray:
    r"""Boolean mask, ``True`` where query ``i`` may look at key ``j``.

    A causal (autoregressive) model lets token ``i`` see tokens ``0..i``:
    ``mask[i, j] = (j <= i)``. When there are more keys than queries (keys cached
    from earlier steps, the last query being the newest token) the queries are the
    *last* ``n_queries`` positions: ``mask[i, j] = (j <= i + n_keys - n_queries)``.
    ``n_keys`` defaults to ``n_queries`` and must be ``>= n_queries``.

    Shapes: returns ``(n_queries, n_keys)``, bool.
    """
    # j <= i, i.e. j - i <= 0
    return relative_positions(n_queries, n_keys) <= 0


@contract(permutation)
def permutation_matrix(perm: Annotated[np.ndarray, WholeNumbers(signed=True, floats=False)]) -> np.ndarray:
    r"""The permutation matrix ``P`` that reorders rows: ``(P X)[i] = X[perm[i]]``.

    ``P[i, perm[i]] = 1`` and every other entry is 0. For tokens ``[A, B, C]`` stored as
    the rows of ``X``, ``perm = [2, 0, 1]`` gives ``P X = [C, A, B]``. ``P`` is
    orthogonal: ``P.T @ P = I``. ``perm`` holds each of ``0..n-1`` once.

    Shapes: ``perm`` ``(n,)``; returns ``(n, n)``, float64.
    """
    n = perm.size
    P = np.zeros((n, n))
    # P[i, perm[i]] = 1
    P[np.arange(n), perm] = 1.0
    return P


@contract(same_last_dim("q", "k", "d_k"), same_size("k", "v", axis=-2, what="number of rows n_keys"),
          leading_dims_broadcast("q", "k", "v"),
          mask_and_bias_fit, result=Finite("q, k and v", "q k^T / sqrt(d_k) overflows: scale them down"))
def scaled_dot_product_attention(q: Sequences, k: Sequences, v: Sequences, mask: Mask | None = None,
                                 bias: Bias | None = None):
    r"""Attention outputs and weights: ``softmax(q k^T / sqrt(d_k) + bias, masked) v``.

    .. math::

        S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} + b_{ij}, \qquad
        A = \operatorname{softmax}_j(S \text{ with } S_{ij} = -\infty \text{ where mask}_{ij} \text{ is False}), \qquad
        \text{out} = A v .

    Vaswani et al. (2017), eq. (1), with a score bias and a mask added. ``q``, ``k`` and ``v`` are
    the queries, keys and values. ``mask``, if given, is ``True`` where a query may
    attend to a key; every query must keep at least one key. ``bias``, if given, is
    added to the scores before the softmax (relative-position biases such as T5's and
    ALiBi's enter here); its ``-inf`` entries mask a key out, like ``mask``. Returns
    ``(out, weights)``; each row of ``weights`` sums to 1.

    Shapes: ``q`` ``(..., n_queries, d_k)``; ``k`` ``(..., n_keys, d_k)``; ``v``
    ``(..., n_keys, d_v)``; ``mask`` broadcastable to ``(..., n_queries, n_keys)``;
    ``bias`` broadcasts with ``(..., n_queries, n_keys)`` and may add leading
    dimensions (e.g. one bias per head); returns ``out`` ``(..., n_queries, d_v)`` and
    ``weights`` ``(..., n_queries, n_keys)``.
    """
    # S = q k^T / sqrt(d_k), shape (..., n_queries, n_keys)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if bias is not None:
        # S + b
        scores = scores + bias
    if mask is not None:
        # S_ij = -inf where mask_ij is False
        scores = np.where(mask, scores, -np.inf)
    # A = softmax_j(S)
    weights = softmax(scores, axis=-1)
    # out = A v, shape (..., n_queries, d_v)
    return weights @ v, weights


@contract(rows_fit("x", "w_q", "w_k", "w_v"), same_size("w_q", "w_k", what="number of columns d_k"),
          rule(("x", "x", "mask", "bias"), mask_and_bias_fit),
          result=Finite("x, w_q, w_k and w_v", "x and its projections must stay finite: scale them down"))
def self_attention(x: Sequences, w_q: Matrix, w_k: Matrix, w_v: Matrix, mask: Mask | None = None,
                   bias: Bias | None = None):
    r"""Single-head self-attention of a sequence ``x``.

    ``q = x W_Q``, ``k = x W_K``, ``v = x W_V``, then :func:`scaled_dot_product_attention`.
    The rows of ``x`` are the token vectors in order; nothing here tells the rows
    where they stand. ``w_q``, ``w_k`` and ``w_v`` are the projections :math:`W_Q`,
    :math:`W_K`, :math:`W_V`; ``mask`` and ``bias`` are those of
    :func:`scaled_dot_product_attention`, and so is the result ``(out, weights)``.

    Shapes: ``x`` ``(..., n, d_model)``; ``w_q`` and ``w_k`` ``(d_model, d_k)``; ``w_v``
    ``(d_model, d_v)``; returns ``out`` ``(..., n, d_v)`` and ``weights`` ``(..., n, n)``.
    """
    # q = x W_Q, k = x W_K, v = x W_V, each (..., n, d_k or d_v)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    return scaled_dot_product_attention(q, k, v, mask, bias)
