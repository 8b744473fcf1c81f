r"""What a checkpoint's configuration makes the library run: RoPE settings read from ``config.json``.

A model published for Hugging Face Transformers (Wolf et al. 2020) carries its
position settings in ``config.json``: the base ``rope_theta``, the head size
(``head_dim``, or ``hidden_size / num_attention_heads``), the fraction of each head
that is rotated (``partial_rotary_factor``), ``max_position_embeddings``, and one
dictionary that names the context-extension method and its options. Version 5 of
the library calls that dictionary ``rope_parameters`` (and keeps ``rope_theta`` in
it); files written for version 4 call it ``rope_scaling``, spell its type ``type``
or ``rope_type``, and keep ``rope_theta`` beside it. This package reads either form
and returns what the library computes from it at a given sequence length: the
frequency vector ``theta'`` and the attention factor that multiplies ``cos`` and
``sin`` (so every logit carries its square).

Every method is computed by :mod:`companion.scaling`; this package only maps the
library's keys to those functions' arguments, with the library's defaults. Each rope
type is one entry of :data:`~companion.configs.rope_types.ROPE_PARAMETERS`
(:class:`~companion.configs.rope_types.RopeType`): the keys it needs, the keys it may
carry, how it fills in the library's defaults and checks the values, and how it
computes the frequencies, the way Transformers keeps ``ROPE_INIT_FUNCTIONS`` beside its
validation functions. A new rope type is one entry there:

=================  ===========================================================
``rope_type``      companion
=================  ===========================================================
``default``        :func:`companion.scaling.unscaled`
``linear``         :func:`companion.scaling.position_interpolation` (``s = factor``)
``dynamic``        :func:`companion.scaling.dynamic_ntk` with ``hf_factor = factor``
                   and ``L = max_position_embeddings``; the library keeps state,
                   see :class:`~companion.configs.applied.DynamicNTKState`
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
``none``           nothing rotates: the reader's answer for a model or a layer
                   without rotation (no file spells this type either)
=================  ===========================================================

**Partial rotary.** With ``partial_rotary_factor = p < 1`` the library rotates only
the first ``r = int(p * head_dim)`` components of each head (GPT-NeoX, Black et al.
2022: a quarter of each head) and computes every method with ``d = r``: the exponent
is ``-2i/r`` over the *rotated* dimension. The ``proportional`` type instead keeps the
exponent over the whole head, ``theta_i = base^(-2i/head_dim)`` for the first
``int(p * head_dim) // 2`` pairs, and pads the rest with frequency 0 (a rotation by 0
leaves a pair alone); it is applied to the whole head in the split layout, so the
rotated components are the first ``r/2`` of each half. :func:`~companion.configs.applied.rotate` does both.

Unknown keys are never ignored silently: :class:`~companion.configs.reading.RopeSettings` lists them in
``unknown_keys`` and :func:`~companion.configs.reading.read_config` warns. Missing keys a method needs, unknown
``rope_type`` values and values that make the method meaningless raise ``ValueError``
naming the key. Where the library fills a value in (``original_max_position_embeddings``
from ``max_position_embeddings``, the YaRN factor from the ratio of the lengths), the
filled keys are listed in ``filled_in``.

**A closed world, the library's.** The reader knows what it does not model. For each
model type, :func:`~companion.configs.reading.model_defaults` lists the keys its
configuration class and modelling code read for positions (``position_keys``, found in
the library's source); a key of a file that the class reads for positions and that this
package does not model (:data:`~companion.configs.reading.MODELLED_KEYS` and the rules
below) is refused by name, and so is such a key whose class default is set. A file that
names its own code (``auto_map``) is read with the library's class only when every key of
it whose name is one of positions is modelled; Kimi K2's file is (``DeepseekV3Config``),
MiMo-V2's is not (``swa_rope_theta``, ``hybrid_layer_pattern``). "This layer rotates
nothing" is an answer (``rope_type`` ``"none"``, with ``why``): for a class that builds no
rotary module (Kimi Linear; absolute, relative and ALiBi models), a switch that turns it
off (GraniteMoeHybrid's ``position_embedding_type``, Falcon's ``alibi``, Zamba 2's
``use_mem_rope``), a layer without attention, a NoPE layer. The library's rules that
this package applies: layer types from a pattern key (``sliding_window_pattern``,
``full_attention_interval``: every ``k``-th layer full attention), Llama 4's and
SmolLM3's ``no_rope_layer_interval``, DeepSeek-V4's two rotary branches (``main`` for its
sliding-window layers, ``compress`` with ``compress_rope_theta`` and its own scaling for
the compressed ones, by ``compress_ratios``), and the multimodal classes that rename a
variant of their language model's type (Kimi K2.5's ``kimi_k2`` is ``deepseek_v3``). The
vision, audio and video encoders of multimodal classes, the classes that rotate patch
grids, and the types the library ships no model for are refused.

**What the file leaves to the class.** A published file often leaves out what equals
its model class's defaults (a multimodal model's ``text_config`` is written as the
difference from them): the reader fills them in from :func:`~companion.configs.reading.model_defaults`, a table
read from the library's configuration classes by ``python -m bookwork.model_defaults``, and
names each key it filled in. :func:`~companion.configs.applied.layer_plan` gives every layer's settings (layer
types with their own base, head size or method, layers without RoPE), and M-RoPE
files (``mrope_section``) give each rotated pair a position axis
(:mod:`companion.mrope`). Keys that change what the model computes with positions
outside the frequencies are listed in ``effects``: :func:`~companion.configs.applied.softmax_scale_factor` and
:func:`~companion.configs.applied.query_scale` compute those of the DeepSeek family and Ministral 3.

:data:`~companion.configs.catalogue.PUBLISHED` holds the position settings of published models (Llama 2 to
Kimi K2) with the sources of their values, as text: one JSON file per model in the
package data ``companion/data/published/``, read in the order of their file names
(a new model is a new file there); chapter 10 runs each through
:func:`~companion.configs.applied.config_extension`.

The package in four modules: :mod:`~companion.configs.reading` (a ``config.json`` to
:class:`~companion.configs.reading.RopeSettings`, with the class defaults of
:func:`~companion.configs.reading.model_defaults`),
:mod:`~companion.configs.rope_types` (the registry :data:`~companion.configs.rope_types.ROPE_PARAMETERS`),
:mod:`~companion.configs.applied` (what the library computes from the settings) and
:mod:`~companion.configs.catalogue` (the published configurations).
"""
from .applied import (
                      ConfigFrequencies,
                      DynamicNTKState,
                      LayerRope,
                      config_extension,
                      frequencies_at,
                      layer_plan,
                      query_scale,
                      rotate,
                      softmax_scale_factor,
)
from .catalogue import PUBLISHED, PublishedConfig, published, source_link, source_links
from .reading import (
                      MODELLED_KEYS,
                      PositionEffect,
                      RopeSettings,
                      UnknownKeysWarning,
                      UnmodelledEffectWarning,
                      model_defaults,
                      read_config,
)
from .rope_types import OPTIONAL_KEYS, REQUIRED_KEYS, ROPE_PARAMETERS, ROPE_TYPES, RopeType

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
    "MODELLED_KEYS",
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
    "source_link",
    "source_links",
]
