r"""Reading a checkpoint's ``config.json``: the RoPE settings the library takes from it.

:func:`read_config` turns a configuration (version 4 or 5 of Transformers) into
:class:`~companion.configs.reading.RopeSettings` for one kind of attention layer: the method's keys with the
library's defaults applied, the keys the file leaves to its class filled in from
:func:`model_defaults` (and named), unknown keys listed and warned about, keys that
change positions outside the frequencies listed in ``effects``. The package's
docstring (:mod:`companion.configs`) describes the rules.
"""
from __future__ import annotations

import functools
import json
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

__all__ = ["UnknownKeysWarning", "UnmodelledEffectWarning", "PositionEffect", "RopeSettings", "model_defaults",
           "read_config"]

_COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
# Version-4 spellings of top-level keys in some model families' files.
_TOP_LEVEL_ALIASES = {"rotary_emb_base": "rope_theta",      # GPT-NeoX, Pythia
                      "rotary_pct": "partial_rotary_factor"}  # GPT-NeoX, Pythia
# The sizes a file may leave to its class, in the order the library resolves them.
_SIZE_KEYS = ("head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings", "qk_rope_head_dim")

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




