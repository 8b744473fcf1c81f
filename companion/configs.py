r"""What a checkpoint's configuration makes the library run: RoPE settings read from ``config.json``.

A model published for Hugging Face Transformers (Wolf et al. 2020) carries its
position settings in ``config.json``: the base ``rope_theta``, the head size
(``head_dim``, or ``hidden_size / num_attention_heads``), the fraction of each head
that is rotated (``partial_rotary_factor``), ``max_position_embeddings``, and one
dictionary that names the context-extension method and its options. Version 5 of
the library calls that dictionary ``rope_parameters`` (and keeps ``rope_theta`` in
it); files written for version 4 call it ``rope_scaling``, spell its type ``type``
or ``rope_type``, and keep ``rope_theta`` beside it. This module reads either form
and returns what the library computes from it at a given sequence length: the
frequency vector ``theta'`` and the attention factor that multiplies ``cos`` and
``sin`` (so every logit carries its square).

Every method is computed by :mod:`companion.scaling`; this module only maps the
library's keys to those functions' arguments, with the library's defaults. Each rope
type is one entry of :data:`ROPE_PARAMETERS` (:class:`RopeType`): the keys it needs,
the keys it may carry, how it fills in the library's defaults and checks the values,
and how it computes the frequencies, the way Transformers keeps
``ROPE_INIT_FUNCTIONS`` beside its validation functions. A new rope type is one
entry there:

=================  ===========================================================
``rope_type``      companion
=================  ===========================================================
``default``        :func:`companion.scaling.unscaled`
``linear``         :func:`companion.scaling.position_interpolation` (``s = factor``)
``dynamic``        :func:`companion.scaling.dynamic_ntk` with ``hf_factor = factor``
                   and ``L = max_position_embeddings``; the library keeps state,
                   see :class:`DynamicNTKState`
``yarn``           :func:`companion.scaling.yarn_code` (the shipped ramp), attention
                   factor ``attention_factor`` or ``0.1 ln s + 1`` or, with
                   ``mscale`` and ``mscale_all_dim``, the ratio
                   ``(0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1)``
``longrope``       :func:`companion.scaling.longrope`: long factors when the length
                   is *strictly greater* than ``original_max_position_embeddings``
``llama3``         :func:`companion.scaling.llama3` (equal ``low_freq_factor`` and
                   ``high_freq_factor``, as in Llama 4, leave no blended band)
``proportional``   RoPE with the exponent over the whole head, on a fraction of the
                   pairs, zeros for the rest (Gemma 4's global layers)
=================  ===========================================================

**Partial rotary.** With ``partial_rotary_factor = p < 1`` the library rotates only
the first ``r = int(p * head_dim)`` components of each head (GPT-NeoX, Black et al.
2022: a quarter of each head) and computes every method with ``d = r``: the exponent
is ``-2i/r`` over the *rotated* dimension. The ``proportional`` type instead keeps the
exponent over the whole head, ``theta_i = base^(-2i/head_dim)`` for the first
``int(p * head_dim) // 2`` pairs, and pads the rest with frequency 0 (a rotation by 0
leaves a pair alone); it is applied to the whole head in the split layout, so the
rotated components are the first ``r/2`` of each half. :func:`rotate` does both.

Unknown keys are never ignored silently: :class:`RopeSettings` lists them in
``unknown_keys`` and :func:`read_config` warns. Missing keys a method needs, unknown
``rope_type`` values and values that make the method meaningless raise ``ValueError``
naming the key. Where the library fills a value in (``original_max_position_embeddings``
from ``max_position_embeddings``, the YaRN factor from the ratio of the lengths), the
filled keys are listed in ``filled_in``.

:data:`PUBLISHED` holds the position settings of published models (Llama 2 to
gpt-oss) with the sources of their values, as text: one JSON file per model in the
package data ``companion/data/published/``, read in the order of their file names
(a new model is a new file there); chapter 10 runs each through
:func:`config_extension`.
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from importlib import resources
from typing import Annotated, Callable, Mapping

import numpy as np

from . import rope, scaling
from ._contracts import (Array, Boolean, Count, InstanceOf, Integer, Kind, OneOf, Positions, Real, Text, Vectors,
                         broadcast_to_leading, contract, entries, ordered)
from .rope import Layout
from .trained_range import Extension

__all__ = [
    "RopeType",
    "ROPE_PARAMETERS",
    "ROPE_TYPES",
    "REQUIRED_KEYS",
    "OPTIONAL_KEYS",
    "UnknownKeysWarning",
    "RopeSettings",
    "ConfigFrequencies",
    "read_config",
    "frequencies_at",
    "DynamicNTKState",
    "rotate",
    "config_extension",
    "PublishedConfig",
    "PUBLISHED",
    "published",
]

_COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor")
# Version-4 spellings of top-level keys in some model families' files.
_TOP_LEVEL_ALIASES = {"rotary_emb_base": "rope_theta",      # GPT-NeoX, Pythia
                      "rotary_pct": "partial_rotary_factor"}  # GPT-NeoX, Pythia

# What the values of a configuration must be, by key.
_LENGTH = Integer(1)
_FACTOR = Real(ge=1.0)
_POSITIVE = Real(gt=0.0)
_KEY_KINDS: dict[str, Kind] = {
    "rope_theta": _POSITIVE, "partial_rotary_factor": Real(gt=0.0, le=1.0, why="a fraction"),
    "max_position_embeddings": _LENGTH, "original_max_position_embeddings": _LENGTH,
    "head_dim": _LENGTH, "qk_rope_head_dim": _LENGTH, "hidden_size": _LENGTH, "num_attention_heads": _LENGTH,
    "factor": _FACTOR, "low_freq_factor": _POSITIVE, "high_freq_factor": _POSITIVE,
    "beta_fast": _POSITIVE, "beta_slow": _POSITIVE, "truncate": Boolean(), "attention_factor": _POSITIVE,
    "mscale": Real(ge=0.0), "mscale_all_dim": Real(ge=0.0), "short_factor": Array(positive=True),
    "long_factor": Array(positive=True),
}


class UnknownKeysWarning(UserWarning):
    """A RoPE dictionary holds keys its ``rope_type`` does not use."""


@dataclass(frozen=True)
class RopeSettings:
    """The RoPE settings of one (kind of) attention layer, as the library reads them.

    ``rotary_dim`` is the number of rotated components per head (``head_dim`` unless
    ``partial_rotary_factor < 1``); ``parameters`` holds the method's keys with the
    library's defaults applied; ``filled_in`` names the keys the library filled in;
    ``unknown_keys`` the keys it does not use; ``source`` says where the dictionary
    came from (``"rope_parameters"``, ``"rope_scaling"`` or ``"top level"``).
    """


    rope_type: str
    base: float
    head_dim: int
    rotary_dim: int
    partial_rotary_factor: float
    max_position_embeddings: int | None
    parameters: dict = field(default_factory=dict)
    filled_in: tuple = ()
    unknown_keys: tuple = ()
    source: str = "top level"

    @property
    def original_length(self) -> int | None:
        """The training length the method scales from (``None`` for default and proportional RoPE).

        ``original_max_position_embeddings`` for yarn, longrope and llama3,
        ``max_position_embeddings`` for linear and dynamic (the library's choice).
        """
        scales_from = ROPE_PARAMETERS[self.rope_type].scales_from
        if scales_from == "original_max_position_embeddings":
            return self.parameters["original_max_position_embeddings"]
        return self.max_position_embeddings if scales_from == "max_position_embeddings" else None


@dataclass(frozen=True)
class ConfigFrequencies:
    """What the library uses at one sequence length.

    ``inv_freq``: float64, shape ``(rotary_dim/2,)``, or ``(head_dim/2,)`` with
    trailing zeros for ``proportional``; ``attention_factor`` multiplies ``cos`` and
    ``sin``; ``proportional`` says how :func:`rotate` places the pairs.
    """


    inv_freq: np.ndarray
    attention_factor: float
    rope_type: str
    head_dim: int
    rotary_dim: int
    seq_len: int
    proportional: bool = False


# ---------------------------------------------------------------------------
# One table per rope type
# ---------------------------------------------------------------------------

@dataclass
class _Entry:
    """What reading one dictionary has found so far: the dictionary, the top level, the sizes, the keys filled in."""

    entry: dict
    top: dict
    max_len: int | None
    rotary_dim: int
    head_dim: int
    partial_rotary_factor: float
    filled: list = field(default_factory=list)

    def max_len_for(self, use: str) -> int:
        """``max_position_embeddings``, which the library uses as ``use``; ``ValueError`` when it is missing."""
        if self.max_len is None:
            raise ValueError(f"max_position_embeddings is missing: the library uses it as {use}")
        return self.max_len


@dataclass(frozen=True)
class RopeType:
    """One rope type as the library reads and computes it.

    ``required`` and ``optional`` are the keys of its dictionary; ``resolve`` turns the
    dictionary into the method's parameters with the library's defaults filled in;
    every value is then held to its key's kind (``kinds`` for this type, else the
    common ones), and ``rule`` checks the parameters together;
    ``compute(settings, seq_len)`` returns the frequencies and the attention factor;
    ``scales_from`` names the length the method scales from (or ``None``).
    """

    required: tuple
    optional: tuple
    resolve: Callable[[_Entry], dict]
    compute: Callable[[RopeSettings, int], tuple]
    rule: Callable[[dict], None] = lambda p: None
    scales_from: str | None = None
    kinds: dict = field(default_factory=dict)


def _original_length(c: _Entry) -> dict:
    """``original_max_position_embeddings``: the top level's (Phi-3), the dictionary's, or
    ``max_position_embeddings``."""
    if c.top.get("original_max_position_embeddings") is not None:
        if c.entry.get("original_max_position_embeddings", c.top["original_max_position_embeddings"]) \
                != c.top["original_max_position_embeddings"]:
            c.filled.append("original_max_position_embeddings (top level over the dictionary's)")
        return {"original_max_position_embeddings": c.top["original_max_position_embeddings"]}
    if c.entry.get("original_max_position_embeddings") is not None:
        return {"original_max_position_embeddings": c.entry["original_max_position_embeddings"]}
    c.filled.append("original_max_position_embeddings = max_position_embeddings")
    return {"original_max_position_embeddings": c.max_len_for("original_max_position_embeddings, missing too")}


def _factor_from_lengths(c: _Entry, original: int):
    """The dictionary's ``factor``, or the library's ``max_position_embeddings / original`` when it is null."""
    if c.entry.get("factor") is not None:
        return c.entry["factor"]
    c.filled.append("factor = max_position_embeddings / original_max_position_embeddings")
    return c.max_len_for("the length a missing factor is computed from") / original


# default: RoPE as trained
def _default(settings, n):
    # theta_i = base^(-2i/d)
    return scaling.unscaled(settings.rotary_dim, base=settings.base).inv_freq, 1.0


# linear: Position Interpolation by factor
def _linear(settings, n):
    p = settings.parameters
    # theta_i / factor
    return scaling.position_interpolation(settings.rotary_dim, p["factor"], settings.max_position_embeddings,
                                          settings.base).inv_freq, 1.0


# dynamic: NTK-aware with the library's scale at length n
def _dynamic(settings, n):
    return scaling.dynamic_ntk(settings.rotary_dim, L=settings.max_position_embeddings, base=settings.base,
                               current_length=n, hf_factor=settings.parameters["factor"]).inv_freq, 1.0


# yarn: the shipped ramp, and its attention factor
def _yarn_parameters(c: _Entry) -> dict:
    p = _original_length(c)
    p["factor"] = _factor_from_lengths(c, p["original_max_position_embeddings"])
    # the library writes `entry.get(key) or default`: 0 and null both mean the default
    p["beta_fast"] = c.entry.get("beta_fast") or 32.0
    p["beta_slow"] = c.entry.get("beta_slow") or 1.0
    p["truncate"] = c.entry.get("truncate", True)
    p.update({k: c.entry[k] for k in ("mscale", "mscale_all_dim", "attention_factor") if c.entry.get(k) is not None})
    return p


_BETAS = ordered("beta_slow", "beta_fast")


def _yarn(settings, n):
    p = settings.parameters
    inv = scaling.yarn_code(settings.rotary_dim, p["factor"], p["original_max_position_embeddings"], settings.base,
                            p["beta_fast"], p["beta_slow"], p["truncate"]).inv_freq
    return inv, _yarn_attention_factor(p)


def _yarn_attention_factor(p) -> float:
    """``attention_factor``, else the ``mscale`` ratio when both are set (and non-zero), else ``0.1 ln s + 1``."""
    if "attention_factor" in p:
        return p["attention_factor"]
    s = p["factor"]
    if s <= 1.0:
        return 1.0
    if p.get("mscale") and p.get("mscale_all_dim"):
        # (0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1)
        return (0.1 * p["mscale"] * math.log(s) + 1.0) / (0.1 * p["mscale_all_dim"] * math.log(s) + 1.0)
    return scaling.yarn_attention_factor(s)


# longrope: short or long factors by length, Phi-3's attention factor
def _longrope_parameters(c: _Entry) -> dict:
    p = _original_length(c)
    for key in ("short_factor", "long_factor"):
        values = c.entry[key]
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise ValueError(f"{key} must be a list of {c.rotary_dim // 2} numbers, got {values!r}")
        if len(values) != c.rotary_dim // 2:
            raise ValueError(f"{key} must have rotary_dim/2 = {c.rotary_dim // 2} entries (one per pair), "
                             f"got {len(values)}")
        p[key] = values
    p["factor"] = _factor_from_lengths(c, p["original_max_position_embeddings"])
    if c.entry.get("attention_factor") is not None:
        p["attention_factor"] = c.entry["attention_factor"]
    return p


def _longrope(settings, n):
    p, L = settings.parameters, settings.parameters["original_max_position_embeddings"]
    inv = scaling.longrope(settings.rotary_dim, 1.0, L, settings.base, p["short_factor"], p["long_factor"],
                           current_length=n).inv_freq
    # sqrt(1 + ln s / ln L), 1 when the factor is at most 1
    factor = p.get("attention_factor", 1.0 if p["factor"] <= 1.0 else scaling.longrope_attention_factor(p["factor"], L))
    return inv, factor


# llama3: Llama 3.1's bands; with equal band factors the blended band is empty (Llama 4)
def _llama3_parameters(c: _Entry) -> dict:
    return {**_original_length(c), **{k: c.entry[k] for k in ("factor", "low_freq_factor", "high_freq_factor")}}


_BANDS = ordered("low_freq_factor", "high_freq_factor", strict=False)


def _llama3(settings, n):
    d, base, p = settings.rotary_dim, settings.base, settings.parameters
    L, s = p["original_max_position_embeddings"], p["factor"]
    low, high = p["low_freq_factor"], p["high_freq_factor"]
    if high > low:
        return scaling.llama3(d, s, L, base, low, high).inv_freq, 1.0
    theta = scaling.unscaled(d, 1.0, L, base).inv_freq
    interpolated = scaling.position_interpolation(d, s, L, base).inv_freq
    # theta_i / s where the wavelength exceeds L / low, theta_i elsewhere
    return np.where(2.0 * np.pi / theta > L / low, interpolated, theta), 1.0


# proportional: the exponent over the whole head, on the first pairs only (Gemma 4)
def _proportional_parameters(c: _Entry) -> dict:
    pairs = int(c.partial_rotary_factor * c.head_dim // 2)
    if pairs < 1:
        raise ValueError(f"partial_rotary_factor ({c.partial_rotary_factor}) rotates no pair of a "
                         f"{c.head_dim}-wide head")
    return {"factor": c.entry.get("factor", 1.0), "rotated_pairs": pairs}


def _proportional(settings, n):
    k = settings.parameters["rotated_pairs"]
    # theta_i = base^(-2i/head_dim) / factor for the first k pairs
    kept = scaling.position_interpolation(settings.head_dim, settings.parameters["factor"],
                                          base=settings.base).inv_freq[:k]
    # frequency 0 (no rotation) for the rest
    return np.concatenate([kept, np.zeros(settings.head_dim // 2 - k)]), 1.0


def _factor_only(c: _Entry) -> dict:
    c.max_len_for("the length this rope type scales from")
    return {"factor": c.entry["factor"]}


#: The rope types the library (Transformers 5) computes, plus ``default``: one entry each.
ROPE_PARAMETERS: dict[str, RopeType] = {
    "default": RopeType((), (), lambda c: {}, _default),
    "linear": RopeType(("factor",), (), _factor_only, _linear, scales_from="max_position_embeddings"),
    "dynamic": RopeType(("factor",), (), _factor_only, _dynamic, scales_from="max_position_embeddings"),
    "yarn": RopeType(("factor",), ("original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
                                   "mscale", "mscale_all_dim", "truncate"),
                     _yarn_parameters, _yarn, lambda p: _BETAS(p["beta_slow"], p["beta_fast"]),
                     scales_from="original_max_position_embeddings"),
    "longrope": RopeType(("short_factor", "long_factor"), ("original_max_position_embeddings", "attention_factor",
                                                           "factor"),
                         _longrope_parameters, _longrope, scales_from="original_max_position_embeddings",
                         kinds={"factor": _POSITIVE}),
    "llama3": RopeType(("factor", "low_freq_factor", "high_freq_factor"), ("original_max_position_embeddings",),
                       _llama3_parameters, _llama3, lambda p: _BANDS(p["low_freq_factor"], p["high_freq_factor"]),
                       scales_from="original_max_position_embeddings"),
    "proportional": RopeType((), ("factor",), _proportional_parameters, _proportional),
}

#: The rope types, in the order of :data:`ROPE_PARAMETERS`.
ROPE_TYPES = tuple(ROPE_PARAMETERS)
#: Keys each rope type needs in its dictionary (``rope_theta`` may sit at the top level).
REQUIRED_KEYS = {name: t.required for name, t in ROPE_PARAMETERS.items()}
#: Keys each rope type may carry besides the required ones.
OPTIONAL_KEYS = {name: t.optional for name, t in ROPE_PARAMETERS.items()}


# ---------------------------------------------------------------------------
# Reading a configuration
# ---------------------------------------------------------------------------

#: A ``config.json`` dictionary, or the :class:`RopeSettings` read from one.
Config = Annotated[Mapping, InstanceOf((Mapping, RopeSettings),
                                       "a mapping (the dict of a config.json) or RopeSettings")]
LayerType = Annotated[str, Text()]


@contract
def read_config(config: Annotated[Mapping, InstanceOf(Mapping, "a mapping (the dict of a config.json)")],
                layer_type: LayerType | None = None) -> RopeSettings:
    r"""Read the RoPE settings of ``config`` (the dictionary a ``config.json`` holds).

    Accepts version 5 (``rope_parameters``, with ``rope_theta`` inside or beside it)
    and version 4 (``rope_scaling`` with ``type`` or ``rope_type``, ``rope_theta`` at
    the top level, or no dictionary at all for plain RoPE). ``layer_type`` picks one
    entry of a dictionary nested by layer type (``"full_attention"``,
    ``"sliding_attention"``, as Gemma 3 and gpt-oss declare in ``layer_types``);
    Gemma 3's version-4 key ``rope_local_base_freq`` is read as the sliding layers'
    base, and its ``rope_scaling`` applies to the full-attention layers only, as the
    library does. GPT-NeoX's ``rotary_emb_base`` and ``rotary_pct`` are read as
    ``rope_theta`` and ``partial_rotary_factor``; DeepSeek's ``qk_rope_head_dim`` as the
    rotated head size.

    Raises ``ValueError`` naming the key for a missing required key, an unknown rope
    type, and inconsistent values (a factor below 1, ``high_freq_factor <
    low_freq_factor``, ``beta_fast <= beta_slow``, factor lists of the wrong length,
    ``rope_scaling`` and ``rope_parameters`` that disagree). Keys the rope type does
    not use are listed in ``unknown_keys`` and reported with :class:`UnknownKeysWarning`.
    """
    top = {_TOP_LEVEL_ALIASES.get(k, k): v for k, v in config.items()}
    source, entry = _rope_dictionary(top, layer_type)
    rope_type = _rope_type(entry)
    kind = ROPE_PARAMETERS[rope_type]
    head_dim = _head_dim(top)
    prf = _value("partial_rotary_factor", entry.get("partial_rotary_factor", top.get("partial_rotary_factor", 1.0)))
    base = _base(entry.get("rope_theta", top.get("rope_theta")))
    rotary_dim = _rotary_dim(head_dim, prf, rope_type)
    max_len = top.get("max_position_embeddings")
    max_len = None if max_len is None else _value("max_position_embeddings", max_len)
    unknown = _unknown_keys(entry, kind, rope_type, source)
    _required_keys(entry, kind, rope_type, source)
    reading = _Entry(entry, top, max_len, rotary_dim, head_dim, prf)
    # the library's defaults filled in, each value held to its key's kind, then the rules between them
    parameters = {k: _value(k, v, kind.kinds) for k, v in kind.resolve(reading).items()}
    kind.rule(parameters)
    return RopeSettings(rope_type=rope_type, base=base, head_dim=head_dim, rotary_dim=rotary_dim,
                        partial_rotary_factor=prf, max_position_embeddings=max_len,
                        parameters=parameters, filled_in=tuple(reading.filled), unknown_keys=unknown,
                        source=source)


def _settings(config, layer_type) -> RopeSettings:
    return config if isinstance(config, RopeSettings) else read_config.__wrapped__(config, layer_type)


@contract
def frequencies_at(config: Config, seq_len: Count, layer_type: LayerType | None = None) -> ConfigFrequencies:
    r"""The frequencies and attention factor the library uses for a sequence of ``seq_len`` tokens.

    ``config`` is a ``config.json`` dictionary or :class:`RopeSettings`; ``seq_len``
    the current length (the largest position plus one). Only ``dynamic`` and
    ``longrope`` depend on it. For ``dynamic`` this is a fresh model's answer: the
    library then keeps the frequencies of the longest input seen
    (:class:`DynamicNTKState`). Float64 throughout (the library: float32).
    """
    settings = _settings(config, layer_type)
    inv_freq, factor = ROPE_PARAMETERS[settings.rope_type].compute(settings, seq_len)
    return ConfigFrequencies(inv_freq=inv_freq, attention_factor=float(factor), rope_type=settings.rope_type,
                             head_dim=settings.head_dim, rotary_dim=settings.rotary_dim, seq_len=seq_len,
                             proportional=settings.rope_type == "proportional")


def _quietly(config, layer_type) -> RopeSettings:
    """The settings, read without warning (the body reads them again and warns once)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownKeysWarning)
        return _settings(config, layer_type)


def _is_dynamic(config, layer_type) -> None:
    rope_type = _quietly(config, layer_type).rope_type
    if rope_type != "dynamic":
        raise ValueError(f"config must have rope_type 'dynamic' (DynamicNTKState follows dynamic NTK scaling), "
                         f"got {rope_type!r}")


class DynamicNTKState:
    r"""The library's stateful dynamic NTK scaling (``rope_type="dynamic"``), step by step.

    Transformers' ``dynamic_rope_update`` keeps the frequencies of the longest input
    seen: for a sequence of length ``l`` (largest position plus one) it recomputes
    them when ``l`` exceeds the longest so far, keeps them for shorter inputs, and
    goes back to the original frequencies only when ``l`` is *strictly below*
    ``max_position_embeddings``. So the same input gets different frequencies
    depending on what came before, and an input of exactly ``max_position_embeddings``
    tokens after a longer one keeps the grown frequencies. The stateless rule of the
    YaRN paper (Peng et al. 2024, section 3.3) uses ``max(1, l/L)`` for each input on
    its own: :func:`frequencies_at` gives the library's formula with a fresh state.
    """

    @contract(_is_dynamic)
    def __init__(self, config: Config, layer_type: LayerType | None = None):
        self.settings = _settings(config, layer_type)
        self.original_length = self.settings.max_position_embeddings
        self.longest = self.original_length
        self._original = frequencies_at.__wrapped__(self.settings, self.original_length)
        self.current = self._original

    @contract
    def update(self, seq_len: Count) -> ConfigFrequencies:
        """Feed one input of ``seq_len`` tokens; return the frequencies it is rotated with."""
        if seq_len > self.longest:
            # a longer input than any before: the frequencies at its length
            self.current = frequencies_at.__wrapped__(self.settings, seq_len)
            self.longest = seq_len
        if seq_len < self.original_length and self.longest > self.original_length:
            # strictly below the original length: back to the original frequencies
            self.current = self._original
            self.longest = self.original_length
        return self.current


def _head_width(x, frequencies) -> None:
    if x.shape[-1] != frequencies.head_dim:
        raise ValueError(f"x must have last dimension head_dim = {frequencies.head_dim}, got shape {x.shape}")


@contract(_head_width, broadcast_to_leading("positions", "x"),
          entries("positions.size * head_dim", lambda positions, frequencies: positions.size * frequencies.head_dim))
def rotate(x: Vectors, positions: Positions,
           frequencies: Annotated[ConfigFrequencies, InstanceOf(ConfigFrequencies, "what frequencies_at returns")],
           layout: Layout = "split") -> np.ndarray:
    r"""Rotate ``x`` (shape ``(..., n, head_dim)``) as the library does, attention factor included.

    Partial rotary: the first ``rotary_dim`` components are rotated with
    :func:`companion.rope.rotate` in ``layout`` and the rest pass unchanged.
    ``proportional``: the whole head is rotated, pairs with frequency 0 stay put.
    The result is multiplied by ``attention_factor`` on the rotated components only
    (the library multiplies ``cos`` and ``sin``, which act on those). ``layout`` is
    ``"split"`` for the library's own checkpoints; ``"adjacent"`` gives the same
    scores with ``W_Q`` and ``W_K`` permuted (:func:`companion.rope.layout_permutation`).
    Float64, shape of ``x``.
    """
    r = frequencies.rotary_dim
    # the first rotary_dim components rotated, times the attention factor
    turned = rope.rotate.__wrapped__(x[..., :r], positions, frequencies.inv_freq, layout) * frequencies.attention_factor
    # the rest unchanged
    return np.concatenate([turned, x[..., r:]], axis=-1)


def _trained_range(config, context, trained_length, layer_type) -> None:
    settings = _quietly(config, layer_type)
    L = trained_length if trained_length is not None else (settings.original_length
                                                           or settings.max_position_embeddings)
    if L is None:
        raise ValueError("trained_length must be given: the configuration names no training length")
    if context < L:
        raise ValueError(f"context must be at least the trained length (trained_length {L}), got {context}")


@contract(_trained_range)
def config_extension(config: Config, context: Count, trained_length: Count | None = None,
                     layer_type: LayerType | None = None) -> Extension:
    r"""Figure 4's quantities for a real configuration at its advertised ``context``.

    The reference frequencies are the unscaled ones of the same base and rotated
    size (for ``proportional``, its non-zero pairs). The trained range is
    ``trained_length`` (default: :attr:`RopeSettings.original_length`, else
    ``max_position_embeddings``); the extension factor is ``s = context /
    trained_length`` (at least 1). Returns :class:`companion.trained_range.Extension` with
    ``method`` set to the rope type: per-pair turns in training, angle ratios
    ``s theta'_i / theta_i`` (:func:`companion.trained_range.angle_ratio`), the pairs out of
    range (:func:`companion.trained_range.out_of_range`) and their count.
    """
    settings = _settings(config, layer_type)
    L = trained_length or settings.original_length or settings.max_position_embeddings
    used = frequencies_at.__wrapped__(settings, context)
    # the rotating pairs, and the unscaled frequencies of the same base and rotated size
    scaled = used.inv_freq[used.inv_freq > 0]
    d = settings.head_dim if settings.rope_type == "proportional" else settings.rotary_dim
    theta = rope.inv_freq.__wrapped__(d, settings.base)[:scaled.size]
    return Extension.of(settings.rope_type, scaled, theta, context / L, L, used.attention_factor)


# ---------------------------------------------------------------------------
# Private: the keys of a configuration
# ---------------------------------------------------------------------------

def _value(key: str, value, kinds: dict | None = None):
    """``value`` held to the kind of ``key``, from ``kinds`` or the common ones (keys without one pass as they are)."""
    kind = (kinds or {}).get(key, _KEY_KINDS.get(key))
    return value if kind is None else kind(key, value)


def _rotary_dim(head_dim: int, prf: float, rope_type: str) -> int:
    """Components rotated per head: all for ``proportional``, else ``int(prf * head_dim)``, even and >= 2."""
    rotary_dim = head_dim if rope_type == "proportional" else int(head_dim * prf)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(f"partial_rotary_factor * head_dim must give an even rotated size >= 2, "
                         f"got int({prf} * {head_dim}) = {int(head_dim * prf)}")
    return rotary_dim


def _unknown_keys(entry: dict, kind: RopeType, rope_type: str, source: str) -> tuple:
    """The keys ``rope_type`` does not use, reported with :class:`UnknownKeysWarning`."""
    unknown = tuple(sorted(set(entry) - set(_COMMON_KEYS) - set(kind.required) - set(kind.optional)))
    if unknown:
        warnings.warn(f"rope_type {rope_type!r} does not use the keys {', '.join(unknown)} "
                      f"(in {source}); they change nothing the library computes", UnknownKeysWarning,
                      stacklevel=4)
    return unknown


def _required_keys(entry: dict, kind: RopeType, rope_type: str, source: str) -> None:
    missing = [k for k in kind.required if k not in entry]
    if missing:
        raise ValueError(f"rope_type {rope_type!r} needs the key {missing[0]!r} in {source}"
                         f" (required: {', '.join(kind.required)})")


def _base(value) -> float:
    if value is None:
        raise ValueError("rope_theta is missing: give the RoPE base in rope_parameters or at the top level")
    base = _value("rope_theta", value)
    if base == 1.0:
        raise ValueError("rope_theta must be a base > 0 and != 1 (every frequency would be 1), got 1.0")
    return base


def _rope_dictionary(top: dict, layer_type: str | None) -> tuple[str, dict]:
    """Find the RoPE dictionary (and say where it came from); merge version-4 spellings."""
    v5, v4 = top.get("rope_parameters"), top.get("rope_scaling")
    for name, value in (("rope_parameters", v5), ("rope_scaling", v4)):
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(f"{name} must be a dictionary or null, got {type(value).__name__}")
    layer_types = set(top.get("layer_types") or ())
    if "rope_local_base_freq" in top:  # Gemma 3, version 4: local layers have their own base
        v5 = {"sliding_attention": {"rope_type": "default", "rope_theta": top["rope_local_base_freq"]},
              "full_attention": {"rope_type": "default", **_normalised(v4 or {})}} if v5 is None else v5
        v4 = None
        layer_types |= {"sliding_attention", "full_attention"}
    if v5 is not None and v4 is not None and _normalised(v5) != _normalised(v4):
        raise ValueError("rope_scaling and rope_parameters disagree: keep one (rope_parameters in "
                         "version 5); the library would use rope_scaling")
    name, entry = ("rope_parameters", v5) if v5 is not None else ("rope_scaling", v4)
    if entry is None:
        return "top level", {}
    nested = [k for k in entry if k in layer_types and isinstance(entry[k], Mapping)]
    if nested:
        if layer_type is None:
            raise ValueError(f"{name} is nested by layer type ({', '.join(nested)}): pass layer_type")
        if layer_type not in nested:
            raise ValueError(f"layer_type must be one of {', '.join(map(repr, nested))}; got {layer_type!r}")
        return f"{name}[{layer_type!r}]", dict(entry[layer_type])
    if layer_type is not None:
        raise ValueError(f"layer_type must be None: {name} is not nested by layer type, got {layer_type!r}")
    return name, dict(entry)


def _normalised(entry: Mapping) -> dict:
    out = dict(entry)
    if "type" in out:
        out.setdefault("rope_type", out.pop("type"))
    return out


def _rope_type(entry: dict) -> str:
    spelled = {entry[k] for k in ("rope_type", "type") if k in entry}
    if len(spelled) > 1:
        raise ValueError(f"rope_type and type disagree: {entry['rope_type']!r} and {entry['type']!r}")
    rope_type = spelled.pop() if spelled else "default"
    return OneOf(*ROPE_TYPES)("rope_type", rope_type)


def _head_dim(top: dict) -> int:
    for key in ("qk_rope_head_dim", "head_dim"):
        if top.get(key) is not None:
            return _value(key, top[key])
    hidden, heads = top.get("hidden_size"), top.get("num_attention_heads")
    if hidden is None or heads is None:
        raise ValueError("head_dim is missing: give head_dim, or hidden_size and num_attention_heads")
    hidden, heads = _value("hidden_size", hidden), _value("num_attention_heads", heads)
    if hidden % heads:
        raise ValueError(f"hidden_size ({hidden}) must be a multiple of num_attention_heads ({heads})")
    return hidden // heads


# ---------------------------------------------------------------------------
# Published configurations (package data; the sources are text, nothing is fetched)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PublishedConfig:
    """One model's RoPE settings as published, with where each value comes from.

    ``config`` holds the keys of the model's ``config.json`` that position
    encoding depends on, spelled as published (version 4 or 5); ``context`` is the
    advertised context length and ``trained_length`` the length the position
    scheme was trained on (the reference of figure 4's ratios); ``layer_type`` picks
    one entry of a nested dictionary; ``sources`` lists addresses, as text.
    """


    name: str
    config: dict
    context: int
    trained_length: int
    sources: tuple
    note: str = ""
    layer_type: str | None = None


def _published() -> tuple[PublishedConfig, ...]:
    """Every ``companion/data/published/*.json``, in the order of the file names."""
    folder = resources.files("companion") / "data" / "published"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    records = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    return tuple(PublishedConfig(**{**r, "sources": tuple(r["sources"])}) for r in records)


#: Real configurations, in the order of the chapter's table.
PUBLISHED = _published()


@contract
def published(name: Annotated[str, OneOf(*(p.name for p in PUBLISHED))]) -> PublishedConfig:
    """The entry of :data:`PUBLISHED` called ``name``."""
    return next(p for p in PUBLISHED if p.name == name)
