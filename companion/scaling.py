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
returning :class:`Frequencies` (the vector ``theta'`` of shape ``(d/2,)`` and an
attention factor), listed in :data:`METHODS`; ``s`` is the extension factor (target
length ``s * L``), ``L`` the training length, ``base`` the RoPE base. Plug the
result into :class:`companion.rope.RotaryEmbedding`.

Convention for "largest angle" (Figure 4 of the book): a pair with frequency
``theta`` over a context of length ``n`` reaches the angle ``n * theta`` (the span
of ``n`` position steps). So training reaches ``L * theta_i`` (that is ``2 pi r_i``
with ``r_i`` the turns in training) and the extended model reaches
``s L theta'_i``; their ratio is ``s theta'_i / theta_i``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import _checks
from . import rope

__all__ = [
    "ROFORMER_BASE",
    "CODE_LLAMA_BASE",
    "LLAMA3_BASE",
    "LLAMA2_CONTEXT",
    "LLAMA31_ORIGINAL_CONTEXT",
    "Frequencies",
    "unscaled",
    "position_interpolation",
    "ntk_base",
    "ntk_per_pair",
    "ntk_aware",
    "dynamic_scale",
    "dynamic_ntk",
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
    "METHODS",
    "frequencies",
    "training_turns",
    "angle_ratio",
    "out_of_range",
    "Extension",
    "extension",
    "score_curve",
    "fit_score_curve",
    "interpolation_error_bound",
    "pi_bound_ratio",
    "node_polynomial",
    "polynomial_interpolant",
    "polynomial_remainder_bound",
]

#: Su et al. (2021); Llama 1 and 2
ROFORMER_BASE = 10_000.0
#: Roziere et al. (2023), Code Llama
CODE_LLAMA_BASE = 1_000_000.0
#: Llama 3 (Meta, 2024)
LLAMA3_BASE = 500_000.0
#: Llama 2 training length, the book's Figure 4 setting
LLAMA2_CONTEXT = 4096
#: Llama 3.1's original_max_position_embeddings
LLAMA31_ORIGINAL_CONTEXT = 8192


@dataclass(frozen=True)
class Frequencies:
    """A scaled RoPE: ``inv_freq`` (``theta'_i``, shape ``(d/2,)``) and the attention factor.

    ``attention_factor`` multiplies the rotated ``q`` and ``k`` (equivalently ``cos``
    and ``sin``), so every score is multiplied by its square. 1.0 when the method has
    none.
    """

    inv_freq: np.ndarray
    attention_factor: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "inv_freq", _positive_frequencies("inv_freq", self.inv_freq))
        object.__setattr__(self, "attention_factor", _checks.positive_float("attention_factor", self.attention_factor))


# ---------------------------------------------------------------------------
# Plain methods: none, Position Interpolation, NTK-aware
# ---------------------------------------------------------------------------

def unscaled(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT, base: float = ROFORMER_BASE) -> Frequencies:
    r"""No scaling: ``theta_i = base^(-2i/d)`` whatever the length (Su et al. 2021).

    ``s`` and ``L`` are accepted (and validated) only for the common signature.
    """
    _common(d, s, L, base)
    return Frequencies(rope.inv_freq(d, base))


def position_interpolation(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT,
                           base: float = ROFORMER_BASE) -> Frequencies:
    r"""Position Interpolation: ``theta'_i = theta_i / s`` (Chen et al. 2023).

    Same as feeding positions ``m / s``: a context of ``s L`` is squeezed into the
    trained range ``[0, L)``. Every pair slows down by ``s``, the fast ones too.
    Shape ``(d/2,)``.
    """
    theta, s, _ = _common(d, s, L, base)
    return Frequencies(theta / s)


def ntk_base(d: int, s: float, base: float = ROFORMER_BASE) -> float:
    r"""NTK-aware new base ``b' = b * s^(d/(d-2))`` (bloc97 2023). Needs ``d >= 4``."""
    d = _ntk_dim(d)
    s = _checks.at_least("s", s, 1.0)
    base = _checks.positive_float("base", base)
    try:
        new_base = base * s ** (d / (d - 2))
    except OverflowError:
        new_base = math.inf
    if not math.isfinite(new_base):
        raise ValueError(f"s and base must give a finite new base b * s^(d/(d-2)); got s = {s}, base = {base}")
    return new_base


def ntk_per_pair(d: int, s: float, base: float = ROFORMER_BASE) -> np.ndarray:
    r"""NTK-aware frequencies written per pair: ``theta'_i = theta_i * s^(-2i/(d-2))``.

    Identical to ``base^(-2i/d)`` with the base of :func:`ntk_base` (bloc97 2023):
    pair 0 is unchanged, pair ``d/2 - 1`` becomes exactly ``theta / s`` (as with
    Position Interpolation), a geometric blend in between. Shape ``(d/2,)``.
    """
    d = _ntk_dim(d)
    s = _checks.at_least("s", s, 1.0)
    i = np.arange(d // 2, dtype=np.float64)
    return rope.inv_freq(d, base) * s ** (-2.0 * i / (d - 2))


def ntk_aware(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT, base: float = ROFORMER_BASE) -> Frequencies:
    r"""NTK-aware scaling: RoPE with base ``b' = b s^(d/(d-2))`` (bloc97 2023).

    ``theta'_i = b'^(-2i/d) = theta_i s^(-2i/(d-2))``. Named after neural-tangent-
    kernel arguments, but an empirical recipe. Shape ``(d/2,)``.
    """
    _common(d, s, L, base)
    return Frequencies(rope.inv_freq(d, ntk_base(d, s, base)))


def dynamic_scale(current_length: int, L: int, factor: float | None = None) -> float:
    r"""The scale dynamic NTK uses at the current length ``l'``.

    ``factor=None`` (the YaRN paper's "Dynamic NTK", Peng et al. 2024, section 3.3,
    and emozilla 2023): ``s = max(1, l' / L)``.

    With a configured ``factor`` (Hugging Face ``rope_type="dynamic"``,
    ``_compute_dynamic_ntk_parameters``): ``l = max(l', L)`` and
    ``s = factor * l / L - (factor - 1)``. The two agree for ``factor = 1`` and at
    ``l' <= L`` (``s = 1``); for ``factor > 1`` the HF scale grows ``factor`` times
    faster with length (at ``l' = 2L``, ``factor = 4``: 5 instead of 2).
    """
    return _dynamic_scale(current_length, L, factor, "factor")


def _dynamic_scale(current_length, L, factor, factor_name: str) -> float:
    n = _checks.positive_int("current_length", current_length)
    L = _checks.size("L", L)
    if factor is None:
        return max(1.0, n / L)
    factor = _checks.at_least(factor_name, factor, 1.0)
    scale = factor * max(n, L) / L - (factor - 1.0)
    if not math.isfinite(scale):
        raise ValueError(f"{factor_name} and current_length must give a finite scale, got {scale}")
    return scale


def dynamic_ntk(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT, base: float = ROFORMER_BASE,
                current_length: int | None = None, hf_factor: float | None = None) -> Frequencies:
    r"""Dynamic NTK: NTK-aware scaling with the scale following the input length.

    ``theta'_i = theta_i * s_dyn^(-2i/(d-2))`` with ``s_dyn`` from
    :func:`dynamic_scale` (``max(1, l'/L)``; the Hugging Face formula when
    ``hf_factor`` is given). ``current_length`` defaults to ``s * L`` (rounded up),
    which makes the result equal to :func:`ntk_aware` at ``s``. emozilla (2023);
    Peng et al. (2024), section 3.3. Shape ``(d/2,)``.
    """
    _common(d, s, L, base)
    n = math.ceil(s * L) if current_length is None else current_length
    s_dyn = _dynamic_scale(n, L, hf_factor, "hf_factor")
    try:
        new_base = ntk_base(d, s_dyn, base)
    except ValueError as err:  # d, base and the scale passed their checks: only the scale is too big
        raise ValueError(
            f"current_length and hf_factor must give a scale small enough for a finite base, got {s_dyn:.6g}"
        ) from err
    return Frequencies(rope.inv_freq(d, new_base))


# ---------------------------------------------------------------------------
# YaRN: the paper's definition
# ---------------------------------------------------------------------------

def yarn_ramp(r, alpha: float = 1.0, beta: float = 32.0) -> np.ndarray:
    r"""YaRN's ramp ``gamma(r)``: 0 if ``r < alpha``, 1 if ``r > beta``, else linear.

    ``gamma(r) = (r - alpha) / (beta - alpha)`` between; ``r`` is the number of turns a
    pair made in training (Peng et al. 2024, eq. (18), "NTK-by-parts"). ``gamma = 1``
    keeps the original frequency, ``gamma = 0`` interpolates fully. Same shape as ``r``.
    """
    r = _checks.array("r", r)
    alpha = _checks.positive_float("alpha", alpha)
    beta = _checks.positive_float("beta", beta)
    if beta <= alpha:
        raise ValueError(f"beta must be greater than alpha ({alpha}), got {beta}")
    return np.clip((r - alpha) / (beta - alpha), 0.0, 1.0)


def yarn_attention_factor(s: float) -> float:
    r"""YaRN's temperature: ``sqrt(1/t) = 0.1 ln(s) + 1`` (Peng et al. 2024, eq. (22)).

    Applied by multiplying the rotated ``q`` and ``k`` (the authors' code multiplies
    ``cos`` and ``sin``), so each logit is multiplied by ``1/t``.
    """
    s = _checks.at_least("s", s, 1.0)
    return 0.1 * math.log(s) + 1.0


def yarn(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT, base: float = ROFORMER_BASE,
         alpha: float = 1.0, beta: float = 32.0) -> Frequencies:
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
    theta, s, L = _common(d, s, L, base)
    gamma = yarn_ramp(training_turns(theta, L), alpha, beta)
    return Frequencies((1.0 - gamma) * theta / s + gamma * theta, yarn_attention_factor(s))


# ---------------------------------------------------------------------------
# YaRN: the shipped code
# ---------------------------------------------------------------------------

def yarn_correction_range(d: int, L: int, base: float = ROFORMER_BASE, beta_fast: float = 32.0,
                          beta_slow: float = 1.0, truncate: bool = True) -> tuple[float, float]:
    r"""The pair-index range ``(low, high)`` of the shipped YaRN ramp.

    ``find_correction_dim(n) = d ln(L / (2 pi n)) / (2 ln base)`` is the (real) pair
    index whose frequency makes ``n`` turns in ``L`` positions. ``low`` is that of
    ``beta_fast = 32`` rounded down, ``high`` that of ``beta_slow = 1`` rounded up
    (no rounding when ``truncate=False``, Hugging Face's option for gpt-oss), then
    clamped to ``[0, d - 1]`` as in the code (jquesnelle/yarn, ``find_correction_range``;
    Hugging Face ``_compute_yarn_parameters``). Needs ``base > 1`` and
    ``beta_fast >= beta_slow > 0`` (equal: a step between the two ranges).
    """
    d = _checks.even_positive_int("d", d)
    L = _checks.size("L", L)
    base = _checks.greater_than("base", base, 1.0)
    beta_fast = _checks.positive_float("beta_fast", beta_fast)
    beta_slow = _checks.positive_float("beta_slow", beta_slow)
    if beta_fast < beta_slow:  # equal betas make the ramp a step (its ends one pair apart once rounded)
        raise ValueError(
            f"beta_fast must be at least beta_slow ({beta_slow}): it is the turn count of the fast end, "
            f"got {beta_fast}"
        )
    truncate = _checks.boolean("truncate", truncate)

    def index(turns):
        return d * math.log(L / (turns * 2.0 * math.pi)) / (2.0 * math.log(base))

    low, high = index(beta_fast), index(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, d - 1)


def yarn_code_ramp(d: int, L: int, base: float = ROFORMER_BASE, beta_fast: float = 32.0,
                   beta_slow: float = 1.0, truncate: bool = True) -> np.ndarray:
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
    return 1.0 - np.clip((i - low) / (high - low), 0.0, 1.0)


def yarn_code(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT, base: float = ROFORMER_BASE,
              beta_fast: float = 32.0, beta_slow: float = 1.0, truncate: bool = True) -> Frequencies:
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
    theta, s, L = _common(d, s, L, base)
    keep = yarn_code_ramp(d, L, base, beta_fast, beta_slow, truncate)
    return Frequencies((1.0 - keep) * theta / s + keep * theta, yarn_attention_factor(s))


@dataclass(frozen=True)
class YarnCurves:
    """Per-pair curves comparing the paper's YaRN with the shipped one (all ``(d/2,)``)."""

    turns: np.ndarray  # r_i = L theta_i / (2 pi)
    gamma_paper: np.ndarray  # fraction of the original frequency kept, paper
    gamma_code: np.ndarray  # fraction kept, shipped code
    inv_freq_paper: np.ndarray
    inv_freq_code: np.ndarray


def yarn_curves(d: int = 128, s: float = 8.0, L: int = LLAMA2_CONTEXT, base: float = ROFORMER_BASE,
                alpha: float = 1.0, beta: float = 32.0) -> YarnCurves:
    r"""Both YaRN ramps and frequency vectors, for plotting side by side.

    The code's ``beta_fast``/``beta_slow`` are taken as the paper's ``beta``/``alpha``.
    Peng et al. (2024); see :func:`yarn_code` for the difference.
    """
    theta, s, L = _common(d, s, L, base)
    return YarnCurves(
        turns=training_turns(theta, L),
        gamma_paper=yarn_ramp(training_turns(theta, L), alpha, beta),
        gamma_code=yarn_code_ramp(d, L, base, beta_fast=beta, beta_slow=alpha),
        inv_freq_paper=yarn(d, s, L, base, alpha, beta).inv_freq,
        inv_freq_code=yarn_code(d, s, L, base, beta_fast=beta, beta_slow=alpha).inv_freq,
    )


# ---------------------------------------------------------------------------
# Base change, Llama 3.1, LongRoPE
# ---------------------------------------------------------------------------

def base_change(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT, base: float = CODE_LLAMA_BASE) -> Frequencies:
    r"""A bigger base at training time: ``theta_i = base^(-2i/d)`` with a new ``base``.

    Code Llama (Roziere et al. 2023) fine-tunes with ``base = 1,000,000``
    (:data:`CODE_LLAMA_BASE`); Llama 3 (Meta 2024) pre-trains with ``500,000``
    (:data:`LLAMA3_BASE`). Nothing is rescaled at inference; ``s`` and ``L`` are
    accepted only for the common signature. Shape ``(d/2,)``.
    """
    _common(d, s, L, base)
    return Frequencies(rope.inv_freq(d, base))


def llama3(d: int, s: float = 8.0, L: int = LLAMA31_ORIGINAL_CONTEXT, base: float = LLAMA3_BASE,
           low_freq_factor: float = 1.0, high_freq_factor: float = 4.0) -> Frequencies:
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
    Shape ``(d/2,)``.
    """
    theta, s, L = _common(d, s, L, base)
    bands = llama3_bands(d, L, base, low_freq_factor, high_freq_factor)
    wavelen = 2.0 * np.pi / theta
    a = (L / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1.0 - a) * theta / s + a * theta
    out = np.where(bands == "kept", theta, np.where(bands == "interpolated", theta / s, blended))
    return Frequencies(out)


def llama3_bands(d: int, L: int = LLAMA31_ORIGINAL_CONTEXT, base: float = LLAMA3_BASE,
                 low_freq_factor: float = 1.0, high_freq_factor: float = 4.0) -> np.ndarray:
    r"""Label each pair's band in Llama 3.1 scaling: ``"kept"``, ``"interpolated"``, ``"blended"``.

    ``"kept"`` when ``2 pi / theta_i < L / high_freq_factor``, ``"interpolated"`` when
    ``2 pi / theta_i > L / low_freq_factor``, ``"blended"`` otherwise (boundaries
    included, as in the reference code). Shape ``(d/2,)`` of strings.
    """
    low = _checks.positive_float("low_freq_factor", low_freq_factor)
    high = _checks.positive_float("high_freq_factor", high_freq_factor)
    if high <= low:
        raise ValueError(f"high_freq_factor must be greater than low_freq_factor ({low}), got {high}")
    L = _checks.size("L", L)
    wavelen = 2.0 * np.pi / rope.inv_freq(d, base)
    labels = np.full(wavelen.shape, "blended", dtype=object)
    labels[wavelen < L / high] = "kept"
    labels[wavelen > L / low] = "interpolated"
    return labels.astype(str)


def longrope_attention_factor(s: float, L: int) -> float:
    r"""The attention factor shipped with LongRoPE models: ``sqrt(1 + ln(s) / ln(L))``, 1 at ``s = 1``.

    This is the factor of Phi-3's released code (Abdin et al. 2024) and of Hugging
    Face ``_compute_longrope_parameters``, with ``s`` the configured factor and ``L``
    the original training length (``original_max_position_embeddings``); the LongRoPE
    paper (Ding et al. 2024) contributes the searched rescale factors of
    :func:`longrope`, not this formula. ``s >= 1``; ``L`` an integer ``>= 2``.
    """
    s = _checks.at_least("s", s, 1.0)
    if isinstance(L, bool) or not isinstance(L, numbers.Integral) or L < 2:
        raise ValueError(f"L must be an integer >= 2 (ln L > 0), got {L!r}")
    return math.sqrt(1.0 + math.log(s) / math.log(L))  # exactly 1 at s = 1


def longrope(d: int, s: float = 1.0, L: int = LLAMA2_CONTEXT, base: float = ROFORMER_BASE,
             short_factors=None, long_factors=None, current_length: int | None = None) -> Frequencies:
    r"""LongRoPE: searched per-pair rescale factors (Ding et al. 2024).

    ``theta'_i = 1 / (lambda_i * base^(2i/d))`` with ``lambda = long_factors`` when the
    current length exceeds ``L`` and ``short_factors`` otherwise (Hugging Face
    ``_compute_longrope_parameters``; Phi-3). ``current_length`` defaults to
    ``s * L`` rounded up. Attention factor from :func:`longrope_attention_factor`.
    Each factor vector: ``d/2`` finite positive numbers. Shape ``(d/2,)``. The paper's
    search also finds ``n_hat``, a number of initial positions left unscaled; Phi-3
    and Hugging Face ship none (every position is rescaled), and neither does this.
    """
    theta, s, L = _common(d, s, L, base)
    short = _factor_vector("short_factors", short_factors, d)
    long = _factor_vector("long_factors", long_factors, d)
    n = math.ceil(s * L) if current_length is None else _checks.positive_int("current_length", current_length)
    factors = long if n > L else short
    return Frequencies(theta / factors, longrope_attention_factor(s, L))


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

#: The registry: method name -> function returning :class:`Frequencies`.
METHODS: dict[str, Callable[..., Frequencies]] = {
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


def frequencies(method: str, d: int, **options) -> Frequencies:
    """Look ``method`` up in :data:`METHODS` and call it: ``METHODS[method](d, **options)``."""
    return METHODS[_checks.one_of("method", method, tuple(METHODS))](d, **options)


# ---------------------------------------------------------------------------
# Figure 4: which pairs leave the trained range
# ---------------------------------------------------------------------------

def training_turns(inv_freq, L: int) -> np.ndarray:
    r"""Turns each pair made in training: ``r_i = L theta_i / (2 pi)``. Shape ``(d/2,)``."""
    theta = _positive_frequencies("inv_freq", inv_freq)
    return _checks.size("L", L) * theta / (2.0 * np.pi)


def angle_ratio(scaled_inv_freq, inv_freq, s: float) -> np.ndarray:
    r"""Largest angle at length ``s L`` over the largest angle in training, per pair.

    ``(s L theta'_i) / (L theta_i) = s theta'_i / theta_i`` (convention: a context of
    length ``n`` reaches ``n theta``). 1 for PI, ``s`` for no scaling. Shape ``(d/2,)``.
    """
    theta = _positive_frequencies("inv_freq", inv_freq)
    scaled = _positive_frequencies("scaled_inv_freq", scaled_inv_freq)
    if scaled.shape != theta.shape:
        raise ValueError(f"scaled_inv_freq must have shape {theta.shape} like inv_freq, got {scaled.shape}")
    return _checks.at_least("s", s, 1.0) * scaled / theta


def out_of_range(scaled_inv_freq, inv_freq, s: float, L: int, tol: float = 1e-9) -> np.ndarray:
    r"""Pairs whose angles at length ``s L`` leave the range seen in training.

    A pair is out of range when it never completed a full turn in training
    (``L theta_i < 2 pi``, i.e. ``r_i < 1``) and its :func:`angle_ratio` exceeds
    ``1 + tol`` (so exact equality, up to rounding, is not "out"). Pairs that turned
    fully have seen every angle. Boolean, shape ``(d/2,)``.
    """
    ratio = angle_ratio(scaled_inv_freq, inv_freq, s)
    tol = _checks.at_least("tol", tol, 0.0)
    return (training_turns(inv_freq, L) < 1.0) & (ratio > 1.0 + tol)


@dataclass(frozen=True)
class Extension:
    """What Figure 4 plots for one method (arrays have shape ``(d/2,)``)."""

    method: str
    turns: np.ndarray  # r_i = L theta_i / (2 pi), original frequencies
    ratio: np.ndarray  # s theta'_i / theta_i
    out_of_range: np.ndarray  # bool
    n_out: int  # pairs out of range
    n_slow: int  # pairs with r_i < 1 (never a full turn in training)
    worst_ratio: float  # largest ratio among the slow pairs
    attention_factor: float


def extension(method: str, d: int = 128, s: float = 8.0, L: int = LLAMA2_CONTEXT,
              base: float = ROFORMER_BASE, **options) -> Extension:
    r"""Figure 4's quantities for ``method`` at head dim ``d``, scale ``s``, length ``L``.

    Defaults are the book's setting (Llama 2: ``d = 128``, base 10000, ``L = 4096``,
    ``s = 8``), where no scaling leaves 18 pairs out of range, PI 0, NTK-aware 17
    (worst ratio about 1.75) and YaRN 0. The reference frequencies are RoPE's with
    the same ``base``.
    """
    scaled = frequencies(method, d, s=s, L=L, base=base, **options)
    theta = rope.inv_freq(d, base)
    turns = training_turns(theta, L)
    ratio = angle_ratio(scaled.inv_freq, theta, s)
    out = out_of_range(scaled.inv_freq, theta, s, L)
    slow = turns < 1.0
    return Extension(
        method=method, turns=turns, ratio=ratio, out_of_range=out, n_out=int(out.sum()),
        n_slow=int(slow.sum()), worst_ratio=float(ratio[slow].max()) if slow.any() else float("nan"),
        attention_factor=scaled.attention_factor,
    )


# ---------------------------------------------------------------------------
# Why interpolation is safer: the score as a function of distance (Chen et al. 2023)
# ---------------------------------------------------------------------------

def score_curve(h, distances, inv_freq) -> np.ndarray:
    r"""The RoPE score as a function of the relative distance: ``a(s) = Re sum_j h_j e^{i s theta_j}``.

    Chen et al. (2023), eq. (3), with ``h_j = (q_{2j} + i q_{2j+1})(k_{2j} - i k_{2j+1})``
    the complex content of pair ``j`` (the ``h_j`` of RoFormer section 3.4.3) and
    ``s = m - n``. The formula is defined for every real ``s``, not only for the integer
    distances a model meets; Position Interpolation evaluates it at fractions.
    ``h``: complex, shape ``(d/2,)``; ``distances``: real, any shape; ``inv_freq``:
    ``(d/2,)``. Returns float64 of the shape of ``distances``.
    """
    theta = _positive_frequencies("inv_freq", inv_freq)
    h = _content_vector(h, theta)
    s = _checks.bounded("distances", _checks.array("distances", distances))
    _checks.entries("distances.size * len(inv_freq)", s.size * theta.size)
    return (np.exp(1j * np.multiply.outer(s, theta)) @ h).real


def fit_score_curve(distances, targets, inv_freq, rcond: float | None = None, ridge: float = 0.0) -> np.ndarray:
    r"""Least-squares contents ``h`` whose :func:`score_curve` matches ``targets`` at ``distances``.

    Writes ``a(s) = sum_j Re(h_j) cos(s theta_j) - Im(h_j) sin(s theta_j)`` as a linear
    model with the ``d`` real unknowns ``(Re h, Im h)`` and minimises
    ``sum_k (a(s_k) - y_k)^2 + ridge * sum_j |h_j|^2``: with ``ridge = 0`` by
    ``numpy.linalg.lstsq`` (the minimum-norm solution; singular values below
    ``rcond`` times the largest count as zero, NumPy's default when ``None``), with
    ``ridge > 0`` by the regularised normal equations. This is the experiment of Chen
    et al. (2023), Figure 2 and Appendix C.1 (they solve the normal equations with
    ``eps = 0`` in float32; the slow pairs make the problem very ill-conditioned, so
    the extrapolated values depend on this choice, not only on the data).
    ``distances``, ``targets``: real, shape ``(K,)``. Returns complex ``h``, shape ``(d/2,)``.
    """
    theta = _positive_frequencies("inv_freq", inv_freq)
    s = _checks.bounded("distances", _checks.array("distances", distances))
    y = _checks.array("targets", targets)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"distances must be a non-empty 1-D array, got shape {s.shape}")
    if y.shape != s.shape:
        raise ValueError(f"targets must have the shape of distances {s.shape}, got {y.shape}")
    ridge = float(_checks.at_least("ridge", ridge, 0.0))
    if rcond is not None:
        rcond = _checks.positive_float("rcond", rcond)
        if ridge > 0:
            raise ValueError("rcond and ridge must not both be given: rcond applies only to the "
                             "unregularised fit (ridge = 0)")
    phase = np.multiply.outer(s, theta)
    X = np.concatenate([np.cos(phase), -np.sin(phase)], axis=1)
    if ridge > 0:
        coeffs = np.linalg.solve(X.T @ X + ridge * np.eye(X.shape[1]), X.T @ y)
    else:
        coeffs = np.linalg.lstsq(X, y, rcond=rcond)[0]
    n = theta.size
    return coeffs[:n] + 1j * coeffs[n:]


def interpolation_error_bound(h, inv_freq, spacing: float = 1.0) -> float:
    r"""Bound on ``|a(s) - a_lin(s)|`` between two grid points ``spacing`` apart.

    ``a_lin`` is the straight line through ``a(s_1)`` and ``a(s_2)``. The classical
    interpolation remainder gives ``a(s) - a_lin(s) = a''(xi) (s - s_1)(s - s_2) / 2``
    for some ``xi`` in ``[s_1, s_2]``, and ``|a''| <= sum_j |h_j| theta_j^2``; the
    product ``(s - s_1)(s_2 - s)`` is at most ``spacing^2 / 4``. So

    .. math:: |a(s) - a_{\mathrm{lin}}(s)| \le \frac{\mathrm{spacing}^2}{8} \sum_j |h_j|\,\theta_j^2 .

    This is Chen et al. (2023), Theorem 2.1, before their last step, which replaces
    ``sum_j theta_j^2`` by ``d / (4 ln c)``; see :func:`pi_bound_ratio`. ``h``: complex,
    ``(d/2,)``. Returns a float.
    """
    theta = _positive_frequencies("inv_freq", inv_freq)
    h = _content_vector(h, theta)
    spacing = _checks.positive_float("spacing", spacing)
    with np.errstate(over="ignore", invalid="ignore"):
        bound = np.float64(spacing) ** 2 / 8.0 * np.sum(np.abs(h) * theta**2)
    return float(_checks.finite_result("h, inv_freq and spacing", bound))


def pi_bound_ratio(distances, d: int = 128, base: float = ROFORMER_BASE, constant: str = "exact") -> np.ndarray:
    r"""Extrapolation bound over interpolation bound, per unit ``max_j |h_j|`` (Chen et al. 2023).

    Extrapolation (RoFormer section 3.4.3, as restated in Chen et al., eq. (8)):
    ``|a(s)| <= 2 max_j |h_j| B(s)`` with ``B(s) = sum_{k=1}^{d/2} |A_k(s)|`` and
    ``A_k(s) = sum_{j<k} e^{i s theta_j}`` (``B = (d/2)`` times
    :func:`companion.rope.long_term_decay`). Interpolation, worst point of a unit gap:
    ``max_j |h_j| C`` with ``C = sum_j theta_j^2 / 8`` (``constant="exact"``, from
    :func:`interpolation_error_bound`) or ``C = d / (32 ln base)`` (``constant="paper"``,
    their eq. (7), which rests on ``c^x <= 1 + x ln c`` for ``x < 0``; convexity gives
    the opposite inequality, so the paper's ``C`` is smaller than the exact one, by a
    factor 1.15 at ``d = 128``). Returns ``2 B(s) / C``, the shape of ``distances``
    (real). With the paper's constant this is ``64 ln(base) B(s) / d``, "at least
    ~600" where ``B(s) >= d``. The two bounds bound different quantities (a deviation
    from a chord and an absolute value): the ratio compares guarantees, not scores.
    """
    d = _checks.even_positive_int("d", d)
    base = _checks.positive_float("base", base)
    if base <= 1.0:
        raise ValueError(f"base must be a finite real number > 1 for the bounds (ln base > 0), got {base}")
    constant = _checks.one_of("constant", constant, ("exact", "paper"))
    theta = rope.inv_freq(d, base)
    B = (d // 2) * rope.long_term_decay(distances, theta)
    C = np.sum(theta**2) / 8.0 if constant == "exact" else d / (32.0 * math.log(base))
    return 2.0 * B / C


# ---------------------------------------------------------------------------
# Approximation theory: polynomial interpolation inside and outside the nodes
# ---------------------------------------------------------------------------

def node_polynomial(x, nodes) -> np.ndarray:
    r"""The node polynomial ``omega(x) = prod_j (x - x_j)`` of the interpolation remainder.

    For ``n + 1`` distinct nodes and a function ``f`` with ``n + 1`` continuous
    derivatives, the polynomial ``p`` of degree ``<= n`` through ``(x_j, f(x_j))``
    satisfies ``f(x) - p(x) = f^{(n+1)}(xi) omega(x) / (n + 1)!`` for some ``xi`` in
    the smallest interval holding ``x`` and the nodes (Cauchy's remainder formula,
    e.g. Suli & Mayers 2003, *An Introduction to Numerical Analysis*, ch. 6). ``omega`` stays
    small between the nodes and grows like ``|x|^(n+1)`` outside them: the reason
    interpolation is safer than extrapolation. ``x``: real, any shape; ``nodes``:
    real, shape ``(n + 1,)``, distinct. Returns float64 of the shape of ``x``.
    """
    x = _checks.array("x", x)
    xs = _distinct_nodes(nodes)
    _checks.entries("x.size * len(nodes)", x.size * xs.size)
    with np.errstate(over="ignore", invalid="ignore"):
        omega = np.prod(np.subtract.outer(x, xs), axis=-1)
    return _checks.finite_result("x and nodes", omega, "omega(x) overflows float64: move x closer to the nodes")


def polynomial_interpolant(nodes, values, x) -> np.ndarray:
    r"""The polynomial of degree ``<= n`` through ``(nodes[j], values[j])``, evaluated at ``x``.

    Barycentric Lagrange interpolation in its "first" (modified Lagrange) form,

    .. math:: p(x) = \omega(x) \sum_j \frac{w_j f_j}{x - x_j}, \qquad
              w_j = \frac{1}{\prod_{k \ne j} (x_j - x_k)},

    with ``omega`` of :func:`node_polynomial`; at a node it returns the value there
    exactly. This form is backward stable at every ``x``, inside the nodes and
    outside (Berrut & Trefethen 2004, SIAM Review 46(3); Higham 2004, IMA J. Numer.
    Anal. 24), so extrapolated values are the polynomial's, not rounding noise.
    ``nodes``: ``(n + 1,)`` distinct reals; ``values``: ``(n + 1,)``; ``x``: any
    shape. Returns float64 of the shape of ``x``.
    """
    xs = _distinct_nodes(nodes)
    f = _checks.array("values", values)
    if f.shape != xs.shape:
        raise ValueError(f"values must have the shape of nodes {xs.shape}, got {f.shape}")
    x = _checks.array("x", x)
    _checks.entries("x.size * len(nodes)", x.size * xs.size)
    # The interpolant commutes with the affine map t = (x - c) / h, so work on nodes spread
    # over [-1, 1]: the weights w_j then neither underflow for nodes 1e-200 apart nor
    # overflow for nodes 1e200 apart.
    centre = (xs.max() + xs.min()) / 2.0
    half_width = (xs.max() - xs.min()) / 2.0 or 1.0
    ts = (xs - centre) / half_width
    t = (x - centre) / half_width
    diff = ts[:, None] - ts[None, :]
    np.fill_diagonal(diff, 1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        w = 1.0 / np.prod(diff, axis=1)
        gap = np.subtract.outer(t, ts)                   # shape x.shape + (n + 1,)
        hit = (gap == 0.0) | (np.subtract.outer(x, xs) == 0.0)
        safe = np.where(hit, 1.0, gap)
        out = np.prod(gap, axis=-1) * np.sum(w * f / safe, axis=-1)
    on_node = hit.any(axis=-1)
    if np.any(on_node):
        out = np.where(on_node, f[np.argmax(hit, axis=-1)], out)
    return _checks.finite_result("x, nodes and values", out,
                                 "the interpolant overflows float64 this far from the nodes")


def polynomial_remainder_bound(x, nodes, derivative_bound: float) -> np.ndarray:
    r"""Cauchy's bound on ``|f(x) - p(x)|``: ``M |omega(x)| / (n + 1)!``.

    ``M`` (``derivative_bound``) bounds ``|f^{(n+1)}|`` on the interval holding ``x``
    and the nodes; for ``f(x) = cos(theta x)``, one RoPE pair's score, ``M =
    theta^(n+1)`` works everywhere. ``p`` is the interpolant of
    :func:`polynomial_interpolant` and ``omega`` the node polynomial of
    :func:`node_polynomial` (Suli & Mayers 2003, ch. 6). ``x``: any shape; ``nodes``:
    ``(n + 1,)`` distinct; ``derivative_bound``: a real number ``>= 0``. Returns
    float64 of the shape of ``x``.
    """
    xs = _distinct_nodes(nodes)
    M = _checks.at_least("derivative_bound", derivative_bound, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        bound = M * np.abs(node_polynomial(x, xs)) / float(math.factorial(min(xs.size, 170)))
    if xs.size > 170:  # (n + 1)! beyond float64: divide the rest in as a float sum of logs
        bound = bound / np.exp(sum(math.log(k) for k in range(171, xs.size + 1)))
    return _checks.finite_result("x, nodes and derivative_bound", bound)


# ---------------------------------------------------------------------------
# Private helpers
# ---------------------------------------------------------------------------

def _common(d, s, L, base) -> tuple[np.ndarray, float, int]:
    """Validate the common arguments; return ``(theta, s, L)``."""
    theta = rope.inv_freq(d, base)
    return theta, _checks.at_least("s", s, 1.0), _checks.size("L", L)


def _ntk_dim(d) -> int:
    d = _checks.even_positive_int("d", d)
    if d < 4:
        raise ValueError(f"d must be an even integer >= 4 for NTK-aware scaling (exponent d/(d-2)), got {d}")
    return d


def _factor_vector(name: str, value, d: int) -> np.ndarray:
    if value is None:
        raise ValueError(f"{name} must be given: d/2 = {d // 2} per-pair rescale factors")
    f = _checks.array(name, value)
    if f.shape != (d // 2,):
        raise ValueError(f"{name} must have d/2 = {d // 2} entries (one per pair), got shape {f.shape}")
    if np.any(f <= 0):
        raise ValueError(f"{name} must contain only numbers > 0, got a minimum of {f.min()}")
    return f


def _positive_frequencies(name: str, value) -> np.ndarray:
    theta = _checks.array(name, value)
    if theta.ndim != 1 or theta.size == 0 or np.any(theta <= 0):
        low = f", minimum {theta.min()}" if theta.size else ""
        raise ValueError(
            f"{name} must be a non-empty 1-D array of frequencies > 0, got shape {theta.shape}{low}"
        )
    return theta


def _content_vector(h, theta: np.ndarray) -> np.ndarray:
    out = _checks.complex_array("h", h)
    if out.shape != theta.shape:
        raise ValueError(f"h must have shape {theta.shape} (one complex number per pair), got {out.shape}")
    return out


def _distinct_nodes(nodes) -> np.ndarray:
    xs = _checks.array("nodes", nodes)
    if xs.ndim != 1 or xs.size == 0:
        raise ValueError(f"nodes must be a non-empty 1-D array of distinct real numbers, got shape {xs.shape}")
    if np.unique(xs).size != xs.size:
        raise ValueError("nodes must be distinct real numbers (no node may repeat)")
    return xs
