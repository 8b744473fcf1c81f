r"""Reading a checkpoint's ``config.json``: the RoPE settings the library takes from it.

:func:`read_config` turns a configuration (version 4 or 5 of Transformers) into
:class:`~companion.configs.reading.RopeSettings` for one kind of attention layer: the
method's keys with the library's defaults applied, the keys the file leaves to its class
filled in from :func:`model_defaults` (and named), unknown keys listed and warned about,
keys that change positions outside the frequencies listed in ``effects``, or the answer
``"none"`` for layers that rotate nothing. A key the library reads for positions and this
module does not model is refused by name (the closed world of :func:`model_defaults`).
The package's docstring (:mod:`companion.configs`) describes the rules.
"""
from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Annotated

from .._contracts import (
    Array,
    Boolean,
    InstanceOf,
    Kind,
    OneOf,
    PositiveCounts,
    Real,
    Text,
    contract,
)
from .rope_types import _FACTOR, _LENGTH, _POSITIVE, _SPELLED_TYPES, ROPE_PARAMETERS, RopeType, _Entry

__all__ = ["UnknownKeysWarning", "UnmodelledEffectWarning", "PositionEffect", "RopeSettings", "MODELLED_KEYS",
           "model_defaults", "read_config"]

_COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
# Version-4 spellings of top-level keys in some model families' files.
_TOP_LEVEL_ALIASES = {"rotary_emb_base": "rope_theta",      # GPT-NeoX, Pythia
                      "rotary_pct": "partial_rotary_factor"}  # GPT-NeoX, Pythia
# The sizes a file may leave to its class, in the order the library resolves them.
_SIZE_KEYS = ("head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings", "qk_rope_head_dim")

#: The keys this package reads for positions, in every class that reads them: the closed world's known side.
#: A key the library reads for positions and not in this set (nor among a class's rules, see ``_modelled_keys``)
#: is refused by name.
MODELLED_KEYS = frozenset({
    "rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor", "max_position_embeddings",
    "original_max_position_embeddings", "head_dim", "layer_types", "no_rope_layers", "rope_local_base_freq",
    "global_head_dim", "rotary_dim", "rotary_emb_base", "rotary_pct", "qk_rope_head_dim", "qk_nope_head_dim",
    "rope_interleave", "mrope_section", "mrope_interleaved", "mla_use_nope",
})
# The sizes of multi-head latent attention's rotated and unrotated parts.
_LATENT_KEYS = frozenset({"qk_rope_head_dim", "qk_nope_head_dim"})
# DeepSeek-V4's second rotary branch: its compressed layers' base and which layers are compressed.
_DEEPSEEK_V4 = "deepseek_v4"
_DEEPSEEK_V4_KEYS = frozenset({"compress_rope_theta", "compress_ratios"})
# DeepseekV4Config's _COMPRESS_RATIO_TO_LAYER_TYPE: a layer's compression rate names its kind.
_DEEPSEEK_V4_KINDS = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}

# What the values of a configuration must be, by key.
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
    the frequencies (:class:`PositionEffect`). ``rope_type`` ``"none"`` is the answer
    "these layers rotate nothing" (``why`` says why; ``rotary_dim`` 0, ``base`` 0 (no base),
    and ``head_dim`` 0 when the file gives no head size).
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
    why: str = ""

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



# ---------------------------------------------------------------------------
# Reading a configuration
# ---------------------------------------------------------------------------

#: A ``config.json`` dictionary, or the :class:`~companion.configs.reading.RopeSettings` read from one.
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
      softmax ``mscale`` and ``rope_interleave`` (adjacent pairs), Ministral 3's
      ``llama_4_scaling_beta``; Hunyuan's ``alpha`` turns ``dynamic`` into static NTK-alpha
      (``rope_type`` ``"ntk_alpha"``).
    * **the closed world**: a key the model type's class reads for positions and this
      module does not model (:data:`MODELLED_KEYS` and the class's rules: a pattern key's
      layer types, ``no_rope_layer_interval``, a rotary switch, DeepSeek-V4's
      ``compress_rope_theta`` and ``compress_ratios``) is refused by name; a file that names
      its own code (``auto_map``) must hold no position key this module does not model.
    * **no rotation**: a class that builds no rotary module, a switch that turns it off,
      or a ``layer_type`` without attention (or a full-attention type of a class that
      rotates only its sliding-window layers) gives ``rope_type`` ``"none"`` with ``why``.
    * **layer types** are the file's or those the class derives from a pattern key; a
      multimodal class's rename of its text model's type is applied (Kimi K2.5's
      ``kimi_k2`` is read as ``deepseek_v3``); DeepSeek-V4's ``layer_type`` is a branch
      (``main``, ``compress``) or a layer type, read as its class builds the branches.

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
    types, _ = _layer_types(top, model_type, filled, strict=False)
    why = _why_nothing_rotates(top, model_type) or _why_layer_type_rotates_nothing(layer_type, model_type, top)
    if why:
        return _without_rotation(top, model_type, layer_type, why, filled)
    source, entry = _rope_dictionary(top, layer_type, model_type, filled, types)
    rope_type = _rope_type(entry, model_type, filled)
    kind = ROPE_PARAMETERS[rope_type]
    head_dim = _head_dim(top, layer_type, model_type)
    prf = _partial_rotary_factor(entry, top, head_dim, filled)
    base = _base(entry.get("rope_theta", top.get("rope_theta")), model_type)
    rotary_dim = _rotary_dim(head_dim, prf, rope_type)
    max_len = top.get("max_position_embeddings")
    max_len = None if max_len is None else _value("max_position_embeddings", max_len)
    effects = _position_effects(entry, model_type, rope_type) + _layout_effects(top, model_type)
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


def _without_rotation(top: dict, model_type: str | None, layer_type: str | None, why: str,
                      filled: list) -> RopeSettings:
    """The settings of layers that rotate nothing: rope type ``"none"``, nothing rotated, and why."""
    try:
        head_dim = _head_dim(top, layer_type, model_type)
    except ValueError:  # a model without rotation needs no head size; 0 says the file gives none
        head_dim = 0
    max_len = top.get("max_position_embeddings")
    return RopeSettings(rope_type="none", base=0.0, head_dim=head_dim, rotary_dim=0, partial_rotary_factor=0.0,
                        max_position_embeddings=max_len if isinstance(max_len, int) else None,
                        filled_in=tuple(filled), source="none", model_type=model_type, why=why)


def _settings(config, layer_type) -> RopeSettings:
    return config if isinstance(config, RopeSettings) else read_config(config, layer_type)


def _quietly(config, layer_type) -> RopeSettings:
    """The settings, read without warning (the body reads them again and warns once)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownKeysWarning)
        warnings.simplefilter("ignore", UnmodelledEffectWarning)
        return _settings(config, layer_type)


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
    the library's multimodal class gives it; a variant of a type that class renames is read
    as the type it renames it to, as Kimi K2.5's class reads ``kimi_k2`` as ``deepseek_v3``).
    The file is then held to the closed world (:func:`_closed_world`) on its own keys, before
    version-4 top-level spellings are renamed and class defaults are filled in.
    """
    table = _defaults_table()
    text = config.get("text_config")
    filled: list[str] = []
    if isinstance(text, Mapping):
        outer = config.get("model_type")
        model_type = text.get("model_type") or table["text_model_types"].get(outer)
        renamed = table["text_model_variants"].get(outer, {}).get(model_type)
        if renamed is not None:
            filled.append(f"model_type {model_type!r} read as {renamed!r} (the library's {outer!r} class renames "
                          f"its text model's type)")
            model_type = renamed
        top = dict(text)
    else:  # a flat multimodal file (Qwen2-VL): its class moves these keys into its text configuration
        model_type, top = config.get("model_type"), dict(config)
        model_type = table["text_model_types"].get(model_type, model_type)
    if model_type is not None and not _library_ships(model_type):
        model_type = _library_type(config, model_type, filled)
    _closed_world(config, top, model_type)
    top = {_TOP_LEVEL_ALIASES.get(k, k): v for k, v in top.items()}
    defaults = table["model_types"].get(model_type, {})
    for key in _SIZE_KEYS:
        if top.get(key) is None and defaults.get(key) is not None:
            top[key] = defaults[key]
            filled.append(f"{key} = {defaults[key]} ({defaults['config_class']}'s default)")
    return top, model_type, filled


def _library_ships(model_type: str) -> bool:
    """Whether ``model_type`` is one of the library's (with RoPE parameters, without rotary, or unread)."""
    table = _defaults_table()
    return model_type in table["model_types"] or model_type in table["no_rotary"] or model_type in table[
        "rotary_unread"]


# ---------------------------------------------------------------------------
# The closed world: what the library reads for positions and this package does not model
# ---------------------------------------------------------------------------

def _modelled_keys(model_type: str | None) -> set:
    """:data:`MODELLED_KEYS`, and the keys of the rules this package applies for ``model_type``'s class."""
    entry = _defaults_table()["model_types"].get(model_type, {})
    keys = set(MODELLED_KEYS)
    keys.update(entry[rule]["key"] for rule in ("layer_types_rule", "no_rope_rule", "rotary_switch") if rule in entry)
    if model_type == _DEEPSEEK_V4:
        keys |= _DEEPSEEK_V4_KEYS
    return keys


def _shown(keys, values: Mapping) -> str:
    """``key = value`` for each key, long values shortened."""
    def short(value):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return ", ".join(f"{key} = {short(values[key])}" for key in keys)


def _closed_world(config: Mapping, text: Mapping, model_type: str | None) -> None:
    """Refuse, by name, a key the library reads for positions that this package does not model.

    The closed world is the library's (:func:`model_defaults`, ``position_keys``): for a
    model type of the library, a key of the file (not null) that its class or modelling code
    reads for positions must be one this package models (:data:`MODELLED_KEYS` and the rules
    it applies for that class), and so must a position key whose class default is set (the
    class would apply it to a file without it). A file that names its own code (``auto_map``)
    is read as the library's class only when every key of it whose name is one of positions
    (the table's ``position_vocabulary``) is modelled; the sizes of latent attention
    (``qk_rope_head_dim``, ``qk_nope_head_dim``) count only in a latent-attention file
    (``kv_lora_rank`` set: DeepSeek-OCR's language model, ``use_mla: false``, reads neither),
    and ``mla_use_nope`` is modelled only where it agrees with the class
    (:func:`_mla_without_rope`). A model type whose class rotates by code the
    table cannot read is refused, and so are the vision, audio and video encoders of
    multimodal classes and the types the library ships no model for.
    """
    table = _defaults_table()
    if model_type in table["rotary_unread"]:
        raise ValueError(f"model_type must be one whose rotation this package models: the library's "
                         f"{table['rotary_unread'][model_type]} ({model_type!r}) rotates with settings it does not "
                         f"keep in rope_parameters")
    if model_type in table["encoders"]:
        raise ValueError(f"model_type must be a language model's: {model_type!r} is the "
                         f"{table['encoders'][model_type]} of a multimodal class, whose rotary module turns patch or "
                         f"frame grids")
    if model_type in table["grid_rotary"]:
        raise ValueError(f"model_type must be a language model's: the library's {table['grid_rotary'][model_type]} "
                         f"({model_type!r}) turns a grid of patches (an image's or a spectrogram's)")
    if model_type in table["configuration_only"]:
        raise ValueError(f"model_type must be one the library ships a model for: it ships "
                         f"{table['configuration_only'][model_type]} ({model_type!r}) but no model, so the model's own "
                         f"code decides its positions")
    present = {key for key, value in text.items() if value is not None}
    modelled = _modelled_keys(model_type)
    entry = table["model_types"].get(model_type)
    if entry is not None:
        unmodelled = sorted(present & set(entry["position_keys"]) - modelled)
        if unmodelled:
            it = "it" if len(unmodelled) == 1 else "them"
            raise ValueError(f"{_shown(unmodelled, text)} must be left out: the library's {entry['config_class']} "
                             f"(model_type {model_type!r}) reads {it} for positions, and this package does not model "
                             f"{it}")
        defaulted = sorted(set(entry.get("position_defaults", {})) - modelled - present)
        if defaulted:
            raise ValueError(f"{_shown(defaulted, entry['position_defaults'])} ({entry['config_class']}'s default) "
                             f"must be modelled to read model_type {model_type!r}: the class reads it for positions in "
                             f"every file that leaves it out, and this package does not model it")
    code = _custom_code(config)
    if code:
        vocabulary = re.compile(table["position_vocabulary"])
        # a latent-attention size in a file without latent attention (DeepSeek-OCR's use_mla: false) is not read
        mla = "kv_lora_rank" in present or (entry or {}).get("head_dim_rule") == "qk_rope_head_dim"
        unmodelled = sorted(key for key in present if vocabulary.search(key) and key not in modelled
                            and not (key in _LATENT_KEYS and not mla))
        if unmodelled:
            it = "it" if len(unmodelled) == 1 else "them"
            raise ValueError(f"{_shown(unmodelled, text)} must be left out: the file names its own code (auto_map: "
                             f"{code}), which reads {it} for positions, and this package does not model {it}")
    _mla_without_rope(text, model_type)


def _custom_code(config: Mapping) -> str:
    """The classes a file's ``auto_map`` names (its own code), or ``""``."""
    names = []
    for part in (config, config.get("text_config")):
        if isinstance(part, Mapping) and isinstance(part.get("auto_map"), Mapping):
            names.extend(str(v) for v in part["auto_map"].values())
    return ", ".join(dict.fromkeys(names))


def _mla_without_rope(text: Mapping, model_type: str | None) -> None:
    """``mla_use_nope`` (Kimi Linear's files): modelled where the class the file is read with agrees with it.

    True says the model's own code runs its multi-head latent attention without RoPE; false,
    with it. The library's Kimi Linear class builds no rotary module at all, so its files
    with ``true`` read as "no rotation"; any disagreement between the flag and the class is
    refused.
    """
    flag = text.get("mla_use_nope")
    if flag is None:
        return
    rotates = not _why_nothing_rotates(text, model_type)
    cls = _class_name(model_type)
    if flag and rotates:
        raise ValueError(f"mla_use_nope = {flag!r} must agree with the class the file is read with: the model's own "
                         f"code runs its latent attention without RoPE, while {cls} rotates it")
    if not flag and not rotates:
        raise ValueError(f"mla_use_nope = {flag!r} must agree with the class the file is read with: the model's own "
                         f"code rotates its latent attention, while {cls} builds no rotary module")


def _class_name(model_type: str | None) -> str:
    """"the library's X (model_type 'y')", or "the class of model_type 'y'" for a type the library does not ship."""
    table = _defaults_table()
    for part in ("model_types", "no_rotary", "rotary_unread"):
        found = table[part].get(model_type)
        if found is not None:
            name = found["config_class"] if isinstance(found, Mapping) else found
            return f"the library's {name} (model_type {model_type!r})"
    return f"the class of model_type {model_type!r}"


def _why_nothing_rotates(top: Mapping, model_type: str | None) -> str:
    """Why the whole model rotates nothing, or ``""``.

    The library's class builds no rotary module (``no_rotary`` in :func:`model_defaults`:
    absolute, relative, ALiBi or no positions; Kimi Linear), or a switch in the file turns
    its rotation off (``rotary_switch``: GraniteMoeHybrid's ``position_embedding_type``
    other than ``"rope"``, Falcon's ``alibi``, Zamba 2's ``use_mem_rope``), the file's value
    or else the class's default, or the file sets no window for a class that rotates only
    its sliding-window layers (Cohere 2's: ``if self.sliding_window is not None``).
    """
    table = _defaults_table()
    if model_type in table["no_rotary"]:
        return f"{_class_name(model_type)} builds no rotary module: its attention takes no rotary positions"
    if (model_type in _model_code("rope_only_sliding") and _without_window(top)
            and model_type not in _model_code("rope_without_window")):
        return (f"sliding_window = None: {_class_name(model_type)} rotates only in its sliding-window layers, and "
                f"without a window no layer is one")
    switch = table["model_types"].get(model_type, {}).get("rotary_switch")
    if switch is not None:
        value = top[switch["key"]] if switch["key"] in top else switch["default"]
        if value != switch["rotates_when"]:
            given = "" if switch["key"] in top else " (the class's default)"
            return (f"{switch['key']} = {value!r}{given}: {_class_name(model_type)} rotates nothing unless "
                    f"{switch['key']} = {switch['rotates_when']!r}")
    return ""


def _has_attention(kind: str) -> bool:
    """Whether a layer kind holds softmax attention: its name says attention (but linear attention, Qwen3.5's
    and GraniteMoeHybrid's state-space layers) or hybrid (Falcon-H1's and Zamba 2's attention beside a state-space
    block); ``mamba`` and ``conv`` layers have none."""
    return kind != "linear_attention" and ("attention" in kind or "hybrid" in kind)


def _why_layer_type_rotates_nothing(layer_type: str | None, model_type: str | None, top: Mapping) -> str:
    """Why layers of ``layer_type`` rotate nothing, or ``""``: no attention, or a class that rotates only its
    sliding-window layers (and it is not one; EXAONE 4's class rotates every layer of a file without a window)."""
    if layer_type is None or (model_type == _DEEPSEEK_V4 and layer_type in ("main", "compress")):
        return ""
    if not _has_attention(layer_type):
        return f"a {layer_type} layer has no attention to rotate"
    if (model_type in _model_code("rope_only_sliding") and layer_type != "sliding_attention"
            and not (_without_window(top) and model_type in _model_code("rope_without_window"))):
        return "its class rotates only in the sliding-window layers"
    return ""


def _without_window(top: Mapping) -> bool:
    """Whether the file sets ``sliding_window`` to null (its class's default is a window otherwise)."""
    return "sliding_window" in top and top["sliding_window"] is None


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


def _rope_dictionary(top: dict, layer_type: str | None, model_type: str | None, filled: list,
                     types: list) -> tuple[str, dict]:
    """Find the RoPE dictionary (and say where it came from); merge version-4 spellings and class defaults.

    ``types`` are the layer types, the file's or those its class derives.
    """
    v5, v4 = top.get("rope_parameters"), top.get("rope_scaling")
    for name, value in (("rope_parameters", v5), ("rope_scaling", v4)):
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(f"{name} must be a dictionary or null, got {type(value).__name__}")
    if model_type == _DEEPSEEK_V4:
        return _deepseek_v4_branch(top, layer_type, filled)
    layer_types = set(types) - {None}
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


def _deepseek_v4_branch(top: dict, layer_type: str | None, filled: list) -> tuple[str, dict]:
    """The dictionary of one of DeepSeek-V4's two rotary branches, built as its class builds it.

    ``DeepseekV4Config.__post_init__`` keeps two dictionaries under the labels ``main`` and
    ``compress``: ``main`` is default RoPE with ``rope_theta``; ``compress`` is the file's
    scaling dictionary (YaRN in the published files) with the base ``compress_rope_theta``
    and, for YaRN, ``attention_factor`` 1.0 unless the file gives one. Both rotate the
    fraction ``partial_rotary_factor`` of the head: the file's, else ``qk_rope_head_dim /
    head_dim``, else the class's 64/512. The sliding-window layers use ``main``, the
    compressed ones ``compress`` (``DeepseekV4Attention.rope_layer_type``). ``layer_type`` is
    a branch or a layer type.
    """
    kinds = tuple(_DEEPSEEK_V4_KINDS.values())
    branch = {kind: ("main" if kind == "sliding_attention" else "compress") for kind in kinds}.get(layer_type,
                                                                                                     layer_type)
    if layer_type is None:
        raise ValueError("DeepseekV4Config's rope_parameters is nested by rotary branch (main, compress): pass "
                         "layer_type")
    if branch not in ("main", "compress"):
        raise ValueError(f"layer_type must be one of DeepSeek-V4's rotary branches 'main' and 'compress', or one of "
                         f"its layer types ({', '.join(kinds)}); got {layer_type!r}")
    defaults = _defaults_table()["model_types"][_DEEPSEEK_V4]
    v5, v4 = top.get("rope_parameters"), top.get("rope_scaling")
    given = _normalised(v5 if v5 is not None else (v4 or {}))
    if isinstance(given.get("main"), Mapping) and isinstance(given.get("compress"), Mapping):
        return f"rope_parameters[{branch!r}]", dict(given[branch])
    prf = top.get("partial_rotary_factor")
    if prf is None and top.get("qk_rope_head_dim") is not None:
        prf = _value("qk_rope_head_dim", top["qk_rope_head_dim"]) / _value("head_dim", top["head_dim"])
    if prf is None:
        prf = defaults["rope_parameters"]["main"]["partial_rotary_factor"]
    scaling = {k: v for k, v in given.items() if k not in ("main", "compress")}
    if branch == "main":
        theta = top.get("rope_theta", scaling.get("rope_theta", defaults["rope_parameters"]["main"]["rope_theta"]))
        entry = {"rope_type": "default", "rope_theta": theta, "partial_rotary_factor": prf}
        filled.append(f"rope_parameters['main'] = default RoPE with rope_theta = {theta} on {prf:g} of the head "
                      f"(DeepseekV4Config: the sliding-window layers' branch)")
    else:
        theta = top.get("compress_rope_theta", defaults["position_defaults"]["compress_rope_theta"])
        entry = {**scaling, "rope_theta": theta, "partial_rotary_factor": prf}
        entry.setdefault("rope_type", "default")
        if entry["rope_type"] == "yarn":
            entry.setdefault("attention_factor", 1.0)
        filled.append(f"rope_parameters['compress'] = the file's scaling dictionary with compress_rope_theta = "
                      f"{theta} on {prf:g} of the head (DeepseekV4Config: the compressed layers' branch)")
    return f"DeepseekV4Config's rope_parameters[{branch!r}]", entry


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
    is read by the common rule: ``qk_rope_head_dim`` when it is a multi-head latent
    attention file (``kv_lora_rank``), ``head_dim``, then the quotient.
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
    mla = ("qk_rope_head_dim", "head_dim") if top.get("kv_lora_rank") is not None else ("head_dim",)
    keys = {"qk_rope_head_dim": ("qk_rope_head_dim",), None: mla}.get(rule, ("head_dim",))
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


def _layer_types(top: dict, model_type: str | None, filled: list | None = None,
                 strict: bool = True) -> tuple[list, list]:
    """Each layer's type and its ``no_rope_layers`` mark (1: RoPE), as the model's class sets them.

    The file's ``layer_types``; else DeepSeek-V4's ``compress_ratios``; else the class's rule
    for a pattern key (``layer_types_rule`` of :func:`model_defaults`: every ``k``-th layer
    full attention, the others sliding-window or linear, ``k`` the file's or the class's);
    else ``None`` for every layer, which is right when the kinds of the class's layers do not
    change their rotation, and refused (``strict``) when they do. The marks: the file's
    ``no_rope_layers``, else the class's ``no_rope_layer_interval`` rule (every ``k``-th layer
    without RoPE), else all 1. Without ``strict`` and without a layer count, ``([], [])``.
    """
    notes = filled if filled is not None else []
    entry = _defaults_table()["model_types"].get(model_type, {})
    cls = entry.get("config_class", f"the class of model_type {model_type!r}")
    types = list(top.get("layer_types") or [])
    count = top.get("num_hidden_layers")
    if not types and model_type == _DEEPSEEK_V4 and top.get("compress_ratios"):
        types = _deepseek_v4_layer_types(top, notes)
    rule = entry.get("layer_types_rule")
    if not types and rule is not None and (strict or count is not None):
        types = _types_by_rule(top, rule, cls, notes)
    if not types and strict and _kinds_matter(entry, model_type):
        deciding = entry.get("layer_types_keys") or []
        source = f" from {', '.join(deciding)}" if deciding else ""
        raise ValueError(f"layer_types must be given: the class of model_type {model_type!r} gives its layers the "
                         f"kinds {', '.join(entry['layer_kinds'])} by its own rule{source}, not modelled here")
    if count is None and not types and not strict:
        return [], []
    n = _value("num_hidden_layers", count or len(types) or None)
    if types and len(types) != n:
        raise ValueError(f"layer_types must name every one of the num_hidden_layers = {n} layers, got {len(types)}")
    marks = top.get("no_rope_layers")
    interval = entry.get("no_rope_rule")
    if not marks and interval is not None:
        k = top.get(interval["key"])
        k = interval["default"] if k is None else _value(interval["key"], k, {interval["key"]: _LENGTH})
        marks = [int((i + 1) % k != 0) for i in range(n)]
        notes.append(f"no_rope_layers: every {k}-th of the {n} layers without RoPE ({cls}'s rule for "
                     f"{interval['key']} = {k})")
    marks = list(marks or [1] * n)
    if len(marks) != n:
        raise ValueError(f"no_rope_layers must have one entry per layer ({n}), got {len(marks)}")
    return types or [None] * n, marks


def _types_by_rule(top: dict, rule: dict, cls: str, notes: list) -> list:
    """The layer types the class derives from its pattern key: every ``k``-th layer full attention."""
    key = rule["key"]
    k = top.get(key)
    k = rule["default"] if k is None else k
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{key} must be a whole number of layers >= 1: the library's {cls} derives the layer types "
                         f"from it and fails on {k!r}; give layer_types")
    needed = rule.get("fails_without")
    if needed is not None and needed in top and top[needed] is None:
        raise ValueError(f"{needed} must not be null: the library's {cls} derives its layer types from {key} only "
                         f"with a {needed} and fails without one; give layer_types")
    n = _value("num_hidden_layers", top.get("num_hidden_layers"))
    notes.append(f"layer_types: every {k}-th of the {n} layers full attention, the others {rule['others']} "
                 f"({cls}'s rule for {key} = {k})")
    return ["full_attention" if (i + 1) % k == 0 else rule["others"] for i in range(n)]


def _deepseek_v4_layer_types(top: dict, notes: list) -> list:
    """DeepSeek-V4's layer types from ``compress_ratios`` (``DeepseekV4Config``: 0, 4 or 128 per layer)."""
    ratios = list(top["compress_ratios"])
    n = _value("num_hidden_layers", top.get("num_hidden_layers") or len(ratios))
    unknown = sorted({r for r in ratios[:n] if r not in _DEEPSEEK_V4_KINDS})
    if unknown or len(ratios) < n:
        raise ValueError(f"compress_ratios must give each of the {n} layers one of "
                         f"{', '.join(map(str, _DEEPSEEK_V4_KINDS))}, got {ratios!r}")
    notes.append(f"layer_types from compress_ratios (DeepseekV4Config: "
                 f"{', '.join(f'{r} {kind}' for r, kind in _DEEPSEEK_V4_KINDS.items())}; entries past the "
                 f"{n} layers are not layers of the model)")
    return [_DEEPSEEK_V4_KINDS[r] for r in ratios[:n]]


def _kinds_matter(entry: Mapping, model_type: str | None) -> bool:
    """Whether the kinds the class gives its layers change their rotation.

    They do when the class nests its RoPE dictionary by layer type, gives some layers no
    attention, rotates only its sliding-window layers, or sizes its heads by layer type.
    """
    kinds = entry.get("layer_kinds") or []
    if not kinds:
        return False
    nested = any(isinstance(v, Mapping) for v in entry.get("rope_parameters", {}).values())
    no_attention = not all(_has_attention(kind) for kind in kinds)
    sizes = set(entry.get("head_dim_by_layer_type", {}).values())
    return nested or no_attention or model_type in _model_code("rope_only_sliding") or len(sizes) > 1


def _layout_effects(top: Mapping, model_type: str | None) -> tuple:
    """``rope_interleave`` (the DeepSeek family): the attention pairs adjacent components; the file's value or the
    class's default."""
    entry = _defaults_table()["model_types"].get(model_type, {})
    if "rope_interleave" not in entry.get("position_keys", ()):
        return ()
    value = top.get("rope_interleave", entry.get("position_defaults", {}).get("rope_interleave"))
    if not value:
        return ()
    return (PositionEffect("rope_interleave", value, "the attention turns adjacent components (2i, 2i + 1) as a pair "
                           "(apply_rotary_pos_emb_interleave); the frequencies are the same",
                           "rotate(layout='adjacent')"),)


def _why_no_rope(layer_type: str | None, rotates, model_type: str | None, top: Mapping, rope_by_type: dict) -> str:
    """Why a layer rotates nothing, or ``""`` when it rotates."""
    if not rotates:
        return "no_rope_layers marks it 0: attention without positions"
    if layer_type in rope_by_type and rope_by_type[layer_type] is None:
        return "its entry of rope_parameters is null"
    return _why_layer_type_rotates_nothing(layer_type, model_type, top)


def _rope_dictionary_or_none(top: dict) -> dict:
    """The layer types of a RoPE dictionary nested by layer type (a null entry: no RoPE), else ``{}``."""
    entry = top.get("rope_parameters") or top.get("rope_scaling") or {}
    types = set(top.get("layer_types") or ())
    if "rope_local_base_freq" in top:
        return {"full_attention": {}, "sliding_attention": {}}
    return {k: v for k, v in entry.items() if k in types and (v is None or isinstance(v, Mapping))}




