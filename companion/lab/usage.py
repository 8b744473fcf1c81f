r"""Which RoPE pairs a trained head uses, and what a fast or a slow pair can do.

Barbero et al. (2025), "Round and Round We Go! What makes Rotary Positional
Encodings useful?" (ICLR 2025), read RoPE pair by pair. A head's score is a sum over
its pairs, :math:`q \cdot k = \sum_i q^{(i)} \cdot k^{(i)}`, so the size of the
chunks :math:`\lVert q^{(i)}\rVert\,\lVert k^{(i)}\rVert` says how much pair
:math:`i` can contribute (the *usage* of the pair); chapter 9's lab stores these
norms per layer, head and pair (:func:`companion.lab.evals.pair_norms`). The
functions here read those records across seeds, and compute the three facts about
single pairs that the paper builds its argument on:

- a fast pair can aim a head at an exact offset (:func:`aimed_scores`,
  :func:`attention_on_offset`), a slow pair cannot;
- a slow pair is a channel for content only as long as its angle has not moved
  (:func:`drift_bound`, :func:`stable_length`);
- for independent random queries and keys the expected score does not decay with
  the distance (:func:`random_scores`): RoFormer's decay is a property of aligned
  content.

Chapter 3 uses them to replicate the usage measurement on the lab's models.
"""
from __future__ import annotations

import numpy as np

from .. import _checks, attention, rope

__all__ = ["usage_by_head", "usage_shares", "aimed_scores", "attention_on_offset", "random_scores",
           "drift_bound", "stable_length"]


def _arm_norms(record: dict, arm: str) -> dict:
    if not isinstance(record, dict) or "pair_norms" not in record:
        raise ValueError("record must be a lab record with 'pair_norms' (companion/lab/stored/seed<k>.json)")
    norms = record["pair_norms"]
    return norms[_checks.one_of("arm", arm, sorted(norms))]


def usage_by_head(record: dict, arm: str) -> np.ndarray:
    r"""Usage of every pair in every head: :math:`\lVert q^{(i)}\rVert\,\lVert k^{(i)}\rVert`.

    ``record``: one seed's record of the lab; ``arm``: one of its arms (for a RoPE
    arm pair 0 is the fastest). Returns ``(layers, heads, pairs)``, the product of
    the mean query and key chunk norms that :func:`companion.lab.evals.pair_norms`
    stored. Its mean over layers and heads is
    :func:`companion.lab.claims.pair_usage`.
    """
    norms = _arm_norms(record, arm)
    # ||q^(i)|| ||k^(i)|| per layer, head and pair
    return np.array(norms["query"], dtype=np.float64) * np.array(norms["key"], dtype=np.float64)


def usage_shares(records: dict, arm: str, by_head: bool = False) -> np.ndarray:
    r"""Each pair's share of a head's usage, one row per seed.

    ``records``: ``{seed: record}`` (the ``seeds`` of
    :class:`companion.lab.results.LabResults`), in seed order. The share of pair
    :math:`i` is :math:`u_i / \sum_j u_j` with :math:`u` from :func:`usage_by_head`:
    averaged over layers and heads first (shape ``(seeds, pairs)``), or per head
    when ``by_head`` (shape ``(seeds, layers, heads, pairs)``). A scheme that gives
    the pairs no frequency (NoPE, a learned table) has no reason to prefer one pair,
    so its shares are the control: :math:`1/(d/2)` each, up to seed noise.
    """
    if not isinstance(records, dict) or not records:
        raise ValueError("records must be a non-empty dict {seed: record}")
    usage = np.array([usage_by_head(records[s], arm) for s in sorted(records)])   # (seeds, L, H, P)
    if not by_head:
        usage = usage.mean(axis=(1, 2))                                             # (seeds, P)
    # u_i / sum_j u_j
    return usage / usage.sum(axis=-1, keepdims=True)


def _pair_list(inv_freq: np.ndarray, pairs) -> list[int]:
    chosen = [int(i) for i in np.atleast_1d(pairs)]
    if not chosen or any(not 0 <= i < inv_freq.size for i in chosen) or len(set(chosen)) != len(chosen):
        raise ValueError(f"pairs must be distinct pair indices in 0..{inv_freq.size - 1}, got {pairs!r}")
    return chosen


def aimed_scores(inv_freq, pairs, offset: int, distances, amplitude: float = 1.0) -> np.ndarray:
    r"""Scores of a head aimed at ``offset`` with the chosen pairs, at each distance.

    In every chosen pair the query's chunk is :math:`(\sqrt A, 0)` and the key's is
    the same chunk turned ahead by ``offset`` positions,
    :math:`k^{(i)} = R_{\mathrm{offset}\,\theta_i}\,q^{(i)}`; the other pairs are zero.
    By the complex form of the score, pair :math:`i` then contributes
    :math:`A\cos((\Delta - \mathrm{offset})\,\theta_i)` at
    :math:`\Delta = m - n`, the number of places the key lies behind the query,
    which is largest, :math:`A`, at :math:`\Delta = \mathrm{offset}` (Barbero et al.
    2025, section 5). Computed with :func:`companion.rope.relative_score`.
    ``distances``: the values of :math:`\Delta`, whole numbers; returns one score
    per distance.
    """
    theta = _checks.array("inv_freq", inv_freq, ndim_at_least=1)
    chosen = _pair_list(theta, pairs)
    offset = int(_checks.at_least("offset", offset, 0))
    amplitude = _checks.positive_float("amplitude", amplitude)
    delta = np.asarray(distances)
    if delta.dtype.kind not in "iu":
        raise ValueError("distances must be whole numbers (places the key lies behind the query)")
    q = np.zeros(2 * theta.size)
    q[[2 * i for i in chosen]] = np.sqrt(amplitude)       # chunk (sqrt A, 0) in each chosen pair
    k = rope.rotate(q, offset, theta)                     # k^(i) = R_{offset theta_i} q^(i)
    # q^T R_{n-m} k with n - m = -Delta
    return rope.relative_score(q, k, -delta, theta)


def attention_on_offset(inv_freq, pairs, offset: int, context: int, amplitude: float) -> float:
    r"""The softmax weight a head aimed by :func:`aimed_scores` puts on its target.

    The query sees the keys :math:`\Delta = 0, \dots, \mathrm{context} - 1` places
    back (a causal query at position ``context - 1``); returns the weight on
    :math:`\Delta = \mathrm{offset}`. A slow pair's cosine is nearly flat over the
    context, so the weight stays near :math:`1/\mathrm{context}` whatever the
    amplitude; a fast pair's falls steeply next to the target but comes back near
    every multiple of its wavelength.
    """
    context = _checks.positive_int("context", context)
    if not 0 <= int(offset) < context:
        raise ValueError(f"offset must be in 0..{context - 1} (inside the context), got {offset!r}")
    scores = aimed_scores(inv_freq, pairs, offset, np.arange(context), amplitude)
    return float(attention.softmax(scores)[int(offset)])


def random_scores(d: int, distances, samples: int, seed: int, tied: bool = False) -> np.ndarray:
    r"""RoPE scores of random standard normal queries and keys, at each distance.

    Draws ``samples`` queries :math:`q \sim \mathcal N(0, I_d)` and keys
    :math:`k \sim \mathcal N(0, I_d)` independent of them (or :math:`k = q` when
    ``tied``), with base 10,000, and returns the scores
    :math:`q^{\mathsf T} R_{-r} k` at every distance :math:`r` of ``distances``,
    shape ``(samples, len(distances))``. For independent vectors the expected score
    is 0 at every distance, with variance :math:`d`, because a rotation of
    :math:`k` is again standard normal and independent of :math:`q`; for
    :math:`k = q` it is :math:`\sum_i 2\cos(r\theta_i)`, which decays (Barbero et al.
    2025, section 3).
    """
    d = _checks.positive_int("d", d)
    if d % 2:
        raise ValueError(f"d must be even (components come in pairs), got {d}")
    samples = _checks.positive_int("samples", samples)
    r = np.atleast_1d(np.asarray(distances))
    if r.dtype.kind not in "iu" or r.ndim != 1:
        raise ValueError("distances must be a 1-D array of whole numbers")
    rng = np.random.default_rng(int(_checks.at_least("seed", seed, 0)))
    q = rng.normal(size=(samples, 1, d))
    k = q if tied else rng.normal(size=(samples, 1, d))
    # q^T R_{n-m} k with n - m = -r, for every sample and distance
    return rope.relative_score(q, k, -r[None, :], rope.inv_freq(d))


def drift_bound(inv_freq, length: int) -> np.ndarray:
    r"""How far each pair's contribution can move over ``length`` positions, as a share of it.

    Pair :math:`i` contributes :math:`\rho_i\cos(r\theta_i + \alpha_i)`; since
    :math:`|\cos a - \cos b| \le |a - b|`, over distances :math:`0 \le r \le
    \mathrm{length}` it moves by at most :math:`\rho_i\,\mathrm{length}\,\theta_i`.
    Returns :math:`\mathrm{length}\cdot\theta_i` per pair (the angle swept, a bound
    on the change in units of :math:`\rho_i`; a bound above 2 says nothing).
    Barbero et al. (2025, section 6): however slow a pair, a long enough context
    turns it.
    """
    theta = _checks.array("inv_freq", inv_freq, ndim_at_least=1)
    length = _checks.positive_int("length", length)
    # length * theta_i
    return length * theta


def stable_length(inv_freq, tolerance: float) -> np.ndarray:
    r"""The longest distance over which each pair's contribution moves by at most ``tolerance``.

    From :func:`drift_bound`: :math:`\mathrm{length}\,\theta_i \le \varepsilon` up to
    :math:`\lfloor \varepsilon/\theta_i \rfloor` positions (``inf`` for an unrotated
    pair, :math:`\theta_i = 0`, as in p-RoPE). ``tolerance``: :math:`\varepsilon > 0`,
    in units of the pair's amplitude :math:`\rho_i`.
    """
    theta = _checks.array("inv_freq", inv_freq, ndim_at_least=1)
    tolerance = _checks.positive_float("tolerance", tolerance)
    if np.any(theta < 0):
        raise ValueError("inv_freq must hold frequencies >= 0")
    with np.errstate(divide="ignore"):
        # floor(epsilon / theta_i)
        return np.floor(tolerance / theta)
