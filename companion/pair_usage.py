r"""What a single RoPE pair can do: aim a head at one offset, or carry content while it stands still.

Barbero et al. (2025), "Round and Round We Go! What makes Rotary Positional
Encodings useful?" (ICLR 2025), read RoPE pair by pair: a head's score is a sum over
its pairs, :math:`q \cdot k = \sum_i q^{(i)} \cdot k^{(i)}`. Three facts about single
pairs carry their argument, and chapter 3 (section 3.11) derives and computes each:

- a fast pair can aim a head at an exact offset (:func:`aimed_scores`,
  :func:`attention_on_offset`), a slow pair cannot;
- a slow pair is a channel for content only as long as its angle has not moved
  (:func:`drift_bound`, :func:`stable_length`);
- for independent random queries and keys the expected score does not decay with
  the distance (:func:`random_scores`): RoFormer's decay is a property of aligned
  content.

How much of each pair the lab's trained heads use is read from the lab's records by
:mod:`companion.lab.usage`.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from . import attention, rope
from ._contracts import (
    MAX_POSITION,
    Array,
    Count,
    EvenSize,
    Flag,
    Frequencies,
    Integer,
    Positive,
    Size,
    WholeNumbers,
    contract,
    entries,
)

__all__ = ["aimed_scores", "attention_on_offset", "random_scores", "drift_bound", "stable_length"]


#: The indices of the pairs a head uses (pair 0 the fastest): whole numbers >= 0.
PairIndices = Annotated[np.ndarray, WholeNumbers(what="pair indices (non-negative integers)")]


#: Places a key lies behind the query: whole numbers of either sign, integer dtype.
Distances = Annotated[np.ndarray, WholeNumbers(signed=True, floats=False,
                                               what="whole numbers (places the key lies behind the query)")]


#: A frequency per pair, each >= 0 (0 for a pair that does not turn, as in p-RoPE).
TurningRates = Annotated[np.ndarray, Array(ndim=1, nonempty=True, nonnegative=True,
                                           why="frequencies, 0 for a pair that does not turn")]


#: The offset a head is aimed at: a number of places back, within the supported range.
AimedOffset = Annotated[int, Integer(0, MAX_POSITION, why="places back from the query")]


#: A seed of ``numpy.random.default_rng``.
Seed = Annotated[int, Integer(0, why="a seed of numpy.random.default_rng")]


def _pairs_of_inv_freq(inv_freq, pairs) -> None:
    """``pairs`` names distinct pairs of ``inv_freq``, at least one."""
    chosen = np.atleast_1d(pairs)
    if chosen.ndim != 1 or chosen.size == 0 or np.any(chosen >= inv_freq.size) or \
            np.unique(chosen).size != chosen.size:
        raise ValueError(f"pairs must be distinct pair indices in 0..{inv_freq.size - 1} (one per frequency of "
                         f"inv_freq), at least one, got {chosen.tolist()}")


def _offset_inside_context(offset, context) -> None:
    """The target is one of the keys the query sees."""
    if offset >= context:
        raise ValueError(f"offset must be in 0..{context - 1} (inside the context), got {offset}")


def _one_row_of_distances(distances) -> None:
    """``distances`` is one number or a 1-D array of them."""
    if distances.ndim > 1:
        raise ValueError(f"distances must be a 1-D array of whole numbers, got shape {distances.shape}")


@contract(_pairs_of_inv_freq, entries("distances.size * len(inv_freq)",
                                      lambda distances, inv_freq: distances.size * inv_freq.size))
def aimed_scores(inv_freq: Frequencies, pairs: PairIndices, offset: AimedOffset, distances: Distances,
                 amplitude: Positive = 1.0) -> np.ndarray:
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
    q = np.zeros(2 * inv_freq.size)
    q[2 * pairs] = np.sqrt(amplitude)                                 # chunk (sqrt A, 0) in each chosen pair
    k = rope.rotate(q, np.array(offset), inv_freq)        # k^(i) = R_{offset theta_i} q^(i)
    # q^T R_{n-m} k with n - m = -Delta
    return rope.relative_score(q, k, -distances, inv_freq)


@contract(_pairs_of_inv_freq, _offset_inside_context,
          entries("context * len(inv_freq)", lambda context, inv_freq: context * inv_freq.size))
def attention_on_offset(inv_freq: Frequencies, pairs: PairIndices, offset: AimedOffset, context: Size,
                        amplitude: Positive) -> float:
    r"""The softmax weight a head aimed by :func:`aimed_scores` puts on its target.

    The query sees the keys :math:`\Delta = 0, \dots, \mathrm{context} - 1` places
    back (a causal query at position ``context - 1``); returns the weight on
    :math:`\Delta = \mathrm{offset}`. A slow pair's cosine is nearly flat over the
    context, so the weight stays near :math:`1/\mathrm{context}` whatever the
    amplitude; a fast pair's falls steeply next to the target but comes back near
    every multiple of its wavelength.
    """
    scores = aimed_scores(inv_freq, pairs, offset, np.arange(context), amplitude)
    return float(attention.softmax(scores)[offset])


@contract(_one_row_of_distances, entries("samples * len(distances) * d",
                                         lambda samples, distances, d: samples * distances.size * d))
def random_scores(d: EvenSize, distances: Distances, samples: Count, seed: Seed, tied: Flag = False) -> np.ndarray:
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
    r = np.atleast_1d(distances)
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(samples, 1, d))
    k = q if tied else rng.normal(size=(samples, 1, d))
    # q^T R_{n-m} k with n - m = -r, for every sample and distance
    return rope.relative_score(q, k, -r[None, :], rope.inv_freq(d))


@contract
def drift_bound(inv_freq: TurningRates, length: Size) -> np.ndarray:
    r"""How far each pair's contribution can move over ``length`` positions, as a share of it.

    Pair :math:`i` contributes :math:`\rho_i\cos(r\theta_i + \alpha_i)`; since
    :math:`|\cos a - \cos b| \le |a - b|`, over distances :math:`0 \le r \le
    \mathrm{length}` it moves by at most :math:`\rho_i\,\mathrm{length}\,\theta_i`.
    Returns :math:`\mathrm{length}\cdot\theta_i` per pair (the angle swept, a bound
    on the change in units of :math:`\rho_i`; a bound above 2 says nothing).
    Barbero et al. (2025, section 6): however slow a pair, a long enough context
    turns it.
    """
    # length * theta_i
    return length * inv_freq


@contract
def stable_length(inv_freq: TurningRates, tolerance: Positive) -> np.ndarray:
    r"""The longest distance over which each pair's contribution moves by at most ``tolerance``.

    From :func:`drift_bound`: :math:`\mathrm{length}\,\theta_i \le \varepsilon` up to
    :math:`\lfloor \varepsilon/\theta_i \rfloor` positions (``inf`` for an unrotated
    pair, :math:`\theta_i = 0`, as in p-RoPE). ``tolerance``: :math:`\varepsilon > 0`,
    in units of the pair's amplitude :math:`\rho_i`.
    """
    with np.errstate(divide="ignore"):
        # floor(epsilon / theta_i)
        return np.floor(tolerance / inv_freq)
