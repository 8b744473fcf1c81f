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
library's keys to those functions' arguments, with the library's defaults:

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

:data:`PUBLISHED` holds the position settings of thirteen published models
(Llama 2 to gpt-oss) with the sources of their values, as text; chapter 10 runs each
through :func:`config_extension`.
"""
from __future__ import annotations

import functools
import json
import math
import warnings
from dataclasses import dataclass, field
from importlib import resources
from typing import Mapping

import numpy as np

from . import _checks
from . import mrope
from . import rope
from . import scaling

__all__ = [
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

#: The rope types the library (Transformers 5) computes, plus ``default``.
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional", "ntk_alpha")

#: Keys each rope type needs in its dictionary (``rope_theta`` may sit at the top level).
REQUIRED_KEYS = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": ("factor",),
    "longrope": ("short_factor", "long_factor"),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor"),
    "proportional": (),
    "ntk_alpha": ("alpha",),
}

#: Keys each rope type may carry besides the required ones.
OPTIONAL_KEYS = {
    "default": (),
    "linear": (),
    "dynamic": (),
    "yarn": ("original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
             "mscale", "mscale_all_dim", "truncate"),
    "longrope": ("original_max_position_embeddings", "attention_factor", "factor"),
    "llama3": ("original_max_position_embeddings",),
    "proportional": ("factor",),
    "ntk_alpha": ("factor",),
}

_COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
# Version-4 spellings of top-level keys in some model families' files.
_TOP_LEVEL_ALIASES = {"rotary_emb_base": "rope_theta",      # GPT-NeoX, Pythia
                      "rotary_pct": "partial_rotary_factor"}  # GPT-NeoX, Pythia


class UnknownKeysWarning(UserWarning):
    """A RoPE dictionary holds keys the library's computation for its ``rope_type`` does not read."""


class UnmodelledEffectWarning(UserWarning):
    """A key changes what the model's class computes with positions, and this module does not compute it."""


# ---------------------------------------------------------------------------
# What the model class adds to the file
# ---------------------------------------------------------------------------

@functools.cache
def model_defaults() -> dict:
    """The values Transformers fills in for keys a ``config.json`` leaves out, by ``model_type``.

    Read from the library's configuration classes by ``tools/model_defaults.py`` and
    stored as package data (``companion/data/model_defaults.json``):
    ``{"transformers": version, "model_types": {model_type: {...}}, "text_model_types":
    {multimodal type: text type}}``. Each model type lists the ``rope_parameters`` its
    class builds from a file without RoPE keys (nested by layer type where the class
    nests them), the declared defaults of ``head_dim``, ``hidden_size``,
    ``num_attention_heads``, ``max_position_embeddings``, ``partial_rotary_factor`` and
    ``qk_rope_head_dim`` (``None``: derived from the others), and
    ``head_dim_by_layer_type`` where layer types differ in head size (Gemma 4).
    """
    text = resources.files("companion").joinpath("data/model_defaults.json").read_text()
    return json.loads(text)


def _model_code(name: str) -> frozenset:
    """The model types whose modeling code does ``name`` (``model_defaults()["model_code"]``).

    ``softmax_mscale``: the attention multiplies its softmax scale by
    ``(0.1 mscale_all_dim ln s + 1)^2`` (DeepSeek-V2's ``yarn_get_mscale``);
    ``query_scale``: every query is multiplied by ``1 + beta ln(1 + floor(m / L))``
    (Ministral 3's ``llama_4_scaling_beta``); ``ntk_alpha``: ``alpha`` beside
    ``rope_type: dynamic`` is static NTK with base ``b alpha^(d/(d-2))`` (Hunyuan);
    ``mrope_interleaved``: M-RoPE's axes interleaved (Qwen3-VL, Huang et al. 2026)
    rather than cut into consecutive sections (Qwen2-VL, Wang et al. 2024). The library
    decides the M-RoPE layout by class; it does not read the file's
    ``mrope_interleaved`` flag, which other engines read.
    """
    return frozenset(model_defaults()["model_code"][name])


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
        if self.rope_type in ("yarn", "longrope", "llama3"):
            return self.parameters["original_max_position_embeddings"]
        if self.rope_type in ("linear", "dynamic"):
            return self.max_position_embeddings
        return None


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
# Reading a configuration
# ---------------------------------------------------------------------------

def read_config(config: Mapping, layer_type: str | None = None) -> RopeSettings:
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
    with :class:`UnknownKeysWarning`.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping (the dict of a config.json), got {type(config).__name__}")
    top, model_type, filled = _with_class_defaults(config)
    source, entry = _rope_dictionary(top, layer_type, model_type, filled)
    rope_type = _rope_type(entry, model_type, filled)
    head_dim = _head_dim(top, layer_type, model_type)
    prf = entry.get("partial_rotary_factor", top.get("partial_rotary_factor"))
    if prf is None and top.get("rotary_dim") is not None:  # MiniMax's legacy key
        prf = _checks.positive_int("rotary_dim", top["rotary_dim"]) / head_dim
        filled.append(f"partial_rotary_factor = rotary_dim / head_dim = {prf:g}")
    prf = _fraction("partial_rotary_factor", 1.0 if prf is None else prf)
    base = entry.get("rope_theta", top.get("rope_theta"))
    if base is None:
        raise ValueError(f"rope_theta is missing: give the RoPE base in rope_parameters or at the top level"
                         f"{_no_defaults(model_type)}")
    base = _checks.positive_float("rope_theta", base)
    if base == 1.0:
        raise ValueError("rope_theta must be a base > 0 and != 1 (every frequency would be 1), got 1.0")
    rotary_dim = head_dim if rope_type == "proportional" else int(head_dim * prf)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(f"partial_rotary_factor * head_dim must give an even rotated size >= 2, "
                         f"got int({prf} * {head_dim}) = {int(head_dim * prf)}")
    max_len = top.get("max_position_embeddings")
    if max_len is not None:
        max_len = _checks.positive_int("max_position_embeddings", max_len)

    effects = _position_effects(entry, top, model_type, rope_type)
    known = (set(_COMMON_KEYS) | set(REQUIRED_KEYS[rope_type]) | set(OPTIONAL_KEYS[rope_type])
             | {effect.key for effect in effects})
    unknown = tuple(sorted(set(entry) - known))
    if unknown:
        warnings.warn(f"rope_type {rope_type!r} does not use the keys {', '.join(unknown)} (in {source}) in the "
                      f"library's computation of its frequencies; the model's own code may still read them "
                      f"(check its attention class)", UnknownKeysWarning, stacklevel=2)
    for effect in effects:
        if not effect.modelled:
            warnings.warn(f"{effect.key} = {effect.value!r} (in {source}) {effect.effect}", UnmodelledEffectWarning,
                          stacklevel=2)
    missing = [k for k in REQUIRED_KEYS[rope_type] if k not in entry]
    if missing:
        raise ValueError(f"rope_type {rope_type!r} needs the key {missing[0]!r} in {source}"
                         f" (required: {', '.join(REQUIRED_KEYS[rope_type])})")
    parameters, method_filled = _method_parameters(rope_type, entry, top, max_len, rotary_dim, head_dim, prf)
    sections, layout = _mrope_axes(entry, model_type, rotary_dim)
    return RopeSettings(rope_type=rope_type, base=base, head_dim=head_dim, rotary_dim=rotary_dim,
                        partial_rotary_factor=prf, max_position_embeddings=max_len,
                        parameters=parameters, filled_in=tuple(filled + method_filled), unknown_keys=unknown,
                        source=source, model_type=model_type, mrope_section=sections, mrope_layout=layout,
                        effects=effects)


def frequencies_at(config, seq_len: int, layer_type: str | None = None) -> ConfigFrequencies:
    r"""The frequencies and attention factor the library uses for a sequence of ``seq_len`` tokens.

    ``config`` is a ``config.json`` dictionary or :class:`RopeSettings`; ``seq_len``
    the current length (the largest position plus one). Only ``dynamic`` and
    ``longrope`` depend on it. For ``dynamic`` this is a fresh model's answer: the
    library then keeps the frequencies of the longest input seen
    (:class:`DynamicNTKState`). Float64 throughout (the library: float32).
    """
    settings = config if isinstance(config, RopeSettings) else read_config(config, layer_type)
    n = _checks.positive_int("seq_len", seq_len)
    return _frequencies(settings, n)


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

    def __init__(self, config, layer_type: str | None = None):
        settings = config if isinstance(config, RopeSettings) else read_config(config, layer_type)
        if settings.rope_type != "dynamic":
            raise ValueError(f"DynamicNTKState needs rope_type 'dynamic', got {settings.rope_type!r}")
        self.settings = settings
        self.original_length = settings.max_position_embeddings
        self.longest = self.original_length
        self._original = _frequencies(settings, self.original_length)
        self.current = self._original

    def update(self, seq_len: int) -> ConfigFrequencies:
        """Feed one input of ``seq_len`` tokens; return the frequencies it is rotated with."""
        n = _checks.positive_int("seq_len", seq_len)
        if n > self.longest:
            self.current = _frequencies(self.settings, n)
            self.longest = n
        if n < self.original_length and self.longest > self.original_length:
            self.current = self._original
            self.longest = self.original_length
        return self.current


def rotate(x, positions, frequencies: ConfigFrequencies, layout: str = "split") -> np.ndarray:
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
    if not isinstance(frequencies, ConfigFrequencies):
        raise TypeError(f"frequencies must be what frequencies_at returns, got {type(frequencies).__name__}")
    x = _checks.array("x", x, ndim_at_least=1)
    if x.shape[-1] != frequencies.head_dim:
        raise ValueError(f"x must have last dimension head_dim = {frequencies.head_dim}, got shape {x.shape}")
    r = frequencies.rotary_dim
    grid = np.ndim(positions) == 2 and frequencies.axes is not None
    if np.ndim(positions) == 2 and not grid:
        raise ValueError(f"positions must be one position per row of x: a (temporal, height, width) grid of "
                         f"shape (3, n) needs an M-RoPE configuration (mrope_section), got shape {np.shape(positions)}")
    if grid:
        # pair i turned by p_{a(i)} theta_i: each axis's positions on its own pairs
        turned = mrope.rotate(x[..., :r], positions, frequencies.inv_freq, frequencies.axes, layout)
    else:
        turned = rope.rotate(x[..., :r], positions, frequencies.inv_freq, layout)
    return np.concatenate([turned * frequencies.attention_factor, x[..., r:]], axis=-1)


@dataclass(frozen=True)
class LayerRope:
    """The RoPE of one layer: ``settings`` is ``None`` for a layer that rotates nothing (``why`` says why)."""

    index: int
    layer_type: str | None
    settings: RopeSettings | None
    why: str = ""


def layer_plan(config: Mapping) -> tuple[LayerRope, ...]:
    r"""The RoPE settings of every layer of ``config``, as the model's layers read them.

    A layer has no RoPE when its ``layer_types`` entry is not an attention layer
    (Qwen3.5's and Qwen3-Next's ``linear_attention``, state-space or convolution
    layers), when ``no_rope_layers`` marks it 0 (Llama 4, SmolLM3: every fourth
    layer), when its entry of a dictionary nested by layer type is null, or when its
    class rotates only in sliding-window layers and it is not one (Cohere 2, EXAONE 4;
    Yang et al. 2025's RNoPE-SWA). The others
    get :func:`read_config` for their layer type (its own base, head size and method).
    The number of layers is ``num_hidden_layers`` (or the length of ``layer_types``).
    """
    top, model_type, _ = _with_class_defaults(config)
    types = list(top.get("layer_types") or [])
    kinds = model_defaults()["model_types"].get(model_type, {}).get("layer_kinds")
    if not types and kinds:
        raise ValueError(f"layer_types is missing: the class of model_type {model_type!r} gives its layers the kinds "
                         f"{', '.join(kinds)} by its own rule; give layer_types")
    only_sliding = model_type in _model_code("rope_only_sliding") and "sliding_attention" in types
    n = top.get("num_hidden_layers") or len(types)
    n = _checks.positive_int("num_hidden_layers", n)
    if types and len(types) != n:
        raise ValueError(f"layer_types must name every one of the num_hidden_layers = {n} layers, got {len(types)}")
    no_rope = list(top.get("no_rope_layers") or [1] * n)
    if len(no_rope) != n:
        raise ValueError(f"no_rope_layers must have one entry per layer ({n}), got {len(no_rope)}")
    rope_by_type = _rope_dictionary_or_none(top)
    plan, read = [], {}
    for i in range(n):
        layer_type = types[i] if types else None
        if layer_type is not None and "attention" not in layer_type or layer_type == "linear_attention":
            plan.append(LayerRope(i, layer_type, None, f"a {layer_type} layer has no attention to rotate"))
        elif not no_rope[i]:
            plan.append(LayerRope(i, layer_type, None, "no_rope_layers marks it 0: attention without positions"))
        elif only_sliding and layer_type != "sliding_attention":
            plan.append(LayerRope(i, layer_type, None, "its class rotates only in the sliding-window layers"))
        elif layer_type in rope_by_type and rope_by_type[layer_type] is None:
            plan.append(LayerRope(i, layer_type, None, "its entry of rope_parameters is null"))
        else:
            key = layer_type if layer_type in rope_by_type else None
            if key not in read:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UnknownKeysWarning)
                    read[key] = read_config(config, key)
            plan.append(LayerRope(i, layer_type, read[key]))
    return tuple(plan)


def _rope_dictionary_or_none(top: dict) -> dict:
    """The layer types of a RoPE dictionary nested by layer type (a null entry: no RoPE), else ``{}``."""
    entry = top.get("rope_parameters") or top.get("rope_scaling") or {}
    types = set(top.get("layer_types") or ())
    if "rope_local_base_freq" in top:
        return {"full_attention": {}, "sliding_attention": {}}
    return {k: v for k, v in entry.items() if k in types and (v is None or isinstance(v, Mapping))}


def query_scale(config, positions) -> np.ndarray:
    r"""The factor by which the model's attention multiplies the query at each position.

    Ministral 3's attention (``Ministral3Attention``) multiplies every query at position
    :math:`m` by :math:`1 + \beta \ln(1 + \lfloor m / L \rfloor)`, with :math:`\beta` =
    ``llama_4_scaling_beta`` and :math:`L` = ``original_max_position_embeddings``: a
    temperature that steps up every :math:`L` tokens, in every layer. The logits are
    multiplied by the same factor (the key is not scaled). 1 for every class that does
    not read the key.
    """
    m = _checks.integers("positions", positions)
    settings = _settings(config, None)
    effect = [e for e in settings.effects if e.modelled == "query_scale"]
    if not effect:
        return np.ones(m.shape)
    beta, L = effect[0].value, settings.parameters["original_max_position_embeddings"]
    # 1 + beta ln(1 + floor(m / L))
    return 1.0 + beta * np.log1p(np.floor(m / L))


def softmax_scale_factor(config, layer_type: str | None = None) -> float:
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


def _settings(config, layer_type) -> RopeSettings:
    return config if isinstance(config, RopeSettings) else read_config(config, layer_type)


def config_extension(config, context: int, trained_length: int | None = None,
                     layer_type: str | None = None) -> scaling.Extension:
    r"""Figure 4's quantities for a real configuration at its advertised ``context``.

    The reference frequencies are the unscaled ones of the same base and rotated
    size (for ``proportional``, its non-zero pairs). The trained range is
    ``trained_length`` (default: :attr:`RopeSettings.original_length`, else
    ``max_position_embeddings``); the extension factor is ``s = context /
    trained_length`` (at least 1). Returns :class:`companion.scaling.Extension` with
    ``method`` set to the rope type: per-pair turns in training, angle ratios
    ``s theta'_i / theta_i`` (:func:`companion.scaling.angle_ratio`), the pairs out of
    range (:func:`companion.scaling.out_of_range`) and their count.
    """
    settings = config if isinstance(config, RopeSettings) else read_config(config, layer_type)
    context = _checks.positive_int("context", context)
    L = trained_length if trained_length is not None else (settings.original_length
                                                           or settings.max_position_embeddings)
    if L is None:
        raise ValueError("trained_length must be given: the configuration names no training length")
    L = _checks.positive_int("trained_length", L)
    if context < L:
        raise ValueError(f"context must be at least the trained length {L}, got {context}")
    s = context / L
    used = _frequencies(settings, context)
    scaled = used.inv_freq[used.inv_freq > 0]
    if settings.rope_type == "proportional":
        theta = rope.inv_freq(settings.head_dim, settings.base)[:scaled.size]
    else:
        theta = rope.inv_freq(settings.rotary_dim, settings.base)
    turns = scaling.training_turns(theta, L)
    ratio = scaling.angle_ratio(scaled, theta, s)
    out = scaling.out_of_range(scaled, theta, s, L)
    slow = turns < 1.0
    return scaling.Extension(
        method=settings.rope_type, turns=turns, ratio=ratio, out_of_range=out, n_out=int(out.sum()),
        n_slow=int(slow.sum()), worst_ratio=float(ratio[slow].max()) if slow.any() else float("nan"),
        attention_factor=used.attention_factor)


# ---------------------------------------------------------------------------
# Private: keys to scaling's arguments
# ---------------------------------------------------------------------------

def _with_class_defaults(config: Mapping) -> tuple[dict, str | None, list]:
    """The language model's keys with the class defaults filled in, its model type, and the keys filled.

    A multimodal file's language model is its ``text_config`` (its model type, or the one
    the library's multimodal class gives it). Version-4 top-level spellings are renamed.
    """
    table = model_defaults()
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


# The sizes a file may leave to its class, in the order the library resolves them.
_SIZE_KEYS = ("head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings", "qk_rope_head_dim")


def _library_type(config: Mapping, model_type: str, filled: list) -> str:
    """The model type the library reads a remote-code file with: the one of the class its ``auto_map`` names."""
    wanted = str((config.get("auto_map") or {}).get("AutoConfig", "")).rsplit(".", 1)[-1]
    for known, entry in model_defaults()["model_types"].items():
        if wanted and entry["config_class"] == wanted:
            filled.append(f"model_type {model_type!r} read as {known!r} (its auto_map names {wanted})")
            return known
    return model_type


def _no_defaults(model_type: str | None) -> str:
    """Why no class default could fill a missing key, for an error message."""
    table = model_defaults()
    if model_type is None:
        return "; the file names no model_type whose class defaults could fill it in"
    if model_type not in table["model_types"]:
        return (f"; model_type {model_type!r} is not one of the {len(table['model_types'])} model types of "
                f"Transformers {table['transformers']} whose defaults are known here")
    return f"; {model_type!r}'s class ({table['model_types'][model_type]['config_class']}) has no default for it"


def _rope_dictionary(top: dict, layer_type: str | None, model_type: str | None, filled: list) -> tuple[str, dict]:
    """Find the RoPE dictionary (and say where it came from); merge version-4 spellings and class defaults."""
    v5, v4 = top.get("rope_parameters"), top.get("rope_scaling")
    for name, value in (("rope_parameters", v5), ("rope_scaling", v4)):
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(f"{name} must be a dictionary or null, got {type(value).__name__}")
    layer_types = set(top.get("layer_types") or ())
    default = model_defaults()["model_types"].get(model_type, {}).get("rope_parameters") or {}
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
                          f"({model_defaults()['model_types'][model_type]['config_class']}'s default)")
    if v5 is not None and v4 is not None and _normalised(v5) != _normalised(v4):
        raise ValueError("rope_scaling and rope_parameters disagree: keep one (rope_parameters in "
                         "version 5); the library would use rope_scaling")
    name, entry = ("rope_parameters", v5) if v5 is not None else ("rope_scaling", v4)
    if entry is None:
        # the class's dictionary, with what the file gives at the top level taking precedence
        entry = {k: v for k, v in default.items() if k not in top}
        if not entry or by_layer:
            return "top level", {}
        name = f"{model_defaults()['model_types'][model_type]['config_class']}'s default rope_parameters"
        filled.append(f"rope_parameters = {name} {entry}")
    nested = [k for k in entry if k in layer_types and isinstance(entry[k], Mapping)]
    if nested:
        if layer_type is None:
            raise ValueError(f"{name} is nested by layer type ({', '.join(nested)}): pass layer_type")
        if layer_type not in nested:
            raise ValueError(f"layer_type must be one of {', '.join(map(repr, nested))}; got {layer_type!r}")
        return f"{name}[{layer_type!r}]", dict(entry[layer_type])
    if layer_type is not None and layer_type not in (layer_types or {layer_type}):
        raise ValueError(f"layer_type {layer_type!r} given, but the file's layer_types are "
                         f"{', '.join(map(repr, sorted(layer_types)))}")
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
    if rope_type not in ROPE_TYPES or rope_type == "ntk_alpha":
        raise ValueError(f"rope_type must be one of {', '.join(map(repr, ROPE_TYPES[:-1]))}; got {rope_type!r}")
    return rope_type


def _head_dim(top: dict, layer_type: str | None, model_type: str | None) -> int:
    """The head size the layers' rotary module reads, by the rule of the model's class.

    Gemma 4's full-attention layers: ``global_head_dim`` (or the class's own). Otherwise
    the class's rule (:func:`model_defaults`, ``head_dim_rule``): DeepSeek's rotated size
    ``qk_rope_head_dim`` for MLA classes, else ``head_dim`` (the file's or the class's
    constant), else ``hidden_size / num_attention_heads``. A file of an unknown model type
    is read by the common rule: ``qk_rope_head_dim``, ``head_dim``, then the quotient.
    """
    entry = model_defaults()["model_types"].get(model_type, {})
    if layer_type == "full_attention":
        if top.get("global_head_dim") is not None:
            return _checks.positive_int("global_head_dim", top["global_head_dim"])
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
            return _checks.positive_int(key, top[key])
    hidden, heads = top.get("hidden_size"), top.get("num_attention_heads")
    if hidden is None or heads is None:
        raise ValueError("head_dim is missing: give head_dim, or hidden_size and num_attention_heads"
                         f"{_no_defaults(model_type)}")
    hidden = _checks.positive_int("hidden_size", hidden)
    heads = _checks.positive_int("num_attention_heads", heads)
    if hidden % heads:
        raise ValueError(f"hidden_size ({hidden}) must be a multiple of num_attention_heads ({heads})")
    return hidden // heads


def _mrope_axes(entry: dict, model_type: str | None, rotary_dim: int) -> tuple[tuple | None, str | None]:
    """M-RoPE's sections and layout, or ``(None, None)``; the sections must cover the rotated pairs."""
    if model_type in _model_code("mrope_reordered"):
        raise ValueError(f"mrope_section: the class of model_type {model_type!r} reorders its frequencies before "
                         "giving them to the axes (ERNIE 4.5-VL's inv_freq_3d), which is not modelled here")
    sections = entry.get("mrope_section")
    if sections is None:
        return None, None
    sections = tuple(_checks.positive_ints("mrope_section", sections))
    if sum(sections) != rotary_dim // 2:
        raise ValueError(f"mrope_section must give every one of the rotary_dim/2 = {rotary_dim // 2} rotated pairs "
                         f"to an axis, got {list(sections)} (sum {sum(sections)})")
    if model_type in _model_code("mrope"):
        layout = "interleaved" if model_type in _model_code("mrope_interleaved") else "sectioned"
    else:  # a class the library does not ship: the file's flag, as other engines read it
        layout = "interleaved" if entry.get("mrope_interleaved") else "sectioned"
    return sections, layout


def _position_effects(entry: dict, top: dict, model_type: str | None, rope_type: str) -> tuple:
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


def _fraction(name: str, value) -> float:
    value = _checks.positive_float(name, value)
    if value > 1.0:
        raise ValueError(f"{name} must be a fraction in (0, 1], got {value}")
    return value


def _factor(name: str, value) -> float:
    return _checks.at_least(name, value, 1.0)


def _method_parameters(rope_type, entry, top, max_len, rotary_dim, head_dim, prf):
    """Resolve the method's keys with the library's defaults; return (parameters, filled_in)."""
    filled: list[str] = []
    p: dict = {}
    if rope_type in ("yarn", "longrope", "llama3"):
        if top.get("original_max_position_embeddings") is not None:  # Phi-3: the top level wins
            if ("original_max_position_embeddings" in entry
                    and entry["original_max_position_embeddings"] != top["original_max_position_embeddings"]):
                filled.append("original_max_position_embeddings (top level over the dictionary's)")
            original = top["original_max_position_embeddings"]
        elif entry.get("original_max_position_embeddings") is not None:
            original = entry["original_max_position_embeddings"]
        else:
            if max_len is None:
                raise ValueError(f"rope_type {rope_type!r} needs original_max_position_embeddings "
                                 "(or max_position_embeddings, which the library uses instead)")
            original = max_len
            filled.append("original_max_position_embeddings = max_position_embeddings")
        p["original_max_position_embeddings"] = _checks.positive_int("original_max_position_embeddings", original)
    if rope_type in ("linear", "dynamic"):
        p["factor"] = _factor("factor", entry["factor"])
        if rope_type == "dynamic" and max_len is None:  # linear divides by the factor and reads no length
            raise ValueError("rope_type 'dynamic' needs max_position_embeddings (the length it scales from)")
    elif rope_type == "ntk_alpha":
        p["alpha"] = _factor("alpha", entry["alpha"])
    elif rope_type == "proportional":
        p["factor"] = _factor("factor", entry.get("factor", 1.0))
        p["rotated_pairs"] = int(prf * head_dim // 2)
        if p["rotated_pairs"] < 1:
            raise ValueError(f"partial_rotary_factor ({prf}) rotates no pair of a {head_dim}-wide head")
    elif rope_type == "yarn":
        _yarn_parameters(p, entry, max_len, filled)
    elif rope_type == "longrope":
        _longrope_parameters(p, entry, max_len, rotary_dim, filled)
    elif rope_type == "llama3":
        p["factor"] = _factor("factor", entry["factor"])
        low = _checks.positive_float("low_freq_factor", entry["low_freq_factor"])
        high = _checks.positive_float("high_freq_factor", entry["high_freq_factor"])
        if high < low:
            raise ValueError(f"high_freq_factor must be >= low_freq_factor ({low}), got {high}")
        p["low_freq_factor"], p["high_freq_factor"] = low, high
    return p, filled


def _yarn_parameters(p, entry, max_len, filled):
    factor = entry["factor"]
    if factor is None:
        if max_len is None:
            raise ValueError("factor is null and max_position_embeddings is missing: YaRN needs one of them")
        factor = max_len / p["original_max_position_embeddings"]
        filled.append("factor = max_position_embeddings / original_max_position_embeddings")
    p["factor"] = _factor("factor", factor)
    # the library writes `entry.get(key) or default`: 0 and null both mean the default
    p["beta_fast"] = _checks.positive_float("beta_fast", entry.get("beta_fast") or 32.0)
    p["beta_slow"] = _checks.positive_float("beta_slow", entry.get("beta_slow") or 1.0)
    # equal betas are a step: the ramp's ends, rounded outward, are one pair apart (or 0.001 when they meet)
    if p["beta_fast"] < p["beta_slow"]:
        raise ValueError(f"beta_fast must be at least beta_slow ({p['beta_slow']}): the library only warns and "
                         f"turns its ramp upside down; got {p['beta_fast']}")
    truncate = entry.get("truncate", True)
    if not isinstance(truncate, bool):
        raise ValueError(f"truncate must be true or false, got {truncate!r}")
    p["truncate"] = truncate
    for key in ("mscale", "mscale_all_dim"):
        if entry.get(key) is not None:
            p[key] = _checks.at_least(key, entry[key], 0.0)
    if entry.get("attention_factor") is not None:
        p["attention_factor"] = _checks.positive_float("attention_factor", entry["attention_factor"])


def _longrope_parameters(p, entry, max_len, rotary_dim, filled):
    for key in ("short_factor", "long_factor"):
        values = entry[key]
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise ValueError(f"{key} must be a list of {rotary_dim // 2} numbers, got {values!r}")
        if len(values) != rotary_dim // 2:
            raise ValueError(f"{key} must have rotary_dim/2 = {rotary_dim // 2} entries (one per pair), "
                             f"got {len(values)}")
        p[key] = _checks.array(key, values)
        if np.any(p[key] <= 0):
            raise ValueError(f"{key} must hold numbers > 0 only, got a minimum of {p[key].min()}")
    factor = entry.get("factor")
    if factor is None:
        if max_len is None:
            raise ValueError("longrope needs factor, or max_position_embeddings to compute it")
        factor = max_len / p["original_max_position_embeddings"]
        filled.append("factor = max_position_embeddings / original_max_position_embeddings")
    p["factor"] = _checks.positive_float("factor", factor)
    if entry.get("attention_factor") is not None:
        p["attention_factor"] = _checks.positive_float("attention_factor", entry["attention_factor"])


def _yarn_attention_factor(p) -> float:
    """``attention_factor``, else the ``mscale`` ratio when both are set (and non-zero), else ``0.1 ln s + 1``."""
    if "attention_factor" in p:
        return p["attention_factor"]
    s = p["factor"]
    if s <= 1.0:
        return 1.0
    if p.get("mscale") and p.get("mscale_all_dim"):
        return (0.1 * p["mscale"] * math.log(s) + 1.0) / (0.1 * p["mscale_all_dim"] * math.log(s) + 1.0)
    return scaling.yarn_attention_factor(s)


def _llama3(d, p, base) -> np.ndarray:
    """Llama 3.1's bands; with equal band factors the blended band is empty (Llama 4)."""
    L, s = p["original_max_position_embeddings"], p["factor"]
    low, high = p["low_freq_factor"], p["high_freq_factor"]
    if high > low:
        return scaling.llama3(d, s, L, base, low, high).inv_freq
    theta = scaling.unscaled(d, 1.0, L, base).inv_freq
    interpolated = scaling.position_interpolation(d, s, L, base).inv_freq
    return np.where(2.0 * np.pi / theta > L / low, interpolated, theta)


def _frequencies(settings: RopeSettings, n: int) -> ConfigFrequencies:
    d, base, p, kind = settings.rotary_dim, settings.base, settings.parameters, settings.rope_type
    factor = 1.0
    if kind == "default":
        inv = scaling.unscaled(d, base=base).inv_freq
    elif kind == "linear":
        # theta_i / s: position interpolation, which reads no length
        inv = scaling.unscaled(d, base=base).inv_freq / p["factor"]
    elif kind == "dynamic":
        inv = scaling.dynamic_ntk(d, L=settings.max_position_embeddings, base=base, current_length=n,
                                  hf_factor=p["factor"]).inv_freq
    elif kind == "yarn":
        inv = scaling.yarn_code(d, p["factor"], p["original_max_position_embeddings"], base,
                                p["beta_fast"], p["beta_slow"], p["truncate"]).inv_freq
        factor = _yarn_attention_factor(p)
    elif kind == "longrope":
        L = p["original_max_position_embeddings"]
        freqs = scaling.longrope(d, 1.0, L, base, p["short_factor"], p["long_factor"], current_length=n)
        inv = freqs.inv_freq
        factor = p.get("attention_factor",
                       1.0 if p["factor"] <= 1.0 else math.sqrt(1 + math.log(p["factor"]) / math.log(L)))
    elif kind == "llama3":
        inv = _llama3(d, p, base)
    elif kind == "ntk_alpha":
        # NTK-aware base b alpha^(d/(d-2)) (Hunyuan), the same at every length
        inv = rope.inv_freq(d, base * p["alpha"] ** (d / (d - 2)))
    else:  # proportional
        k = p["rotated_pairs"]
        kept = scaling.position_interpolation(settings.head_dim, p["factor"], base=base).inv_freq[:k]
        inv = np.concatenate([kept, np.zeros(settings.head_dim // 2 - k)])
    axes = None if settings.mrope_section is None else mrope.pair_axes(settings.mrope_section,
                                                                       settings.mrope_layout)
    return ConfigFrequencies(inv_freq=inv, attention_factor=float(factor), rope_type=kind,
                             head_dim=settings.head_dim, rotary_dim=d, seq_len=n,
                             proportional=kind == "proportional", axes=axes)



# ---------------------------------------------------------------------------
# Published configurations (data; the sources are text, nothing is fetched)
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


_PHI35_MINI_LONG = (
    1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601, 1.5899999141693115,
    1.600000023841858, 1.6200000047683716, 2.620000123977661, 3.2300000190734863, 3.2300000190734863,
    4.789999961853027, 7.400000095367432, 7.700000286102295, 9.09000015258789, 12.199999809265137,
    17.670000076293945, 24.46000099182129, 28.57000160217285, 30.420001983642578, 30.840002059936523,
    32.590003967285156, 32.93000411987305, 42.320003509521484, 44.96000289916992, 50.340003967285156,
    50.45000457763672, 57.55000305175781, 57.93000411987305, 58.21000289916992, 60.1400032043457,
    62.61000442504883, 62.62000274658203, 62.71000289916992, 63.1400032043457, 63.1400032043457,
    63.77000427246094, 63.93000411987305, 63.96000289916992, 63.970001220703125, 64.02999877929688,
    64.06999969482422, 64.08000183105469, 64.12000274658203, 64.41000366210938, 64.4800033569336,
    64.51000213623047, 64.52999877929688, 64.83999633789062)
_PHI35_MINI_SHORT = (
    1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842,
    1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0699999332427979,
    1.0999999046325684, 1.1099998950958252, 1.1599998474121094, 1.1599998474121094, 1.1699998378753662,
    1.2899998426437378, 1.339999794960022, 1.679999828338623, 1.7899998426437378, 1.8199998140335083,
    1.8499997854232788, 1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745,
    2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
    2.0199997425079346, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0799996852874756, 2.0899996757507324, 2.189999580383301, 2.2199995517730713, 2.5899994373321533,
    2.729999542236328, 2.749999523162842, 2.8399994373321533)

_HF = "https://huggingface.co/{}/blob/main/config.json"
# Gemma 3 27B's config.json as published: the language model under text_config, its base left to the class
_GEMMA3_27B = {"model_type": "gemma3",
               "text_config": {"head_dim": 128, "hidden_size": 5376, "model_type": "gemma3_text",
                               "num_attention_heads": 32, "num_hidden_layers": 62, "query_pre_attn_scalar": 168,
                               "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
                               "sliding_window_pattern": 6}}

#: Real configurations, in the order of the chapter's table.
PUBLISHED = (
    PublishedConfig(
        "Llama 2 7B", {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                       "max_position_embeddings": 4096},
        context=4096, trained_length=4096,
        sources=(_HF.format("meta-llama/Llama-2-7b-hf"), "arXiv:2307.09288 (Touvron et al. 2023), table 1",
                 "https://github.com/meta-llama/llama/blob/main/llama/model.py (theta = 10000.0)"),
        note="the published config.json has no rope_theta: LlamaConfig's default, 10000, as in the reference code"),
    PublishedConfig(
        "Code Llama 7B", {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 16384,
                          "rope_theta": 1000000, "rope_scaling": None},
        context=100_000, trained_length=16384,
        sources=(_HF.format("codellama/CodeLlama-7b-hf"), "arXiv:2308.12950 (Roziere et al. 2023), section 2.4"),
        note="fine-tuned on 16,384 tokens with base 10^6; the paper reports stable generation up to 100,000"),
    PublishedConfig(
        "Llama 3 8B", {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 8192,
                       "rope_theta": 500000.0},
        context=8192, trained_length=8192,
        sources=(_HF.format("meta-llama/Meta-Llama-3-8B"), "arXiv:2407.21783 (Dubey et al. 2024), table 3")),
    PublishedConfig(
        "Llama 3.1 8B", {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
                         "rope_theta": 500000.0,
                         "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                          "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
        context=131072, trained_length=8192,
        sources=(_HF.format("meta-llama/Llama-3.1-8B"), "arXiv:2407.21783 (Dubey et al. 2024), section 3.4.2",
                 "https://github.com/meta-llama/llama-models (apply_scaling)"),
        note="continued pre-training on long inputs followed; the ratios are against the 8,192 of the file"),
    PublishedConfig(
        "Llama 4 Scout", {"model_type": "llama4_text", "head_dim": 128, "max_position_embeddings": 10485760, "rope_theta": 500000.0,
                          "rope_scaling": {"factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                                           "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
        context=10485760, trained_length=8192,
        sources=(_HF.format("meta-llama/Llama-4-Scout-17B-16E-Instruct") + " (text_config)",
                 "https://ai.meta.com/blog/llama-4-multimodal-intelligence/"),
        note="every fourth layer has no RoPE (no_rope_layers); the RoPE layers attend in chunks of 8,192"),
    PublishedConfig(
        "Mistral 7B v0.1", {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 32768,
                            "rope_theta": 10000.0, "sliding_window": 4096},
        context=8192, trained_length=8192,
        sources=(_HF.format("mistralai/Mistral-7B-v0.1"), "arXiv:2310.06825 (Jiang et al. 2023), table 1"),
        note="sliding window 4,096: a query sees at most 4,096 keys per layer"),
    PublishedConfig(
        "Qwen2.5 7B Instruct + YaRN", {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
                                       "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                                       "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                                                        "type": "yarn"}},
        context=131072, trained_length=32768,
        sources=(_HF.format("Qwen/Qwen2.5-7B-Instruct"),
                 "https://huggingface.co/Qwen/Qwen2.5-7B-Instruct (model card, Processing Long Texts)",
                 "arXiv:2412.15115 (Qwen Team 2024), section 4"),
        note="the rope_scaling block is the one the model card says to add for inputs beyond 32,768"),
    PublishedConfig(
        "Phi-3.5-mini", {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
                         "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
                         "rope_scaling": {"long_factor": list(_PHI35_MINI_LONG),
                                          "short_factor": list(_PHI35_MINI_SHORT), "type": "longrope"}},
        context=131072, trained_length=4096,
        sources=(_HF.format("microsoft/Phi-3.5-mini-instruct"), "arXiv:2404.14219 (Abdin et al. 2024)")),
    PublishedConfig(
        "DeepSeek-V3", {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "max_position_embeddings": 163840, "rope_theta": 10000,
                        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                                         "type": "yarn"}},
        context=131072, trained_length=4096,
        sources=(_HF.format("deepseek-ai/DeepSeek-V3"), "arXiv:2412.19437 (DeepSeek-AI 2024), section 4.3"),
        note="only the 64 decoupled components of each 192-wide query and key are rotated (MLA)"),
    PublishedConfig(
        "gpt-oss-20b", {"model_type": "gpt_oss", "head_dim": 64, "max_position_embeddings": 131072, "rope_theta": 150000,
                        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                         "original_max_position_embeddings": 4096, "rope_type": "yarn",
                                         "truncate": False}},
        context=131072, trained_length=4096,
        sources=(_HF.format("openai/gpt-oss-20b"), "arXiv:2508.10925 (OpenAI 2025), section 2.1")),
    PublishedConfig(
        "Gemma 3 27B, global layers", _GEMMA3_27B,
        context=131072, trained_length=32768, layer_type="full_attention",
        sources=(_HF.format("google/gemma-3-27b-it"), "arXiv:2503.19786 (Gemma Team 2025), section 2"),
        note="pre-trained on 32K sequences, then positions interpolated by 8 for 128K; the text_config names "
             "neither base: rope_theta (10^6) is Gemma3TextConfig's default"),
    PublishedConfig(
        "Gemma 3 27B, local layers", _GEMMA3_27B,
        context=1024, trained_length=1024, layer_type="sliding_attention",
        sources=(_HF.format("google/gemma-3-27b-it"), "arXiv:2503.19786 (Gemma Team 2025), section 2"),
        note="five of every six layers attend to a window of 1,024 tokens: no distance is ever longer; "
             "their base (10^4) is the class's default too"),
    PublishedConfig(
        "GPT-NeoX-20B", {"model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64, "max_position_embeddings": 2048,
                         "rotary_emb_base": 10000, "rotary_pct": 0.25},
        context=2048, trained_length=2048,
        sources=(_HF.format("EleutherAI/gpt-neox-20b"), "arXiv:2204.06745 (Black et al. 2022), section 2.1"),
        note="Pythia uses the same rotary_pct 0.25 (arXiv:2304.01373)"),
    PublishedConfig(
        "Qwen2.5-VL 7B + YaRN", {"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28,
                                 "max_position_embeddings": 128000, "rope_theta": 1000000.0,
                                 "rope_scaling": {"type": "yarn", "mrope_section": [16, 24, 24], "factor": 4,
                                                  "original_max_position_embeddings": 32768}},
        context=131072, trained_length=32768,
        sources=(_HF.format("Qwen/Qwen2.5-VL-7B-Instruct"),
                 "https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct (model card, Processing Long Texts)"),
        note="the file ships {type: mrope, mrope_section: [16, 24, 24]}; the model card's YaRN block for inputs "
             "beyond 32,768 keeps the sections, and warns that it hurts temporal and spatial localization"),
    PublishedConfig(
        "Kimi K2 Instruct", {"model_type": "kimi_k2", "qk_rope_head_dim": 64, "max_position_embeddings": 131072,
                             "rope_theta": 50000.0,
                             "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"},
                             "rope_scaling": {"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0,
                                              "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                                              "type": "yarn"}},
        context=131072, trained_length=4096,
        sources=(_HF.format("moonshotai/Kimi-K2-Instruct"), "arXiv:2507.20534 (Kimi Team 2025)"),
        note="beta_fast = beta_slow: YaRN's ramp becomes a cut; DeepSeek-V3's attention moves the factor to "
             "the softmax scale"),
)


def published(name: str) -> PublishedConfig:
    """The entry of :data:`PUBLISHED` called ``name``."""
    names = tuple(p.name for p in PUBLISHED)
    return PUBLISHED[names.index(_checks.one_of("name", name, names))]
