"""Per-layer position settings and sinks against the attention layers of Hugging Face Transformers.

Every layer is built from a configuration in code (random weights, float64, eager
attention); nothing is downloaded. Companion recomputes each layer from its weights
head by head in numpy float64 and must agree with the library's output:

* gpt-oss (``GptOssAttention``, a banded layer and a dense layer): YaRN rotation from
  ``companion.configs``, the sliding window of ``companion.layer_plans`` and the learned sink
  of ``companion.sinks``; agreement to 1e-5 (the rotary tables are float32);
* Llama 4 (``Llama4TextAttention``): a RoPE layer (adjacent pairs, QK-norm, chunked mask)
  and a NoPE layer (no rotation, no QK-norm, full causal mask, queries scaled by
  ``nope.attention_temperature`` with a ``floor_scale`` small enough to act within the
  test's 24 tokens); the layer pattern (``no_rope_layers``, ``layer_types``) equals
  ``layer_plans.llama4``; 1e-5;
* SmolLM3 (``SmolLM3Attention``): layer 0 rotates (split pairs), layer 3 does not; the
  pattern equals ``layer_plans.smollm3``; 1e-5;
* Cohere 2, an RNoPE-SWA stack (``Cohere2Attention``): RoPE (adjacent pairs, computed by the
  library in float32) only in the sliding layers; 1e-5;
* Gemma 3 (``Gemma3RotaryEmbedding``): the frequencies of the local and global layer
  types equal ``layer_plans.layer_frequencies`` of ``layer_plans.gemma3`` to 4 * 2^-23 relative,
  and the layer types equal the plan's windows;
* the masks: ``layer_plans.sliding_window_mask`` and ``layer_plans.chunked_mask`` equal the
  library's mask functions entry by entry;
* whole models (``GptOssModel``, ``Llama4TextModel``), run forward so that every layer gets
  the mask the model itself builds from ``sliding_window``, ``attention_chunk_size`` and
  ``layer_types``: each layer's mask equals ``layer_plans.layer_mask`` of its plan, and each
  attention output equals companion's recomputation with companion's mask (1e-5);
* Gemma 3 from the released 27B ``text_config`` as published (v4 keys: ``rope_scaling``,
  no ``rope_theta`` or ``rope_local_base_freq``, 62 layers): the library's per-type
  frequencies and layer types equal ``layer_plans.gemma3(62)``;
* Qwen3-Next and Qwen3.5 (recurrent stacks): the layer types of the released files
  (``tests/data/published_configs``) equal ``layer_plans.qwen3_next``; the library's rotary
  module and ``apply_rotary_pos_emb`` turn the first 64 of 256 components in the split
  layout at base 10^7, as companion does, and not the last 64, nor in adjacent pairs;
* gpt-oss's slow band: the rotary tables at positions up to 131,071 equal companion's.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from transformers import masking_utils  # noqa: E402
from transformers.models.cohere2 import modeling_cohere2  # noqa: E402
from transformers.models.cohere2.configuration_cohere2 import Cohere2Config  # noqa: E402
from transformers.models.gemma3 import modeling_gemma3  # noqa: E402
from transformers.models.gemma3.configuration_gemma3 import Gemma3TextConfig  # noqa: E402
from transformers.models.gpt_oss import modeling_gpt_oss  # noqa: E402
from transformers.models.gpt_oss.configuration_gpt_oss import GptOssConfig  # noqa: E402
from transformers.models.llama4 import modeling_llama4  # noqa: E402
from transformers.models.llama4.configuration_llama4 import Llama4TextConfig  # noqa: E402
from transformers.models.qwen3_5 import modeling_qwen3_5  # noqa: E402
from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig  # noqa: E402
from transformers.models.qwen3_next import modeling_qwen3_next  # noqa: E402
from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig  # noqa: E402
from transformers.models.smollm3 import modeling_smollm3  # noqa: E402
from transformers.models.smollm3.configuration_smollm3 import SmolLM3Config  # noqa: E402

from companion import attention, configs, layer_plans, mrope, nope, rope, sinks  # noqa: E402

PUBLISHED = Path(__file__).resolve().parent / "data" / "published_configs"

EPS32 = 2.0 ** -23
N = 24
SIZES = dict(hidden_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=32)


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def eager(config):
    config._attn_implementation = "eager"
    return config


def additive(mask):
    """A boolean mask (True = may attend) as the library's additive float mask, shape (1, 1, n, n)."""
    return torch.tensor(np.where(mask, 0.0, -np.inf))[None, None]


def weights(layer):
    """W_q, W_k, W_v, W_o (as x @ W) and biases (zeros when absent), float64 numpy."""
    out = []
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        lin = getattr(layer, name)
        b = lin.bias.detach().numpy() if lin.bias is not None else np.zeros(lin.weight.shape[0])
        out.append((lin.weight.detach().numpy().T, b))
    return out


def heads(x, w, b, d):
    """Project and split into heads: (n_heads, n, d)."""
    y = x @ w + b
    return y.reshape(y.shape[0], -1, d).transpose(1, 0, 2)


def merge(per_head, w_o, b_o):
    return np.concatenate(list(per_head), axis=-1) @ w_o + b_o


def random_layer(layer, seed):
    torch.manual_seed(seed)
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return layer.double().eval()


# ---------------------------------------------------------------------------
# gpt-oss: YaRN + sliding window + learned sink
# ---------------------------------------------------------------------------

GPT_OSS_ROPE = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                "original_max_position_embeddings": 4096, "rope_theta": 150000.0}


@pytest.mark.parametrize("layer_idx", [0, 1], ids=["banded", "dense"])
def test_gpt_oss_attention_with_sinks_equals_companion(layer_idx):
    config = quiet(lambda: eager(GptOssConfig(**SIZES, num_hidden_layers=2, sliding_window=5,
                                              max_position_embeddings=131072, rope_parameters=dict(GPT_OSS_ROPE),
                                              num_local_experts=2)))
    layer = random_layer(modeling_gpt_oss.GptOssAttention(config, layer_idx), seed=layer_idx)
    rotary = modeling_gpt_oss.GptOssRotaryEmbedding(config)
    x = torch.randn(1, N, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    cos, sin = rotary(x, torch.arange(N)[None])
    plan = layer_plans.gpt_oss(2, window=5)[layer_idx]
    mask = layer_plans.layer_mask(plan, N)
    with torch.no_grad():
        theirs, _ = layer(x, position_embeddings=(cos.double(), sin.double()), attention_mask=additive(mask))
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights(layer)
    d = SIZES["head_dim"]
    freqs = configs.frequencies_at({"head_dim": d, "max_position_embeddings": 131072,
                                    "rope_parameters": dict(GPT_OSS_ROPE)}, N)
    xs = x[0].numpy()
    q = configs.rotate(heads(xs, wq, bq, d), np.arange(N), freqs, "split")
    k = configs.rotate(heads(xs, wk, bk, d), np.arange(N), freqs, "split")
    v = heads(xs, wv, bv, d)
    group = SIZES["num_attention_heads"] // SIZES["num_key_value_heads"]
    sink = layer.sinks.detach().numpy()
    outs = [sinks.attention_with_sink(q[h], k[h // group], v[h // group], sink[h], mask)[0] for h in range(4)]
    np.testing.assert_allclose(merge(outs, wo, bo), theirs[0].numpy(), atol=1e-5, rtol=0)
    # without the sink the outputs differ: the sink is doing something
    plain = [attention.scaled_dot_product_attention(q[h], k[h // group], v[h // group], mask)[0] for h in range(4)]
    assert np.abs(merge(plain, wo, bo) - theirs[0].numpy()).max() > 1e-2


def test_gpt_oss_layer_types_alternate_banded_first():
    config = quiet(lambda: GptOssConfig(**SIZES, num_hidden_layers=6, num_local_experts=2))
    plan = layer_plans.gpt_oss(6)
    assert config.layer_types == ["sliding_attention" if p.window else "full_attention" for p in plan]
    assert config.sliding_window == plan[0].window == 128


# ---------------------------------------------------------------------------
# Llama 4: chunked RoPE layers with QK-norm, global NoPE layers with temperature
# ---------------------------------------------------------------------------

def llama4_config(**extra):
    return quiet(lambda: eager(Llama4TextConfig(
        **SIZES, num_hidden_layers=8, attention_chunk_size=8, floor_scale=4, attn_scale=0.1,
        attn_temperature_tuning=True, use_qk_norm=True, intermediate_size=64, intermediate_size_mlp=64,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, **extra)))


def test_llama4_layer_pattern_equals_companion():
    config = llama4_config()
    plan = layer_plans.llama4(8, chunk=8)
    assert config.no_rope_layers == [int(p.rope) for p in plan]   # 1 means "uses RoPE"
    assert config.layer_types == ["chunked_attention" if p.chunk else "full_attention" for p in plan]
    assert [p.temperature for p in plan] == [not p.rope for p in plan]
    defaults = quiet(lambda: Llama4TextConfig())
    assert (defaults.no_rope_layer_interval, defaults.attention_chunk_size) == (4, 8192) == \
        (4, layer_plans.llama4(8)[0].chunk)
    assert (defaults.floor_scale, defaults.attn_scale) == (8192, 0.1)


def llama4_layer_by_companion(layer, x, plan, config, mask):
    """What a Llama 4 attention layer computes on ``x`` (tokens, width), by companion: the
    layer's weights, its plan's RoPE (adjacent pairs), QK-norm and temperature, four query
    heads on two key-value heads."""
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights(layer)
    d = SIZES["head_dim"]
    q, k, v = heads(x, wq, bq, d), heads(x, wk, bk, d), heads(x, wv, bv, d)
    if plan.rope:
        theta = layer_plans.layer_frequencies(plan, d)
        q, k = rope.rotate(q, np.arange(N), theta, "adjacent"), rope.rotate(k, np.arange(N), theta, "adjacent")
    if plan.qk_norm:
        q, k = layer_plans.qk_rms_norm(q, config.rms_norm_eps), layer_plans.qk_rms_norm(k, config.rms_norm_eps)
    if plan.temperature:
        q = q * nope.attention_temperature(np.arange(N), config.floor_scale, config.attn_scale)[:, None]
    outs = [attention.scaled_dot_product_attention(q[h], k[h // 2], v[h // 2], mask)[0] for h in range(4)]
    return merge(outs, wo, bo)


@pytest.mark.parametrize("layer_idx", [0, 3], ids=["rope-chunked-qknorm", "nope-temperature"])
def test_llama4_attention_equals_companion(layer_idx):
    config = llama4_config()
    layer = random_layer(modeling_llama4.Llama4TextAttention(config, layer_idx), seed=10 + layer_idx)
    plan = layer_plans.llama4(8, chunk=8)[layer_idx]
    assert layer.use_rope == plan.rope and hasattr(layer, "qk_norm") == plan.qk_norm
    rotary = modeling_llama4.Llama4TextRotaryEmbedding(config)
    x = torch.randn(1, N, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    freqs_cis = rotary(x, torch.arange(N)[None])
    mask = layer_plans.layer_mask(plan, N)
    with torch.no_grad():
        theirs, _ = layer(x, position_embeddings=freqs_cis, attention_mask=additive(mask))
    ours = llama4_layer_by_companion(layer, x[0].numpy(), plan, config, mask)
    np.testing.assert_allclose(ours, theirs[0].numpy(), atol=1e-5, rtol=0)


def test_llama4_temperature_is_active_in_the_nope_test():
    """With floor_scale 4, positions 3..23 of the NoPE test get a scale above 1: the check is not vacuous."""
    tau = nope.attention_temperature(np.arange(N), 4, 0.1)
    assert tau[:3].tolist() == [1.0, 1.0, 1.0] and tau[-1] > 1.19


# ---------------------------------------------------------------------------
# SmolLM3: NoPE every fourth layer
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layer_idx", [0, 3], ids=["rope", "nope"])
def test_smollm3_attention_equals_companion(layer_idx):
    config = quiet(lambda: eager(SmolLM3Config(**SIZES, num_hidden_layers=8, intermediate_size=64,
                                               rope_parameters={"rope_type": "default", "rope_theta": 5e6})))
    plan = layer_plans.smollm3(8)
    assert config.no_rope_layers == [int(p.rope) for p in plan]
    layer = random_layer(modeling_smollm3.SmolLM3Attention(config, layer_idx), seed=20 + layer_idx)
    rotary = modeling_smollm3.SmolLM3RotaryEmbedding(config)
    x = torch.randn(1, N, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    cos, sin = rotary(x, torch.arange(N)[None])
    # the library's own mask for this layer (SmolLM3 attends causally in every layer), and the book's
    library = library_mask(masking_utils.causal_mask_function, N)
    mask = layer_plans.layer_mask(plan[layer_idx], N)
    np.testing.assert_array_equal(mask, library)
    with torch.no_grad():
        theirs, _ = layer(x, position_embeddings=(cos.double(), sin.double()), attention_mask=additive(library))
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights(layer)
    d, xs = SIZES["head_dim"], x[0].numpy()
    q, k, v = heads(xs, wq, bq, d), heads(xs, wk, bk, d), heads(xs, wv, bv, d)
    theta = layer_plans.layer_frequencies(plan[layer_idx], d)
    if theta is not None:
        q, k = rope.rotate(q, np.arange(N), theta, "split"), rope.rotate(k, np.arange(N), theta, "split")
    outs = [attention.scaled_dot_product_attention(q[h], k[h // 2], v[h // 2], mask)[0] for h in range(4)]
    np.testing.assert_allclose(merge(outs, wo, bo), theirs[0].numpy(), atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------
# Cohere2 (RNoPE-SWA): RoPE only in the sliding-window layers
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layer_idx", [0, 3], ids=["sliding-rope", "global-nope"])
def test_cohere2_rotates_only_in_sliding_layers(layer_idx):
    config = quiet(lambda: eager(Cohere2Config(**SIZES, num_hidden_layers=4, sliding_window=6,
                                               intermediate_size=64)))
    plan = layer_plans.rnope_swa(4, window=6, base=config.rope_parameters["rope_theta"])
    assert config.layer_types == ["sliding_attention" if p.window else "full_attention" for p in plan]
    layer = random_layer(modeling_cohere2.Cohere2Attention(config, layer_idx), seed=30 + layer_idx)
    rotary = modeling_cohere2.Cohere2RotaryEmbedding(config)
    x = torch.randn(1, N, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(11))
    cos, sin = rotary(x, torch.arange(N)[None])
    # the library's own mask for this layer's type (its sliding window from the configuration),
    # and the book's
    sliding = config.layer_types[layer_idx] == "sliding_attention"
    library = library_mask(masking_utils.sliding_window_causal_mask_function(config.sliding_window) if sliding
                           else masking_utils.causal_mask_function, N)
    mask = layer_plans.layer_mask(plan[layer_idx], N)
    np.testing.assert_array_equal(mask, library)
    with torch.no_grad():
        theirs, _ = layer(x, position_embeddings=(cos.double(), sin.double()), attention_mask=additive(library))
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights(layer)
    d, xs = SIZES["head_dim"], x[0].numpy()
    q, k, v = heads(xs, wq, bq, d), heads(xs, wk, bk, d), heads(xs, wv, bv, d)
    theta = layer_plans.layer_frequencies(plan[layer_idx], d)
    if theta is not None:
        q, k = rope.rotate(q, np.arange(N), theta, "adjacent"), rope.rotate(k, np.arange(N), theta, "adjacent")
    outs = [attention.scaled_dot_product_attention(q[h], k[h // 2], v[h // 2], mask)[0] for h in range(4)]
    np.testing.assert_allclose(merge(outs, wo, bo), theirs[0].numpy(), atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------
# Gemma 3: one base per layer type
# ---------------------------------------------------------------------------

def test_gemma3_per_layer_bases_equal_the_library():
    config = quiet(lambda: Gemma3TextConfig(
        hidden_size=128, num_attention_heads=2, num_key_value_heads=1, head_dim=64, num_hidden_layers=12,
        sliding_window=16, rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0}}))
    plan = layer_plans.gemma3(12, window=16)
    assert config.layer_types == ["sliding_attention" if p.window else "full_attention" for p in plan]
    module = modeling_gemma3.Gemma3RotaryEmbedding(config)
    for kind, p in (("sliding_attention", plan[0]), ("full_attention", plan[5])):
        theirs = getattr(module, f"{kind}_inv_freq").numpy()
        np.testing.assert_allclose(layer_plans.layer_frequencies(p, 64), theirs, rtol=4 * EPS32, atol=0)
    # the two bases really differ: the slowest global pair is about 800 times slower
    local, glob = layer_plans.layer_frequencies(plan[0], 64), layer_plans.layer_frequencies(plan[5], 64)
    assert local[-1] / glob[-1] > 500


# ---------------------------------------------------------------------------
# Masks
# ---------------------------------------------------------------------------

def library_mask(function, n):
    q, kv = torch.arange(n)[:, None], torch.arange(n)[None, :]
    zero = torch.tensor(0)
    return np.broadcast_to(function(zero, zero, q, kv).numpy(), (n, n))


@pytest.mark.parametrize("window", [1, 3, 7])
def test_sliding_window_mask_equals_the_library(window):
    theirs = library_mask(masking_utils.sliding_window_causal_mask_function(window), 12)
    np.testing.assert_array_equal(layer_plans.sliding_window_mask(12, window), theirs)


@pytest.mark.parametrize("chunk", [1, 4, 5])
def test_chunked_mask_equals_the_library(chunk):
    theirs = library_mask(masking_utils.chunked_causal_mask_function(chunk, torch.zeros(1, dtype=torch.long)), 12)
    np.testing.assert_array_equal(layer_plans.chunked_mask(12, chunk), theirs)



# ---------------------------------------------------------------------------
# Whole models: the masks the model builds from its own settings
# ---------------------------------------------------------------------------

def run_layers(model, n_layers):
    """Every layer's attention input, output and mask in the model's own forward on N tokens."""
    seen = {}
    for index, layer in enumerate(model.layers[:n_layers]):
        def hook(module, args, kwargs, out, index=index):
            seen[index] = (kwargs["hidden_states"][0].numpy(), out[0][0].numpy(),
                           kwargs["attention_mask"][0, 0].numpy() == 0)
        layer.self_attn.register_forward_hook(hook, with_kwargs=True)
    ids = torch.randint(0, 64, (1, N), generator=torch.Generator().manual_seed(12))
    with torch.no_grad():
        model(input_ids=ids)
    return seen


def test_gpt_oss_model_masks_and_outputs_equal_the_plans():
    config = quiet(lambda: eager(GptOssConfig(**SIZES, vocab_size=64, num_hidden_layers=2, sliding_window=5,
                                              max_position_embeddings=131072, rope_parameters=dict(GPT_OSS_ROPE),
                                              num_local_experts=4, num_experts_per_tok=2, intermediate_size=64)))
    config._experts_implementation = "eager"
    model = random_layer(quiet(lambda: modeling_gpt_oss.GptOssModel(config)), seed=40)
    plans = layer_plans.gpt_oss(2, window=5)
    d = SIZES["head_dim"]
    freqs = configs.frequencies_at({"head_dim": d, "max_position_embeddings": 131072,
                                    "rope_parameters": dict(GPT_OSS_ROPE)}, N)
    for index, (x, theirs, their_mask) in run_layers(model, 2).items():
        mask = layer_plans.layer_mask(plans[index], N)
        np.testing.assert_array_equal(their_mask, mask)
        layer = model.layers[index].self_attn
        (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights(layer)
        q = configs.rotate(heads(x, wq, bq, d), np.arange(N), freqs, "split")
        k = configs.rotate(heads(x, wk, bk, d), np.arange(N), freqs, "split")
        v = heads(x, wv, bv, d)
        sink = layer.sinks.detach().numpy()
        outs = [sinks.attention_with_sink(q[h], k[h // 2], v[h // 2], sink[h], mask)[0] for h in range(4)]
        np.testing.assert_allclose(merge(outs, wo, bo), theirs, atol=1e-5, rtol=0)
    # the banded layer's window binds within the test's tokens
    assert not layer_plans.layer_mask(plans[0], N)[N - 1, : N - 5].any()


def test_llama4_model_masks_and_outputs_equal_the_plans():
    config = llama4_config(vocab_size=64, num_local_experts=2, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    config._experts_implementation = "eager"
    model = random_layer(quiet(lambda: modeling_llama4.Llama4TextModel(config)), seed=41)
    plans = layer_plans.llama4(8, chunk=8)
    for index, (x, theirs, their_mask) in run_layers(model, 4).items():
        plan = plans[index]
        mask = layer_plans.layer_mask(plan, N)
        np.testing.assert_array_equal(their_mask, mask)
        ours = llama4_layer_by_companion(model.layers[index].self_attn, x, plan, config, mask)
        np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)


def test_gemma3_released_text_config_gives_the_plans_bases():
    released = dict(configs.published("Gemma 3 27B, global layers").config["text_config"])
    config = quiet(lambda: Gemma3TextConfig(**{k: v for k, v in released.items() if k != "model_type"}))
    plans = layer_plans.gemma3(62)
    assert config.num_hidden_layers == 62
    assert config.layer_types == ["sliding_attention" if p.window else "full_attention" for p in plans]
    assert sum(p.window is None for p in plans) == 10
    module = modeling_gemma3.Gemma3RotaryEmbedding(config)
    for kind, plan in (("sliding_attention", plans[0]), ("full_attention", plans[5])):
        theirs = getattr(module, f"{kind}_inv_freq").double().numpy()
        np.testing.assert_allclose(layer_plans.layer_frequencies(plan, 128), theirs, rtol=4 * EPS32, atol=0)
    assert config.sliding_window == plans[0].window == 1024


def test_gpt_oss_slow_band_far_out():
    config = quiet(lambda: GptOssConfig(**SIZES, num_hidden_layers=2, max_position_embeddings=131072,
                                        rope_parameters=dict(GPT_OSS_ROPE), num_local_experts=2))
    module = modeling_gpt_oss.GptOssRotaryEmbedding(config)
    positions = np.array([0, 4095, 65_536, 131_071])
    cos, sin = module(torch.zeros(1, 4, 32, dtype=torch.float64), torch.tensor(positions)[None])
    freqs = configs.frequencies_at({"head_dim": 32, "max_position_embeddings": 131072,
                                    "rope_parameters": dict(GPT_OSS_ROPE)}, 131_072)
    phi = np.outer(positions, freqs.inv_freq)
    # float32 rounds each angle to about 2^-24 of itself: a tolerance per pair, tight where the angles are small
    tol = 4 * EPS32 * (1 + np.abs(phi)) * freqs.attention_factor
    assert cos.shape[-1] == phi.shape[-1]
    for table, exact in ((cos[0].numpy(), np.cos(phi)), (sin[0].numpy(), np.sin(phi))):
        assert (np.abs(table - exact * freqs.attention_factor) <= tol).all()
    # and the slow band's tables are tight: within 1e-4 for every pair slower than 1e-3 rad per token
    slow = freqs.inv_freq < 1e-3
    assert slow.sum() >= 4 and tol[:, slow].max() < 1e-4
    # the slow band: the last pairs' angles at 131,071 are what the interpolation made them
    assert freqs.inv_freq[-1] * 131_071 < 2 * np.pi


# ---------------------------------------------------------------------------
# Recurrent stacks: Qwen3-Next and Qwen3.5
# ---------------------------------------------------------------------------

def released(name):
    return json.loads((PUBLISHED / f"{name}.json").read_text())


def test_qwen3_next_released_layers_and_partial_rotation_equal_the_plan():
    file = released("qwen3-next-80b-a3b-instruct")
    plans = layer_plans.qwen3_next(file["num_hidden_layers"], every=file["full_attention_interval"])
    config = quiet(lambda: Qwen3NextConfig(**{k: v for k, v in file.items() if k in (
        "num_hidden_layers", "head_dim", "partial_rotary_factor", "rope_theta", "hidden_size",
        "num_attention_heads", "num_key_value_heads")}, full_attention_interval=file["full_attention_interval"]))
    assert config.layer_types == ["linear_attention" if p.recurrent else "full_attention" for p in plans]
    assert sum(not p.recurrent for p in plans) == 12 and len(plans) == 48
    attention_plan = plans[3]
    assert (attention_plan.base, attention_plan.rotary_dim) == (file["rope_theta"],
                                                               int(file["head_dim"] * file["partial_rotary_factor"]))
    module = modeling_qwen3_next.Qwen3NextRotaryEmbedding(config)
    theta = layer_plans.layer_frequencies(attention_plan, file["head_dim"])
    np.testing.assert_allclose(module.inv_freq.double().numpy(), theta, rtol=4 * EPS32, atol=0)
    positions = np.arange(N)
    cos, sin = module(torch.zeros(1, N, 256, dtype=torch.float64), torch.tensor(positions)[None])
    generator = torch.Generator().manual_seed(13)
    q = torch.randn(1, 2, N, 256, generator=generator, dtype=torch.float64)
    k = torch.randn(1, 2, N, 256, generator=generator, dtype=torch.float64)
    q_hf, _ = modeling_qwen3_next.apply_rotary_pos_emb(q, k, cos, sin)
    x, r = q[0].numpy(), attention_plan.rotary_dim

    def ours(layout="split", first=True):
        if first:
            return np.concatenate([rope.rotate(x[..., :r], positions, theta, layout), x[..., r:]], axis=-1)
        return np.concatenate([x[..., :-r], rope.rotate(x[..., -r:], positions, theta, layout)], axis=-1)

    tol = 4 * EPS32 * (1 + N) * 2 * float(np.abs(x).max())
    np.testing.assert_allclose(ours(), q_hf[0].numpy(), atol=tol, rtol=0)
    assert np.abs(ours(layout="adjacent") - q_hf[0].numpy()).max() > 0.1
    assert np.abs(ours(first=False) - q_hf[0].numpy()).max() > 0.1


def test_qwen3_5_released_layers_and_interleaved_partial_rotation_equal_companion():
    file = released("qwen3.5-4b")["text_config"]
    plans = layer_plans.qwen3_next(file["num_hidden_layers"], every=file["full_attention_interval"])
    assert file["layer_types"] == ["linear_attention" if p.recurrent else "full_attention" for p in plans]
    params = file["rope_parameters"]
    config = quiet(lambda: Qwen3_5TextConfig(head_dim=file["head_dim"], rope_parameters=dict(params),
                                             num_hidden_layers=4, hidden_size=256, num_attention_heads=2,
                                             num_key_value_heads=1))
    module = modeling_qwen3_5.Qwen3_5TextRotaryEmbedding(config)
    rotary = int(file["head_dim"] * params["partial_rotary_factor"])
    assert rotary == plans[3].rotary_dim and sum(params["mrope_section"]) == rotary // 2
    positions, _ = mrope.multimodal_positions([5, (1, 8, 12), 3, (2, 4, 4), 4], spatial_merge_size=2)
    cos, _ = module(torch.zeros(1, positions.shape[1], 256, dtype=torch.float64), torch.tensor(positions)[:, None, :])
    theta = rope.inv_freq(rotary, params["rope_theta"])
    phi = mrope.angles(positions, theta, mrope.pair_axes(params["mrope_section"], "interleaved"))
    tol = 4 * EPS32 * (1 + np.abs(phi).max())
    np.testing.assert_allclose(cos[0].double().numpy(), np.cos(np.concatenate([phi, phi], -1)), atol=tol, rtol=0)
    # a text token is plain partial RoPE at base 10^7: the plan's frequencies
    np.testing.assert_allclose(theta, layer_plans.layer_frequencies(plans[3], file["head_dim"]), rtol=1e-15)
