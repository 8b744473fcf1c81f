r"""The trained range: the angles each pair saw in training, and the pairs a longer context takes past them.

A RoPE model trained on ``L`` positions saw each pair ``i`` turn through the angles
``0 .. L theta_i``. Its fast pairs completed many turns and have seen every angle;
its slow pairs, with ``r_i = L theta_i / (2 pi) < 1`` turns in training
(:func:`companion.scaling.training_turns`), saw only part of the circle. At length
``s L`` a method with frequencies ``theta'`` reaches ``s L theta'_i``: a slow pair
whose largest angle grows past the trained one meets angles it never saw. This
module measures that (chapter 6, section 6.1) for each method of
:mod:`companion.scaling`, for the interactive figure of that chapter
(:mod:`companion.figures.scaling`) and for published configurations
(:func:`companion.configs.applied.config_extension`, which returns an :class:`Extension`).

Convention for "largest angle": a pair with frequency ``theta`` over a context of
length ``n`` reaches the angle ``n * theta`` (the span of ``n`` position steps). So
training reaches ``L * theta_i`` (that is ``2 pi r_i``) and the extended model
reaches ``s L theta'_i``; their ratio is ``s theta'_i / theta_i``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from . import absolute, rope, scaling
from ._contracts import (
    EvenSize,
    Factor,
    NonNegativeReal,
    Positive,
    PositiveFrequencies,
    Size,
    Text,
    contract,
    entries,
    same_shape,
)

__all__ = ["angle_ratio", "out_of_range", "Extension", "extension"]


_SAME_PAIRS = same_shape("inv_freq", "scaled_inv_freq")


@contract(_SAME_PAIRS)
def angle_ratio(scaled_inv_freq: PositiveFrequencies, inv_freq: PositiveFrequencies, s: Factor) -> np.ndarray:
    r"""Largest angle at length ``s L`` over the largest angle in training, per pair.

    ``(s L theta'_i) / (L theta_i) = s theta'_i / theta_i`` (convention: a context of
    length ``n`` reaches ``n theta``). 1 for PI, ``s`` for no scaling. Shape ``(d/2,)``.
    """
    # (s L theta'_i) / (L theta_i)
    return s * scaled_inv_freq / inv_freq


@contract(_SAME_PAIRS)
def out_of_range(scaled_inv_freq: PositiveFrequencies, inv_freq: PositiveFrequencies, s: Factor, L: Size,
                 tol: NonNegativeReal = 1e-9) -> np.ndarray:
    r"""Pairs whose angles at length ``s L`` leave the range seen in training.

    A pair is out of range when it never completed a full turn in training
    (``L theta_i < 2 pi``, i.e. ``r_i < 1``) and its :func:`angle_ratio` exceeds
    ``1 + tol`` (so exact equality, up to rounding, is not "out"). Pairs that turned
    fully have seen every angle. Boolean, shape ``(d/2,)``.
    """
    # r_i < 1 (never a full turn) and s theta'_i / theta_i > 1 + tol
    return (scaling.training_turns(inv_freq, L) < 1.0) & \
        (angle_ratio(scaled_inv_freq, inv_freq, s) > 1.0 + tol)


@dataclass(frozen=True)
class Extension:
    """What chapter 6's figure plots for one method (arrays have shape ``(d/2,)``)."""

    method: str
    turns: np.ndarray  # r_i = L theta_i / (2 pi), original frequencies
    ratio: np.ndarray  # s theta'_i / theta_i
    out_of_range: np.ndarray  # bool
    n_out: int  # pairs out of range
    n_slow: int  # pairs with r_i < 1 (never a full turn in training)
    worst_ratio: float  # largest ratio among the slow pairs
    attention_factor: float

    @classmethod
    @contract(_SAME_PAIRS)
    def of(cls, method: Annotated[str, Text()], scaled_inv_freq: PositiveFrequencies, inv_freq: PositiveFrequencies,
           s: Factor, L: Size, attention_factor: Positive = 1.0) -> Extension:
        """The quantities for the frequencies ``scaled_inv_freq`` of ``method`` against the unscaled ``inv_freq``."""
        turns = scaling.training_turns(inv_freq, L)
        ratio = angle_ratio(scaled_inv_freq, inv_freq, s)
        out = out_of_range(scaled_inv_freq, inv_freq, s, L)
        slow = turns < 1.0
        return cls(method=method, turns=turns, ratio=ratio, out_of_range=out, n_out=int(out.sum()),
                   n_slow=int(slow.sum()), worst_ratio=float(ratio[slow].max()) if slow.any() else float("nan"),
                   attention_factor=attention_factor)


@contract(entries("d / 2", lambda d: d // 2))
def extension(method: scaling.Method, d: EvenSize = 128, s: Factor = 8.0, L: Size = scaling.LLAMA2_CONTEXT,
              base: Positive = absolute.BASE, **options) -> Extension:
    r"""The figure's quantities for ``method`` at head dim ``d``, scale ``s``, length ``L``.

    Defaults are the book's setting (Llama 2: ``d = 128``, base 10000, ``L = 4096``,
    ``s = 8``), where no scaling leaves 18 pairs out of range, PI 0, NTK-aware 17
    (worst ratio about 1.75) and YaRN 0. The reference frequencies are RoPE's with
    the same ``base``.
    """
    # the method checks its own options: they are the caller's
    scaled = scaling.scale(method, d, s=s, L=L, base=base, **options)
    return Extension.of(method, scaled.inv_freq, rope.inv_freq(d, base), s, L, scaled.attention_factor)
