r"""What the library computes from the settings read from a configuration.

:func:`frequencies_at` gives the frequency vector and the attention factor at a
sequence length (with the state of ``dynamic`` in :class:`DynamicNTKState`),
:func:`rotate` rotates vectors as the model does (partial, proportional and M-RoPE
included), :func:`layer_plan` gives every layer's settings, :func:`query_scale` and
:func:`softmax_scale_factor` the scales some classes apply outside the frequencies,
and :func:`config_extension` measures a configuration on chapter 6's trained range.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from .. import mrope, rope, scaling
from .._contracts import Count, InstanceOf, Positions, Vectors, contract, entries
from ..rope import Layout
from ..trained_range import Extension
from .reading import (
    Config,
    ConfigFile,
    LayerType,
    RopeSettings,
    _layer_types,
    _quietly,
    _rope_dictionary_or_none,
    _settings,
    _why_no_rope,
    _why_nothing_rotates,
    _with_class_defaults,
)
from .rope_types import ROPE_PARAMETERS

__all__ = ["ConfigFrequencies", "frequencies_at", "DynamicNTKState", "rotate", "LayerRope", "layer_plan",
           "query_scale", "softmax_scale_factor", "config_extension"]


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


@contract
def frequencies_at(config: Config, seq_len: Count, layer_type: LayerType | None = None) -> ConfigFrequencies:
    r"""The frequencies and attention factor the library uses for a sequence of ``seq_len`` tokens.

    ``config`` is a ``config.json`` dictionary or :class:`~companion.configs.reading.RopeSettings`; ``seq_len``
    the current length (the largest position plus one). Only ``dynamic`` and
    ``longrope`` depend on it. For ``dynamic`` this is a fresh model's answer: the
    library then keeps the frequencies of the longest input seen
    (:class:`DynamicNTKState`). For M-RoPE, ``axes`` gives each pair's position axis.
    Float64 throughout (the library: float32).
    """
    settings = _settings(config, layer_type)
    inv_freq, factor = ROPE_PARAMETERS[settings.rope_type].compute(settings, seq_len)
    axes = None if settings.mrope_section is None else mrope.pair_axes(list(settings.mrope_section),
                                                                                   settings.mrope_layout)
    return ConfigFrequencies(inv_freq=inv_freq, attention_factor=float(factor), rope_type=settings.rope_type,
                             head_dim=settings.head_dim, rotary_dim=settings.rotary_dim, seq_len=seq_len,
                             proportional=settings.rope_type == "proportional", axes=axes)


def _dynamic(settings: RopeSettings) -> RopeSettings:
    """``settings``, which must be of rope type ``dynamic``."""
    if settings.rope_type != "dynamic":
        raise ValueError(f"config must have rope_type 'dynamic' (DynamicNTKState follows dynamic NTK scaling), "
                         f"got {settings.rope_type!r}")
    return settings


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

    @contract
    def __init__(self, config: Config, layer_type: LayerType | None = None):
        # the configuration, read once; only a dynamic one has this state
        self.settings = _dynamic(_settings(config, layer_type))
        self.original_length = self.settings.max_position_embeddings
        self.longest = self.original_length
        self._original = frequencies_at(self.settings, self.original_length)
        self.current = self._original

    @contract
    def update(self, seq_len: Count) -> ConfigFrequencies:
        """Feed one input of ``seq_len`` tokens; return the frequencies it is rotated with."""
        if seq_len > self.longest:
            # a longer input than any before: the frequencies at its length
            self.current = frequencies_at(self.settings, seq_len)
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
    (the library multiplies ``cos`` and ``sin``, which act on those). ``layout`` is how the
    model's class pairs the components: ``"split"`` (``rotate_half``, most classes) or
    ``"adjacent"`` (the DeepSeek family with ``rope_interleave``, which the settings list as
    an effect; Llama 4's and Cohere's classes pair adjacent components by their code);
    either gives the same scores with ``W_Q`` and ``W_K`` permuted
    (:func:`companion.rope.layout_permutation`).
    Rope type ``none`` returns ``x`` unchanged. Float64, shape of ``x``.
    """
    r = frequencies.rotary_dim
    if r == 0:  # rope type none: the layers rotate nothing
        return np.array(x, dtype=np.float64)
    if _is_grid(positions, frequencies):
        # pair i turned by p_{a(i)} theta_i: each axis's positions on its own pairs
        turned = mrope.rotate(x[..., :r], positions, frequencies.inv_freq, frequencies.axes, layout)
    else:
        # pair i turned by m theta_i
        turned = rope.rotate(x[..., :r], positions, frequencies.inv_freq, layout)
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

    A layer has no RoPE when the whole model rotates nothing (a class that builds no rotary
    module, or a switch that turns it off: GraniteMoeHybrid's ``position_embedding_type``),
    when its layer type is not an attention layer (Qwen3.5's and Qwen3-Next's
    ``linear_attention``, state-space or convolution layers), when ``no_rope_layers`` marks
    it 0 (Llama 4, SmolLM3: every fourth layer, from ``no_rope_layer_interval`` when the file
    gives no marks), when its entry of a dictionary nested by layer type is null, or when its
    class rotates only in sliding-window layers and it is not one (Cohere 2, EXAONE 4; Yang
    et al. 2025's RNoPE-SWA; without a window, EXAONE 4's class rotates every layer and
    Cohere 2's none). The others get :func:`~companion.configs.reading.read_config`
    for their layer type (its own base, head size and method; DeepSeek-V4's branch). The
    layer types are the file's, or those its class derives from a pattern key
    (``sliding_window_pattern``, ``full_attention_interval``, DeepSeek-V4's
    ``compress_ratios``); the number of layers is ``num_hidden_layers`` (or the length of
    ``layer_types``).
    """
    top, model_type, filled = _with_class_defaults(config)
    types, no_rope = _layer_types(top, model_type, filled)
    nothing = _why_nothing_rotates(top, model_type)
    if nothing:
        return tuple(LayerRope(i, layer_type, None, nothing) for i, layer_type in enumerate(types))
    rope_by_type = _rope_dictionary_or_none(top)
    read = {}
    plan = []
    for i, (layer_type, rotates) in enumerate(zip(types, no_rope)):
        why = _why_no_rope(layer_type, rotates, model_type, top, rope_by_type)
        if why:
            plan.append(LayerRope(i, layer_type, None, why))
            continue
        if layer_type not in read:
            read[layer_type] = _quietly(config, layer_type)
        plan.append(LayerRope(i, layer_type, read[layer_type]))
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
    return scaling.yarn_mscale(s, effect[0].value) ** 2


def _trained_length(settings: RopeSettings, context: int, trained_length: int | None) -> int:
    """``trained_length``, else the length the settings scale from, else ``max_position_embeddings``;
    ``context`` must be at least that long."""
    L = trained_length or settings.original_length or settings.max_position_embeddings
    if L is None:
        raise ValueError("trained_length must be given: the configuration names no training length")
    if context < L:
        raise ValueError(f"context must be at least the trained length (trained_length {L}), got {context}")
    return L


def _rotates_something(config, layer_type) -> None:
    settings = _quietly(config, layer_type)
    if settings.rope_type == "none":
        raise ValueError(f"config must rotate something to be extended; it rotates nothing ({settings.why})")


@contract(_rotates_something)
def config_extension(config: Config, context: Count, trained_length: Count | None = None,
                     layer_type: LayerType | None = None) -> Extension:
    r"""The quantities of chapter 6's context-extension figure
    (:mod:`companion.figures.scaling`) for a real configuration at its advertised ``context``.

    The reference frequencies are the unscaled ones of the same base and rotated
    size (for ``proportional``, its non-zero pairs). The trained range is
    ``trained_length`` (default: ``RopeSettings.original_length``, else
    ``max_position_embeddings``); the extension factor is ``s = context /
    trained_length`` (at least 1). Returns :class:`companion.trained_range.Extension` with
    ``method`` set to the rope type: per-pair turns in training, angle ratios
    ``s theta'_i / theta_i`` (:func:`companion.trained_range.angle_ratio`), the pairs out of
    range (:func:`companion.trained_range.out_of_range`) and their count.
    """
    settings = _settings(config, layer_type)
    L = _trained_length(settings, context, trained_length)
    used = frequencies_at(settings, context)
    # the rotating pairs, and the unscaled frequencies of the same base and rotated size
    scaled = used.inv_freq[used.inv_freq > 0]
    d = settings.head_dim if settings.rope_type == "proportional" else settings.rotary_dim
    theta = rope.inv_freq(d, settings.base)[:scaled.size]
    return Extension.of(settings.rope_type, scaled, theta, context / L, L, used.attention_factor)
