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
``ntk_alpha``      static NTK-aware RoPE with base ``base * alpha^(d/(d-2))``: what
                   Hunyuan's class makes of ``dynamic`` with ``alpha`` (no file
                   spells this type)
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

**What the file leaves to the class.** A published file often leaves out what equals
its model class's defaults (a multimodal model's ``text_config`` is written as the
difference from them): the reader fills them in from :func:`model_defaults`, a table
read from the library's configuration classes by ``python -m bookwork.model_defaults``, and
names each key it filled in. :func:`layer_plan` gives every layer's settings (layer
types with their own base, head size or method, layers without RoPE), and M-RoPE
files (``mrope_section``) give each rotated pair a position axis
(:mod:`companion.mrope`). Keys that change what the model computes with positions
outside the frequencies are listed in ``effects``: :func:`softmax_scale_factor` and
:func:`query_scale` compute those of the DeepSeek family and Ministral 3.

:data:`PUBLISHED` holds the position settings of published models (Llama 2 to
Kimi K2) with the sources of their values, as text: one JSON file per model in the
package data ``companion/data/published/``, read in the order of their file names
(a new model is a new file there); chapter 10 runs each through
:func:`config_extension`.
"""
from __future__ import annotations

import functools
import json
import math
import warnings
from dataclasses import dataclass, field
from importlib import resources
from typing import Annotated, Callable, Mapping

import numpy as np

from . import mrope, rope, scaling
from ._contracts import (Array, Boolean, Count, InstanceOf, Integer, Kind, OneOf, PositiveCounts, Positions, Real,
                         Text, Vectors, contract, entries, ordered)
from .rope import Layout
from .trained_range import Extension

__all__ = [
    "RopeType",
    "ROPE_PARAMETERS",
    "ROPE_TYPES",
    "REQUIRED_KEYS",
    "OPTIONAL_KEYS",
    "UnknownKeysWarning",
    "UnmodelledEffectWarning",
    "PositionEffect",
    "RopeSettings",
    "ConfigFrequencies",
    "LayerRope",
    "model_defaults",
    "read_config",
    "frequencies_at",
    "layer_plan",
    "query_scale",
    "softmax_scale_factor",
    "DynamicNTKState",
    "rotate",
    "config_extension",
    "PublishedConfig",
    "PUBLISHED",
    "published",
]

_COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
# Version-4 spellings of top-level keys in some model families' files.
_TOP_LEVEL_ALIASES = {"rotary_emb_base": "rope_theta",      # GPT-NeoX, Pythia
                      "rotary_pct": "partial_rotary_factor"}  # GPT-NeoX, Pythia
# The sizes a file may leave to its class, in the order the library resolves them.
_SIZE_KEYS = ("head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings", "qk_rope_head_dim")

# What the values of a configuration must be, by key.
_LENGTH = Integer(1)
_FACTOR = Real(ge=1.0)
_POSITIVE = Real(gt=0.0)
_KEY_KINDS: dict[str, Kind] = {
    "rope_theta": _POSITIVE, "partial_rotary_factor": Real(gt=0.0, le=1.0, why="a fraction"),
    "max_position_embeddings": _LENGTH, "original_max_position_embeddings": _LENGTH,
    "head_dim": _LENGTH, "global_head_dim": _LENGTH, "qk_rope_head_dim": _LENGTH, "hidden_size": _LENGTH,
    "num_attention_heads": _LENGTH, "num_hidden_layers": _LENGTH, "rotary_dim": _LENGTH,
    "factor": _FACTOR, "low_freq_factor": _POSITIVE, "high_freq_factor": _POSITIVE, "alpha": _FACTOR,
    "beta_fast": _POSITIVE, "beta_slow": _POSITIVE, "truncate": Boolean(), "attention_factor": _POSITIVE,
    "mscale": Real(ge=0.0), "mscale_all_dim": Real(ge=0.0), "short_factor": Array(positive=True),
    "long_factor": Array(positive=True), "mrope_section": PositiveCounts(),
}


class UnknownKeysWarning(UserWarning):
    """A RoPE dictionary holds keys the library's computation for its ``rope_type`` does not read."""


class UnmodelledEffectWarning(UserWarning):
    """A key changes what the model's class computes with positions, and this module does not compute it."""


# ---------------------------------------------------------------------------
# What the model class adds to the file
# ---------------------------------------------------------------------------

@contract()
def model_defaults() -> dict:
    """The values Transformers fills in for keys a ``config.json`` leaves out, by ``model_type``.

    Read from the library's configuration classes by ``python -m bookwork.model_defaults`` and
    stored as package data (``companion/data/model_defaults.json``):
    ``{"transformers": version, "model_types": {model_type: {...}}, "text_model_types":
    {multimodal type: text type}, "model_code": {behaviour: [model types]}}``. Each
    model type lists the ``rope_parameters`` its class builds from a file without RoPE
    keys (nested by layer type where the class nests them), the declared defaults of
    ``head_dim``, ``hidden_size``, ``num_attention_heads``, ``max_position_embeddings``,
    ``partial_rotary_factor`` and ``qk_rope_head_dim`` (``None``: derived from the
    others), the rule by which it sets the head size its rotary module reads, and
    ``head_dim_by_layer_type`` where layer types differ in head size (Gemma 4).
    """
    return _defaults_table()


@functools.cache
def _defaults_table() -> dict:
    """``companion/data/model_defaults.json``, read once."""
    return json.loads((resources.files("companion") / "data" / "model_defaults.json").read_text(encoding="utf-8"))


def _model_code(name: str) -> frozenset:
    """The model types whose modeling code does ``name`` (``model_defaults()["model_code"]``).

    ``softmax_mscale``: the attention multiplies its softmax scale by
    ``(0.1 mscale_all_dim ln s + 1)^2`` (DeepSeek-V2's ``yarn_get_mscale``);
    ``query_scale``: every query is multiplied by ``1 + beta ln(1 + floor(m / L))``
    (Ministral 3's ``llama_4_scaling_beta``); ``ntk_alpha``: ``alpha`` beside
    ``rope_type: dynamic`` is static NTK with base ``b alpha^(d/(d-2))`` (Hunyuan);
    ``mrope`` and ``mrope_interleaved``: the classes that give the pairs to three
    position axes, and those that interleave the axes (Qwen3-VL, Huang et al. 2026)
    rather than cut the pairs into consecutive sections (Qwen2-VL, Wang et al. 2024).
    The library decides the M-RoPE layout by class; it does not read the file's
    ``mrope_interleaved`` flag, which other engines read.
    """
    return frozenset(_defaults_table()["model_code"][name])


@dataclass(frozen=True)
class PositionEffect:
    """A key of the file that changes what the model computes with positions outside the frequencies.

    ``key`` and ``value`` as in the file; ``effect`` says what the model class does with
    it; ``modelled`` names the function of this module that computes it, or is empty
    when it is only reported.
    """

    key: str
    value: object
    effect: str
    modelled: str = ""


@dataclass(frozen=True)
class RopeSettings:
    """The RoPE settings of one (kind of) attention layer, as the library reads them.

    ``rotary_dim`` is the number of rotated components per head (``head_dim`` unless
    ``partial_rotary_factor < 1``); ``parameters`` holds the method's keys with the
    library's defaults applied; ``filled_in`` names the keys the library filled in;
    ``unknown_keys`` the keys it does not use; ``source`` says where the dictionary
    came from (``"rope_parameters"``, ``"rope_scaling"`` or ``"top level"``).
    ``model_type`` is the type whose class defaults were used; ``mrope_section`` and
    ``mrope_layout`` (``"sectioned"`` or ``"interleaved"``) give the pairs of each
    position axis for M-RoPE; ``effects`` lists the keys that change positions outside
    the frequencies (:class:`PositionEffect`).
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
    model_type: str | None = None
    mrope_section: tuple | None = None
    mrope_layout: str | None = None
    effects: tuple = ()

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
    ``sin``; ``proportional`` says how :func:`rotate` places the pairs; ``axes``, for
    M-RoPE, the position axis that turns each pair (:func:`companion.mrope.pair_axes`).
    """

    inv_freq: np.ndarray
    attention_factor: float
    rope_type: str
    head_dim: int
    rotary_dim: int
    seq_len: int
    proportional: bool = False
    axes: np.ndarray | None = None


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


# linear: Position Interpolation by factor (it reads no length)
def _linear(settings, n):
    # theta_i / factor
    return scaling.position_interpolation.__wrapped__(settings.rotary_dim, settings.parameters["factor"],
                                                      base=settings.base).inv_freq, 1.0


# dynamic: NTK-aware with the library's scale at length n
def _dynamic(settings, n):
    return scaling.dynamic_ntk(settings.rotary_dim, L=settings.max_position_embeddings, base=settings.base,
                               current_length=n, hf_factor=settings.parameters["factor"]).inv_freq, 1.0


def _dynamic_parameters(c: _Entry) -> dict:
    c.max_len_for("the length rope_type 'dynamic' scales from")
    return {"factor": c.entry["factor"]}


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


# equal betas are a step (Kimi K2): the ramp's ends, rounded outward, one pair apart; the library
# only warns when beta_fast < beta_slow and turns its ramp upside down
_BETAS = ordered("beta_slow", "beta_fast", strict=False, why=": the library turns its ramp upside down below it")


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


# ntk_alpha: Hunyuan's static NTK-aware base, the same at every length
def _ntk_alpha(settings, n):
    d, alpha = settings.rotary_dim, settings.parameters["alpha"]
    # theta_i = (base alpha^(d/(d-2)))^(-2i/d)
    return rope.inv_freq.__wrapped__(d, settings.base * alpha ** (d / (d - 2))), 1.0


#: The rope types the library (Transformers 5) computes, plus ``default``: one entry each.
ROPE_PARAMETERS: dict[str, RopeType] = {
    "default": RopeType((), (), lambda c: {}, _default),
    "linear": RopeType(("factor",), (), lambda c: {"factor": c.entry["factor"]}, _linear,
                       scales_from="max_position_embeddings"),
    "dynamic": RopeType(("factor",), (), _dynamic_parameters, _dynamic, scales_from="max_position_embeddings"),
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
    "ntk_alpha": RopeType(("alpha",), ("factor",), lambda c: {"alpha": c.entry["alpha"]}, _ntk_alpha),
}

#: The rope types, in the order of :data:`ROPE_PARAMETERS`.
ROPE_TYPES = tuple(ROPE_PARAMETERS)
#: Keys each rope type needs in its dictionary (``rope_theta`` may sit at the top level).
REQUIRED_KEYS = {name: t.required for name, t in ROPE_PARAMETERS.items()}
#: Keys each rope type may carry besides the required ones.
OPTIONAL_KEYS = {name: t.optional for name, t in ROPE_PARAMETERS.items()}
# The types a file may spell: ntk_alpha is what one class makes of 'dynamic' with alpha.
_SPELLED_TYPES = tuple(t for t in ROPE_TYPES if t != "ntk_alpha")


# ---------------------------------------------------------------------------
# Reading a configuration
# ---------------------------------------------------------------------------

#: A ``config.json`` dictionary, or the :class:`RopeSettings` read from one.
Config = Annotated[Mapping, InstanceOf((Mapping, RopeSettings),
                                       "a mapping (the dict of a config.json) or RopeSettings")]
#: A ``config.json`` dictionary.
ConfigFile = Annotated[Mapping, InstanceOf(Mapping, "a mapping (the dict of a config.json)")]
LayerType = Annotated[str, Text()]


@contract
def read_config(config: ConfigFile, layer_type: LayerType | None = None) -> RopeSettings:
    r"""Read the RoPE settings of ``config`` (the dictionary a ``config.json`` holds).

    Accepts version 5 (``rope_parameters``, with ``rope_theta`` inside or beside it)
    and version 4 (``rope_scaling`` with ``type`` or ``rope_type``, ``rope_theta`` at
    the top level, or no dictionary at all for plain RoPE), and a multimodal file
    whose language model sits under ``text_config``. ``layer_type`` picks one entry of a
    dictionary nested by layer type (``"full_attention"``, ``"sliding_attention"``, as
    Gemma 3 and gpt-oss declare in ``layer_types``).

    The file is read the way the library builds its configuration class from it:

    * **class defaults**: a key the file leaves out takes the default of the class its
      ``model_type`` names (:func:`model_defaults`; Gemma 3's ``text_config`` names no
      base); a file that names no model type, or one the library does not ship, must
      give every key it needs. A remote-code file whose ``auto_map`` names a class the
      library ships (Kimi K2: ``DeepseekV3Config``) is read as that class's type.
    * **per-layer settings**: for a class that nests its defaults by layer type, a flat
      version-4 dictionary applies to the full-attention layers (Gemma 3); Gemma 3's
      ``rope_local_base_freq`` is the sliding layers' base; ``global_head_dim`` is the
      head size of the full-attention layers (Gemma 4).
    * **M-RoPE**: ``rope_type: "mrope"`` (Qwen2-VL, Qwen2.5-VL) is default RoPE with
      ``mrope_section``; the sections give the pairs of the temporal, height and width
      axes, consecutive or interleaved as the model class lays them out.
    * **old spellings**: GPT-NeoX's ``rotary_emb_base`` and ``rotary_pct``; MiniMax's
      ``rotary_dim`` (rotated components, ``partial_rotary_factor = rotary_dim /
      head_dim``); DeepSeek's ``qk_rope_head_dim`` as the rotated head size.
    * **keys outside the frequencies** are listed in ``effects``: the DeepSeek family's
      softmax ``mscale``, Ministral 3's ``llama_4_scaling_beta``; Hunyuan's ``alpha`` turns
      ``dynamic`` into static NTK-alpha (``rope_type`` ``"ntk_alpha"``).

    Raises ``ValueError`` naming the key for a missing required key (and the model
    type whose defaults were looked up), an unknown rope type, and inconsistent values
    (a factor below 1, ``high_freq_factor < low_freq_factor``, ``beta_fast <
    beta_slow``, factor lists of the wrong length, M-RoPE sections that do not cover
    the rotated pairs, ``rope_scaling`` and ``rope_parameters`` that disagree). Keys the
    library's computation does not read are listed in ``unknown_keys`` and reported
    with :class:`UnknownKeysWarning`; keys that act outside the frequencies and are not
    computed here, with :class:`UnmodelledEffectWarning`.
    """
    top, model_type, filled = _with_class_defaults(config)
    source, entry = _rope_dictionary(top, layer_type, model_type, filled)
    rope_type = _rope_type(entry, model_type, filled)
    kind = ROPE_PARAMETERS[rope_type]
    head_dim = _head_dim(top, layer_type, model_type)
    prf = _partial_rotary_factor(entry, top, head_dim, filled)
    base = _base(entry.get("rope_theta", top.get("rope_theta")), model_type)
    rotary_dim = _rotary_dim(head_dim, prf, rope_type)
    max_len = top.get("max_position_embeddings")
    max_len = None if max_len is None else _value("max_position_embeddings", max_len)
    effects = _position_effects(entry, model_type, rope_type)
    unknown = _unknown_keys(entry, kind, rope_type, source, effects)
    _required_keys(entry, kind, rope_type, source)
    reading = _Entry(entry, top, max_len, rotary_dim, head_dim, prf, filled)
    # the library's defaults filled in, each value held to its key's kind, then the rules between them
    parameters = {k: _value(k, v, kind.kinds) for k, v in kind.resolve(reading).items()}
    kind.rule(parameters)
    sections, layout = _mrope_axes(entry, model_type, rotary_dim)
    return RopeSettings(rope_type=rope_type, base=base, head_dim=head_dim, rotary_dim=rotary_dim,
                        partial_rotary_factor=prf, max_position_embeddings=max_len,
                        parameters=parameters, filled_in=tuple(reading.filled), unknown_keys=unknown,
                        source=source, model_type=model_type, mrope_section=sections, mrope_layout=layout,
                        effects=effects)


def _settings(config, layer_type) -> RopeSettings:
    return config if isinstance(config, RopeSettings) else read_config.__wrapped__(config, layer_type)


@contract
def frequencies_at(config: Config, seq_len: Count, layer_type: LayerType | None = None) -> ConfigFrequencies:
    r"""The frequencies and attention factor the library uses for a sequence of ``seq_len`` tokens.

    ``config`` is a ``config.json`` dictionary or :class:`RopeSettings`; ``seq_len``
    the current length (the largest position plus one). Only ``dynamic`` and
    ``longrope`` depend on it. For ``dynamic`` this is a fresh model's answer: the
    library then keeps the frequencies of the longest input seen
    (:class:`DynamicNTKState`). For M-RoPE, ``axes`` gives each pair's position axis.
    Float64 throughout (the library: float32).
    """
    settings = _settings(config, layer_type)
    inv_freq, factor = ROPE_PARAMETERS[settings.rope_type].compute(settings, seq_len)
    axes = None if settings.mrope_section is None else mrope.pair_axes.__wrapped__(list(settings.mrope_section),
                                                                                   settings.mrope_layout)
    return ConfigFrequencies(inv_freq=inv_freq, attention_factor=float(factor), rope_type=settings.rope_type,
                             head_dim=settings.head_dim, rotary_dim=settings.rotary_dim, seq_len=seq_len,
                             proportional=settings.rope_type == "proportional", axes=axes)


def _quietly(config, layer_type) -> RopeSettings:
    """The settings, read without warning (the body reads them again and warns once)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownKeysWarning)
        warnings.simplefilter("ignore", UnmodelledEffectWarning)
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


def _is_grid(positions, frequencies) -> bool:
    """A (temporal, height, width) grid of shape ``(3, n)`` for an M-RoPE configuration."""
    return frequencies.axes is not None and positions.ndim == 2 and positions.shape[0] == len(mrope.AXES)


def _one_position_per_vector(x, positions, frequencies) -> None:
    """``positions`` broadcasts to ``x.shape[:-1]``; for M-RoPE, each row of a ``(3, n)`` grid does."""
    leading = positions.shape[1:] if _is_grid(positions, frequencies) else positions.shape
    try:
        fits = np.broadcast_shapes(tuple(leading), tuple(x.shape[:-1])) == tuple(x.shape[:-1])
    except ValueError:
        fits = False
    if not fits:
        grid = "" if frequencies.axes is not None else (
            " (a (temporal, height, width) grid of shape (3, n) needs an M-RoPE configuration: mrope_section)")
        raise ValueError(f"positions of shape {tuple(positions.shape)} must broadcast to x.shape[:-1] = "
                         f"{tuple(x.shape[:-1])}{grid}")


@contract(_head_width, _one_position_per_vector,
          entries("positions.size * head_dim", lambda positions, frequencies: positions.size * frequencies.head_dim))
def rotate(x: Vectors, positions: Positions,
           frequencies: Annotated[ConfigFrequencies, InstanceOf(ConfigFrequencies, "what frequencies_at returns")],
           layout: Layout = "split") -> np.ndarray:
    r"""Rotate ``x`` (shape ``(..., n, head_dim)``) as the library does, attention factor included.

    ``positions``: one position per row, or for an M-RoPE configuration a
    (temporal, height, width) grid of shape ``(3, n)``
    (:func:`companion.mrope.multimodal_positions`), each axis turning its own pairs
    (:func:`companion.mrope.rotate`); a text token, whose three positions are equal,
    turns as in 1-D RoPE.

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
    if _is_grid(positions, frequencies):
        # pair i turned by p_{a(i)} theta_i: each axis's positions on its own pairs
        turned = mrope.rotate.__wrapped__(x[..., :r], positions, frequencies.inv_freq, frequencies.axes, layout)
    else:
        # pair i turned by m theta_i
        turned = rope.rotate.__wrapped__(x[..., :r], positions, frequencies.inv_freq, layout)
    # the rotated components times the attention factor, the rest unchanged
    return np.concatenate([turned * frequencies.attention_factor, x[..., r:]], axis=-1)


@dataclass(frozen=True)
class LayerRope:
    """The RoPE of one layer: ``settings`` is ``None`` for a layer that rotates nothing (``why`` says why)."""

    index: int
    layer_type: str | None
    settings: RopeSettings | None
    why: str = ""


@contract
def layer_plan(config: ConfigFile) -> tuple[LayerRope, ...]:
    r"""The RoPE settings of every layer of ``config``, as the model's layers read them.

    A layer has no RoPE when its ``layer_types`` entry is not an attention layer
    (Qwen3.5's and Qwen3-Next's ``linear_attention``, state-space or convolution
    layers), when ``no_rope_layers`` marks it 0 (Llama 4, SmolLM3: every fourth
    layer), when its entry of a dictionary nested by layer type is null, or when its
    class rotates only in sliding-window layers and it is not one (Cohere 2, EXAONE 4;
    Yang et al. 2025's RNoPE-SWA). The others get :func:`read_config` for their layer
    type (its own base, head size and method). The number of layers is
    ``num_hidden_layers`` (or the length of ``layer_types``).
    """
    top, model_type, _ = _with_class_defaults(config)
    types, no_rope = _layer_types(top, model_type)
    only_sliding = model_type in _model_code("rope_only_sliding") and "sliding_attention" in types
    rope_by_type = _rope_dictionary_or_none(top)
    read = {}
    plan = []
    for i, (layer_type, rotates) in enumerate(zip(types, no_rope)):
        why = _why_no_rope(layer_type, rotates, only_sliding, rope_by_type)
        if why:
            plan.append(LayerRope(i, layer_type, None, why))
            continue
        key = layer_type if layer_type in rope_by_type else None
        if key not in read:
            read[key] = _quietly(config, key)
        plan.append(LayerRope(i, layer_type, read[key]))
    return tuple(plan)


@contract
def query_scale(config: Config, positions: Positions) -> np.ndarray:
    r"""The factor by which the model's attention multiplies the query at each position.

    Ministral 3's attention (``Ministral3Attention``) multiplies every query at position
    :math:`m` by :math:`1 + \beta \ln(1 + \lfloor m / L \rfloor)`, with :math:`\beta` =
    ``llama_4_scaling_beta`` and :math:`L` = ``original_max_position_embeddings``: a
    temperature that steps up every :math:`L` tokens, in every layer. The logits are
    multiplied by the same factor (the key is not scaled). 1 for every class that does
    not read the key.
    """
    settings = _settings(config, None)
    effect = [e for e in settings.effects if e.modelled == "query_scale"]
    if not effect:
        return np.ones(positions.shape)
    beta, L = effect[0].value, settings.parameters["original_max_position_embeddings"]
    # 1 + beta ln(1 + floor(m / L))
    return 1.0 + beta * np.log1p(np.floor(positions / L))


@contract
def softmax_scale_factor(config: Config, layer_type: LayerType | None = None) -> float:
    r"""The factor by which the model's attention multiplies its softmax scale :math:`1/\sqrt{d}`.

    The DeepSeek family (DeepSeek-V2 and V3, Kimi K2 and the classes that copy its
    attention) multiplies it by :math:`(0.1\,\texttt{mscale\_all\_dim}\ln s + 1)^2`
    when the rope type is not default and ``mscale_all_dim`` is set, with
    :math:`s` = ``factor`` (``yarn_get_mscale``): the attention factor of YaRN moved from
    :math:`\cos` and :math:`\sin` to the logits. 1 for every other class.
    """
    settings = _settings(config, layer_type)
    effect = [e for e in settings.effects if e.modelled == "softmax_scale_factor"]
    s = settings.parameters.get("factor", 1.0)
    if not effect or s <= 1.0:
        return 1.0
    # (0.1 mscale_all_dim ln s + 1)^2
    return (0.1 * effect[0].value * math.log(s) + 1.0) ** 2


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
    r"""The quantities of chapter 6's context-extension figure
    (:mod:`companion.figures.scaling`) for a real configuration at its advertised ``context``.

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


def _with_class_defaults(config: Mapping) -> tuple[dict, str | None, list]:
    """The language model's keys with the class defaults filled in, its model type, and the keys filled.

    A multimodal file's language model is its ``text_config`` (its model type, or the one
    the library's multimodal class gives it). Version-4 top-level spellings are renamed.
    """
    table = _defaults_table()
    text = config.get("text_config")
    if isinstance(text, Mapping):
        model_type = text.get("model_type") or table["text_model_types"].get(config.get("model_type"))
        top = dict(text)
    else:  # a flat multimodal file (Qwen2-VL): its class moves these keys into its text configuration
        model_type, top = config.get("model_type"), dict(config)
        model_type = table["text_model_types"].get(model_type, model_type)
    top = {_TOP_LEVEL_ALIASES.get(k, k): v for k, v in top.items()}
    filled: list[str] = []
    if model_type is not None and model_type not in table["model_types"]:
        model_type = _library_type(config, model_type, filled)
    defaults = table["model_types"].get(model_type, {})
    for key in _SIZE_KEYS:
        if top.get(key) is None and defaults.get(key) is not None:
            top[key] = defaults[key]
            filled.append(f"{key} = {defaults[key]} ({defaults['config_class']}'s default)")
    return top, model_type, filled


def _library_type(config: Mapping, model_type: str, filled: list) -> str:
    """The model type the library reads a remote-code file with: the one of the class its ``auto_map`` names."""
    wanted = str((config.get("auto_map") or {}).get("AutoConfig", "")).rsplit(".", 1)[-1]
    for known, entry in _defaults_table()["model_types"].items():
        if wanted and entry["config_class"] == wanted:
            filled.append(f"model_type {model_type!r} read as {known!r} (its auto_map names {wanted})")
            return known
    return model_type


def _no_defaults(model_type: str | None) -> str:
    """Why no class default could fill a missing key, for an error message."""
    table = _defaults_table()
    if model_type is None:
        return "; the file names no model_type whose class defaults could fill it in"
    if model_type not in table["model_types"]:
        return (f"; model_type {model_type!r} is not one of the {len(table['model_types'])} model types of "
                f"Transformers {table['transformers']} whose defaults are known here")
    return f"; {model_type!r}'s class ({table['model_types'][model_type]['config_class']}) has no default for it"


def _rotary_dim(head_dim: int, prf: float, rope_type: str) -> int:
    """Components rotated per head: all for ``proportional``, else ``int(prf * head_dim)``, even and >= 2."""
    rotary_dim = head_dim if rope_type == "proportional" else int(head_dim * prf)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(f"partial_rotary_factor * head_dim must give an even rotated size >= 2, "
                         f"got int({prf} * {head_dim}) = {int(head_dim * prf)}")
    return rotary_dim


def _partial_rotary_factor(entry: dict, top: dict, head_dim: int, filled: list) -> float:
    """``partial_rotary_factor`` from the dictionary or the top level, else MiniMax's ``rotary_dim / head_dim``,
    else 1."""
    prf = entry.get("partial_rotary_factor", top.get("partial_rotary_factor"))
    if prf is None and top.get("rotary_dim") is not None:
        prf = _value("rotary_dim", top["rotary_dim"]) / head_dim
        filled.append(f"partial_rotary_factor = rotary_dim / head_dim = {prf:g}")
    return _value("partial_rotary_factor", 1.0 if prf is None else prf)


def _unknown_keys(entry: dict, kind: RopeType, rope_type: str, source: str, effects: tuple) -> tuple:
    """The keys ``rope_type`` does not read, reported with :class:`UnknownKeysWarning`; effects not computed
    here are reported with :class:`UnmodelledEffectWarning`."""
    known = set(_COMMON_KEYS) | set(kind.required) | set(kind.optional) | {effect.key for effect in effects}
    unknown = tuple(sorted(set(entry) - known))
    if unknown:
        warnings.warn(f"rope_type {rope_type!r} does not use the keys {', '.join(unknown)} (in {source}) in the "
                      f"library's computation of its frequencies; the model's own code may still read them "
                      f"(check its attention class)", UnknownKeysWarning, stacklevel=4)
    for effect in effects:
        if not effect.modelled:
            warnings.warn(f"{effect.key} = {effect.value!r} (in {source}) {effect.effect}", UnmodelledEffectWarning,
                          stacklevel=4)
    return unknown


def _required_keys(entry: dict, kind: RopeType, rope_type: str, source: str) -> None:
    missing = [k for k in kind.required if k not in entry]
    if missing:
        raise ValueError(f"rope_type {rope_type!r} needs the key {missing[0]!r} in {source}"
                         f" (required: {', '.join(kind.required)})")


def _base(value, model_type: str | None) -> float:
    if value is None:
        raise ValueError(f"rope_theta is missing: give the RoPE base in rope_parameters or at the top level"
                         f"{_no_defaults(model_type)}")
    base = _value("rope_theta", value)
    if base == 1.0:
        raise ValueError("rope_theta must be a base > 0 and != 1 (every frequency would be 1), got 1.0")
    return base


def _rope_dictionary(top: dict, layer_type: str | None, model_type: str | None, filled: list) -> tuple[str, dict]:
    """Find the RoPE dictionary (and say where it came from); merge version-4 spellings and class defaults."""
    v5, v4 = top.get("rope_parameters"), top.get("rope_scaling")
    for name, value in (("rope_parameters", v5), ("rope_scaling", v4)):
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(f"{name} must be a dictionary or null, got {type(value).__name__}")
    layer_types = set(top.get("layer_types") or ())
    table = _defaults_table()["model_types"]
    default = table.get(model_type, {}).get("rope_parameters") or {}
    by_layer = {k: v for k, v in default.items() if isinstance(v, Mapping)}
    if by_layer or "rope_local_base_freq" in top:
        flat = v5 is None and v4 is not None and not any(isinstance(v, Mapping) for v in v4.values())
        v5, v4 = _nested_by_class(top, v5, v4, by_layer)
        layer_types |= set(v5)
        if flat and layer_type is not None:
            what = "the file's rope_scaling" if layer_type == "full_attention" else "the class's dictionary"
            filled.append(f"rope_parameters[{layer_type!r}] = {what}, as the class nests it by layer type")
        if layer_type in by_layer and "rope_theta" not in top and (layer_type == "full_attention"
                                                                   or "rope_local_base_freq" not in top):
            filled.append(f"rope_theta = {by_layer[layer_type].get('rope_theta')} for {layer_type} "
                          f"({table[model_type]['config_class']}'s default)")
    if v5 is not None and v4 is not None and _normalised(v5) != _normalised(v4):
        raise ValueError("rope_scaling and rope_parameters disagree: keep one (rope_parameters in "
                         "version 5); the library would use rope_scaling")
    name, entry = ("rope_parameters", v5) if v5 is not None else ("rope_scaling", v4)
    if entry is None:
        # the class's dictionary, with what the file gives at the top level taking precedence
        entry = {k: v for k, v in default.items() if k not in top}
        if not entry or by_layer:
            return "top level", {}
        name = f"{table[model_type]['config_class']}'s default rope_parameters"
        filled.append(f"rope_parameters = {name} {entry}")
    nested = [k for k in entry if k in layer_types and isinstance(entry[k], Mapping)]
    if nested:
        if layer_type is None:
            raise ValueError(f"{name} is nested by layer type ({', '.join(nested)}): pass layer_type")
        if layer_type not in nested:
            raise ValueError(f"layer_type must be one of {', '.join(map(repr, nested))}; got {layer_type!r}")
        return f"{name}[{layer_type!r}]", dict(entry[layer_type])
    if layer_type is not None and layer_type not in layer_types:
        raise ValueError(f"layer_type must be None or one of the file's layer_types "
                         f"({', '.join(map(repr, sorted(layer_types))) or 'none'}): {name} is not nested by "
                         f"layer type, got {layer_type!r}")
    return name, dict(entry)


def _nested_by_class(top: dict, v5, v4, by_layer: dict) -> tuple[dict, None]:
    """The dictionary nested by layer type, as a class that nests its defaults builds it (Gemma 3).

    A file already nested, or in version 5's spelling, is kept. Otherwise each layer type
    starts from the class's default; the file's flat ``rope_scaling`` and its
    ``rope_theta`` apply to the full-attention layers, ``rope_local_base_freq`` is the
    sliding layers' base (``Gemma3TextConfig.convert_rope_params_to_dict``; OLMo 3 alike).
    """
    flat = _normalised(v4 or {})
    if v5 is not None or any(isinstance(v, Mapping) for v in flat.values()):
        return v5 if v5 is not None else v4, None
    nested = {k: dict(v) for k, v in by_layer.items()}
    nested.setdefault("full_attention", {"rope_type": "default"})
    nested.setdefault("sliding_attention", {"rope_type": "default"})
    nested["full_attention"].update(flat)
    if "rope_theta" in top:
        nested["full_attention"]["rope_theta"] = top["rope_theta"]
    if "rope_local_base_freq" in top:
        nested["sliding_attention"]["rope_theta"] = top["rope_local_base_freq"]
    return nested, None


def _normalised(entry: Mapping) -> dict:
    out = dict(entry)
    if "type" in out:
        out.setdefault("rope_type", out.pop("type"))
    return out


def _rope_type(entry: dict, model_type: str | None, filled: list) -> str:
    spelled = {entry[k] for k in ("rope_type", "type") if k in entry}
    if len(spelled) > 1:
        raise ValueError(f"rope_type and type disagree: {entry['rope_type']!r} and {entry['type']!r}")
    rope_type = spelled.pop() if spelled else "default"
    if rope_type == "mrope":  # Qwen2-VL's name, read by its class as default RoPE with sections
        filled.append("rope_type 'mrope' read as 'default' with its mrope_section (Qwen2-VL's configuration class)")
        return "default"
    if rope_type == "su":
        raise ValueError("rope_type 'su' is LongRoPE's pre-release name (Phi-3's first files). Transformers maps "
                         "it to 'longrope' but only after copying original_max_position_embeddings into the "
                         "dictionary, and then fails for want of that key; the model's own code runs LongRoPE "
                         "with these factors. To read it that way, set the type to 'longrope'")
    if rope_type == "dynamic" and entry.get("alpha") and model_type in _model_code("ntk_alpha"):
        filled.append("rope_type 'dynamic' with alpha read as static NTK-alpha (Hunyuan's rotary class)")
        return "ntk_alpha"
    return OneOf(*_SPELLED_TYPES)("rope_type", rope_type)


def _head_dim(top: dict, layer_type: str | None, model_type: str | None) -> int:
    """The head size the layers' rotary module reads, by the rule of the model's class.

    Gemma 4's full-attention layers: ``global_head_dim`` (or the class's own). Otherwise
    the class's rule (:func:`model_defaults`, ``head_dim_rule``): DeepSeek's rotated size
    ``qk_rope_head_dim`` for MLA classes, else ``head_dim`` (the file's or the class's
    constant), else ``hidden_size / num_attention_heads``. A file of an unknown model type
    is read by the common rule: ``qk_rope_head_dim``, ``head_dim``, then the quotient.
    """
    entry = _defaults_table()["model_types"].get(model_type, {})
    if layer_type == "full_attention":
        if top.get("global_head_dim") is not None:
            return _value("global_head_dim", top["global_head_dim"])
        by_type = entry.get("head_dim_by_layer_type", {})
        if "sliding_attention" in by_type and by_type.get("full_attention") not in (None, by_type["sliding_attention"]):
            return by_type["full_attention"]  # the class's own size for its global layers (Gemma 4: 512)
    rule = entry.get("head_dim_rule")
    if rule == "other":
        raise ValueError(f"head_dim: the class of model_type {model_type!r} ({entry['config_class']}) sets the head "
                         "size of its rotary module by a rule not modelled here")
    keys = {"qk_rope_head_dim": ("qk_rope_head_dim",), None: ("qk_rope_head_dim", "head_dim")}.get(rule, ("head_dim",))
    for key in keys:
        if top.get(key) is not None:
            return _value(key, top[key])
    hidden, heads = top.get("hidden_size"), top.get("num_attention_heads")
    if hidden is None or heads is None:
        raise ValueError("head_dim is missing: give head_dim, or hidden_size and num_attention_heads"
                         f"{_no_defaults(model_type)}")
    hidden, heads = _value("hidden_size", hidden), _value("num_attention_heads", heads)
    if hidden % heads:
        raise ValueError(f"hidden_size ({hidden}) must be a multiple of num_attention_heads ({heads})")
    return hidden // heads


def _mrope_axes(entry: dict, model_type: str | None, rotary_dim: int) -> tuple[tuple | None, str | None]:
    """M-RoPE's sections and layout, or ``(None, None)``; the sections must cover the rotated pairs."""
    if model_type in _model_code("mrope_reordered"):
        raise ValueError(f"mrope_section: the class of model_type {model_type!r} reorders its frequencies before "
                         "giving them to the axes (ERNIE 4.5-VL's inv_freq_3d), which is not modelled here")
    if entry.get("mrope_section") is None:
        return None, None
    sections = tuple(_value("mrope_section", entry["mrope_section"]))
    if sum(sections) != rotary_dim // 2:
        raise ValueError(f"mrope_section must give every one of the rotary_dim/2 = {rotary_dim // 2} rotated pairs "
                         f"to an axis, got {list(sections)} (sum {sum(sections)})")
    if model_type in _model_code("mrope"):
        layout = "interleaved" if model_type in _model_code("mrope_interleaved") else "sectioned"
    else:  # a class the library does not ship: the file's flag, as other engines read it
        layout = "interleaved" if entry.get("mrope_interleaved") else "sectioned"
    return sections, layout


def _position_effects(entry: dict, model_type: str | None, rope_type: str) -> tuple:
    """The keys that change what the model computes with positions besides the frequencies."""
    effects = []
    if entry.get("llama_4_scaling_beta") is not None:
        if model_type in _model_code("query_scale"):
            effects.append(PositionEffect(
                "llama_4_scaling_beta", entry["llama_4_scaling_beta"],
                "every query is multiplied by 1 + beta ln(1 + floor(m / original_max_position_embeddings))",
                "query_scale"))
        else:
            effects.append(PositionEffect(
                "llama_4_scaling_beta", entry["llama_4_scaling_beta"],
                "read by Ministral 3's attention as a position-dependent query scale; "
                f"not by the class of model_type {model_type!r}"))
    if rope_type != "default" and entry.get("mscale_all_dim") and model_type in _model_code("softmax_mscale"):
        effects.append(PositionEffect(
            "mscale_all_dim", entry["mscale_all_dim"],
            "the attention's softmax scale is multiplied by (0.1 mscale_all_dim ln s + 1)^2",
            "softmax_scale_factor"))
    if entry.get("alpha") is not None and rope_type != "ntk_alpha":
        effects.append(PositionEffect(
            "alpha", entry["alpha"], "read by Hunyuan's rotary class as static NTK-alpha (base alpha^(d/(d-2)) "
            f"times larger); changes what that class computes, not modelled for model_type {model_type!r}"))
    return tuple(effects)


def _layer_types(top: dict, model_type: str | None) -> tuple[list, list]:
    """Each layer's type (``None`` for a model without ``layer_types``) and its ``no_rope_layers`` mark (1: RoPE)."""
    types = list(top.get("layer_types") or [])
    kinds = _defaults_table()["model_types"].get(model_type, {}).get("layer_kinds")
    if not types and kinds:
        raise ValueError(f"layer_types must be given: the class of model_type {model_type!r} gives its layers "
                         f"the kinds {', '.join(kinds)} by its own rule")
    n = _value("num_hidden_layers", top.get("num_hidden_layers") or len(types) or None)
    if types and len(types) != n:
        raise ValueError(f"layer_types must name every one of the num_hidden_layers = {n} layers, got {len(types)}")
    no_rope = list(top.get("no_rope_layers") or [1] * n)
    if len(no_rope) != n:
        raise ValueError(f"no_rope_layers must have one entry per layer ({n}), got {len(no_rope)}")
    return types or [None] * n, no_rope


def _why_no_rope(layer_type: str | None, rotates, only_sliding: bool, rope_by_type: dict) -> str:
    """Why a layer rotates nothing, or ``""`` when it rotates."""
    if layer_type is not None and ("attention" not in layer_type or layer_type == "linear_attention"):
        return f"a {layer_type} layer has no attention to rotate"
    if not rotates:
        return "no_rope_layers marks it 0: attention without positions"
    if only_sliding and layer_type != "sliding_attention":
        return "its class rotates only in the sliding-window layers"
    if layer_type in rope_by_type and rope_by_type[layer_type] is None:
        return "its entry of rope_parameters is null"
    return ""


def _rope_dictionary_or_none(top: dict) -> dict:
    """The layer types of a RoPE dictionary nested by layer type (a null entry: no RoPE), else ``{}``."""
    entry = top.get("rope_parameters") or top.get("rope_scaling") or {}
    types = set(top.get("layer_types") or ())
    if "rope_local_base_freq" in top:
        return {"full_attention": {}, "sliding_attention": {}}
    return {k: v for k, v in entry.items() if k in types and (v is None or isinstance(v, Mapping))}


# ---------------------------------------------------------------------------
# Published configurations (package data; the sources are text, nothing is fetched)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PublishedConfig:
    """One model's RoPE settings as published, with where each value comes from.

    ``config`` holds the keys of the model's ``config.json`` that position
    encoding depends on, spelled as published (version 4 or 5); ``context`` is the
    advertised context length and ``trained_length`` the length the position
    scheme was trained on (the reference of the ratios in chapter 6's context-extension
    figure); ``layer_type`` picks
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
