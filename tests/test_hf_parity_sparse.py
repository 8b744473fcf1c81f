"""companion.sparse against DeepSeek-V4's attention in Hugging Face Transformers.

DeepSeek-V4 (``models/deepseek_v4``) gives its sliding-window branch and its compressed
branches bases of their own and rotates compressed entries by the position of their
window. Modules are built from a configuration in code (random weights, std 0.2,
float64, eager attention; nothing downloaded); companion recomputes in numpy float64:

* the rotary module keeps one frequency vector per branch: ``rope_theta`` 10,000 for the
  sliding branch, ``compress_rope_theta`` 160,000 with YaRN for the compressed ones, over
  the trailing ``qk_rope_head_dim`` components; companion's reader gives both from the
  configuration's own ``rope_parameters`` (to 4 x 2^-23, relative);
* a heavily-compressed-attention compressor (``DeepseekV4HCACompressor``): its entries
  equal ``sparse.pooled_entries`` normalised and rotated at ``sparse.entry_positions``
  (the first token of each window) with the compressed branch's frequencies in adjacent
  pairs, and its mask equals ``sparse.entry_mask``; a wrong base, the last token of the
  window or the split layout each move the entries far beyond the tolerance;
* a sliding-window layer (``DeepseekV4Attention``, run inside ``DeepseekV4Model`` so that
  its window mask is the library's own): one key-value vector per token, rotated; the
  sink logits of ``sinks``; the rotated slice of the output turned back by the query's
  position (``sparse.unrotate``). Agreement to 1e-6 (float32 norms and tables); without
  the turn back, without the sinks or in the split layout it fails.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from transformers.models.deepseek_v4 import modeling_deepseek_v4  # noqa: E402
from transformers.models.deepseek_v4.configuration_deepseek_v4 import DeepseekV4Config  # noqa: E402

from companion import configs, layer_plans, rope, sinks, sparse  # noqa: E402

EPS32 = 2.0 ** -23
N, HEAD, HEADS, WINDOW, RATE = 24, 32, 4, 8, 4
ROPE_DIM = HEAD // 4
TOL = 1e-6
YARN = {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 65536, "beta_fast": 32,
        "beta_slow": 1}


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def v4_config(**extra):
    config = quiet(lambda: DeepseekV4Config(
        vocab_size=64, hidden_size=64, moe_intermediate_size=32, num_hidden_layers=3, num_attention_heads=HEADS,
        num_key_value_heads=1, head_dim=HEAD, q_lora_rank=24, n_routed_experts=4, num_experts_per_tok=2,
        sliding_window=WINDOW, o_groups=2, o_lora_rank=16, index_n_heads=4, index_head_dim=16, index_topk=4,
        compress_rates={"compressed_sparse_attention": RATE, "heavily_compressed_attention": RATE},
        layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"],
        partial_rotary_factor=0.25, rope_scaling=dict(YARN), **extra))
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    return config


def randomised(module, seed):
    torch.manual_seed(seed)
    for p in module.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return module.double().eval()


def linear(layer, x):
    return x @ layer.weight.detach().numpy().T


def rms(x, norm=None, eps=1e-6):
    scaled = layer_plans.qk_rms_norm(x, eps)
    return scaled if norm is None else scaled * norm.weight.detach().numpy()


def trailing(x, positions, inv_freq, layout="adjacent", turn=rope.rotate):
    """Rotate the last 2 len(inv_freq) components of x; the leading ones pass."""
    r = 2 * inv_freq.size
    return np.concatenate([x[..., :-r], turn(x[..., -r:], positions, inv_freq, layout)], axis=-1)


def branch_frequencies(config, branch):
    return configs.frequencies_at({"head_dim": HEAD, "max_position_embeddings": config.max_position_embeddings,
                                   "rope_parameters": dict(config.rope_parameters[branch])}, N).inv_freq


def test_each_branch_has_its_base():
    config = v4_config()
    defaults = quiet(lambda: DeepseekV4Config())
    assert (defaults.rope_theta, defaults.compress_rope_theta, defaults.sliding_window) == (10000.0, 160000.0, 128)
    assert defaults.compress_rates == {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    module = modeling_deepseek_v4.DeepseekV4RotaryEmbedding(config)
    main, compress = branch_frequencies(config, "main"), branch_frequencies(config, "compress")
    np.testing.assert_allclose(module.main_inv_freq.double().numpy(), main, rtol=4 * EPS32, atol=0)
    np.testing.assert_allclose(module.compress_inv_freq.double().numpy(), compress, rtol=4 * EPS32, atol=0)
    np.testing.assert_allclose(main, rope.inv_freq(ROPE_DIM, 10000.0), rtol=1e-15)
    assert config.rope_parameters["main"]["rope_type"] == "default"
    assert config.rope_parameters["compress"]["rope_type"] == "yarn"
    # the compressed branch turns its slow pairs far more slowly
    assert compress[-1] < main[-1] / 10
    kinds = [modeling_deepseek_v4.DeepseekV4Attention(config, i).rope_layer_type for i in range(3)]
    assert kinds == ["main", "compress", "compress"]


def test_compressed_entries_are_rotated_at_the_first_token_of_their_window():
    config = v4_config()
    compressor = randomised(modeling_deepseek_v4.DeepseekV4HCACompressor(config), seed=1)
    x = torch.randn(1, N, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        theirs, bias = compressor(x, None, torch.arange(N)[None], None, 0)
    theirs = theirs[0, 0].numpy()
    xs = x[0].numpy()
    pooled = sparse.pooled_entries(linear(compressor.kv_proj, xs), linear(compressor.gate_proj, xs),
                                   compressor.position_bias.detach().numpy(), RATE)
    normed = rms(pooled, compressor.kv_norm, config.rms_norm_eps)
    theta = branch_frequencies(config, "compress")
    starts = sparse.entry_positions(N, RATE)

    def ours(positions=starts, inv_freq=theta, layout="adjacent"):
        return trailing(normed, positions, inv_freq, layout)

    assert theirs.shape == (N // RATE, HEAD) and np.abs(theirs).max() > 0.5
    np.testing.assert_allclose(ours(), theirs, atol=TOL, rtol=0)
    assert np.abs(ours(inv_freq=branch_frequencies(config, "main")) - theirs).max() > 100 * TOL
    assert np.abs(ours(positions=starts + RATE - 1) - theirs).max() > 100 * TOL
    assert np.abs(ours(layout="split") - theirs).max() > 100 * TOL
    visible = bias[0, 0].numpy() == 0
    np.testing.assert_array_equal(visible, sparse.entry_mask(N, N // RATE, RATE))


def test_sliding_layer_turns_its_output_back_by_the_query_position():
    model = randomised(quiet(lambda: modeling_deepseek_v4.DeepseekV4Model(v4_config())), seed=3)
    attn = model.layers[0].self_attn
    seen = {}
    attn.register_forward_hook(lambda m, args, kwargs, out: seen.update(
        x=(kwargs.get("hidden_states") if "hidden_states" in kwargs else args[0])[0].numpy()), with_kwargs=True)
    attn.o_a_proj.register_forward_hook(lambda m, args, out: seen.update(grouped=args[0][0].numpy()))
    ids = torch.randint(0, 64, (1, N), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        model(input_ids=ids)
    theirs = seen["grouped"].reshape(N, HEADS, HEAD)
    x = seen["x"]
    q = rms(linear(attn.q_b_proj, rms(linear(attn.q_a_proj, x), attn.q_a_norm)).reshape(N, HEADS, HEAD))
    kv = rms(linear(attn.kv_proj, x), attn.kv_norm)
    theta, positions = branch_frequencies(model.config, "main"), np.arange(N)
    window = layer_plans.sliding_window_mask(N, WINDOW)
    sink = attn.sinks.detach().numpy()

    def ours(layout="adjacent", turn_back=True, with_sinks=True):
        q_rot = trailing(q.transpose(1, 0, 2), positions, theta, layout)
        kv_rot = trailing(kv, positions, theta, layout)
        z = sink if with_sinks else np.full(HEADS, -np.inf)
        out = np.stack([sinks.softmax_with_sink(
            np.where(window, q_rot[h] @ kv_rot.T / np.sqrt(HEAD), -np.inf), np.full(N, z[h])) @ kv_rot
            for h in range(HEADS)])
        if turn_back:
            out = trailing(out, positions, theta, layout, turn=sparse.unrotate)
        return out.transpose(1, 0, 2)

    assert np.abs(theirs).max() > 0.3
    np.testing.assert_allclose(ours(), theirs, atol=TOL, rtol=0)
    assert np.abs(ours(turn_back=False) - theirs).max() > 100 * TOL
    assert np.abs(ours(with_sinks=False) - theirs).max() > 100 * TOL
    assert np.abs(ours(layout="split") - theirs).max() > 100 * TOL
