r"""Attention sinks: where a softmax puts the weight that no key should get.

A softmax row must sum to 1, so a head that finds nothing relevant still has to
spend its weight somewhere. Trained language models spend it on the first tokens
of the input, whatever they are (Xiao et al. 2023, "Efficient Streaming Language
Models with Attention Sinks", arXiv:2309.17453): keep those first tokens in the
cache and a model can stream past its training length with a rolling window of
recent keys (:func:`streaming_cache`, StreamingLLM); drop them and it breaks.

gpt-oss (OpenAI 2025, arXiv:2508.10925) builds the sink in: every head has a learned
logit ``z_h`` that joins the softmax's denominator and has no value,

.. math::

    w_j = \frac{e^{s_j}}{e^{z_h} + \sum_k e^{s_k}}, \qquad \text{out} = \sum_j w_j v_j ,

so the weights of a row sum to ``1 - e^{z_h} / (e^{z_h} + \sum_k e^{s_k}) < 1``
(:func:`softmax_with_sink`; OpenAI's reference ``sdpa`` in ``gpt_oss/torch/model.py``,
Transformers' ``GptOssAttention`` and its ``eager_attention_forward``).

A sink also changes the position signal of a head without positions (chapter 5):
with equal scores, query ``i`` of a causal head gives each of its ``i + 1`` keys the
weight ``1 / (i + 1 + e^z)``, and the total weight on real keys,
``(i + 1) / (i + 1 + e^z)``, grows with ``i``. Values that are all equal, which
carry no position through a plain softmax, carry it through a sink
(:func:`counted_mass`, :func:`read_count`).

StreamingLLM numbers the cached tokens by their place in the cache. That does not
force keys to be cached raw and rotated again at every step. The rolling keys are
contiguous, so a query and a rolling key are as far apart in cache positions as in
text positions; only the distances to the sink tokens change. Caching every key
rotated once by its *text* position (the sinks' text positions are their cache
positions), and rotating the query twice -- by its text position for the rolling
keys and by its cache position for the sinks -- gives the same scores exactly, with
no key touched again (:func:`streaming_scores_cached` against
:func:`streaming_scores`).
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from . import attention as _attention
from . import rope as _rope
from ._contracts import (
    MAX_POSITION,
    Array,
    Finite,
    Frequencies,
    Integer,
    Mask,
    NonNegative,
    Real,
    Sequences,
    Size,
    Vectors,
    broadcast_to_leading,
    contract,
    entries,
    leading_dims_broadcast,
    mask_and_bias_fit,
    rule,
    same_last_dim,
    same_size,
)

__all__ = [
    "softmax_with_sink",
    "sink_weight",
    "attention_with_sink",
    "uniform_weights_with_sink",
    "counted_mass",
    "read_count",
    "streaming_cache",
    "streaming_scores",
    "streaming_scores_cached",
]

#: Scores ``(..., n_keys)``: finite, or ``-inf`` for a masked key.
Scores = Annotated[np.ndarray, Array(ndim_at_least=1, neg_inf=True)]
#: Sink logits ``z``, one per row or per head: real, ``-inf`` for no sink.
SinkLogits = Annotated[np.ndarray, Array(neg_inf=True)]
#: Finite sink logits, one per head.
FiniteSinkLogits = Annotated[np.ndarray, Array()]
#: Masses of the real keys, in ``(0, 1)``.
Masses = Annotated[np.ndarray, Array(positive=True, below=1.0, why="the weight a sink leaves to real keys")]
#: One finite sink logit ``z``.
SinkLogit = Annotated[float, Real()]

_SQUARE = entries("n * n", lambda n: n * n)


def _a_key_or_the_sink(scores, sink_logit) -> None:
    """Every row keeps a key or the sink: not all of ``scores`` and ``sink_logit`` are ``-inf``."""
    if np.any(np.all(scores == -np.inf, axis=-1) & (np.broadcast_to(sink_logit, scores.shape[:-1]) == -np.inf)):
        raise ValueError("scores and sink_logit must leave every row something to attend to")


_ONE_SINK_PER_ROW = broadcast_to_leading("sink_logit", "scores", why=" (one per row)", onto=True)
_ONE_SINK_PER_HEAD = broadcast_to_leading("sink_logit", "q", drop=2, why=" (one per head)", onto=True)


@contract(_ONE_SINK_PER_ROW, _a_key_or_the_sink)
def softmax_with_sink(scores: Scores, sink_logit: SinkLogits) -> np.ndarray:
    r"""Softmax over the last axis with one extra logit ``z`` in the denominator: ``e^{s_j} / (e^z + sum_k e^{s_k})``.

    ``scores``: ``(..., n_keys)``, ``-inf`` for a masked key; ``sink_logit``: real,
    broadcastable to ``scores.shape[:-1]`` (one per head for gpt-oss). Returns the
    weights of the real keys, the shape of ``scores``; each row sums to less than 1, the
    rest being :func:`sink_weight`. ``sink_logit = -inf`` is the plain softmax.
    Computed as a softmax over the keys and the sink together, shifted by the row's
    largest logit (as Transformers' gpt-oss attention does).
    """
    s, z = scores, np.broadcast_to(sink_logit, scores.shape[:-1])
    # logits of the row with the sink appended: (..., n_keys + 1)
    logits = np.concatenate([s, z[..., None]], axis=-1)
    # w_j = e^{s_j} / (e^z + sum_k e^{s_k}): the softmax of the row, without its last entry
    return _attention.softmax(logits, -1)[..., :-1]


@contract(_ONE_SINK_PER_ROW, _a_key_or_the_sink)
def sink_weight(scores: Scores, sink_logit: SinkLogits) -> np.ndarray:
    r"""The weight the sink takes from each row: ``e^z / (e^z + sum_k e^{s_k}) = 1 - sum_j w_j``.

    Shapes as in :func:`softmax_with_sink`, without the last axis.
    """
    s, z = scores, np.broadcast_to(sink_logit, scores.shape[:-1])
    # log(e^z + sum_k e^{s_k}) without overflow
    log_denominator = np.logaddexp(z, np.logaddexp.reduce(s, axis=-1))
    # e^{z - log(denominator)}
    return np.exp(z - log_denominator)


@contract(same_last_dim("q", "k", "d"), same_size("k", "v", axis=-2, what="number of rows n_keys"),
          leading_dims_broadcast("q", "k", "v"), rule(("q", "k", "mask"), mask_and_bias_fit), _ONE_SINK_PER_HEAD)
def attention_with_sink(q: Sequences, k: Sequences, v: Sequences, sink_logit: FiniteSinkLogits,
                        mask: Mask | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Scaled dot-product attention whose softmax has a sink: gpt-oss's attention for one or more heads.

    .. math:: S = \frac{q k^T}{\sqrt{d}}, \quad w = \text{softmax\_with\_sink}(S, z), \quad \text{out} = w\, v .

    ``q``: ``(..., n_queries, d)``; ``k``: ``(..., n_keys, d)``; ``v``: ``(..., n_keys,
    d_v)``; ``sink_logit``: broadcastable to ``q.shape[:-2]`` (one per head);
    ``mask``: optional boolean ``(..., n_queries, n_keys)``, ``True`` = may attend.
    Returns ``(out, weights)``; the sink has no value, so it adds nothing to ``out``.
    """
    # S = q k^T / sqrt(d), shape (..., n_queries, n_keys)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        # masked keys get -inf and weight 0
        scores = np.where(mask, scores, -np.inf)
    # one sink per head, the same for every query of the head: (..., 1)
    z = np.broadcast_to(sink_logit, q.shape[:-2])[..., None]
    # w = e^{S} / (e^{z} + sum e^{S})
    weights = softmax_with_sink(scores, z)
    # out = w v
    return weights @ v, weights


@contract(_SQUARE)
def uniform_weights_with_sink(n: Size, sink_logit: SinkLogit) -> np.ndarray:
    r"""Weights of a causal head with equal scores and a sink: ``A_ij = 1 / (i + 1 + e^z)`` for ``j <= i``.

    The sink-free version is chapter 5's ``1 / (i + 1)``
    (:func:`companion.nope.uniform_causal_weights`). Shape ``(n, n)``; row ``i`` sums to
    :func:`counted_mass` at ``i``.
    """
    # scores 0 on the causal triangle, -inf above it
    scores = np.where(_attention.causal_mask(n), 0.0, -np.inf)
    # e^0 / (e^z + (i + 1) e^0)
    return softmax_with_sink(scores, np.full(n, sink_logit))


@contract
def counted_mass(n: Size, sink_logit: SinkLogit) -> np.ndarray:
    r"""Total weight on real keys of a uniform causal head with a sink, ``(i + 1) / (i + 1 + e^z)``, ``i = 0 .. n-1``.

    This is the output of the head at position ``i`` when every value is 1: without a
    sink it is 1 everywhere (no position), with a sink it rises with ``i`` and reveals
    it (:func:`read_count`). Shape ``(n,)``.
    """
    count = np.arange(1, n + 1, dtype=np.float64)
    # (i + 1) / (i + 1 + e^z) = 1 / (1 + e^(z - ln(i + 1))), written so that e^z never overflows
    return np.exp(-np.logaddexp(0.0, sink_logit - np.log(count)))


@contract(result=Finite("sink_logit", "e^z overflows float64: use a smaller sink logit"))
def read_count(mass: Masses, sink_logit: SinkLogit) -> np.ndarray:
    r"""Invert :func:`counted_mass`: ``i = e^z m / (1 - m) - 1`` for a mass ``m`` in ``(0, 1)``.

    Returns float64 of the shape of ``mass``: the position, a whole number when
    ``mass`` came from :func:`counted_mass`.
    """
    # m = c / (c + e^z)  =>  c = e^z m / (1 - m), and i = c - 1
    return np.exp(sink_logit) * mass / (1.0 - mass) - 1.0


@contract
def streaming_cache(n_tokens: Size, window: Size, n_sink: NonNegative = 4) -> tuple[np.ndarray, np.ndarray]:
    r"""StreamingLLM's cache after ``n_tokens`` tokens: the first ``n_sink`` and the last ``window`` (the rolling part).

    Returns ``(kept, positions)``: the indices of the tokens whose keys and values are
    kept, in order, and the positions the model gives them, which are their places in
    the cache, ``0 .. len(kept) - 1``, not in the text (Xiao et al. 2023, section 3.2:
    keys are cached before the rotation and rotated by their cache position at every
    step). Four sink tokens are the paper's default. ``n_tokens <= n_sink + window``
    keeps everything.
    """
    # sinks: 0 .. n_sink - 1; rolling window: the last `window` tokens
    recent = np.arange(max(n_sink, n_tokens - window), n_tokens)
    kept = np.concatenate([np.arange(min(n_sink, n_tokens)), recent])
    # positions within the cache
    return kept, np.arange(kept.size)


#: A pair layout of :mod:`companion.rope`.
Layout = _rope.Layout
#: A number of sink tokens: an integer in 0..2**32.
SinkCount = Annotated[int, Integer(0, MAX_POSITION)]
#: Keys of every token so far, ``(n, d)``.
Keys = Annotated[np.ndarray, Array(ndim=2, nonempty=True)]


def _query_fits_keys(q, k, inv_freq) -> None:
    """One query of width ``d``, keys ``(n, d)``, ``d = 2 len(inv_freq)``."""
    if q.shape != (2 * inv_freq.size,) or k.shape[1] != 2 * inv_freq.size:
        raise ValueError(f"q must have shape (d,) and k shape (n, d) with d = 2 * len(inv_freq) = {2 * inv_freq.size},"
                         f" got {q.shape} and {k.shape}")


@contract(_query_fits_keys)
def streaming_scores(q: Vectors, k: Keys, window: Size, inv_freq: Frequencies, n_sink: SinkCount = 4,
                     layout: Layout = "split") -> np.ndarray:
    r"""StreamingLLM's scores of the newest query, with raw keys rotated by their cache positions.

    After ``n = len(k)`` tokens the cache keeps :func:`streaming_cache`'s tokens at
    cache positions ``c_j = 0 .. len(kept) - 1``; the newest token is the last kept,
    at ``c_q``. The scores are

    .. math:: s_j = (R_{c_q}\, q) \cdot (R_{c_j}\, k_j) ,

    computed here as their definition reads: every kept raw key rotated again by its
    current cache position, ``len(kept)`` rotations per generated token. ``q``: the
    newest token's query ``(d,)``; ``k``: raw keys of all ``n`` tokens ``(n, d)``.
    Returns ``(len(kept),)``, unscaled.
    """
    kept, cache = streaming_cache(k.shape[0], window, n_sink)
    # every kept key turned by its place in the cache, the query by its own
    keys = _rope.rotate(k[kept], cache, inv_freq, layout)
    query = _rope.rotate(q, cache[-1], inv_freq, layout)
    return keys @ query


@contract(rule(("q", "k_rotated", "inv_freq"), _query_fits_keys))
def streaming_scores_cached(q: Vectors, k_rotated: Keys, window: Size, inv_freq: Frequencies,
                            n_sink: SinkCount = 4, layout: Layout = "split") -> np.ndarray:
    r"""The same scores as :func:`streaming_scores` from keys rotated once, by their text positions.

    ``k_rotated[j] = R_j k_j``: each key turned by its text position ``j`` when it
    entered the cache, and never again (the sinks, tokens ``0 .. n_sink - 1``, have
    the same text and cache positions). With the newest token at text position
    ``t = n - 1`` and cache position ``c_q``, a rolling key ``j`` sits at cache
    position ``c_q - (t - j)``, so

    .. math::

        (R_{c_q} q) \cdot (R_{c_q - (t - j)} k_j) = q^{\mathsf T} R_{j - t}\, k_j
        = (R_t\, q) \cdot (R_j\, k_j) ,

    and a sink ``s`` needs ``(R_{c_q} q) \cdot (R_s k_s)``. The query is rotated twice
    (by ``t`` for the rolling keys, by ``c_q`` for the sinks): ``O(d)`` work per
    token, no key rotated again, nothing that drifts. Angles are formed in float64
    (:func:`companion.rope.rotate`), which a long stream needs: ``t`` grows without
    bound. Returns ``(len(kept),)``, unscaled.
    """
    n = k_rotated.shape[0]
    kept, cache = streaming_cache(n, window, n_sink)
    n_sinks_kept = min(n_sink, n) if n > n_sink + window else 0
    # the query turned by its text position (rolling keys) and by its cache position (sinks)
    by_text = _rope.rotate(q, n - 1, inv_freq, layout)
    by_cache = _rope.rotate(q, cache[-1], inv_freq, layout)
    scores = k_rotated[kept] @ by_text
    scores[:n_sinks_kept] = k_rotated[kept[:n_sinks_kept]] @ by_cache
    return scores
