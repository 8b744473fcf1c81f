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
"""
from __future__ import annotations

import importlib
import json
import math
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
    """The layer types whose frequencies the module keeps apart (``[None]`` when it keeps one set)."""
    kept = [t for t in sorted(set(getattr(module.config, "layer_types", None) or ()))
            if hasattr(module, f"{t}_inv_freq")]
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


@pytest.mark.parametrize("name", READABLE)
def test_frequencies_and_attention_factor_of_every_layer_type(name):
    file = published(name)
    module = rotary_module(library_text_config(file))
    checked = 0
    for layer_type in layer_types(module):
        settings = quiet(lambda: configs.read_config(file, layer_type=layer_type))
        for n in lengths(settings):
            theirs, their_factor = library_frequencies(module, layer_type, n)
            ours = configs.frequencies_at(settings, n)
            assert ours.inv_freq.shape == theirs.shape, (layer_type, n)
            np.testing.assert_allclose(ours.inv_freq, theirs, rtol=4 * EPS32, atol=0)
            assert ours.attention_factor == pytest.approx(their_factor, rel=1e-6, abs=0)
            checked += 1
    assert checked >= 1


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
# The class defaults: every model type of the library, read from its name alone
# ---------------------------------------------------------------------------

#: Model types read by name alone that the reader refuses, and why (each refusal names the key).
REFUSED = {
    "dbrx": "head_dim", "moonshine": "head_dim", "zamba2": "head_dim",
    "gradium_phonon_tts": "head_dim", "hy_v4_vl_text": "head_dim", "pocket_tts": "head_dim",
    "glm4_moe": "hidden_size", "glm4v_moe_text": "hidden_size",  # defaults of 4096 over 96 heads
    "efficientloftr": "partial_rotary_factor", "mlcd": "rope_type", "mlcd_vision_model": "rope_type",
    "sam3_vit_model": "rope_type", "ernie4_5_vl_moe_text": "mrope_section",
}
#: Model types whose rotary module is not a text model's 1-D RoPE over inv_freq (checked elsewhere or not at all).
NOT_TEXT_ROPE = {"deepseek_v4", "eomt_dinov3"}


def default_rotary(model_type):
    """The library's default configuration of ``model_type`` and its one text rotary module, or ``None``."""
    config_class = transformers.CONFIG_MAPPING[model_type]
    package = config_class.__module__.rsplit(".", 1)[0]
    try:
        module = importlib.import_module(f"{package}.modeling_{package.rsplit('.', 1)[1]}")
    except ImportError:
        return None
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding")
             and not any(word in n for word in ("Vision", "Visual", "Audio"))]
    own = [n for n in names if n.startswith(config_class.__name__[: -len("Config")])] or names
    if len(own) != 1:
        return None
    try:
        config = quiet(config_class)
        return config, quiet(lambda: getattr(module, own[0])(config))
    except Exception:  # a module that needs more than its default configuration
        return None


def test_every_model_type_read_from_its_name_alone_is_the_library_s_default():
    agreed, refused = [], []
    table = configs.model_defaults()
    for model_type in table["model_types"]:
        # a multimodal type read by name is its text model, which is checked under its own type
        composite = model_type in table["text_model_types"]
        built = None if model_type in NOT_TEXT_ROPE or composite else default_rotary(model_type)
        if built is None:
            continue
        config, module = built
        for layer_type in layer_types(module):
            if model_type in REFUSED:
                with pytest.raises(ValueError, match=REFUSED[model_type]):
                    configs.frequencies_at({"model_type": model_type}, 16, layer_type=layer_type)
                refused.append(model_type)
                continue
            ours = configs.frequencies_at({"model_type": model_type}, 16, layer_type=layer_type)
            theirs = getattr(module, f"{layer_type}_inv_freq" if layer_type else "inv_freq").double().numpy()
            factor = getattr(module, f"{layer_type}_attention_scaling" if layer_type else "attention_scaling")
            assert ours.inv_freq.shape == theirs.shape, (model_type, layer_type)
            np.testing.assert_allclose(ours.inv_freq, theirs, rtol=4 * EPS32, atol=0, err_msg=model_type)
            assert ours.attention_factor == pytest.approx(float(factor), rel=1e-6), model_type
            agreed.append(model_type)
    assert len(set(agreed)) >= 170 and set(refused) == set(REFUSED)


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
