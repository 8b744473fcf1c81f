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
  library's mask functions entry by entry.
"""
from __future__ import annotations

import warnings

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
from transformers.models.smollm3 import modeling_smollm3  # noqa: E402
from transformers.models.smollm3.configuration_smollm3 import SmolLM3Config  # noqa: E402

from companion import attention, configs, layer_plans, nope, rope, sinks  # noqa: E402

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
    assert (defaults.no_rope_layer_interval, defaults.attention_chunk_size) == (4, 8192) == (4, layer_plans.llama4(8)[0].chunk)
    assert (defaults.floor_scale, defaults.attn_scale) == (8192, 0.1)


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
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights(layer)
    d, xs = SIZES["head_dim"], x[0].numpy()
    q, k, v = heads(xs, wq, bq, d), heads(xs, wk, bk, d), heads(xs, wv, bv, d)
    if plan.rope:
        theta = layer_plans.layer_frequencies(plan, d)
        q, k = rope.rotate(q, np.arange(N), theta, "adjacent"), rope.rotate(k, np.arange(N), theta, "adjacent")
    if plan.qk_norm:
        q, k = layer_plans.qk_rms_norm(q, config.rms_norm_eps), layer_plans.qk_rms_norm(k, config.rms_norm_eps)
    if plan.temperature:
        q = q * nope.attention_temperature(np.arange(N), config.floor_scale, config.attn_scale)[:, None]
    outs = [attention.scaled_dot_product_attention(q[h], k[h // 2], v[h // 2], mask)[0] for h in range(4)]
    np.testing.assert_allclose(merge(outs, wo, bo), theirs[0].numpy(), atol=1e-5, rtol=0)


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
    mask = layer_plans.layer_mask(plan[layer_idx], N)
    with torch.no_grad():
        theirs, _ = layer(x, position_embeddings=(cos.double(), sin.double()), attention_mask=additive(mask))
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
    mask = layer_plans.layer_mask(plan[layer_idx], N)
    with torch.no_grad():
        theirs, _ = layer(x, position_embeddings=(cos.double(), sin.double()), attention_mask=additive(mask))
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
