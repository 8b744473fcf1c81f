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
"""
from __future__ import annotations

import numpy as np

from . import _checks
from . import attention as _attention

__all__ = [
    "softmax_with_sink",
    "sink_weight",
    "attention_with_sink",
    "uniform_weights_with_sink",
    "counted_mass",
    "read_count",
    "streaming_cache",
]


def softmax_with_sink(scores, sink_logit) -> np.ndarray:
    r"""Softmax over the last axis with one extra logit ``z`` in the denominator: ``e^{s_j} / (e^z + sum_k e^{s_k})``.

    ``scores``: ``(..., n_keys)``, ``-inf`` for a masked key; ``sink_logit``: real,
    broadcastable to ``scores.shape[:-1]`` (one per head for gpt-oss). Returns the
    weights of the real keys, the shape of ``scores``; each row sums to less than 1, the
    rest being :func:`sink_weight`. ``sink_logit = -inf`` is the plain softmax.
    Computed as a softmax over the keys and the sink together, shifted by the row's
    largest logit (as Transformers' gpt-oss attention does).
    """
    s, z = _scores_and_sink(scores, sink_logit)
    # logits of the row with the sink appended: (..., n_keys + 1)
    logits = np.concatenate([s, z[..., None]], axis=-1)
    # w_j = e^{s_j} / (e^z + sum_k e^{s_k}): the softmax of the row, without its last entry
    return _attention.softmax(logits, axis=-1)[..., :-1]


def sink_weight(scores, sink_logit) -> np.ndarray:
    r"""The weight the sink takes from each row: ``e^z / (e^z + sum_k e^{s_k}) = 1 - sum_j w_j``.

    Shapes as in :func:`softmax_with_sink`, without the last axis.
    """
    s, z = _scores_and_sink(scores, sink_logit)
    # log(e^z + sum_k e^{s_k}) without overflow
    log_denominator = np.logaddexp(z, np.logaddexp.reduce(s, axis=-1))
    # e^{z - log(denominator)}
    return np.exp(z - log_denominator)


def attention_with_sink(q, k, v, sink_logit, mask=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Scaled dot-product attention whose softmax has a sink: gpt-oss's attention for one or more heads.

    .. math:: S = \frac{q k^T}{\sqrt{d}}, \quad w = \text{softmax\_with\_sink}(S, z), \quad \text{out} = w\, v .

    ``q``: ``(..., n_queries, d)``; ``k``: ``(..., n_keys, d)``; ``v``: ``(..., n_keys,
    d_v)``; ``sink_logit``: broadcastable to ``q.shape[:-2]`` (one per head);
    ``mask``: optional boolean ``(..., n_queries, n_keys)``, ``True`` = may attend.
    Returns ``(out, weights)``; the sink has no value, so it adds nothing to ``out``.
    """
    q = _checks.array("q", q, ndim_at_least=2)
    k = _checks.array("k", k, ndim_at_least=2)
    v = _checks.array("v", v, ndim_at_least=2)
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"q, k and v must have shapes (..., n, d), (..., m, d), (..., m, d_v), "
                         f"got {q.shape}, {k.shape} and {v.shape}")
    # S = q k^T / sqrt(d)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        # masked keys get -inf and weight 0
        scores = np.where(_checks.mask("mask", mask, scores.shape), scores, -np.inf)
    z = np.broadcast_to(_checks.array("sink_logit", sink_logit), q.shape[:-2])
    # w = e^{S} / (e^{z} + sum e^{S}); the sink is the same for every query of a head
    weights = softmax_with_sink(scores, z[..., None])
    # out = w v
    return weights @ v, weights


def uniform_weights_with_sink(n: int, sink_logit: float) -> np.ndarray:
    r"""Weights of a causal head with equal scores and a sink: ``A_ij = 1 / (i + 1 + e^z)`` for ``j <= i``.

    The sink-free version is chapter 5's ``1 / (i + 1)``
    (:func:`companion.nope.uniform_causal_weights`). Shape ``(n, n)``; row ``i`` sums to
    :func:`counted_mass` at ``i``.
    """
    n = _checks.size("n", n)
    z = _sink_scalar(sink_logit)
    scores = np.where(_attention.causal_mask(n), 0.0, -np.inf)
    # e^0 / (e^z + (i + 1) e^0) on the causal triangle
    return softmax_with_sink(scores, np.full(n, z))


def counted_mass(n: int, sink_logit: float) -> np.ndarray:
    r"""Total weight on real keys of a uniform causal head with a sink, ``(i + 1) / (i + 1 + e^z)``, ``i = 0 .. n-1``.

    This is the output of the head at position ``i`` when every value is 1: without a
    sink it is 1 everywhere (no position), with a sink it rises with ``i`` and reveals
    it (:func:`read_count`). Shape ``(n,)``.
    """
    n = _checks.size("n", n)
    z = _sink_scalar(sink_logit)
    count = np.arange(1, n + 1, dtype=np.float64)
    # (i + 1) / (i + 1 + e^z)
    return count / (count + np.exp(z))


def read_count(mass, sink_logit: float) -> np.ndarray:
    r"""Invert :func:`counted_mass`: ``i = e^z m / (1 - m) - 1`` for a mass ``m`` in ``(0, 1)``.

    Returns float64 of the shape of ``mass``: the position, a whole number when
    ``mass`` came from :func:`counted_mass`.
    """
    m = _checks.array("mass", mass)
    z = _sink_scalar(sink_logit)
    if np.any(m <= 0) or np.any(m >= 1):
        raise ValueError("mass must lie strictly between 0 and 1: the weight a sink leaves to real keys")
    # m = c / (c + e^z)  =>  c = e^z m / (1 - m), and i = c - 1
    return np.exp(z) * m / (1.0 - m) - 1.0


def streaming_cache(n_tokens: int, window: int, n_sink: int = 4) -> tuple[np.ndarray, np.ndarray]:
    r"""StreamingLLM's cache after ``n_tokens`` tokens: the first ``n_sink`` and the last ``window`` (the rolling part).

    Returns ``(kept, positions)``: the indices of the tokens whose keys and values are
    kept, in order, and the positions the model gives them, which are their places in
    the cache, ``0 .. len(kept) - 1``, not in the text (Xiao et al. 2023, section 3.2:
    keys are cached before the rotation and rotated by their cache position at every
    step). Four sink tokens are the paper's default. ``n_tokens <= n_sink + window``
    keeps everything.
    """
    n = _checks.size("n_tokens", n_tokens)
    n_sink = _checks.size("n_sink", n_sink, minimum=0)
    window = _checks.size("window", window)
    # sinks: 0 .. n_sink - 1; rolling window: the last `window` tokens
    recent = np.arange(max(n_sink, n - window), n)
    kept = np.concatenate([np.arange(min(n_sink, n)), recent])
    # positions within the cache
    return kept, np.arange(kept.size)


# ---------------------------------------------------------------------------
# Argument checks (kept apart from the math)
# ---------------------------------------------------------------------------

def _scores_and_sink(scores, sink_logit) -> tuple[np.ndarray, np.ndarray]:
    s = _checks.array("scores", scores, ndim_at_least=1, neg_inf=True)
    z = _checks.array("sink_logit", sink_logit, neg_inf=True)
    try:
        z = np.broadcast_to(z, s.shape[:-1])
    except ValueError as err:
        raise ValueError(f"sink_logit of shape {z.shape} must broadcast to scores.shape[:-1] = "
                         f"{s.shape[:-1]} (one per row)") from err
    if np.any(np.all(s == -np.inf, axis=-1) & (z == -np.inf)):
        raise ValueError("scores and sink_logit must leave every row something to attend to")
    return s, z


def _sink_scalar(sink_logit) -> float:
    z = _checks.array("sink_logit", sink_logit)
    if z.ndim != 0:
        raise ValueError(f"sink_logit must be one real number, got shape {z.shape}")
    return float(z)
