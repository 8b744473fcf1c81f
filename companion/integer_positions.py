r"""Positions are read only at whole numbers: aliasing, and how far apart the readings of two positions are.

A pair of a sinusoidal or rotary position code turns by a fixed angle per position
step, and the model sees it only at integer positions. Two consequences, both of
chapter 8:

* **Aliasing.** Sampled once per step, a pair turning by ``phi`` cannot be told
  from one turning by ``phi - 2 pi k`` (the sampling theorem of Shannon 1949;
  Nyquist): every step has an alias in ``(-pi, pi]`` (:func:`aliased_step`), and a
  pair faster than ``pi`` rad per step looks like a slower one turning the other
  way. RoPE's fastest pair turns 1 rad per step, inside the limit (Su et al. 2021).
* **Clock hands.** The readings ``e^{i m theta_i}`` of all pairs together tell
  positions apart: :func:`reading_distance` is the distance between the readings of
  ``m`` and ``m + k`` (the same for every ``m``), and :func:`nearest_return` finds
  the offset at which all hands come closest to where they started.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from ._contracts import Array, Distances, Frequencies, Size, contract, entries, ordered

__all__ = ["aliased_step", "pair_readings", "reading_distance", "nearest_return"]

#: Angles (rad) within the supported range, any shape.
Angles = Annotated[np.ndarray, Array(bounded=True, what="angles")]
#: Real offsets within the supported range, any shape.
Offsets = Annotated[np.ndarray, Array(bounded=True, what="offsets")]


# ---------------------------------------------------------------------------
# Aliasing (reading angles only at integer positions)
# ---------------------------------------------------------------------------

@contract
def aliased_step(phi: Angles) -> np.ndarray:
    r"""The step in ``(-pi, pi]`` that looks identical to ``phi`` at integer positions.

    ``phi - 2 pi k`` for the integer ``k`` that lands in ``(-pi, pi]``: since
    ``e^{i m (phi - 2 pi k)} = e^{i m phi}`` for every integer ``m``, a pair turning by
    ``phi > pi`` per step cannot be told from one turning by ``phi - 2 pi`` the other
    way (Nyquist; Shannon 1949). RoPE's fastest pair turns 1 rad, inside the limit.
    ``phi``: any shape; same shape out.
    """
    # phi - 2 pi k, k the integer that lands the result in (-pi, pi]
    return phi - 2.0 * np.pi * np.ceil((phi - np.pi) / (2.0 * np.pi))


@contract
def pair_readings(phi: Annotated[float, Array(ndim=0, bounded=True, what="angles")],
                  positions: Distances) -> np.ndarray:
    r"""Where a pair turning ``phi`` per step points: ``e^{i phi m}`` (complex).

    ``phi``: scalar step (rad); ``positions``: real, any shape (non-integer positions
    show the difference that integer ones hide). Same shape as ``positions``.
    """
    # e^{i phi m}
    return np.exp(1j * float(phi) * positions)


# ---------------------------------------------------------------------------
# Clock hands: how far apart the readings of two positions are
# ---------------------------------------------------------------------------

@contract(entries("k.size * len(inv_freq)", lambda k, inv_freq: k.size * inv_freq.size))
def reading_distance(k: Offsets, inv_freq: Frequencies) -> np.ndarray:
    r"""Distance between the readings of all pairs at positions ``m`` and ``m + k``.

    Pair ``i`` at position ``m`` points at ``e^{i m theta_i}`` (a clock hand turning
    ``theta_i`` per step); the readings of all pairs form the vector
    ``r(m) = (e^{i m theta_i})_i``, which is the sinusoidal position vector of
    Vaswani et al. (2017) in complex form and the RoPE rotation of a unit vector per
    pair (Su et al. 2021). Its distance to ``r(m + k)`` does not depend on ``m``:

    .. math::

        \lVert r(m + k) - r(m) \rVert^2 = \sum_i \lvert e^{i k \theta_i} - 1 \rvert^2
        = 2 \sum_i \bigl(1 - \cos k\theta_i\bigr) = 4 \sum_i \sin^2(k\theta_i / 2),

    computed with the last form (accurate for small ``k theta_i``). Zero exactly when
    every ``k theta_i`` is a whole number of turns. ``k``: real offsets, any shape
    (non-integer offsets are allowed); ``inv_freq``: ``(d/2,)``, any frequencies (a
    single pair: ``[theta]``). Returns float64 of the shape of ``k``.
    """
    # sin(k theta_i / 2), shape k.shape + (d/2,)
    half = np.sin(np.multiply.outer(k, inv_freq) / 2.0)
    # 2 sqrt(sum_i sin^2(k theta_i / 2))
    return 2.0 * np.sqrt(np.sum(half * half, axis=-1))


#: Most sines :func:`nearest_return` evaluates (about a minute of work).
_NEAREST_RETURN_WORK = 2**33


def _work_within_limit(n_max, inv_freq, k_min) -> None:
    work = (n_max - k_min + 1) * inv_freq.size
    if work > _NEAREST_RETURN_WORK:
        raise ValueError(
            f"n_max and inv_freq must ask for at most 2**33 = {_NEAREST_RETURN_WORK:,} sines (about a minute), "
            f"got (n_max - k_min + 1) * len(inv_freq) = {work:,}; use a smaller n_max or fewer pairs"
        )


@contract(ordered("k_min", "n_max", strict=False), _work_within_limit)
def nearest_return(n_max: Size, inv_freq: Frequencies, k_min: Size = 1) -> tuple[int, float]:
    r"""The offset ``k`` in ``k_min .. n_max`` at which all readings come closest to repeating.

    Minimises :func:`reading_distance` over the integers ``k_min <= k <= n_max`` and
    returns ``(k, distance)`` (the smallest such ``k`` on ties). Because the distance
    between ``r(m)`` and ``r(n)`` depends only on ``|m - n|``, with ``k_min = 1`` this
    is the closest pair among all readings of the positions ``0 .. n_max``: a
    distance above zero means every position in that range has its own reading. With
    one frequency it finds the turns after which a single clock hand is back nearest
    to where it started. Work is ``O(n_max d)``, done in blocks of 16,384 offsets, and
    at most ``2**33`` sines (``(n_max - k_min + 1) * len(inv_freq)``; more is refused).
    ``n_max``, ``k_min``: integers with ``1 <= k_min <= n_max``; ``inv_freq``:
    ``(d/2,)``.
    """
    best_k, best = k_min, np.inf
    block = 16_384
    for start in range(k_min, n_max + 1, block):
        # the offsets k of this block
        ks = np.arange(start, min(start + block, n_max + 1), dtype=np.float64)
        # ||r(m + k) - r(m)|| for each k
        dist = reading_distance(ks, inv_freq)
        # the closest in the block, the smallest k on ties
        j = int(np.argmin(dist))
        if dist[j] < best:
            best_k, best = int(ks[j]), float(dist[j])
    return best_k, best
