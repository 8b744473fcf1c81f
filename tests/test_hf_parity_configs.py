"""companion.configs on published config.json files it was not written from, against Transformers.

``tests/data/published_configs/`` holds 35 real configuration files: 25 read while the
reader was extended (the chapter also reads two of them, Gemma 3 27B's ``text_config`` and
Kimi K2's file), and 10 more (``held_out`` in ``sources.json``) gathered before that work
was finished and first run against the finished reader, each copied from a public
repository named, with its commit, in ``sources.json`` (multimodal models with M-RoPE,
layer-typed models, MLA, partial rotary, files that rely on their class's defaults,
YaRN with equal betas, LongRoPE's pre-release name). For every file the library's own
configuration class is built from the file and its own rotary module from that
configuration (in code, random weights, nothing downloaded), and the reader must give:

* the frequencies of every layer type, to float32 rounding of the library's
  (``4 * 2^-23`` relative), and the same attention factor (``1e-6``), at lengths on
  both sides of every switch point;
* for M-RoPE, the cos and sin tables on a mixed text / image / video position grid;
* the attention-side scales of the model classes that apply them (the DeepSeek family's
  softmax ``mscale``, Ministral 3's position-dependent query scale);
* the library's refusal where the library refuses (Phi-3.5-vision's ``"su"``).

``tests/data/published_configs_2026/`` holds 15 more, of models released in 2025 and 2026,
14 of them gathered before the reader knew what it does not model and first read by the
finished reader (DeepSeek-OCR's was added after, for a refusal that names the key deciding
it): RoPE switched off (GraniteMoeHybrid's ``position_embedding_type``, Kimi Linear's latent
attention without RoPE), DeepSeek-V4's second rotary branch, EXAONE 4.0's sliding-window
pattern, Kimi K2.6's ``kimi_k2`` text model, files that name their own code (MiMo-V2.5,
MiniMax-M3, Kimi K3, DeepSeek-OCR) and layer plans (Llama 4 Maverick, Qwen3.6). For each the
library builds its configuration as ``from_pretrained`` does without the file's own code,
and the reader must give the frequencies and attention factor of every layer type, the
layer types and no-RoPE marks of its layer plan, "no rotation" where the library's model
builds no rotary module, and a refusal naming the key where the library refuses.

The closed world: every model type of the library, read from its name alone, either
agrees with the library's own rotary module, reads as "no rotation" where the library
builds none, is refused with the key that decides it, or is recorded with the reason it is
not one text rotary module.
"""
from __future__ import annotations

import importlib
import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from transformers import AutoConfig  # noqa: E402

from companion import configs, mrope  # noqa: E402

EPS32 = 2.0 ** -23
CORPUS = Path(__file__).parent / "data" / "published_configs"
SOURCES = json.loads((CORPUS / "sources.json").read_text())
NAMES = sorted(SOURCES)
#: Model types the library does not ship and the class its users run them with.
LIBRARY_TYPE = {"kimi_k2": "deepseek_v3", "phi3_v": "phi3"}
#: The text model's rotary module in the library, by text model type.
ROTARY = {
    "cohere": "cohere.CohereRotaryEmbedding", "deepseek_v2": "deepseek_v2.DeepseekV2RotaryEmbedding",
    "deepseek_v3": "deepseek_v3.DeepseekV3RotaryEmbedding", "gemma2": "gemma2.Gemma2RotaryEmbedding",
    "gemma3_text": "gemma3.Gemma3RotaryEmbedding", "gemma4_text": "gemma4.Gemma4TextRotaryEmbedding",
    "glm4v_moe_text": "glm4v_moe.Glm4vMoeTextRotaryEmbedding", "gpt_neox": "gpt_neox.GPTNeoXRotaryEmbedding",
    "llama": "llama.LlamaRotaryEmbedding", "minimax_m2": "minimax_m2.MiniMaxM2RotaryEmbedding",
    "ministral3": "ministral3.Ministral3RotaryEmbedding", "mistral": "mistral.MistralRotaryEmbedding",
    "mixtral": "mixtral.MixtralRotaryEmbedding", "olmo2": "olmo2.Olmo2RotaryEmbedding",
    "phi3": "phi3.Phi3RotaryEmbedding", "qwen2_moe": "qwen2_moe.Qwen2MoeRotaryEmbedding",
    "qwen2_5_vl_text": "qwen2_5_vl.Qwen2_5_VLRotaryEmbedding", "qwen3": "qwen3.Qwen3RotaryEmbedding",
    "qwen3_vl_text": "qwen3_vl.Qwen3VLTextRotaryEmbedding", "qwen3_5_text": "qwen3_5.Qwen3_5TextRotaryEmbedding",
    "stablelm": "stablelm.StableLmRotaryEmbedding", "starcoder2": "starcoder2.Starcoder2RotaryEmbedding",
    "gemma": "gemma.GemmaRotaryEmbedding", "qwen2": "qwen2.Qwen2RotaryEmbedding",
    "qwen3_next": "qwen3_next.Qwen3NextRotaryEmbedding", "glm4_moe_lite": "glm4_moe_lite.Glm4MoeLiteRotaryEmbedding",
}
# a prompt: text, an image of 4 x 6 merged patches, text, a two-frame video, text
SEGMENTS = [5, (1, 8, 12), 3, (2, 4, 4), 4]


def published(name: str) -> dict:
    return json.loads((CORPUS / f"{name}.json").read_text())


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def library_text_config(file: dict):
    """The library's configuration of the language model, built from the file as ``from_pretrained`` does."""
    file = json.loads(json.dumps(file))  # the library edits what it is given
    file.pop("auto_map", None)
    model_type = LIBRARY_TYPE.get(file["model_type"], file["model_type"])
    if "text_config" in file and model_type not in transformers.CONFIG_MAPPING:
        model_type = file["text_config"]["model_type"]  # a top-level type the library names otherwise
    file["model_type"] = model_type
    kwargs = {k: v for k, v in file.items() if k != "model_type"}
    if "text_config" in kwargs and not transformers.CONFIG_MAPPING[model_type].sub_configs:
        kwargs = {k: v for k, v in kwargs["text_config"].items() if k != "model_type"}
    return quiet(lambda: AutoConfig.for_model(model_type, **kwargs)).get_text_config()


def rotary_module(text_config):
    package, name = ROTARY[text_config.model_type].split(".")
    module = importlib.import_module(f"transformers.models.{package}.modeling_{package}")
    return quiet(lambda: getattr(module, name)(text_config))


def layer_types(module) -> list:
    """The layer types whose frequencies the module keeps apart (``[None]`` when it keeps one set): the
    configuration's, or the labels of the module's own branches (DeepSeek-V4's ``main`` and ``compress``)."""
    named = set(getattr(module.config, "layer_types", None) or ()) | set(getattr(module, "layer_types", None) or ())
    kept = [t for t in sorted(named) if hasattr(module, f"{t}_inv_freq")]
    return kept or [None]


def library_frequencies(module, layer_type, seq_len: int):
    """``inv_freq`` and the attention factor the module uses for a sequence of ``seq_len`` tokens."""
    x, positions = torch.zeros(1, seq_len, 8), torch.arange(seq_len)[None]  # x gives the dtype only
    if layer_type is None:
        quiet(lambda: module(x, positions))
        return module.inv_freq.double().numpy(), float(module.attention_scaling)
    quiet(lambda: module(x, positions, layer_type))
    return (getattr(module, f"{layer_type}_inv_freq").double().numpy(),
            float(getattr(module, f"{layer_type}_attention_scaling")))


def lengths(settings: configs.RopeSettings) -> tuple:
    """Lengths on both sides of the method's switch point (the original length), and one short."""
    original = settings.original_length
    return (16,) if original is None else (16, original, original + 1)


READABLE = [name for name in NAMES if name != "phi-3.5-vision-instruct"]


def agree_on_every_layer_type(file, module) -> int:
    """The reader's frequencies and attention factor of ``file``, per layer type and at each
    length that matters, against the library's rotary ``module``; returns how many agreed."""
    checked = 0
    for layer_type in layer_types(module):
        settings = quiet(lambda layer_type=layer_type: configs.read_config(file, layer_type=layer_type))
        for n in lengths(settings):
            theirs, their_factor = library_frequencies(module, layer_type, n)
            ours = configs.frequencies_at(settings, n)
            assert ours.inv_freq.shape == theirs.shape, (layer_type, n)
            np.testing.assert_allclose(ours.inv_freq, theirs, rtol=4 * EPS32, atol=0)
            assert ours.attention_factor == pytest.approx(their_factor, rel=1e-6, abs=0)
            checked += 1
    return checked


@pytest.mark.parametrize("name", READABLE)
def test_frequencies_and_attention_factor_of_every_layer_type(name):
    file = published(name)
    module = rotary_module(library_text_config(file))
    assert agree_on_every_layer_type(file, module) >= 1


@pytest.mark.parametrize("name", READABLE)
def test_the_layer_plan_of_every_file_is_the_library_s(name):
    """Every layer of every readable file: its type and its no-RoPE mark as the library's configuration sets them,
    and the settings of its layer type."""
    file = published(name)
    text_config = library_text_config(file)
    plan = quiet(lambda: configs.layer_plan(file))
    assert len(plan) == text_config.num_hidden_layers
    if any(layer.layer_type is not None for layer in plan):
        assert [layer.layer_type for layer in plan] == list(text_config.layer_types)
    if getattr(text_config, "no_rope_layers", None):
        assert [layer.settings is not None for layer in plan] == [bool(m) for m in text_config.no_rope_layers]
    for layer in plan:
        if layer.settings is not None:
            alone = quiet(lambda layer=layer: configs.read_config(file, layer.layer_type))
            assert np.array_equal(configs.frequencies_at(layer.settings, 16).inv_freq,
                                  configs.frequencies_at(alone, 16).inv_freq)


@pytest.mark.parametrize("name", ["qwen2.5-vl-7b-instruct", "qwen3-vl-8b-instruct", "glm-4.5v", "qwen3.5-4b"])
def test_mrope_tables_on_a_mixed_position_grid(name):
    file = published(name)
    module = rotary_module(library_text_config(file))
    layer_type = "full_attention" if name == "qwen3.5-4b" else None
    frequencies = configs.frequencies_at(file, 64, layer_type=layer_type)
    assert frequencies.axes is not None  # the reader knows the pairs belong to three axes
    positions, _ = mrope.multimodal_positions(SEGMENTS, spatial_merge_size=2)
    cos, sin = quiet(lambda: module(torch.zeros(1, positions.shape[1], 8), torch.tensor(positions)[:, None, :]))
    phi = mrope.angles(positions, frequencies.inv_freq, frequencies.axes)
    full = np.concatenate([phi, phi], axis=-1)  # the split layout of rotate_half
    tol = 4 * EPS32 * (1.0 + np.abs(phi).max())
    a = frequencies.attention_factor
    np.testing.assert_allclose(cos[0].double().numpy(), a * np.cos(full), atol=tol, rtol=0)
    np.testing.assert_allclose(sin[0].double().numpy(), a * np.sin(full), atol=tol, rtol=0)


def test_text_tokens_of_an_mrope_file_turn_as_plain_rope():
    file = published("qwen2.5-vl-7b-instruct")
    frequencies = configs.frequencies_at(file, 64)
    x = np.random.default_rng(0).normal(size=(6, 128))
    text = mrope.text_positions(6, start=40)
    np.testing.assert_allclose(configs.rotate(x, text, frequencies), configs.rotate(x, np.arange(40, 46), frequencies),
                               atol=1e-12)


@pytest.mark.parametrize("name", ["kimi-k2-instruct", "deepseek-v2-lite"])
def test_softmax_scale_of_the_deepseek_family(name):
    file = published(name)
    text_config = library_text_config(file)
    package = text_config.model_type
    module = importlib.import_module(f"transformers.models.{package}.modeling_{package}")
    attention_class = {"deepseek_v3": "DeepseekV3Attention", "deepseek_v2": "DeepseekV2Attention"}[package]
    attention = quiet(lambda: getattr(module, attention_class)(text_config, 0))
    plain = (text_config.qk_nope_head_dim + text_config.qk_rope_head_dim) ** -0.5
    settings = quiet(lambda: configs.read_config(file))
    assert configs.softmax_scale_factor(settings) == pytest.approx(attention.scaling / plain, rel=1e-12)


def test_ministral3_query_scale_is_the_library_s():
    from transformers.models.ministral3.modeling_ministral3 import get_llama_4_attn_scale
    file = published("ministral-3-3b-instruct-2512")
    settings = configs.read_config(file)
    positions = np.array([0, 16383, 16384, 50_000, 262_143])
    parameters = library_text_config(file).rope_parameters
    theirs = get_llama_4_attn_scale(torch.tensor(positions)[None], parameters["llama_4_scaling_beta"],
                                    parameters["original_max_position_embeddings"])
    np.testing.assert_allclose(configs.query_scale(settings, positions), theirs.flatten().double().numpy(),
                               rtol=EPS32)


def test_phi35_vision_su_is_refused_by_both():
    file = published("phi-3.5-vision-instruct")
    with pytest.raises(KeyError, match="original_max_position_embeddings"):
        library_text_config(file)
    with pytest.raises(ValueError, match="'su'.*longrope"):
        configs.read_config(file)


def test_every_file_has_a_source_with_a_commit():
    files = sorted(p.stem for p in CORPUS.glob("*.json") if p.name != "sources.json")
    assert files == NAMES
    for name, source in SOURCES.items():
        assert len(source["commit"]) == 40 and int(source["commit"], 16) >= 0, name
        assert source["repository"].count("/") == 1 and source["path"] and source["model"], name


def test_only_the_files_marked_so_are_models_the_chapter_lists():
    listed = {entry.name.split(",")[0].lower().replace(" ", "-") for entry in configs.PUBLISHED}
    shared = {name for name in NAMES if any(SOURCES[name]["model"].split("/")[1].lower().startswith(model)
                                           for model in listed)}
    assert shared == {name for name in NAMES if SOURCES[name].get("in_chapter")} == {"gemma-3-27b-it",
                                                                                     "kimi-k2-instruct"}


def test_the_softmax_scale_of_kimi_k2_is_the_square_of_its_attention_factor_without_mscale():
    """Kimi K2: factor 32, mscale = mscale_all_dim = 1: rotary factor 1, softmax scale (0.1 ln 32 + 1)^2."""
    settings = quiet(lambda: configs.read_config(published("kimi-k2-instruct")))
    assert configs.frequencies_at(settings, 64).attention_factor == 1.0
    assert configs.softmax_scale_factor(settings) == pytest.approx((0.1 * math.log(32) + 1) ** 2, rel=1e-15)


# ---------------------------------------------------------------------------
# The closed world: every model type of the library, read from its name alone
# ---------------------------------------------------------------------------

#: What a refusal may name: a key of the class, or the model type itself.
REFUSAL = re.compile(r"^(\w+)\b")


def text_rotary(model_type):
    """The library's default configuration of ``model_type`` and its own text rotary module, or why there is not one.

    Its own module is the rotary class named after the configuration class; else the one
    rotary class of the modelling module that is not a vision or audio encoder's.
    """
    config_class = transformers.CONFIG_MAPPING[model_type]
    package = config_class.__module__.rsplit(".", 1)[0]
    try:
        module = importlib.import_module(f"{package}.modeling_{package.rsplit('.', 1)[1]}")
    except ImportError:
        return "the library ships no model for it (no modelling module)"
    names = sorted(n for n in dir(module) if n.endswith("RotaryEmbedding"))
    prefix = config_class.__name__[: -len("Config")]
    own = [n for n in names if n.startswith(prefix)]
    if len(own) != 1:
        text = [n for n in names if not any(word in n for word in ("Vision", "Visual", "Audio"))]
        own = [n for n in text if n.startswith(prefix)] or text
    if len(own) != 1:
        return f"not one rotary module of its own among {', '.join(names) or 'none'}"
    try:
        config = quiet(config_class)
        return config, quiet(lambda: getattr(module, own[0])(config))
    except Exception as err:  # the module reads a sub-configuration the class's defaults do not hold
        return f"{own[0]} cannot be built from {config_class.__name__}'s defaults ({type(err).__name__})"


def account_for(model_type):
    """Where the reader stands against the library on a file that names only ``model_type``.

    ``("agrees", layer types)``: the reader's frequencies and attention factor are the
    library's module's for every layer type; ``("none", why)``: the reader says the model
    rotates nothing; ``("refused", key)``: the reader refuses, naming the key (or
    ``model_type``); ``("recorded", reason)``: the type is not one text rotary module (a
    multimodal class read through its language model, several modules, a module that needs
    more than the class's defaults).
    """
    table = configs.model_defaults()
    if model_type in table["text_model_types"]:
        text_type = table["text_model_types"][model_type]
        return "recorded", f"a multimodal class, read through its language model {text_type}"
    try:
        settings = quiet(lambda: configs.read_config({"model_type": model_type}))
    except ValueError as err:
        if "pass layer_type" not in str(err):
            found = REFUSAL.match(str(err))
            assert found, f"{model_type}: the refusal names no key: {err}"
            return "refused", found.group(1)
        settings = None
    if settings is not None and settings.rope_type == "none":
        return "none", settings.why
    built = text_rotary(model_type)
    if isinstance(built, str):
        return "recorded", built
    config, module = built
    kinds = layer_types(module)
    for layer_type in kinds:
        ours = quiet(lambda layer_type=layer_type: configs.frequencies_at({"model_type": model_type}, 16,
                                                                          layer_type=layer_type))
        theirs = getattr(module, f"{layer_type}_inv_freq" if layer_type else "inv_freq").double().numpy()
        factor = getattr(module, f"{layer_type}_attention_scaling" if layer_type else "attention_scaling")
        assert ours.inv_freq.shape == theirs.shape, (model_type, layer_type)
        np.testing.assert_allclose(ours.inv_freq, theirs, rtol=4 * EPS32, atol=0, err_msg=model_type)
        assert ours.attention_factor == pytest.approx(float(factor), rel=1e-6), model_type
    return "agrees", kinds


def every_model_type():
    """Each of the library's model types with where the reader stands (:func:`account_for`)."""
    out = {}
    for model_type in sorted(transformers.CONFIG_MAPPING.keys()):
        try:
            transformers.CONFIG_MAPPING[model_type]
        except Exception:  # a model type whose module cannot be imported here
            out[model_type] = ("recorded", "its configuration module cannot be imported here")
            continue
        out[model_type] = account_for(model_type)
    return out


def test_every_model_type_read_from_its_name_alone_is_accounted_for():
    table = configs.model_defaults()
    found = every_model_type()
    by = {kind: {t for t, (k, _) in found.items() if k == kind} for kind in ("agrees", "none", "refused", "recorded")}
    assert set(found) == set().union(*by.values())  # nothing unexplained
    # the reader agrees with the library's own rotary module on the plain and the layer-typed classes
    assert len(by["agrees"]) >= 160 and {"llama", "qwen2", "gemma3_text", "gpt_oss", "deepseek_v3"} <= by["agrees"]
    # a class without a rotary module, or a switch that turns it off by default: no rotation
    assert set(table["no_rotary"]) | {"granitemoehybrid", "zamba2"} == by["none"]
    # a refusal names what decides it: a position key of the class, a layer kind, or the model type
    for model_type in by["refused"]:
        key = found[model_type][1]
        entry = table["model_types"].get(model_type, {})
        allowed = set(entry.get("position_keys", ())) | {"model_type", "layer_types", "head_dim", "hidden_size",
                                                         "partial_rotary_factor", "rope_type", "mrope_section"}
        assert key in allowed, (model_type, key)
    refused = ("rotary_unread", "encoders", "configuration_only", "grid_rotary")
    assert set().union(*(table[part] for part in refused)) - set(table["text_model_types"]) <= by["refused"]
    # the counts chapter 10 quotes (Transformers 5.24)
    multimodal = {t for t in by["recorded"] if found[t][1].startswith("a multimodal class")}
    assert [len(found), len(by["agrees"]), len(by["none"]), len(by["refused"]), len(by["recorded"]),
            len(multimodal)] == [822, 165, 377, 131, 149, 141]
    # every type recorded says why it is not one text rotary module
    reasons = ("a multimodal class", "not one rotary module", "cannot be built from", "ships no model",
               "cannot be imported")
    for model_type in by["recorded"]:
        assert found[model_type][1].startswith(reasons) or any(r in found[model_type][1] for r in reasons), model_type


def test_a_switch_that_turns_rotation_off_is_the_library_s():
    """GraniteMoeHybrid and Zamba 2 build their rotary module only when the switch is on; Falcon's ALiBi skips it."""
    from transformers import AutoModel
    tiny = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=1, vocab_size=32,
                intermediate_size=64)
    for model_type, key, on, off in (("granitemoehybrid", "position_embedding_type", "rope", "nope"),
                                     ("zamba2", "use_mem_rope", True, False)):
        for value, rotates in ((on, True), (off, False)):
            given = {**tiny, "layer_types": ["attention" if model_type == "granitemoehybrid" else "hybrid"],
                     key: value}
            config = quiet(lambda model_type=model_type, given=given: transformers.AutoConfig.for_model(model_type,
                                                                                                        **given))
            model = quiet(lambda config=config: AutoModel.from_config(config))
            assert (getattr(model, "rotary_emb", None) is not None) == rotates, (model_type, value)
            try:
                ours = configs.read_config({"model_type": model_type, **tiny, key: value}).rope_type
            except ValueError as err:  # Zamba 2's class sizes its rotated head by its own rule
                assert model_type == "zamba2" and str(err).startswith("head_dim"), err
                ours = "refused"
            assert (ours != "none") == rotates, (model_type, value)
    from transformers import FalconConfig
    assert FalconConfig(alibi=True).rotary is False and FalconConfig().rotary is True
    assert configs.read_config({"model_type": "falcon", "alibi": True}).rope_type == "none"
    assert configs.read_config({"model_type": "falcon"}).rope_type == "default"


def test_the_defaults_table_is_the_installed_library_s():
    from bookwork import model_defaults

    stored = json.loads(model_defaults.TABLE.read_text())
    assert stored["transformers"] == transformers.__version__
    assert model_defaults.render(model_defaults.table()) == model_defaults.TABLE.read_text(), (
        "companion/data/model_defaults.json is stale: run python -m bookwork.model_defaults")


# ---------------------------------------------------------------------------
# Cases built in code: the equal-beta YaRN, NTK-alpha, linear without a length, a text_config of sizes only
# ---------------------------------------------------------------------------

def test_yarn_with_equal_betas_is_a_hard_cut_as_in_the_library():
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama
    file = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "head_dim": 64,
            "num_hidden_layers": 1, "rope_theta": 50000.0, "max_position_embeddings": 4096,
            "rope_scaling": {"type": "yarn", "factor": 32.0, "beta_fast": 1.0, "beta_slow": 1.0,
                             "original_max_position_embeddings": 128}}
    module = modeling_llama.LlamaRotaryEmbedding(quiet(lambda: LlamaConfig(**json.loads(json.dumps(file)))))
    ours = configs.frequencies_at(file, 64)
    np.testing.assert_allclose(ours.inv_freq, module.inv_freq.double().numpy(), rtol=4 * EPS32, atol=0)
    theta = 50000.0 ** (-np.arange(0, 64, 2) / 64)
    kept = np.isclose(ours.inv_freq, theta, rtol=1e-12)
    # a step: every pair up to the cut kept, every pair after it divided by the factor
    assert kept[: kept.argmin()].all() and np.allclose(ours.inv_freq[~kept], theta[~kept] / 32, rtol=1e-12)


def test_hunyuan_alpha_is_static_ntk_as_its_rotary_class_computes():
    from transformers.models.hunyuan_v1_dense import modeling_hunyuan_v1_dense
    from transformers.models.hunyuan_v1_dense.configuration_hunyuan_v1_dense import HunYuanDenseV1Config
    file = {"model_type": "hunyuan_v1_dense", "hidden_size": 256, "num_attention_heads": 2, "head_dim": 128,
            "num_hidden_layers": 1, "rope_theta": 10000.0, "max_position_embeddings": 4096,
            "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0}}
    library = quiet(lambda: HunYuanDenseV1Config(**json.loads(json.dumps(file))))
    module = quiet(lambda: modeling_hunyuan_v1_dense.HunYuanDenseV1RotaryEmbedding(library))
    settings = configs.read_config(file)
    assert settings.rope_type == "ntk_alpha"
    ours = configs.frequencies_at(settings, 8192)
    np.testing.assert_allclose(ours.inv_freq, module.inv_freq.double().numpy(), rtol=4 * EPS32, atol=0)
    plain = configs.frequencies_at({**file, "model_type": "llama"}, 16)  # a class that does not read alpha
    assert ours.inv_freq[-1] < plain.inv_freq[-1] / 500
    with pytest.warns(configs.UnmodelledEffectWarning, match="alpha = 1000.0 .* Hunyuan's rotary class"):
        assert any(e.key == "alpha" and not e.modelled
                   for e in configs.read_config({**file, "model_type": "llama"}).effects)


def test_linear_needs_no_length_and_a_text_config_of_sizes_takes_the_class_defaults():
    from transformers import Gemma3TextConfig
    from transformers.models.gemma3 import modeling_gemma3
    text = {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}
    library = quiet(lambda: Gemma3TextConfig(**{k: v for k, v in json.loads(json.dumps(text)).items()
                                                if k != "model_type"}))
    module = quiet(lambda: modeling_gemma3.Gemma3RotaryEmbedding(library))
    for layer_type in ("full_attention", "sliding_attention"):
        ours = configs.frequencies_at({"model_type": "gemma3", "text_config": text}, 64, layer_type=layer_type)
        np.testing.assert_allclose(ours.inv_freq, getattr(module, f"{layer_type}_inv_freq").double().numpy(),
                                   rtol=4 * EPS32, atol=0)
    without_length = {"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    assert np.allclose(configs.frequencies_at(without_length, 9).inv_freq, 1e4 ** (-np.arange(0, 64, 2) / 64) / 4)
    with pytest.raises(ValueError, match="rope_theta is missing.*model_type 'gemma9_text' is not one of"):
        configs.read_config({"model_type": "gemma9_text", "head_dim": 64})
    with pytest.raises(ValueError, match="rope_theta is missing.*names no model_type"):
        configs.read_config({"head_dim": 64})


# ---------------------------------------------------------------------------
# Published configurations of 2025-26 models, gathered before the reader's closed world was built
# ---------------------------------------------------------------------------

CORPUS_2026 = Path(__file__).parent / "data" / "published_configs_2026"
SOURCES_2026 = json.loads((CORPUS_2026 / "sources.json").read_text())
NAMES_2026 = sorted(SOURCES_2026)


def published_2026(name: str) -> dict:
    return json.loads((CORPUS_2026 / f"{name}.json").read_text())


def built_by_the_library(file: dict):
    """The library's configuration of the language model, as ``from_pretrained`` builds it without the file's own
    code (``auto_map`` is only followed with ``trust_remote_code``); ``LookupError`` for a type it does not ship."""
    file = json.loads(json.dumps(file))  # the library edits what it is given
    file.pop("auto_map", None)
    model_type = file.get("model_type")
    if model_type not in transformers.CONFIG_MAPPING:
        raise LookupError(f"the library does not ship model_type {model_type!r}")
    kwargs = {k: v for k, v in file.items() if k != "model_type"}
    return quiet(lambda: AutoConfig.for_model(model_type, **kwargs)).get_text_config()


def rotary_submodules(text_config) -> list:
    """The rotary modules the library's model of ``text_config`` builds (on the meta device: no weights).

    An activation the library does not know (Kimi K3's ``situ``) is replaced by ``silu``
    to build the model; it touches no position.
    """
    if getattr(text_config, "hidden_act", "silu") not in transformers.activations.ACT2FN:
        text_config = json.loads(text_config.to_json_string())
        text_config = quiet(lambda: AutoConfig.for_model(**{**text_config, "hidden_act": "silu"}))
    with torch.device("meta"):
        model = quiet(lambda: transformers.AutoModel.from_config(text_config))
    return sorted({type(m).__name__ for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")})


def own_rotary(text_config, names: list):
    """The library's rotary module of ``text_config``, the one of ``names`` its model builds, built on the CPU."""
    assert len(names) == 1, names
    package = type(text_config).__module__.rsplit(".", 1)[0]
    module = importlib.import_module(f"{package}.modeling_{package.rsplit('.', 1)[1]}")
    return quiet(lambda: getattr(module, names[0])(text_config))


@pytest.mark.parametrize("name", NAMES_2026)
def test_a_2025_26_configuration_reads_as_the_library_builds_it(name):
    """Frequencies and attention factor of every layer type at lengths on both sides of each switch point, the layer
    plan's types and no-RoPE marks, "no rotation" where the library builds no rotary module, a refusal where the
    library refuses the file (a type it does not ship, read without the file's own code)."""
    file = published_2026(name)
    try:
        text_config = built_by_the_library(file)
    except LookupError:
        text = file.get("text_config")
        if not (isinstance(text, dict) and text.get("model_type") in transformers.CONFIG_MAPPING):
            for read in (configs.read_config, configs.layer_plan):
                with pytest.raises(ValueError) as refusal:
                    read(file)
                assert re.match(r"\w+ (=|is|must)", str(refusal.value)), refusal.value  # it names the key
            return
        # its own top-level code, and a language model the library ships: compared with that class
        text_config = built_by_the_library(text)
    plan = quiet(lambda: configs.layer_plan(file))
    names = rotary_submodules(text_config)
    if not names:
        assert configs.read_config(file).rope_type == "none"
        assert all(layer.settings is None for layer in plan)
        return
    module = own_rotary(text_config, names)
    agree_on_every_layer_type(file, module)
    assert len(plan) == text_config.num_hidden_layers
    if any(layer.layer_type is not None for layer in plan):
        assert [layer.layer_type for layer in plan] == list(text_config.layer_types)
    if getattr(text_config, "no_rope_layers", None):
        assert [layer.settings is not None for layer in plan] == [bool(m) for m in text_config.no_rope_layers]


def test_the_2025_26_files_cover_the_classes_the_reader_was_wrong_on():
    """What the reader says of each file of the set, by the class of the reading."""
    def reading(name):
        file = published_2026(name)
        try:
            plan = quiet(lambda: configs.layer_plan(file))
        except ValueError as err:
            return "refused", str(err).split(" ", 1)[0]
        rotating = sum(layer.settings is not None for layer in plan)
        return ("rotating" if rotating else "none"), rotating
    found = {name: reading(name) for name in NAMES_2026}
    # RoPE switched off: a position-embedding switch, the latent-attention no-RoPE flag (twice)
    assert {found[n][0] for n in ("granite-4.0-h-350m", "kimi-linear-48b-a3b-instruct", "kimi-k3")} == {"none"}
    # custom code with a per-layer-type base and a hybrid pattern: refused by those keys
    assert found["mimo-v2.5"] == found["mimo-v2.5-pro"] == ("refused", "hybrid_layer_pattern")
    # layer plans: 36 of Llama 4 Maverick's 48 layers rotate; 48 of EXAONE 4.0's 64 (its sliding-window layers)
    assert found["llama-4-maverick"] == ("rotating", 36) and found["exaone-4.0-32b"] == ("rotating", 48)
    assert found["deepseek-v4-flash"] == ("rotating", 43) and found["qwen3.6-35b-a3b"] == ("rotating", 10)
    # DeepSeek-OCR's own code without latent attention: refused for the base its file leaves to that code
    assert found["deepseek-ocr"] == ("refused", "rope_theta")


def test_every_2025_26_file_has_a_source_with_a_commit():
    files = sorted(p.stem for p in CORPUS_2026.glob("*.json") if p.name != "sources.json")
    assert files == NAMES_2026
    for name, source in SOURCES_2026.items():
        assert len(source["commit"]) == 40 and int(source["commit"], 16) >= 0, name
        assert source["repository"].count("/") == 1 and source["path"] and source["model"], name
        assert source["released"] in ("2025", "2026") and source["copy"] and source["gathered"], name
