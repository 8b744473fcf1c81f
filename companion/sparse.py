r"""Positions inside sparse and compressed attention: a selector's layout, compressed entries, shared key-values.

**DeepSeek Sparse Attention** (DeepSeek-AI 2025, "DeepSeek-V3.2-Exp: Boosting
Long-Context Efficiency with DeepSeek Sparse Attention", section 1, equations 1-2)
lets each query attend to the ``k`` keys a small *lightning indexer* scores highest:

.. math:: I_{t,s} = \sum_{j=1}^{H^I} w^I_{t,j}\, \operatorname{ReLU}\bigl(q^I_{t,j} \cdot k^I_s\bigr)

(:func:`indexer_scores`, :func:`selected_keys`). The indexer has its own RoPE: in
Transformers' ``DeepseekV32Indexer`` (``models/deepseek_v32/modeling_deepseek_v32.py``)
the *first* ``qk_rope_head_dim`` components of its queries and key turn, in the
split (``rotate_half``) layout -- "The indexer uses NON-interleaved (half-split)
RoPE -- unlike the main MLA attention", which rotates the *last* 64 components of each
head in adjacent pairs (:mod:`companion.mla`). One model, one set of ``cos`` and
``sin``, two pair layouts: chapter 3's layout trap inside a single attention layer.
The library also multiplies ``q . k`` by ``index_head_dim^{-1/2}`` and the weights
by ``index_n_heads^{-1/2}``; positive constants, which select the same keys.

**Compressed attention** (Transformers' ``models/deepseek_v4``, DeepSeek-V4): besides a
sliding window of ``sliding_window`` keys, the ``compressed_sparse_attention`` and
``heavily_compressed_attention`` layers attend to *entries* that each stand for a
window of ``m`` consecutive tokens (``compress_rates``: 4 and 128). In a heavily
compressed layer entry ``i`` pools tokens ``i m .. i m + m - 1`` with weights
``softmax_j(Z_j + B_j)`` per channel, ``B`` a learned bias for each offset ``j`` inside
the window (:func:`pooled_entries`; ``DeepseekV4HCACompressor``); in a compressed sparse
layer an entry pools its own window and the one before, and an indexer picks entries
(``DeepseekV4CSACompressor``). Either way entry ``i`` is rotated as if it stood at
position ``i m`` (:func:`entry_positions`), and the query at ``t`` sees it once its
window is past, ``i < (t + 1) // m`` (:func:`entry_mask`). So the layers with compressed
entries rotate by distances up to the whole input, and their RoPE has a base of its own,
``compress_rope_theta`` (160,000 by default, for the queries, window keys and entries of
those layers), against ``rope_theta`` (10,000) for the layers that only slide; YaRN only
on the former (``DeepseekV4Config.__post_init__``).

DeepSeek-V4's attention also uses one vector per token as key *and* value, rotated on
its trailing ``qk_rope_head_dim`` components. The output then carries the values'
rotations, and the layer turns the rotated part of the output back by the query's
position (``apply_rotary_pos_emb(..., cos, -sin)``), so that each value enters
rotated by its distance only:

.. math:: R_{-t} \sum_n w_{tn} R_n v_n = \sum_n w_{tn} R_{n-t}\, v_n

(:func:`unrotate`).

Numbers are numpy float64.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from . import rope as _rope
from ._contracts import (
    Array,
    Frequencies,
    Matrix,
    Positions,
    Size,
    Vectors,
    broadcast_to_leading,
    contract,
    entries,
    pairs_fit,
)

__all__ = ["indexer_scores", "selected_keys", "pooled_entries", "entry_positions", "entry_mask", "unrotate"]

#: A pair layout of :mod:`companion.rope`.
Layout = _rope.Layout
#: Indexer queries ``(n, heads, d_I)``.
IndexerQueries = Annotated[np.ndarray, Array(ndim=3, nonempty=True)]
#: Index scores ``(n, n)``: finite, or ``-inf`` for a key the query cannot see.
IndexScores = Annotated[np.ndarray, Array(ndim=2, neg_inf=True)]


def _indexer_fits(q, k, weights, inv_freq) -> None:
    """Queries ``(n, H, d_I)``, one key ``(n, d_I)`` per token, weights ``(n, H)``, a rotated slice within ``d_I``."""
    n, heads, width = q.shape
    if k.shape != (n, width) or weights.shape != (n, heads):
        raise ValueError(f"k must have shape (n, d_I) = {(n, width)} and weights (n, heads) = {(n, heads)}, "
                         f"got {k.shape} and {weights.shape}")
    if 2 * inv_freq.size > width or n == 0:
        raise ValueError(f"inv_freq must turn at most the d_I = {width} components of the indexer, "
                         f"got {inv_freq.size} pairs")


def _square(index_scores) -> None:
    """One row per query and one column per key of the same tokens."""
    if index_scores.shape[0] != index_scores.shape[1] or index_scores.shape[0] == 0:
        raise ValueError(f"index_scores must be a square (n, n) matrix with n >= 1, got shape {index_scores.shape}")


@contract(_indexer_fits, entries("n * n * heads", lambda q: q.shape[0] ** 2 * q.shape[1]))
def indexer_scores(q: IndexerQueries, k: Matrix, weights: Matrix, inv_freq: Frequencies,
                   layout: Layout = "split") -> np.ndarray:
    r"""The lightning indexer's scores ``I_{t,s} = sum_j w_{t,j} ReLU(q_{t,j} . k_s)`` after RoPE, causal.

    ``q``: ``(n, heads, d_I)``, the indexer queries of tokens at positions ``0 .. n-1``;
    ``k``: ``(n, d_I)``, one indexer key per token; ``weights``: ``(n, heads)``. The
    first ``2 len(inv_freq)`` components of every query and key are rotated by the
    token's position in ``layout`` (DeepSeek-V3.2: 64 of 128, ``"split"``), the rest
    pass. Returns ``(n, n)``, ``-inf`` above the diagonal.
    """
    n, r = q.shape[0], 2 * inv_freq.size
    positions = np.arange(n)
    # the leading r components turn with the position, the rest do not
    q_rot = np.concatenate([_rope.rotate(q[..., :r], positions[:, None], inv_freq, layout), q[..., r:]], axis=-1)
    k_rot = np.concatenate([_rope.rotate(k[:, :r], positions, inv_freq, layout), k[:, r:]], axis=-1)
    # ReLU(q_{t,j} . k_s), (n, heads, n), weighted by w_{t,j} and summed over the heads
    logits = np.maximum(np.einsum("thd,sd->ths", q_rot, k_rot), 0.0)
    scores = np.einsum("th,ths->ts", weights, logits)
    return np.where(positions[:, None] >= positions[None, :], scores, -np.inf)


@contract(_square)
def selected_keys(index_scores: IndexScores, top_k: Size) -> np.ndarray:
    r"""The keys each query attends to: the ``top_k`` highest finite index scores of its row, as a boolean mask.

    A row with ``top_k`` or fewer finite scores keeps all of them (a query that has
    seen no more than ``top_k`` keys attends to all). Ties at the ``top_k``-th place
    are broken by position, the earlier key first. Returns ``(n, n)`` boolean.
    """
    finite = np.isfinite(index_scores)
    # rank the finite entries of each row, highest first (stable: earlier keys win ties)
    order = np.argsort(np.where(finite, -index_scores, np.inf), axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(index_scores.shape[1])[None, :].repeat(index_scores.shape[0], 0), -1)
    return finite & (ranks < top_k)


def _windows_fit(kv, gate, position_bias, rate) -> None:
    """``kv`` and ``gate`` are ``(n, width)``; ``position_bias`` is ``(rate, width)``; at least one window."""
    if gate.shape != kv.shape or position_bias.shape != (rate, kv.shape[1]):
        raise ValueError(f"gate must have the shape of kv {kv.shape} and position_bias (rate, width) = "
                         f"{(rate, kv.shape[1])}, got {gate.shape} and {position_bias.shape}")
    if kv.shape[0] < rate:
        raise ValueError(f"kv must hold at least one window of rate = {rate} tokens, got {kv.shape[0]} rows")


@contract(_windows_fit)
def pooled_entries(kv: Matrix, gate: Matrix, position_bias: Matrix, rate: Size) -> np.ndarray:
    r"""Compressed entries: each window of ``rate`` tokens pooled with a softmax over its tokens, per channel.

    .. math:: C_i = \sum_{j=0}^{m-1} \operatorname{softmax}_j\bigl(Z_{im+j} + B_j\bigr) \odot C_{im+j}

    ``kv``: ``(n, width)``, the per-token vectors ``C``; ``gate``: ``(n, width)``, the
    gate logits ``Z``; ``position_bias``: ``(rate, width)``, ``B``, one learned row per
    offset inside the window (a learned absolute position within the window). Only
    complete windows are pooled: returns ``(n // rate, width)``, before the
    normalisation and rotation the layer applies (Transformers'
    ``DeepseekV4HCACompressor``).
    """
    m = rate
    windows = kv.shape[0] // m
    values = kv[:windows * m].reshape(windows, m, -1)
    logits = gate[:windows * m].reshape(windows, m, -1) + position_bias
    # softmax over the m tokens of each window, channel by channel
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return (weights * values).sum(axis=1)


@contract(entries("n_tokens // rate", lambda n_tokens, rate: n_tokens // rate))
def entry_positions(n_tokens: Size, rate: Size) -> np.ndarray:
    r"""The positions compressed entries are rotated by: ``i m`` for the complete windows of ``n_tokens`` tokens.

    Entry ``i`` summarises tokens ``i m .. i m + m - 1`` and is rotated as if it stood
    at the window's first token. Returns int64 ``(n_tokens // rate,)``.
    """
    # the first token of each complete window
    return np.arange(n_tokens // rate, dtype=np.int64) * rate


@contract(entries("n_queries * n_entries", lambda n_queries, n_entries: n_queries * n_entries))
def entry_mask(n_queries: Size, n_entries: Size, rate: Size) -> np.ndarray:
    r"""Which compressed entries each query may attend to: entry ``i`` once its window is past, ``i < (t + 1) // m``.

    The query at position ``t`` sees entry ``i`` when the entry's last token,
    ``i m + m - 1``, is at most ``t`` (``causal_threshold = (position_ids + 1) //
    compress_rate`` in ``DeepseekV4HCACompressor``). Returns boolean ``(n_queries,
    n_entries)``.
    """
    t = np.arange(n_queries)
    # i < (t + 1) // m
    return np.arange(n_entries)[None, :] < ((t + 1) // rate)[:, None]


@contract(pairs_fit("x"), broadcast_to_leading("positions", "x"))
def unrotate(x: Vectors, positions: Positions, inv_freq: Frequencies, layout: Layout = "adjacent") -> np.ndarray:
    r"""Turn every pair of ``x`` *back* by its position: ``R_{-m} x``, the inverse of :func:`companion.rope.rotate`.

    A rotation by ``-phi`` is a rotation by ``phi`` between two reflections of the
    pair's second component, ``R_{-phi} = F R_phi F`` with ``F = diag(1, -1)``; that
    is how it is computed here. DeepSeek-V4 applies it to the rotated slice of each
    head's output at the query's position, so that a value rotated by its key's
    position ``n`` enters rotated by ``n - t``. Shapes as in
    :func:`companion.rope.rotate`.
    """
    second = _rope.pair_indices(x.shape[-1], layout)[1]
    flip = np.ones(x.shape[-1])
    flip[second] = -1.0
    # F R_m F x = R_{-m} x
    return flip * _rope.rotate(flip * x, positions, inv_freq, layout)
