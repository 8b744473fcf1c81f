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
  ``apply_rotary_pos_emb`` under ``if self.sliding_window ...``).

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
                                    "query_states, key_states = apply_rotary_pos_emb")}
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
        model_types, text_model_types = {}, {}
        for model_type in sorted(CONFIG_MAPPING.keys()):
            try:
                config_class = CONFIG_MAPPING[model_type]
            except Exception:  # a model type whose module cannot be imported here
                continue
            if "text_config" in (getattr(config_class, "sub_configs", None) or {}):
                text_type = _text_model_type(config_class)
                if text_type is not None and text_type != model_type:
                    text_model_types[model_type] = text_type
            if not issubclass(config_class, RotaryEmbeddingConfigMixin):
                continue
            entry = class_defaults(config_class)
            if entry is not None:
                model_types[model_type] = entry
    finally:
        logging.disable(logging.NOTSET)
    return {"transformers": transformers.__version__, "model_types": model_types,
            "text_model_types": text_model_types, "model_code": model_code(set(model_types))}


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
