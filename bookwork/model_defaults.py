"""Write companion/data/model_defaults.json: the values Transformers supplies when a config.json omits a RoPE key.

A published ``config.json`` often leaves out what equals its model class's default:
Gemma 3's ``text_config`` names neither ``rope_theta`` nor ``head_dim``, Llama 2's
file has no ``rope_theta``. Transformers builds the model's configuration class from
the file, and the class fills in the rest. This script reads those defaults from the
installed library, for every ``model_type`` whose configuration class carries RoPE
parameters, and writes them as package data for :mod:`companion.configs`:

* ``rope_parameters``: what the class builds from a file with no RoPE key at all
  (the class instantiated without arguments; nested by layer type where the class
  nests it), which also gives the default base of each layer type;
* the declared defaults of the sizes a reader needs (``head_dim``, ``hidden_size``,
  ``num_attention_heads``, ``max_position_embeddings``, ``partial_rotary_factor``,
  ``qk_rope_head_dim``), ``null`` where the class derives the value from others
  (``head_dim = hidden_size // num_attention_heads``);
* ``head_dim_by_layer_type`` for classes whose layer types have different head sizes
  (Gemma 4's full-attention layers use ``global_head_dim``), and ``layer_kinds`` for
  classes that give their layers different kinds when a file names none (Qwen3-Next
  derives them from ``full_attention_interval``);
* for a multimodal model type whose file nests the language model under
  ``text_config`` (``gemma3``, ``qwen3_vl``), the model type of that text
  configuration when the file does not name it (``text_model_types``);
* the model types whose modeling code does something with positions that the rotary
  frequencies do not show (``model_code``), found by the line of code that does it in
  the model's ``modeling_*.py``: the DeepSeek family's softmax ``mscale`` (the key
  ``mscale_all_dim`` read by the attention), Ministral 3's query scale
  (``llama_4_scaling_beta``), Hunyuan's NTK-alpha
  (``compute_ntk_alpha_rope_parameters``), and which M-RoPE classes interleave the
  axes (Qwen3-VL's ``self.mrope_section[dim] * 3``) rather than cut sections, and which
  reorder the frequencies before giving them to the axes (ERNIE 4.5-VL's ``inv_freq_3d``),
  and whose attention rotates only in its sliding-window layers (Cohere 2, EXAONE 4:
  ``apply_rotary_pos_emb`` under ``if self.sliding_window ...``), and of those, which
  rotate every layer when the file sets no window (EXAONE 4's ``if self.sliding_window
  is None or self.is_sliding``; Cohere 2's layers then rotate none).

**The closed world.** A reader that knows what it does not model needs, for each model
type, the keys of a ``config.json`` that the library reads for positions. They are found
in the source: the fields of the configuration class, the keys its ``__post_init__``
pops or reads, and the attributes of ``config`` that the model's ``modeling_*.py`` reads,
kept when the name is one of positions (:data:`POSITION_VOCABULARY`: rope, rotary, theta,
nope, position_embedding_type, M-RoPE, layer types, patterns and intervals, partial
rotation, per-branch bases, ALiBi). Each RoPE model type records them as
``position_keys``, their class defaults as ``position_defaults`` (besides those the class keeps in
``rope_parameters``), and three rules found by building the class:

* ``rotary_switch``: the key whose value decides whether the model builds a rotary
  module at all (GraniteMoeHybrid's ``position_embedding_type``: only ``"rope"`` rotates),
  found by the line of ``modeling_*.py`` that builds the module under a condition;
* ``layer_types_rule``: how the class derives its layer types when a file gives none
  (a ``sliding_window_pattern`` or ``full_attention_interval`` ``k``: every ``k``-th layer
  full attention, the others sliding-window or linear), kept only when the class, built
  with several ``k`` and layer counts, gives exactly the rule's layer types; a class that
  derives them otherwise lists the keys in ``layer_types_keys``;
* ``no_rope_rule``: Llama 4's and SmolLM3's ``no_rope_layer_interval`` (every ``k``-th
  layer without RoPE), checked the same way.

The library's other model types are listed by what their modelling code holds:
``no_rotary`` (no rotary module anywhere: absolute, relative, ALiBi or no positions),
``rotary_unread`` (rotary code, but no ``rope_parameters`` this table could read). Among
the RoPE model types, ``encoders`` are the vision, audio and video parts of
multimodal classes (their rotary modules turn patch or frame grids), ``grid_rotary`` the
other types whose own rotary module turns a grid of image patches (DINOv3-based models),
and ``configuration_only`` the types the library ships a configuration class for but no
model. A
multimodal class that renames a variant of its language model's type (Kimi K2.5:
``kimi_k2`` is read as ``deepseek_v3``) is listed in ``text_model_variants``, found by the
line that renames it and checked by building the class.

The table records the library version it was read from; ``tests/test_configs.py``
regenerates it from the installed library and fails when the two differ, so it cannot
drift silently. Usage::

    .venv/bin/python -m bookwork.model_defaults          # rewrite the table
    .venv/bin/python -m bookwork.model_defaults --check  # exit 1 if it is stale
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
import warnings
from pathlib import Path

from bookwork import ROOT

TABLE = ROOT / "companion" / "data" / "model_defaults.json"
#: What the modeling code of a model type does with positions besides its frequencies, by the code that does it.
MODEL_CODE = {"softmax_mscale": ("mscale_all_dim",), "query_scale": ("llama_4_scaling_beta",),
              "ntk_alpha": ("compute_ntk_alpha_rope_parameters",), "mrope": ("mrope_section",),
              "mrope_interleaved": ("self.mrope_section[dim] * 3",), "mrope_reordered": ("inv_freq_3d",),
              "rope_only_sliding": ("if self.sliding_window is not None:\n            query_states, key_states = "
                                    "apply_rotary_pos_emb",
                                    "if self.sliding_window is None or self.is_sliding:\n            "
                                    "query_states, key_states = apply_rotary_pos_emb"),
              "rope_without_window": ("if self.sliding_window is None or self.is_sliding:\n            "
                                      "query_states, key_states = apply_rotary_pos_emb",)}
#: Names of configuration keys that bear on positions (a key is a position key of a class when its class or
#: modelling code reads it and its name matches).
POSITION_VOCABULARY = (r"rope|rotary|theta|nope|position_embedding_type|mrope|^layer_types$"
                       r"|(window|attention|hybrid_layer|hybrid_override)_(pattern|interval)$"
                       r"|partial_rotary|local_base_freq|global_head_dim|^compress_ratios?$|alibi")
#: How a class builds its rotary module only under a condition: ``... = XRotaryEmbedding(config) if config.KEY ==
#: "VALUE" else None``.
ROTARY_SWITCH = r"RotaryEmbedding\((?:config=)?config\)\s+if\s+config\.(\w+)\s*==\s*[\"']([^\"']+)[\"']\s+else\s+None"
#: Or under ``if config.KEY:`` a few lines above the line that builds it (Zamba 2's ``use_mem_rope``).
ROTARY_SWITCH_IF = (r"if (?:self\.)?config\.(\w+):\n(?:[^\n]*\n){0,6}?[^\n]*self\.rotary_emb\w* = "
                    r"\w*RotaryEmbedding\(")
#: Code that rotates: a rotary module, or the helpers that apply one.
ROTARY_CODE = r"class \w*Rotary\w*\(|\w+RotaryEmbedding\("
#: A multimodal class renaming a variant of its text model's type: the test, then the assignment.
TEXT_VARIANT = (r"text_config(?:\[[\"']model_type[\"']\]|\.get\([\"']model_type[\"'][^)]*\))\s*==\s*[\"']([\w.-]+)[\"']"
                r"\s*:\s*\n\s*self\.text_config\[[\"']model_type[\"']\]\s*=\s*[\"']([\w.-]+)[\"']")

#: The sizes a RoPE reader needs, recorded with their declared defaults.
SIZE_KEYS = ("head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings",
             "partial_rotary_factor", "qk_rope_head_dim")


def class_defaults(config_class) -> dict | None:
    """The RoPE-relevant defaults of one configuration class, or ``None`` if it has no RoPE parameters."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            config = config_class()
        except Exception:  # a class that cannot be built without arguments has no defaults to read
            return None
    rope_parameters = getattr(config, "rope_parameters", None)
    if not rope_parameters:
        return None
    declared = {f.name: f.default for f in dataclasses.fields(config_class)
                if f.default is not dataclasses.MISSING} if dataclasses.is_dataclass(config_class) else {}
    entry = {"config_class": config_class.__name__, "rope_parameters": _plain(rope_parameters)}
    entry.update({key: _plain(declared[key]) for key in SIZE_KEYS if key in declared})
    entry["head_dim_rule"] = head_dim_rule(config_class, config)
    kinds = sorted(set(getattr(config, "layer_types", None) or ()))
    if kinds and kinds != ["full_attention"]:
        entry["layer_kinds"] = kinds  # the class gives its layers different kinds when a file names none
    if entry["head_dim_rule"] == "head_dim, else the class's" and entry.get("head_dim") is None:
        entry["head_dim"] = config.head_dim  # a constant the class sets after reading the file
    if getattr(config, "is_heterogeneous", False):
        by_type = {layer_type: _layer_head_dim(config, layer_type)
                   for layer_type in sorted(set(getattr(config, "layer_types", None) or ()))}
        entry["head_dim_by_layer_type"] = {k: v for k, v in by_type.items() if v is not None}
    return entry


#: The rules by which a configuration class sets the head size its rotary module reads.
HEAD_DIM_RULES = ("head_dim, else hidden_size / num_attention_heads", "qk_rope_head_dim",
                  "head_dim, else the class's", "per layer", "other")


def head_dim_rule(config_class, config) -> str:
    """How the class sets the head size its rotary module reads, found by building it with other sizes.

    The rotary modules read ``config.head_dim``, or ``hidden_size // num_attention_heads``
    when the class has none. So the rule is ``"head_dim, else hidden_size /
    num_attention_heads"`` when the class has no head size of its own or derives it from
    those two, ``"qk_rope_head_dim"`` when it sets it to DeepSeek's rotated size (MLA),
    ``"head_dim, else the class's"`` when the class has a constant default,
    ``"per layer"`` for classes whose layers differ, ``"other"`` for any other rule.
    """
    def head(**sizes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return config_class(**sizes).head_dim if sizes else config.head_dim
    if getattr(config, "is_heterogeneous", False):  # the class refuses one head size for all layers
        return "per layer"
    try:
        d0 = head()
    except AttributeError:  # no head size of its own: the rotary module divides hidden_size
        return HEAD_DIM_RULES[0]
    hidden, heads = getattr(config, "hidden_size", None), getattr(config, "num_attention_heads", None)
    rotated = getattr(config, "qk_rope_head_dim", None)
    try:
        if d0 is None or (hidden and heads and d0 == hidden // heads and head(hidden_size=2 * hidden) == 2 * d0):
            return HEAD_DIM_RULES[0]
        if rotated and d0 == rotated and head(qk_rope_head_dim=2 * rotated) == 2 * rotated:
            return HEAD_DIM_RULES[1]
        if hidden and head(hidden_size=2 * hidden) == d0:
            return HEAD_DIM_RULES[2]
    except Exception:  # the class refuses the probe's sizes: its rule is not one of the simple ones
        pass
    return HEAD_DIM_RULES[4]


def _layer_head_dim(config, layer_type: str) -> int | None:
    """The head size of every layer of ``layer_type``, or ``None`` when the layers of that type differ."""
    try:
        return config.per_layer_config[layer_type].head_dim
    except ValueError:  # the library refuses a per-type view when the layers of the type differ
        return None


def table() -> dict:
    """The defaults of every RoPE model type of the installed Transformers, with its version."""
    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.modeling_rope_utils import RotaryEmbeddingConfigMixin

    logging.disable(logging.WARNING)
    try:
        model_types, text_model_types, variants = {}, {}, {}
        for model_type in sorted(CONFIG_MAPPING.keys()):
            try:
                config_class = CONFIG_MAPPING[model_type]
            except Exception:  # a model type whose module cannot be imported here
                continue
            if "text_config" in (getattr(config_class, "sub_configs", None) or {}):
                text_type = _text_model_type(config_class)
                if text_type is not None and text_type != model_type:
                    text_model_types[model_type] = text_type
                if text_model_variants(config_class):
                    variants[model_type] = text_model_variants(config_class)
            if not issubclass(config_class, RotaryEmbeddingConfigMixin):
                continue
            entry = class_defaults(config_class)
            if entry is not None:
                entry.update(position_rules(config_class, entry))
                model_types[model_type] = entry
        no_rotary, rotary_unread = other_model_types(CONFIG_MAPPING, set(model_types))
        encoders = {t: part for t, part in encoder_types(CONFIG_MAPPING).items() if t in model_types}
        only_configuration = configuration_only(CONFIG_MAPPING, set(model_types))
        grids = grid_rotary(CONFIG_MAPPING, set(model_types) - set(encoders))
    finally:
        logging.disable(logging.NOTSET)
    return {"transformers": transformers.__version__, "model_types": model_types,
            "text_model_types": text_model_types, "text_model_variants": variants,
            "no_rotary": no_rotary, "rotary_unread": rotary_unread, "encoders": encoders,
            "configuration_only": only_configuration, "grid_rotary": grids,
            "position_vocabulary": POSITION_VOCABULARY,
            "model_code": model_code(set(model_types))}


# ---------------------------------------------------------------------------
# The closed world: the keys each class reads for positions, and its rules
# ---------------------------------------------------------------------------

def _sources(config_class) -> tuple[str, str]:
    """The text of the class's ``configuration_*.py`` and ``modeling_*.py`` (empty when absent)."""
    import transformers

    package = config_class.__module__.split(".")[2]
    folder = Path(transformers.__file__).parent / "models" / package
    texts = []
    for kind in ("configuration", "modeling"):
        path = folder / f"{kind}_{package}.py"
        texts.append(path.read_text() if path.exists() else "")
    return texts[0], texts[1]


def position_keys(config_class) -> list[str]:
    """The keys of a ``config.json`` that ``config_class`` and its modelling code read for positions.

    Candidates: the class's dataclass fields, the names its configuration module reads as
    ``self.X`` or pops from the keyword arguments, and the attributes of ``config`` the
    modelling module reads; kept when the name matches :data:`POSITION_VOCABULARY`, is not
    private, and is not a method or class-level constant of the class (those no file sets).
    """
    configuration, modeling = _sources(config_class)
    fields = {f.name for f in dataclasses.fields(config_class)} if dataclasses.is_dataclass(config_class) else set()
    popped = set(re.findall(r"kwargs\.(?:pop|get|setdefault)\(\s*[\"'](\w+)[\"']", configuration))
    names = (set(re.findall(r"\bself\.(\w+)", configuration)) | popped | fields
             | set(re.findall(r"\b(?:config|self\.config|text_config)\.(\w+)", modeling))
             | set(re.findall(r"getattr\(\s*(?:self\.)?(?:config|text_config)\s*,\s*[\"'](\w+)[\"']", modeling)))
    vocabulary = re.compile(POSITION_VOCABULARY)
    return sorted(name for name in names
                  if vocabulary.search(name) and not name.startswith("_")
                  and (name in fields or name in popped or not hasattr(config_class, name)))


def rotary_switch(config_class, keys: list) -> dict | None:
    """The key whose value decides whether the model rotates at all.

    Either the line of ``modeling_*.py`` that builds the rotary module under a condition on
    a key (GraniteMoeHybrid: ``position_embedding_type == "rope"``; Zamba 2: ``if
    config.use_mem_rope:``), or a boolean position key
    that flips the class's own ``rotary`` property when it is flipped (Falcon's ``alibi``:
    its attention applies RoPE only without ALiBi).
    """
    modeling = _sources(config_class)[1]
    found = re.search(ROTARY_SWITCH, modeling)
    if found is not None:
        key, value = found.groups()
        return {"key": key, "rotates_when": value, "default": _plain(getattr(_built(config_class), key, None))}
    found = re.search(ROTARY_SWITCH_IF, modeling)
    if found is not None and found.group(1) in keys:
        key = found.group(1)
        return {"key": key, "rotates_when": True, "default": _plain(getattr(_built(config_class), key, None))}
    default = _built(config_class)
    if default is None or not isinstance(getattr(default, "rotary", None), bool):
        return None
    for key in keys:
        value = getattr(default, key, None)
        flipped = _built(config_class, **{key: not value}) if isinstance(value, bool) else None
        if flipped is not None and flipped.rotary != default.rotary:
            return {"key": key, "rotates_when": value if default.rotary else not value, "default": value}
    return None


def _built(config_class, **kwargs):
    """The class built with ``kwargs`` (warnings silenced), or ``None`` when it refuses them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return config_class(**kwargs)
        except Exception:  # the class refuses these values: the caller's rule does not hold
            return None


def _every_kth(n: int, k: int, others: str) -> list[str]:
    """Layer types with every ``k``-th layer (1-based) full attention and the others of kind ``others``."""
    return ["full_attention" if (i + 1) % k == 0 else others for i in range(n)]


#: Layer counts and pattern values a derived rule is checked on.
PROBE_LAYERS = (7, 12)
PROBE_VALUES = (2, 3, 5)


def layer_types_rule(config_class, kinds: list, keys: list) -> dict | None:
    """How the class derives its layer types from a pattern key when a file gives none, checked by building it.

    For each ``*_pattern`` or ``*_interval`` key among the class's position keys and each kind
    of layer besides full attention: the rule "every ``k``-th layer full attention, the others
    of that kind" must give the class's own layer types for every probed ``k`` and layer count,
    and, with the key left out, for one default ``k``. ``fails_without`` names a key whose
    absence (``None``) makes the class fail when it derives the types (EXAONE 4's
    ``sliding_window``).
    """
    candidates = [key for key in keys if key.endswith(("_pattern", "_interval")) and "rope" not in key]
    for key in candidates:
        for others in [kind for kind in kinds if kind != "full_attention"]:
            def types(n, **more):
                built = _built(config_class, num_hidden_layers=n, **more)
                return None if built is None else list(getattr(built, "layer_types", None) or ())
            if not all(types(n, **{key: k}) == _every_kth(n, k, others) for n in PROBE_LAYERS for k in PROBE_VALUES):
                continue
            defaults = [k for k in range(1, 13) if all(types(n) == _every_kth(n, k, others) for n in PROBE_LAYERS)]
            if len(defaults) != 1:
                continue
            rule = {"key": key, "full_every": True, "others": others, "default": defaults[0]}
            fails = [name for name in ("sliding_window",) if name in {f.name for f in dataclasses.fields(config_class)}
                     and types(PROBE_LAYERS[0], **{name: None}) is None]
            if fails:
                rule["fails_without"] = fails[0]
            return rule
    return None


def _layer_types_keys(config_class) -> list[str]:
    """The keys the class reads in its ``if self.layer_types is None:`` block (the keys that decide its layer kinds)."""
    configuration = _sources(config_class)[0]
    found = re.search(r"\n( *)if self\.layer_types is None:\n((?:\1 +.*\n|\s*\n)+)", configuration)
    if found is None:
        return []
    block = found.group(2)
    names = set(re.findall(r"\bself\.(\w+)", block))
    names |= set(re.findall(r"kwargs\.(?:pop|get)\(\s*[\"'](\w+)[\"']", block))
    return sorted(names - {"layer_types", "num_hidden_layers"})


def no_rope_rule(config_class, keys: list) -> dict | None:
    """``no_rope_layer_interval`` ``k``: every ``k``-th layer without RoPE (``no_rope_layers`` 0), checked by
    building the class."""
    if "no_rope_layer_interval" not in keys:
        return None

    def marks(n, **more):
        built = _built(config_class, num_hidden_layers=n, **more)
        return None if built is None else list(getattr(built, "no_rope_layers", None) or ())

    expected = lambda n, k: [int((i + 1) % k != 0) for i in range(n)]  # noqa: E731
    if not all(marks(n, no_rope_layer_interval=k) == expected(n, k) for n in PROBE_LAYERS for k in PROBE_VALUES):
        return None
    defaults = [k for k in range(1, 13) if all(marks(n) == expected(n, k) for n in PROBE_LAYERS)]
    return {"key": "no_rope_layer_interval", "default": defaults[0]} if len(defaults) == 1 else None


def text_model_variants(config_class) -> dict:
    """The variants of its text model's type a multimodal class renames (``{variant: type}``), checked by building."""
    found = {}
    for variant, parent in re.findall(TEXT_VARIANT, _sources(config_class)[0]):
        built = _built(config_class, text_config={"model_type": variant})
        if built is not None and built.get_text_config().model_type == parent:
            found[variant] = parent
    return found


def position_rules(config_class, entry: dict) -> dict:
    """The closed-world part of one RoPE model type's entry: its position keys and the rules found by building it."""
    keys = position_keys(config_class)
    rules = {"position_keys": keys}
    switch = rotary_switch(config_class, keys)
    if switch is not None:
        rules["rotary_switch"] = switch
    if entry.get("layer_kinds"):
        rule = layer_types_rule(config_class, entry["layer_kinds"], keys)
        if rule is not None:
            rules["layer_types_rule"] = rule
        elif _layer_types_keys(config_class):
            rules["layer_types_keys"] = _layer_types_keys(config_class)
    rule = no_rope_rule(config_class, keys)
    if rule is not None:
        rules["no_rope_rule"] = rule
    built = _built(config_class)
    defaults = {key: _plain(_attribute(built, key)) for key in keys if key not in _DICTIONARY_KEYS}
    defaults = {key: value for key, value in defaults.items() if value is not None}
    if defaults:
        rules["position_defaults"] = defaults
    return rules


def _attribute(config, key: str):
    """``config.key``, or ``None`` when the class refuses one value for all layers (a per-layer attribute)."""
    try:
        return getattr(config, key, None)
    except Exception:  # a heterogeneous class keeps the value per layer
        return None


# Keys the class turns into rope_parameters (their defaults are recorded there) or lists per layer.
_DICTIONARY_KEYS = ("rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor", "layer_types",
                    "no_rope_layers")


#: Parts of a multimodal class that are not its language model.
ENCODER_PARTS = ("vision", "audio", "video", "asr", "dit", "word_timestamp")


def encoder_types(config_mapping) -> dict:
    """The model types that are the vision, audio or video part of a multimodal class (``{type: part}``).

    Found as the sub-configurations of the library's classes whose part names one of
    :data:`ENCODER_PARTS`: their rotary modules turn patch or frame grids, not a language
    model's positions.
    """
    found = {}
    for model_type in sorted(config_mapping.keys()):
        try:
            config_class = config_mapping[model_type]
        except Exception:  # a model type whose module cannot be imported here
            continue
        for part, sub in (getattr(config_class, "sub_configs", None) or {}).items():
            sub_type = getattr(sub, "model_type", None)
            if any(word in part for word in ENCODER_PARTS) and isinstance(sub_type, str) and sub_type in config_mapping:
                found.setdefault(sub_type, part)
    return found


def grid_rotary(config_mapping, model_types: set) -> dict:
    """The RoPE model types whose own rotary module turns a grid of image patches (``{type: rotary class}``).

    The module named after the configuration class, when its ``forward`` takes the pixels
    or its code reads the patch size or computes axial frequencies (DINOv3's, Pixtral's).
    """
    import importlib
    import inspect

    found = {}
    for model_type in sorted(model_types):
        config_class = config_mapping[model_type]
        package = config_class.__module__.rsplit(".", 1)[0]
        try:
            module = importlib.import_module(f"{package}.modeling_{package.rsplit('.', 1)[1]}")
        except ImportError:  # no model in the library (configuration_only)
            continue
        prefix = config_class.__name__[: -len("Config")]
        own = [name for name in dir(module) if name.endswith("RotaryEmbedding") and name.startswith(prefix)]
        if len(own) != 1:
            continue
        source = inspect.getsource(getattr(module, own[0]))
        forward = inspect.signature(getattr(module, own[0]).forward).parameters
        if "pixel_values" in forward or "patch_size" in source or "axial" in source:
            found[model_type] = own[0]
    return found


def configuration_only(config_mapping, model_types: set) -> dict:
    """The RoPE model types whose package holds a configuration class but no ``modeling_*.py`` (no model to build)."""
    return {model_type: config_mapping[model_type].__name__ for model_type in sorted(model_types)
            if not _sources(config_mapping[model_type])[1]}


def other_model_types(config_mapping, rope_types: set) -> tuple[dict, dict]:
    """The library's model types without RoPE parameters: those without rotary code, and those with it.

    A type whose class nests a language model (``text_config``) is read through that
    model and listed in neither.
    """
    no_rotary, unread = {}, {}
    for model_type in sorted(config_mapping.keys()):
        if model_type in rope_types:
            continue
        try:
            config_class = config_mapping[model_type]
        except Exception:  # a model type whose module cannot be imported here
            continue
        if "text_config" in (getattr(config_class, "sub_configs", None) or {}):
            continue
        has_rotary = re.search(ROTARY_CODE, _sources(config_class)[1]) is not None
        (unread if has_rotary else no_rotary)[model_type] = config_class.__name__
    return no_rotary, unread


def model_code(model_types: set) -> dict:
    """For each entry of :data:`MODEL_CODE`, the RoPE model types whose ``modeling_*.py`` holds its code."""
    import transformers
    from transformers import CONFIG_MAPPING

    models = Path(transformers.__file__).parent / "models"
    found = {name: [] for name in MODEL_CODE}
    for model_type in sorted(model_types):
        package = CONFIG_MAPPING[model_type].__module__.split(".")[2]
        source = models / package / f"modeling_{package}.py"
        if not source.exists():
            continue
        code = source.read_text()
        for name, needles in MODEL_CODE.items():
            if any(needle in code for needle in needles):
                found[name].append(model_type)
    return found


def _text_model_type(config_class) -> str | None:
    """The model type of the default ``text_config`` of a multimodal configuration class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return config_class().get_text_config().model_type
        except Exception:  # a class that cannot be built without arguments names no default
            return None


def _plain(value):
    """A JSON value: mappings and sequences made plain, everything else kept."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def render(data: dict) -> str:
    """The table as it is stored: sorted keys, one model type per block."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the stored table is stale")
    args = parser.parse_args(argv)
    fresh = render(table())
    if args.check:
        stale = not TABLE.exists() or TABLE.read_text() != fresh
        print(f"{TABLE} is {'stale' if stale else 'current'}")
        return int(stale)
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(fresh)
    print(f"wrote {TABLE} ({len(json.loads(fresh)['model_types'])} model types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
