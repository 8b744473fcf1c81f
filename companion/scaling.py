r"""Context extension for RoPE: new frequency vectors for inputs longer than training.

A RoPE model trained on ``L`` positions has seen every angle its fast pairs can
take, but its slow pairs (``L * theta_i < 2 pi``) never completed a turn, so
positions past ``L`` give them angles never seen in training. Each method here
answers by changing the frequencies ``theta_i`` (and sometimes the attention
temperature): Position Interpolation (Chen et al. 2023), NTK-aware scaling (bloc97
2023), YaRN (Peng et al. 2024), Llama 3.1's frequency-dependent scaling (Meta 2024),
LongRoPE (Ding et al. 2024), or simply a bigger base at training time (Code Llama,
Roziere et al. 2023).

Every method is one function ``method(d, s=..., L=..., base=..., **options)``
returning :class:`ScaledRope` (the vector ``theta'`` of shape ``(d/2,)`` and an
attention factor), listed in :data:`METHODS`; ``s`` is the extension factor (target
length ``s * L``), ``L`` the training length, ``base`` the RoPE base. Plug the
result into :class:`companion.rope_torch.RotaryEmbedding`.

Which pairs each method leaves outside the range of angles seen in training (Figure
4) is :mod:`companion.trained_range`; why interpolating is safer than extrapolating
(Chen et al. 2023) is :mod:`companion.interpolation`.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from . import absolute, rope
from ._contracts import (
    MAX_POSITION,
    Array,
    Count,
    EvenSize,
    Factor,
    Finite,
    Flag,
    Integer,
    NonNegativeReal,
    OneOf,
    Positive,
    PositiveFrequencies,
    Real,
    Reals,
    Size,
    contract,
    entries,
    one_per_pair,
    ordered,
)

__all__ = [
    "CODE_LLAMA_BASE",
    "LLAMA3_BASE",
    "LLAMA2_CONTEXT",
    "LLAMA31_ORIGINAL_CONTEXT",
    "ScaledRope",
    "unscaled",
    "position_interpolation",
    "ntk_base",
    "ntk_per_pair",
    "ntk_aware",
    "dynamic_scale",
    "dynamic_ntk",
    "training_turns",
    "yarn_ramp",
    "yarn_attention_factor",
    "yarn",
    "yarn_correction_range",
    "yarn_code_ramp",
    "yarn_code",
    "YarnCurves",
    "yarn_curves",
    "base_change",
    "llama3",
    "llama3_bands",
    "longrope_attention_factor",
    "longrope",
    "yarn_mscale",
    "proportional",
    "METHODS",
    "scale",
]

#: Roziere et al. (2023), Code Llama
CODE_LLAMA_BASE = 1_000_000.0
#: Llama 3 (Meta, 2024)
LLAMA3_BASE = 500_000.0
#: Llama 2 training length, the setting of chapter 6's figure
LLAMA2_CONTEXT = 4096
#: Llama 3.1's original_max_position_embeddings
LLAMA31_ORIGINAL_CONTEXT = 8192

#: A head width for NTK-aware scaling, whose exponent is ``d / (d - 2)``.
NtkWidth = Annotated[int, Integer(4, MAX_POSITION, even=True, why="NTK-aware scaling has the exponent d/(d-2)")]
#: A base above 1, where ``ln base > 0``.
BaseAboveOne = Annotated[float, Real(gt=1.0, why="ln base > 0")]
#: Per-pair rescale factors, each > 0.
Rescales = Annotated[np.ndarray, Array(positive=True)]

_HALF_D = entries("d / 2", lambda d: d // 2)


@contract
@dataclass(frozen=True)
class ScaledRope:
    """A scaled RoPE: ``inv_freq`` (``theta'_i``, shape ``(d/2,)``) and the attention factor.

    ``attention_factor`` multiplies the rotated ``q`` and ``k`` (equivalently ``cos``
    and ``sin``), so every score is multiplied by its square. 1.0 when the method has
    none.
    """

    inv_freq: PositiveFrequencies
    attention_factor: Positive = 1.0


# ---------------------------------------------------------------------------
# Plain methods: none, Position Interpolation, NTK-aware
# ---------------------------------------------------------------------------

@contract(_HALF_D)
def unscaled(d: EvenSize, s: Factor = 1.0, L: Size = LLAMA2_CONTEXT, base: Positive = absolute.BASE) -> ScaledRope:
    r"""No scaling: ``theta_i = base^(-2i/d)`` whatever the length (Su et al. 2021).

    ``s`` and ``L`` are accepted (and validated) only for the common signature.
    """
    # theta_i = base^(-2i/d)
    return ScaledRope(rope.inv_freq(d, base))


@contract(_HALF_D)
def position_interpolation(d: EvenSize, s: Factor = 1.0, L: Size = LLAMA2_CONTEXT,
                           base: Positive = absolute.BASE) -> ScaledRope:
    r"""Position Interpolation: ``theta'_i = theta_i / s`` (Chen et al. 2023).

    Same as feeding positions ``m / s``: a context of ``s L`` is squeezed into the
    trained range ``[0, L)``. Every pair slows down by ``s``, the fast ones too.
    Shape ``(d/2,)``.
    """
    # theta'_i = theta_i / s
    return ScaledRope(rope.inv_freq(d, base) / s)


@contract(result=Finite("s and base", "the new base b s^(d/(d-2)) overflows float64: use a smaller s or base"))
def ntk_base(d: NtkWidth, s: Factor, base: Positive = absolute.BASE) -> float:
    r"""NTK-aware new base ``b' = b * s^(d/(d-2))`` (bloc97 2023). Needs ``d >= 4``."""
    # b' = b s^(d/(d-2))
    return base * s ** (d / (d - 2))


@contract(_HALF_D)
def ntk_per_pair(d: NtkWidth, s: Factor, base: Positive = absolute.BASE) -> np.ndarray:
    r"""NTK-aware frequencies written per pair: ``theta'_i = theta_i * s^(-2i/(d-2))``.

    Identical to ``base^(-2i/d)`` with the base of :func:`ntk_base` (bloc97 2023):
    pair 0 is unchanged, pair ``d/2 - 1`` becomes exactly ``theta / s`` (as with
    Position Interpolation), a geometric blend in between. Shape ``(d/2,)``.
    """
    i = np.arange(d // 2, dtype=np.float64)
    # theta'_i = theta_i s^(-2i/(d-2))
    return rope.inv_freq(d, base) * s ** (-2.0 * i / (d - 2))


@contract(_HALF_D)
def ntk_aware(d: NtkWidth, s: Factor = 1.0, L: Size = LLAMA2_CONTEXT, base: Positive = absolute.BASE) -> ScaledRope:
    r"""NTK-aware scaling: RoPE with base ``b' = b s^(d/(d-2))`` (bloc97 2023).

    ``theta'_i = b'^(-2i/d) = theta_i s^(-2i/(d-2))``. Named after neural-tangent-
    kernel arguments, but an empirical recipe. Shape ``(d/2,)``.
    """
    # theta'_i = b'^(-2i/d), b' = b s^(d/(d-2))
    return ScaledRope(rope.inv_freq(d, ntk_base(d, s, base)))


@contract(result=Finite("factor and current_length", "the scale must be finite"))
def dynamic_scale(current_length: Count, L: Size, factor: Factor | None = None) -> float:
    r"""The scale dynamic NTK uses at the current length ``l'``.

    ``factor=None`` (the YaRN paper's "Dynamic NTK", Peng et al. 2024, section 3.3,
    and emozilla 2023): ``s = max(1, l' / L)``.

    With a configured ``factor`` (Hugging Face ``rope_type="dynamic"``,
    ``_compute_dynamic_ntk_parameters``): ``l = max(l', L)`` and
    ``s = factor * l / L - (factor - 1)``. The two agree for ``factor = 1`` and at
    ``l' <= L`` (``s = 1``); for ``factor > 1`` the HF scale grows ``factor`` times
    faster with length (at ``l' = 2L``, ``factor = 4``: 5 instead of 2).
    """
    if factor is None:
        # s = max(1, l' / L)
        return max(1.0, current_length / L)
    # s = factor max(l', L) / L - (factor - 1)
    return factor * max(current_length, L) / L - (factor - 1.0)


@contract(_HALF_D, result=Finite("s, current_length, hf_factor and base",
                                  "the scale s_dyn or the new base b s_dyn^(d/(d-2)) overflows float64"))
def dynamic_ntk(d: NtkWidth, s: Factor = 1.0, L: Size = LLAMA2_CONTEXT, base: Positive = absolute.BASE,
                current_length: Count | None = None, hf_factor: Factor | None = None) -> ScaledRope:
    r"""Dynamic NTK: NTK-aware scaling with the scale following the input length.

    ``theta'_i = theta_i * s_dyn^(-2i/(d-2))`` with ``s_dyn`` from
    :func:`dynamic_scale` (``max(1, l'/L)``; the Hugging Face formula when
    ``hf_factor`` is given). ``current_length`` defaults to ``s * L`` (rounded up),
    which makes the result equal to :func:`ntk_aware` at ``s``. emozilla (2023);
    Peng et al. (2024), section 3.3. Shape ``(d/2,)``.
    """
    # l' = s L unless given
    n = math.ceil(s * L) if current_length is None else current_length
    s_dyn = dynamic_scale(n, L, hf_factor)
    # NTK-aware at the current scale: theta'_i = b'^(-2i/d), b' = b s_dyn^(d/(d-2))
    return ScaledRope(rope.inv_freq(d, ntk_base(d, s_dyn, base)))


# ---------------------------------------------------------------------------
# YaRN: the paper's definition
# ---------------------------------------------------------------------------

@contract
def training_turns(inv_freq: PositiveFrequencies, L: Size) -> np.ndarray:
    r"""Turns each pair made in training: ``r_i = L theta_i / (2 pi)``. Shape ``(d/2,)``."""
    # r_i = L theta_i / (2 pi)
    return L * inv_freq / (2.0 * np.pi)


_RAMP_RISES = ordered("alpha", "beta")


@contract(_RAMP_RISES)
def yarn_ramp(r: Reals, alpha: Positive = 1.0, beta: Positive = 32.0) -> np.ndarray:
    r"""YaRN's ramp ``gamma(r)``: 0 if ``r < alpha``, 1 if ``r > beta``, else linear.

    ``gamma(r) = (r - alpha) / (beta - alpha)`` between; ``r`` is the number of turns a
    pair made in training (Peng et al. 2024, eq. (18), "NTK-by-parts"). ``gamma = 1``
    keeps the original frequency, ``gamma = 0`` interpolates fully. Same shape as ``r``.
    """
    # gamma(r) = (r - alpha) / (beta - alpha), clipped to [0, 1]
    return np.clip((r - alpha) / (beta - alpha), 0.0, 1.0)


@contract
def yarn_attention_factor(s: Factor) -> float:
    r"""YaRN's temperature: ``sqrt(1/t) = 0.1 ln(s) + 1`` (Peng et al. 2024, eq. (22)).

    Applied by multiplying the rotated ``q`` and ``k`` (the authors' code multiplies
    ``cos`` and ``sin``), so each logit is multiplied by ``1/t``.
    """
    # sqrt(1/t) = 0.1 ln s + 1
    return 0.1 * math.log(s) + 1.0


@contract
def yarn_mscale(s: Factor, mscale: NonNegativeReal = 1.0) -> float:
    r"""DeepSeek's generalisation of YaRN's temperature: ``0.1 mscale ln(s) + 1``, 1 at ``s = 1``.

    DeepSeek-V2's ``yarn_get_mscale`` (DeepSeek-AI 2024; Hugging Face
    ``_compute_yarn_parameters``): ``mscale = 1`` is :func:`yarn_attention_factor`. A
    configuration with ``mscale`` and ``mscale_all_dim`` gets the attention factor
    ``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)`` on ``cos`` and ``sin``,
    and the DeepSeek family's attention multiplies its softmax scale by
    ``yarn_mscale(s, mscale_all_dim)^2``.
    """
    # 0.1 mscale ln s + 1
    return 0.1 * mscale * math.log(s) + 1.0


@contract(_HALF_D, _RAMP_RISES)
def yarn(d: EvenSize, s: Factor = 1.0, L: Size = LLAMA2_CONTEXT, base: Positive = absolute.BASE,
         alpha: Positive = 1.0, beta: Positive = 32.0) -> ScaledRope:
    r"""YaRN as defined in the paper (Peng, Quesnelle, Fan, Shippole, ICLR 2024).

    Per pair, ``r_i = L theta_i / (2 pi)`` turns in training and

    .. math::

        \theta'_i = (1 - \gamma(r_i)) \frac{\theta_i}{s} + \gamma(r_i)\, \theta_i ,
        \qquad \sqrt{1/t} = 0.1 \ln s + 1 ,

    with the ramp ``gamma`` of :func:`yarn_ramp` (``alpha = 1``, ``beta = 32``): pairs
    with more than 32 turns are untouched, pairs with less than one turn are
    interpolated like PI, linear in ``r`` between. The ramp is linear in ``r``; the
    code the authors and libraries ship (:func:`yarn_code`) ramps linearly in the
    pair index between rounded bounds instead. Shape ``(d/2,)``.
    """
    theta = rope.inv_freq(d, base)
    # gamma(r_i), r_i = L theta_i / (2 pi)
    gamma = yarn_ramp(training_turns(theta, L), alpha, beta)
    # theta'_i = (1 - gamma) theta_i / s + gamma theta_i, with sqrt(1/t) = 0.1 ln s + 1
    return ScaledRope((1.0 - gamma) * theta / s + gamma * theta, yarn_attention_factor(s))


# ---------------------------------------------------------------------------
# YaRN: the shipped code
# ---------------------------------------------------------------------------

# equal betas make the ramp a step (its ends one pair apart once rounded), as shipped by Kimi K2
_FAST_ABOVE_SLOW = ordered("beta_slow", "beta_fast", strict=False, why=": it is the turn count of the fast end")


@contract(_FAST_ABOVE_SLOW)
def yarn_correction_range(d: EvenSize, L: Size, base: BaseAboveOne = absolute.BASE, beta_fast: Positive = 32.0,
                          beta_slow: Positive = 1.0, truncate: Flag = True) -> tuple[float, float]:
    r"""The pair-index range ``(low, high)`` of the shipped YaRN ramp.

    ``find_correction_dim(n) = d ln(L / (2 pi n)) / (2 ln base)`` is the (real) pair
    index whose frequency makes ``n`` turns in ``L`` positions. ``low`` is that of
    ``beta_fast = 32`` rounded down, ``high`` that of ``beta_slow = 1`` rounded up
    (no rounding when ``truncate=False``, Hugging Face's option for gpt-oss), then
    clamped to ``[0, d - 1]`` as in the code (jquesnelle/yarn, ``find_correction_range``;
    Hugging Face ``_compute_yarn_parameters``). Needs ``base > 1`` and
    ``beta_fast >= beta_slow > 0`` (equal: a step between the two ranges).
    """

    def index(turns):
        # find_correction_dim(n) = d ln(L / (2 pi n)) / (2 ln base)
        return d * math.log(L / (turns * 2.0 * math.pi)) / (2.0 * math.log(base))

    low, high = index(beta_fast), index(beta_slow)
    if truncate:
        # rounded outward to whole pairs
        low, high = math.floor(low), math.ceil(high)
    # clamped to [0, d - 1]
    return max(low, 0), min(high, d - 1)


@contract(_HALF_D, _FAST_ABOVE_SLOW)
def yarn_code_ramp(d: EvenSize, L: Size, base: BaseAboveOne = absolute.BASE, beta_fast: Positive = 32.0,
                   beta_slow: Positive = 1.0, truncate: Flag = True) -> np.ndarray:
    r"""The shipped ramp as a fraction of the original frequency kept, per pair.

    ``1 - clip((i - low) / (high - low), 0, 1)`` over the pair index ``i`` with
    ``(low, high)`` from :func:`yarn_correction_range` (``high`` nudged by 0.001 when
    equal, as in the code). Comparable to the paper's ``gamma`` (1 = keep,
    0 = interpolate). Shape ``(d/2,)``.
    """
    low, high = yarn_correction_range(d, L, base, beta_fast, beta_slow, truncate)
    if low == high:
        high += 0.001
    i = np.arange(d // 2, dtype=np.float64)
    # 1 - clip((i - low) / (high - low), 0, 1)
    return 1.0 - np.clip((i - low) / (high - low), 0.0, 1.0)


@contract(_HALF_D, _FAST_ABOVE_SLOW)
def yarn_code(d: EvenSize, s: Factor = 1.0, L: Size = LLAMA2_CONTEXT, base: BaseAboveOne = absolute.BASE,
              beta_fast: Positive = 32.0, beta_slow: Positive = 1.0, truncate: Flag = True) -> ScaledRope:
    r"""YaRN as the authors' code and common libraries ship it.

    ``theta'_i = (1 - e_i) theta_i / s + e_i theta_i`` with ``e_i`` from
    :func:`yarn_code_ramp` and attention factor ``0.1 ln s + 1`` (the code's
    ``mscale``, multiplied into ``cos`` and ``sin``). Sources: jquesnelle/yarn
    ``LlamaYaRNScaledRotaryEmbedding.yarn``; Hugging Face ``_compute_yarn_parameters``
    (which computes in float32; here float64).

    How it differs from :func:`yarn` (the paper): the paper ramps linearly in the
    turns ``r_i`` between ``alpha = 1`` and ``beta = 32``; the code ramps linearly in
    the pair index ``i`` (so linearly in ``log r_i``) between the indices where
    ``r = 32`` and ``r = 1``, rounded outward to whole pairs. Both keep pairs with
    ``r > 32`` (up to the rounding) and fully interpolate pairs with ``r < 1``, but in
    between the code keeps much more of the original frequency for all but the
    first pair of the ramp (d = 128, L = 4096: ramp over pairs 20..46 instead of
    20.94..45.03; at pair 30 the paper keeps 25 %, the code 62 %). Shape ``(d/2,)``.
    """
    theta = rope.inv_freq(d, base)
    # e_i, the fraction of the original frequency kept
    keep = yarn_code_ramp(d, L, base, beta_fast, beta_slow, truncate)
    # theta'_i = (1 - e_i) theta_i / s + e_i theta_i, with mscale 0.1 ln s + 1
    return ScaledRope((1.0 - keep) * theta / s + keep * theta, yarn_attention_factor(s))


@dataclass(frozen=True)
class YarnCurves:
    """Per-pair curves comparing the paper's YaRN with the shipped one (all ``(d/2,)``)."""

    turns: np.ndarray  # r_i = L theta_i / (2 pi)
    gamma_paper: np.ndarray  # fraction of the original frequency kept, paper
    gamma_code: np.ndarray  # fraction kept, shipped code
    inv_freq_paper: np.ndarray
    inv_freq_code: np.ndarray


@contract(_HALF_D, _RAMP_RISES)
def yarn_curves(d: EvenSize = 128, s: Factor = 8.0, L: Size = LLAMA2_CONTEXT, base: BaseAboveOne = absolute.BASE,
                alpha: Positive = 1.0, beta: Positive = 32.0) -> YarnCurves:
    r"""Both YaRN ramps and frequency vectors, for plotting side by side.

    The code's ``beta_fast``/``beta_slow`` are taken as the paper's ``beta``/``alpha``.
    Peng et al. (2024); see :func:`yarn_code` for the difference.
    """
    turns = training_turns(rope.inv_freq(d, base), L)
    return YarnCurves(
        turns=turns,
        gamma_paper=yarn_ramp(turns, alpha, beta),
        gamma_code=yarn_code_ramp(d, L, base, beta_fast=beta, beta_slow=alpha),
        inv_freq_paper=yarn(d, s, L, base, alpha, beta).inv_freq,
        inv_freq_code=yarn_code(d, s, L, base, beta_fast=beta, beta_slow=alpha).inv_freq,
    )


# ---------------------------------------------------------------------------
# Base change, Llama 3.1, LongRoPE
# ---------------------------------------------------------------------------

@contract(_HALF_D)
def base_change(d: EvenSize, s: Factor = 1.0, L: Size = LLAMA2_CONTEXT,
                base: Positive = CODE_LLAMA_BASE) -> ScaledRope:
    r"""A bigger base at training time: ``theta_i = base^(-2i/d)`` with a new ``base``.

    Code Llama (Roziere et al. 2023) fine-tunes with ``base = 1,000,000``
    (:data:`CODE_LLAMA_BASE`); Llama 3 (Meta 2024) pre-trains with ``500,000``
    (:data:`LLAMA3_BASE`). Nothing is rescaled at inference; ``s`` and ``L`` are
    accepted only for the common signature. Shape ``(d/2,)``.
    """
    # theta_i = base^(-2i/d) with the new base
    return ScaledRope(rope.inv_freq(d, base))


_BANDS_ORDERED = ordered("low_freq_factor", "high_freq_factor", strict=False)


@contract(_HALF_D, _BANDS_ORDERED)
def llama3(d: EvenSize, s: Factor = 8.0, L: Size = LLAMA31_ORIGINAL_CONTEXT, base: Positive = LLAMA3_BASE,
           low_freq_factor: Positive = 1.0, high_freq_factor: Positive = 4.0) -> ScaledRope:
    r"""Llama 3.1's frequency-dependent scaling (Meta 2024; ``apply_scaling``).

    With wavelength ``lambda_i = 2 pi / theta_i``:

    * ``lambda_i < L / high_freq_factor`` (high frequency): ``theta_i`` kept;
    * ``lambda_i > L / low_freq_factor`` (low frequency): ``theta_i / s``;
    * otherwise, with ``a = (L / lambda_i - low_freq_factor) / (high_freq_factor -
      low_freq_factor)``: ``(1 - a) theta_i / s + a theta_i``.

    Defaults are Llama 3.1's (``factor = 8``, ``low_freq_factor = 1``,
    ``high_freq_factor = 4``, ``original_max_position_embeddings = 8192``, base
    500,000), as in the reference code and Hugging Face ``_compute_llama3_parameters``.
    Since ``L / lambda_i = r_i``, this is the paper's YaRN ramp with
    ``alpha = low_freq_factor``, ``beta = high_freq_factor`` and no temperature.
    Equal factors (Llama 4: both 1) leave no blended band: every pair is kept or
    interpolated (a wavelength exactly at ``L / low_freq_factor`` is kept). Shape
    ``(d/2,)``.
    """
    theta = rope.inv_freq(d, base)
    bands = llama3_bands(d, L, base, low_freq_factor, high_freq_factor)
    # lambda_i = 2 pi / theta_i
    wavelen = 2.0 * np.pi / theta
    # a = (L / lambda_i - low) / (high - low); equal factors leave no pair between the bands (Llama 4)
    a = (L / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor) \
        if high_freq_factor > low_freq_factor else np.ones_like(theta)
    # (1 - a) theta_i / s + a theta_i
    blended = (1.0 - a) * theta / s + a * theta
    # theta_i kept, theta_i / s interpolated, or blended, by band
    out = np.where(bands == "kept", theta, np.where(bands == "interpolated", theta / s, blended))
    return ScaledRope(out)


@contract(_HALF_D, _BANDS_ORDERED)
def llama3_bands(d: EvenSize, L: Size = LLAMA31_ORIGINAL_CONTEXT, base: Positive = LLAMA3_BASE,
                 low_freq_factor: Positive = 1.0, high_freq_factor: Positive = 4.0) -> np.ndarray:
    r"""Label each pair's band in Llama 3.1 scaling: ``"kept"``, ``"interpolated"``, ``"blended"``.

    ``"kept"`` when ``2 pi / theta_i < L / high_freq_factor``, ``"interpolated"`` when
    ``2 pi / theta_i > L / low_freq_factor``, ``"blended"`` otherwise (boundaries
    included, as in the reference code). Shape ``(d/2,)`` of strings.
    """
    # lambda_i = 2 pi / theta_i
    wavelen = 2.0 * np.pi / rope.inv_freq(d, base)
    labels = np.full(wavelen.shape, "blended", dtype=object)
    # lambda_i < L / high_freq_factor: kept
    labels[wavelen < L / high_freq_factor] = "kept"
    # lambda_i > L / low_freq_factor: interpolated
    labels[wavelen > L / low_freq_factor] = "interpolated"
    return labels.astype(str)


@contract
def longrope_attention_factor(s: Factor, L: Annotated[int, Integer(2, why="ln L > 0")]) -> float:
    r"""The attention factor shipped with LongRoPE models: ``sqrt(1 + ln(s) / ln(L))``, 1 at ``s = 1``.

    This is the factor of Phi-3's released code (Abdin et al. 2024) and of Hugging
    Face ``_compute_longrope_parameters``, with ``s`` the configured factor and ``L``
    the original training length (``original_max_position_embeddings``); the LongRoPE
    paper (Ding et al. 2024) contributes the searched rescale factors of
    :func:`longrope`, not this formula. ``s >= 1``; ``L`` an integer ``>= 2``.
    """
    # sqrt(1 + ln s / ln L), exactly 1 at s = 1
    return math.sqrt(1.0 + math.log(s) / math.log(L))


@contract(_HALF_D, one_per_pair("short_factors", "long_factors"))
def longrope(d: EvenSize, s: Factor = 1.0, L: Annotated[int, Integer(2, MAX_POSITION, why="ln L > 0")] = LLAMA2_CONTEXT,
             base: Positive = absolute.BASE, *, short_factors: Rescales, long_factors: Rescales,
             current_length: Count | None = None) -> ScaledRope:
    r"""LongRoPE: searched per-pair rescale factors (Ding et al. 2024).

    ``theta'_i = 1 / (lambda_i * base^(2i/d))`` with ``lambda = long_factors`` when the
    current length exceeds ``L`` and ``short_factors`` otherwise (Hugging Face
    ``_compute_longrope_parameters``; Phi-3). ``current_length`` defaults to
    ``s * L`` rounded up. Attention factor from :func:`longrope_attention_factor`.
    Each factor vector: ``d/2`` finite positive numbers. Shape ``(d/2,)``. The paper's
    search also finds ``n_hat``, a number of initial positions left unscaled; Phi-3
    and Hugging Face ship none (every position is rescaled), and neither does this.
    """
    # the current length: s L unless given
    n = math.ceil(s * L) if current_length is None else current_length
    # lambda: the long factors beyond L, the short ones up to it
    factors = long_factors if n > L else short_factors
    # theta'_i = theta_i / lambda_i, with the attention factor sqrt(1 + ln s / ln L)
    return ScaledRope(rope.inv_freq(d, base) / factors, longrope_attention_factor(s, L))


def _pairs_in_head(d, rotated_pairs) -> None:
    if rotated_pairs > d // 2:
        raise ValueError(f"rotated_pairs must be at most d/2 = {d // 2} (the pairs of the head), got {rotated_pairs}")


@contract(_HALF_D, _pairs_in_head)
def proportional(d: EvenSize, rotated_pairs: Count, s: Factor = 1.0, base: Positive = absolute.BASE) -> np.ndarray:
    r"""Proportional RoPE (Gemma 4's global layers): the exponent over the whole head, on its first pairs.

    ``theta_i = base^(-2i/d) / s`` for the first ``k = rotated_pairs`` pairs and 0
    (no rotation) for the other ``d/2 - k``, where ``d`` is the whole head's width: the
    rotated pairs keep the frequencies they would have in a fully rotated head, where
    partial rotation (GPT-NeoX) recomputes them over the rotated width. Hugging Face
    ``_compute_proportional_rope_parameters``. Shape ``(d/2,)``.
    """
    # theta_i / s for the first k pairs of the whole head
    kept = rope.inv_freq(d, base)[:rotated_pairs] / s
    # frequency 0 (no rotation) for the rest
    return np.concatenate([kept, np.zeros(d // 2 - rotated_pairs)])


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

#: The registry: method name -> function returning :class:`ScaledRope`.
METHODS: dict[str, Callable[..., ScaledRope]] = {
    "none": unscaled,
    "linear": position_interpolation,
    "pi": position_interpolation,
    "ntk": ntk_aware,
    "dynamic_ntk": dynamic_ntk,
    "yarn": yarn,
    "yarn_code": yarn_code,
    "llama3": llama3,
    "longrope": longrope,
    "base_change": base_change,
}

#: A method name, one of :data:`METHODS`.
Method = Annotated[str, OneOf(*METHODS)]


@contract
def scale(method: Method, d: EvenSize, **options) -> ScaledRope:
    """Look ``method`` up in :data:`METHODS` and call it: ``METHODS[method](d, **options)``."""
    # the method checks its own options: they are the caller's
    return METHODS[method](d, **options)
