"""companion.configs against Hugging Face Transformers, the library it describes.

Every model and rotary module is built from a configuration in code, with random
weights; nothing is downloaded. For every rope type and option:

* the frequencies equal the library's float32 ones to float32 rounding, and the
  library's own formula evaluated in float64 (its ``torch.float``, ``torch.float32``
  and ``Tensor.float`` made float64 while it runs) to 1e-12;
* the attention factors are equal;
* q and k rotated by companion (split layout, and adjacent layout with the
  components permuted) equal the library's ``apply_rotary_pos_emb`` to float32
  rounding of the angles.
"""
from __future__ import annotations

import math
import warnings
from unittest import mock

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from transformers import GPTNeoXConfig, LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.gpt_neox import modeling_gpt_neox  # noqa: E402
from transformers.models.llama import modeling_llama  # noqa: E402

from companion import configs, rope  # noqa: E402

EPS32 = 2.0 ** -23
HEAD = dict(hidden_size=256, num_attention_heads=4, head_dim=64, num_hidden_layers=1)
PHI35_SHORT = [1.0, 1.02, 1.03, 1.03, 1.05, 1.05, 1.05, 1.05, 1.05, 1.07, 1.1, 1.11, 1.16, 1.16, 1.17, 1.29,
               1.34, 1.68, 1.79, 1.82, 1.85, 1.88, 1.91, 1.94, 1.99, 2.02, 2.02, 2.02, 2.02, 2.02, 2.02, 2.03]
PHI35_LONG = [1.08, 1.11, 1.14, 1.34, 1.59, 1.6, 1.62, 2.62, 3.23, 3.23, 4.79, 7.4, 7.7, 9.09, 12.2, 17.67,
              24.46, 28.57, 30.42, 30.84, 32.59, 32.93, 42.32, 44.96, 50.34, 50.45, 57.55, 57.93, 58.21,
              60.14, 62.61, 62.62]

# (name, config dict, sequence lengths to check). Lengths cross every switch point.
CASES = [
    ("default", dict(rope_theta=10_000.0, max_position_embeddings=64), (16, 64)),
    ("default-base-500k", dict(rope_theta=500_000.0, max_position_embeddings=64), (64,)),
    ("linear", dict(rope_theta=10_000.0, max_position_embeddings=32,
                    rope_scaling={"rope_type": "linear", "factor": 4.0}), (16, 64)),
    ("dynamic", dict(rope_theta=10_000.0, max_position_embeddings=32,
                     rope_scaling={"rope_type": "dynamic", "factor": 2.0}), (16, 32, 48, 96)),
    ("yarn", dict(rope_theta=10_000.0, max_position_embeddings=256,
                  rope_parameters={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 32}),
     (16, 64)),
    ("yarn-truncate-false", dict(rope_theta=150_000.0, max_position_embeddings=1024,
                                 rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                               "beta_slow": 1.0, "truncate": False,
                                               "original_max_position_embeddings": 32}), (64,)),
    ("yarn-betas", dict(rope_theta=10_000.0, max_position_embeddings=512,
                        rope_parameters={"rope_type": "yarn", "factor": 16.0, "beta_fast": 16.0, "beta_slow": 2.0,
                                         "original_max_position_embeddings": 32}), (64,)),
    ("yarn-mscale-equal", dict(rope_theta=10_000.0, max_position_embeddings=1280,
                               rope_scaling={"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                             "beta_fast": 32, "beta_slow": 1,
                                             "original_max_position_embeddings": 32}), (64,)),
    ("yarn-mscale-ratio", dict(rope_theta=10_000.0, max_position_embeddings=128,
                               rope_parameters={"rope_type": "yarn", "factor": 4.0, "mscale": 1.0,
                                                "mscale_all_dim": 0.707, "original_max_position_embeddings": 32}),
     (64,)),
    ("yarn-attention-factor", dict(rope_theta=10_000.0, max_position_embeddings=128,
                                   rope_parameters={"rope_type": "yarn", "factor": 4.0, "attention_factor": 1.5,
                                                    "original_max_position_embeddings": 32}), (64,)),
    ("yarn-factor-null", dict(rope_theta=10_000.0, max_position_embeddings=256,
                              rope_parameters={"rope_type": "yarn", "factor": None,
                                               "original_max_position_embeddings": 32}), (64,)),
    ("yarn-partial", dict(rope_theta=10_000.0, max_position_embeddings=256, partial_rotary_factor=0.5,
                          rope_parameters={"rope_type": "yarn", "factor": 8.0,
                                           "original_max_position_embeddings": 32}), (64,)),
    ("longrope", dict(rope_theta=10_000.0, max_position_embeddings=1024,
                      rope_scaling={"rope_type": "longrope", "short_factor": PHI35_SHORT, "long_factor": PHI35_LONG,
                                    "original_max_position_embeddings": 32}), (16, 32, 33, 64)),
    ("longrope-factor", dict(rope_theta=10_000.0, max_position_embeddings=1024,
                             rope_parameters={"rope_type": "longrope", "short_factor": PHI35_SHORT,
                                              "long_factor": PHI35_LONG, "factor": 8.0,
                                              "original_max_position_embeddings": 32}), (32, 33)),
    ("longrope-attention-factor", dict(rope_theta=10_000.0, max_position_embeddings=1024,
                                       rope_parameters={"rope_type": "longrope", "short_factor": PHI35_SHORT,
                                                        "long_factor": PHI35_LONG, "attention_factor": 1.25,
                                                        "original_max_position_embeddings": 32}), (33,)),
    ("llama3", dict(rope_theta=500_000.0, max_position_embeddings=131072,
                    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}), (64,)),
    ("llama3-equal-bands", dict(rope_theta=500_000.0, max_position_embeddings=131072,
                                rope_parameters={"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 1.0,
                                                 "original_max_position_embeddings": 8192}), (64,)),
    ("proportional", dict(rope_theta=1_000_000.0, max_position_embeddings=256,
                          rope_parameters={"rope_type": "proportional", "partial_rotary_factor": 0.25}), (64,)),
    ("proportional-factor", dict(rope_theta=1_000_000.0, max_position_embeddings=256,
                                 rope_parameters={"rope_type": "proportional", "partial_rotary_factor": 0.5,
                                                  "factor": 2.0}), (64,)),
]
IDS = [name for name, _, _ in CASES]


def hf_config(config: dict):
    """A Transformers config built in code: GPT-NeoX for partial default RoPE, Llama otherwise."""
    config = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items()}  # the library edits it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if config.get("partial_rotary_factor") and "rope_scaling" not in config and "rope_parameters" not in config:
            return GPTNeoXConfig(**HEAD, **config)
        return LlamaConfig(**HEAD, **config)


def hf_rotary(hf):
    if isinstance(hf, GPTNeoXConfig):
        return modeling_gpt_neox.GPTNeoXRotaryEmbedding(hf)
    return modeling_llama.LlamaRotaryEmbedding(hf)


def hf_forward(module, n):
    """cos and sin for positions 0..n-1 (the forward pass updates dynamic and longrope state)."""
    x = torch.zeros(1, n, HEAD["head_dim"])
    return module(x, torch.arange(n)[None])


def hf_formula_float64(hf, n):
    """The library's own frequency formula with its float32 tensors made float64."""
    rope_type = hf.rope_parameters["rope_type"]
    with mock.patch.object(torch, "float", torch.float64), mock.patch.object(torch, "float32", torch.float64), \
            mock.patch.object(torch.Tensor, "float", torch.Tensor.double):
        if rope_type == "default":
            inv, factor = type(hf_rotary(hf)).compute_default_rope_parameters(hf)
        else:
            inv, factor = ROPE_INIT_FUNCTIONS[rope_type](hf, None, seq_len=n)
    assert inv.dtype == torch.float64
    return inv.numpy(), factor


def full_config(config):
    return {**HEAD, **config}


def rotary_slice(freqs):
    return np.arange(freqs.rotary_dim)


@pytest.mark.parametrize("name,config,lengths", CASES, ids=IDS)
def test_frequencies_and_attention_factor_match_the_library(name, config, lengths):
    hf = hf_config(config)
    for n in lengths:
        module = hf_rotary(hf)
        hf_forward(module, n)
        ours = configs.frequencies_at(full_config(config), n)
        theirs = module.inv_freq.numpy()
        assert theirs.dtype == np.float32 and ours.inv_freq.shape == theirs.shape
        np.testing.assert_allclose(ours.inv_freq, theirs, rtol=4 * EPS32, atol=0, err_msg=f"{name} at {n}")
        assert math.isclose(ours.attention_factor, module.attention_scaling, rel_tol=1e-12), (name, n)


@pytest.mark.parametrize("name,config,lengths", CASES, ids=IDS)
def test_float64_frequencies_equal_the_library_formula_in_float64(name, config, lengths):
    hf = hf_config(config)
    for n in lengths:
        theirs, factor = hf_formula_float64(hf, n)
        ours = configs.frequencies_at(full_config(config), n)
        np.testing.assert_allclose(ours.inv_freq, theirs, rtol=1e-12, atol=0, err_msg=f"{name} at {n}")
        assert math.isclose(ours.attention_factor, factor, rel_tol=1e-12)


@pytest.mark.parametrize("name,config,lengths", CASES, ids=IDS)
def test_rotated_q_and_k_match_apply_rotary_pos_emb_in_both_layouts(name, config, lengths):
    hf = hf_config(config)
    apply = (modeling_gpt_neox.apply_rotary_pos_emb if isinstance(hf, GPTNeoXConfig)
             or config.get("partial_rotary_factor") else modeling_llama.apply_rotary_pos_emb)
    generator = torch.Generator().manual_seed(19)
    for n in lengths:
        module = hf_rotary(hf)
        cos, sin = hf_forward(module, n)
        q = torch.randn(1, 2, n, HEAD["head_dim"], generator=generator)
        k = torch.randn(1, 2, n, HEAD["head_dim"], generator=generator)
        q_hf, k_hf = apply(q, k, cos, sin)
        freqs = configs.frequencies_at(full_config(config), n)
        positions = np.arange(n)
        # float32 angles m * theta are off by up to about m * theta * 2^-24; cos/sin add 2^-24
        tol = 4 * EPS32 * n * freqs.attention_factor * float(q.abs().max())
        for x, x_hf in ((q, q_hf), (k, k_hf)):
            split = configs.rotate(x.double().numpy(), positions, freqs, "split")
            np.testing.assert_allclose(split, x_hf.double().numpy(), atol=tol, rtol=0, err_msg=f"{name} split")
            r = freqs.rotary_dim
            perm = rope.layout_permutation(r, "split", "adjacent")
            x_adj = x.double().numpy().copy()
            x_adj[..., :r] = x_adj[..., :r][..., perm]
            turned = configs.rotate(x_adj, positions, freqs, "adjacent")
            back = turned.copy()
            back[..., :r] = turned[..., :r][..., np.argsort(perm)]
            np.testing.assert_allclose(back, x_hf.double().numpy(), atol=tol, rtol=0, err_msg=f"{name} adjacent")


def test_version_4_and_version_5_files_give_the_same_frequencies():
    v4 = dict(HEAD, rope_theta=500_000.0, max_position_embeddings=131072,
              rope_scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192})
    v5 = dict(HEAD, max_position_embeddings=131072,
              rope_parameters={"rope_type": "llama3", "rope_theta": 500_000.0, "factor": 8.0,
                               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192})
    a, b = configs.frequencies_at(v4, 100), configs.frequencies_at(v5, 100)
    assert np.array_equal(a.inv_freq, b.inv_freq)
    module = hf_rotary(hf_config({k: v for k, v in v4.items() if k not in HEAD}))
    np.testing.assert_allclose(a.inv_freq, module.inv_freq.numpy(), rtol=4 * EPS32)


def test_gpt_neox_partial_rotary_exponent_is_over_the_rotated_dimension():
    """rotary_pct = 0.25 of a 64-wide head: 16 rotated components, theta_i = base^(-2i/16)."""
    raw = dict(HEAD, rotary_pct=0.25, rotary_emb_base=10_000.0, max_position_embeddings=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf = GPTNeoXConfig(**{k: v for k, v in raw.items()})
    module = modeling_gpt_neox.GPTNeoXRotaryEmbedding(hf)
    ours = configs.frequencies_at(raw, 64)
    assert ours.rotary_dim == 16 and module.inv_freq.shape == (8,)
    np.testing.assert_allclose(ours.inv_freq, rope.inv_freq(16, 10_000.0), rtol=1e-15)
    np.testing.assert_allclose(ours.inv_freq, module.inv_freq.numpy(), rtol=4 * EPS32)


def test_dynamic_ntk_state_follows_the_library_input_by_input():
    """Grows with the longest input, keeps it for shorter ones, resets only strictly below L."""
    config = dict(rope_theta=10_000.0, max_position_embeddings=32, rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    module = hf_rotary(hf_config(config))
    state = configs.DynamicNTKState(full_config(config))
    history = (16, 48, 40, 32, 96, 64, 31, 40, 128, 8)
    kinds = []
    for n in history:
        hf_forward(module, n)
        ours = state.update(n)
        np.testing.assert_allclose(ours.inv_freq, module.inv_freq.numpy(), rtol=4 * EPS32, err_msg=f"at {n}")
        fresh = configs.frequencies_at(full_config(config), n)
        kinds.append("fresh" if np.allclose(ours.inv_freq, fresh.inv_freq, rtol=1e-12) else "kept")
    # after 48, the inputs of 40 and 32 keep 48's frequencies; 31 < 32 resets; 8 after 128 resets
    assert kinds == ["fresh", "fresh", "kept", "kept", "fresh", "kept", "fresh", "fresh", "fresh", "fresh"]
    assert state.longest == 32


def test_llama_attention_layer_equals_companion_attention_with_adjacent_layout():
    """A random Hugging Face Llama attention layer (split pairs) against companion.rope.self_attention
    per head (adjacent pairs) with the columns of W_Q and W_K permuted head by head."""
    torch.manual_seed(0)
    config = dict(rope_theta=10_000.0, max_position_embeddings=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf = LlamaConfig(**HEAD, **config, num_key_value_heads=4, attention_bias=False)
    hf._attn_implementation = "eager"
    layer = modeling_llama.LlamaAttention(hf, layer_idx=0).double().eval()
    rotary = modeling_llama.LlamaRotaryEmbedding(hf)
    n, d, heads = 24, HEAD["head_dim"], HEAD["num_attention_heads"]
    x = torch.randn(1, n, HEAD["hidden_size"], dtype=torch.float64)
    cos, sin = rotary(x, torch.arange(n)[None])
    causal = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    with torch.no_grad():
        theirs, _ = layer(x, position_embeddings=(cos.double(), sin.double()), attention_mask=causal)
    w_q = layer.q_proj.weight.detach().numpy().T
    w_k = layer.k_proj.weight.detach().numpy().T
    w_v = layer.v_proj.weight.detach().numpy().T
    w_o = layer.o_proj.weight.detach().numpy().T
    perm = rope.layout_permutation(d, "split", "adjacent")
    theta = configs.frequencies_at(full_config(config), n).inv_freq
    mask = np.tril(np.ones((n, n), dtype=bool))
    outs = []
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        out, _ = rope.self_attention(x[0].numpy(), w_q[:, cols][:, perm], w_k[:, cols][:, perm], w_v[:, cols],
                                     np.arange(n), theta, layout="adjacent", mask=mask)
        outs.append(out)
    ours = np.concatenate(outs, axis=-1) @ w_o
    # the library's softmax runs in float32 even for a float64 layer; its angles are float32
    np.testing.assert_allclose(ours, theirs[0].numpy(), atol=2e-5, rtol=0)
    wrong, _ = rope.self_attention(x[0].numpy(), w_q[:, :d], w_k[:, :d], w_v[:, :d], np.arange(n), theta,
                                   layout="adjacent", mask=mask)
    assert np.abs(wrong - outs[0]).max() > 1e-2, "without the permutation the layouts differ"
