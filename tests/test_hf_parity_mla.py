"""companion.mla against the multi-head latent attention of Hugging Face Transformers.

Each model is built from a configuration in code (random weights, std 0.2, float64,
eager attention, nothing downloaded) and run on 20 tokens. A forward hook takes the
attention layer's input and output as the model's own forward gives them: its own
causal mask (``masking_utils``), its own rotary module and softmax scale. Companion
recomputes the output from the layer's weights in numpy float64:

* DeepSeek-V3 (``DeepseekV3Attention``): 12 unrotated and 8 rotated components per head,
  one rotated key shared by all heads, ``rope_interleave=True`` (adjacent pairs), YaRN
  factor 4 with ``mscale_all_dim`` 1, whose softmax factor ``(0.1 ln 4 + 1)^2`` comes from
  ``companion.configs.softmax_scale_factor``. Agreement to 1e-6 (the library forms its rotary
  tables and runs the eager softmax in float32); each of a wrong pair layout, a wrong base
  and a scale without the factor moves the output by more than a hundred times that, so the
  test would fail on each;
* the absorbed form (``mla.absorbed_scores``) equals the expanded scores to 1e-12;
* Kimi Linear (``KimiLinearAttention``): the same latent attention with no rotation
  at all; rotating its key slice would change the output;
* DeepSeek-V3.2 (``DeepseekV32Attention``, DeepSeek Sparse Attention): the indexer's
  top-k keys (first 8 components turned, split layout) masked into the MLA attention
  (last 8 components, adjacent layout). Agreement to 1e-6, and the indexer computed in
  the MLA's layout selects other keys;
* the sizes the chapter quotes: ``DeepseekV3Config``'s defaults (128 heads of 128 + 64
  components, latent 512, values of 128, adjacent pairs) and the released Kimi K2 file
  (``tests/data/published_configs``: the same slice and latent, 64 heads).
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from transformers import DeepseekV3Config  # noqa: E402
from transformers.models.deepseek_v3 import modeling_deepseek_v3  # noqa: E402
from transformers.models.deepseek_v32 import modeling_deepseek_v32  # noqa: E402
from transformers.models.deepseek_v32.configuration_deepseek_v32 import DeepseekV32Config  # noqa: E402
from transformers.models.kimi_linear import modeling_kimi_linear  # noqa: E402
from transformers.models.kimi_linear.configuration_kimi_linear import KimiLinearConfig  # noqa: E402

from companion import configs, layer_plans, mla, rope, sparse  # noqa: E402

N, HEADS, NOPE, ROPE_DIM, V_DIM, LATENT, Q_RANK = 20, 4, 12, 8, 10, 16, 24
#: Outputs of order 0.5: the library's rotary tables are formed in float32, about 1e-7 off.
TOL = 1e-6  # and the eager softmax is float32
YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 1024,
        "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}
MLA_SIZES = dict(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=1, num_attention_heads=HEADS,
                 num_key_value_heads=HEADS, kv_lora_rank=LATENT, q_lora_rank=Q_RANK, qk_rope_head_dim=ROPE_DIM,
                 qk_nope_head_dim=NOPE, v_head_dim=V_DIM, max_position_embeddings=4096)
MOE = dict(moe_intermediate_size=32, n_shared_experts=1, n_routed_experts=4, num_experts_per_tok=2, n_group=1,
           topk_group=1, first_k_dense_replace=1)


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def randomised(model, seed):
    torch.manual_seed(seed)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return model.double().eval()


def run_attention(model, seed):
    """The first layer's attention input and output in the model's own forward on N random tokens."""
    seen = {}

    def hook(module, args, kwargs, out):
        seen["x"] = (kwargs.get("hidden_states") if "hidden_states" in kwargs else args[0])[0].numpy()
        seen["out"] = out[0][0].numpy()

    model.layers[0].self_attn.register_forward_hook(hook, with_kwargs=True)
    ids = torch.randint(0, 64, (1, N), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        model(input_ids=ids)
    return seen["x"], seen["out"]


def linear(layer, x):
    w = layer.weight.detach().numpy()
    return x @ w.T + (layer.bias.detach().numpy() if layer.bias is not None else 0.0)


def rms(norm, x):
    """An RMSNorm with its learned weight: companion's QK-norm times the weight."""
    return layer_plans.qk_rms_norm(x, norm.variance_epsilon) * norm.weight.detach().numpy()


def mla_parts(attn, x):
    """Queries, shared rotated key, keys and values of an MLA layer, per head, from its weights (numpy)."""
    if getattr(attn, "q_a_proj", None) is not None:
        q = linear(attn.q_b_proj, rms(attn.q_a_layernorm, linear(attn.q_a_proj, x)))
    else:
        q = linear(attn.q_proj, x)
    q = q.reshape(N, HEADS, NOPE + ROPE_DIM).transpose(1, 0, 2)
    q_nope, q_rope = q[..., :NOPE], q[..., NOPE:]
    compressed = linear(attn.kv_a_proj_with_mqa, x)
    latent, k_rope = rms(attn.kv_a_layernorm, compressed[:, :LATENT]), compressed[:, LATENT:]
    kv = linear(attn.kv_b_proj, latent).reshape(N, HEADS, NOPE + V_DIM).transpose(1, 0, 2)
    return q_nope, q_rope, kv[..., :NOPE], k_rope, kv[..., NOPE:], latent


def merge(attn, per_head):
    return linear(attn.o_proj, per_head.transpose(1, 0, 2).reshape(N, -1))


def v3_config(rope_parameters=None):
    config = quiet(lambda: DeepseekV3Config(**MLA_SIZES, **MOE, rope_parameters=dict(rope_parameters or YARN)))
    config._attn_implementation = "eager"
    return config


def companion_config(rope_parameters=None):
    """The same settings as a configuration file that companion's reader takes."""
    return {"model_type": "deepseek_v3", "qk_rope_head_dim": ROPE_DIM, "qk_nope_head_dim": NOPE,
            "max_position_embeddings": 4096, "rope_parameters": dict(rope_parameters or YARN)}


def test_deepseek_v3_attention_equals_companion_and_each_setting_matters():
    model = randomised(quiet(lambda: modeling_deepseek_v3.DeepseekV3Model(v3_config())), seed=1)
    attn = model.layers[0].self_attn
    assert model.config.rope_interleave is True
    x, theirs = run_attention(model, seed=2)
    q_nope, q_rope, k_nope, k_rope, v, _ = mla_parts(attn, x)
    file = companion_config()
    theta = configs.frequencies_at(file, N).inv_freq
    scale = configs.softmax_scale_factor(file) / np.sqrt(NOPE + ROPE_DIM)
    assert scale == pytest.approx(attn.scaling, rel=1e-12)
    causal = np.tril(np.ones((N, N), dtype=bool))

    def ours(layout="adjacent", inv_freq=theta, softmax_scale=scale):
        out, _ = mla.attention(q_nope, q_rope, k_nope, k_rope, v, np.arange(N), inv_freq, softmax_scale, layout,
                               causal)
        return merge(attn, out)

    assert np.abs(theirs).max() > 0.3
    np.testing.assert_allclose(ours(), theirs, atol=TOL, rtol=0)
    # the test fails on a wrong layout, a wrong base and a scale without YaRN's factor: each moves
    # the output by more than a hundred times the tolerance
    assert np.abs(ours(layout="split") - theirs).max() > 100 * TOL
    assert np.abs(ours(inv_freq=rope.inv_freq(ROPE_DIM, 1e6)) - theirs).max() > 100 * TOL
    assert np.abs(ours(softmax_scale=1 / np.sqrt(NOPE + ROPE_DIM)) - theirs).max() > 100 * TOL


def test_absorbing_w_uk_gives_the_same_scores_from_the_latent():
    model = randomised(quiet(lambda: modeling_deepseek_v3.DeepseekV3Model(v3_config())), seed=3)
    attn = model.layers[0].self_attn
    x, _ = run_attention(model, seed=4)
    q_nope, q_rope, k_nope, k_rope, _, latent = mla_parts(attn, x)
    w_uk = attn.kv_b_proj.weight.detach().numpy().reshape(HEADS, NOPE + V_DIM, LATENT)[:, :NOPE]
    theta = rope.inv_freq(ROPE_DIM)
    expanded = mla.scores(q_nope, q_rope, k_nope, k_rope, np.arange(N), theta)
    absorbed = mla.absorbed_scores(q_nope, q_rope, latent, k_rope, w_uk, np.arange(N), theta)
    np.testing.assert_allclose(absorbed, expanded, atol=1e-12, rtol=0)


def test_kimi_linear_mla_rotates_nothing():
    config = quiet(lambda: KimiLinearConfig(**{k: v for k, v in MLA_SIZES.items() if k != "max_position_embeddings"},
                                            num_experts=4, moe_intermediate_size=32, num_experts_per_token=2,
                                            linear_attn_config={"kda_layers": [], "full_attn_layers": [1],
                                                                "num_heads": 2, "head_dim": 16},
                                            pad_token_id=0, bos_token_id=1, eos_token_id=2))
    config._attn_implementation = "eager"
    assert config.layer_types == ["full_attention"]
    model = randomised(quiet(lambda: modeling_kimi_linear.KimiLinearModel(config)), seed=5)
    attn = model.layers[0].self_attn
    assert isinstance(attn, modeling_kimi_linear.KimiLinearAttention)
    x, theirs = run_attention(model, seed=6)
    q_nope, q_rope, k_nope, k_rope, v, _ = mla_parts(attn, x)
    causal = np.tril(np.ones((N, N), dtype=bool))
    scale = attn.scaling

    def ours(inv_freq):
        return merge(attn, mla.attention(q_nope, q_rope, k_nope, k_rope, v, np.arange(N), inv_freq, scale,
                                         mask=causal)[0])

    np.testing.assert_allclose(ours(np.zeros(ROPE_DIM // 2)), theirs, atol=TOL, rtol=0)
    assert np.abs(ours(rope.inv_freq(ROPE_DIM)) - theirs).max() > 100 * TOL
    assert layer_plans.kimi_linear(4)[3] == layer_plans.LayerPlan(rope=False)


# ---------------------------------------------------------------------------
# DeepSeek-V3.2: the lightning indexer's layout and DeepSeek Sparse Attention
# ---------------------------------------------------------------------------

INDEX = dict(index_n_heads=16, index_head_dim=16, index_topk=6)


def v32_model(seed):
    config = quiet(lambda: DeepseekV32Config(**MLA_SIZES, **MOE, **INDEX, rope_parameters={
        "rope_type": "default", "rope_theta": 10000.0}))
    config._attn_implementation = "eager"
    return randomised(quiet(lambda: modeling_deepseek_v32.DeepseekV32Model(config)), seed)


def indexer_inputs(attn, x):
    """The indexer's queries (n, heads, d_I), key (n, d_I) and head weights (n, heads), from its weights."""
    indexer = attn.indexer
    q_resid = rms(attn.q_a_layernorm, linear(attn.q_a_proj, x))
    q = linear(indexer.wq_b, q_resid).reshape(N, INDEX["index_n_heads"], INDEX["index_head_dim"])
    raw = linear(indexer.wk, x)
    mean, var = raw.mean(-1, keepdims=True), raw.var(-1, keepdims=True)
    k = (raw - mean) / np.sqrt(var + indexer.k_norm.eps) * indexer.k_norm.weight.detach().numpy() \
        + indexer.k_norm.bias.detach().numpy()
    weights = linear(indexer.weights_proj, x)
    return q, k, weights


def test_deepseek_v32_sparse_attention_equals_companion_with_the_indexer_in_the_other_layout():
    model = v32_model(seed=7)
    attn = model.layers[0].self_attn
    x, theirs = run_attention(model, seed=8)
    q_nope, q_rope, k_nope, k_rope, v, _ = mla_parts(attn, x)
    q_i, k_i, w_i = indexer_inputs(attn, x)
    theta = rope.inv_freq(ROPE_DIM)
    index = sparse.indexer_scores(q_i, k_i, w_i, theta, "split")
    # the k-th and (k+1)-th scores of every full row stand well apart: float32 cannot swap them
    full = np.sort(index[INDEX["index_topk"]:], axis=-1)[:, ::-1]
    gaps = full[:, INDEX["index_topk"] - 1] - full[:, INDEX["index_topk"]]
    assert gaps.min() > 1e-5 * np.abs(index[np.isfinite(index)]).max()
    chosen = sparse.selected_keys(index, INDEX["index_topk"])
    causal = np.tril(np.ones((N, N), dtype=bool))
    assert (chosen.sum(-1) == np.minimum(np.arange(N) + 1, INDEX["index_topk"])).all() and (chosen <= causal).all()

    def ours(mask):
        return merge(attn, mla.attention(q_nope, q_rope, k_nope, k_rope, v, np.arange(N), theta, attn.scaling,
                                         "adjacent", mask)[0])

    np.testing.assert_allclose(ours(chosen), theirs, atol=TOL, rtol=0)
    # sparsity binds: the dense layer differs; the indexer in the MLA's own layout picks other keys
    assert np.abs(ours(causal) - theirs).max() > 100 * TOL
    wrong = sparse.selected_keys(sparse.indexer_scores(q_i, k_i, w_i, theta, "adjacent"), INDEX["index_topk"])
    assert (wrong != chosen).any(axis=-1).sum() >= 3
    assert np.abs(ours(wrong) - theirs).max() > 100 * TOL


def test_the_sizes_the_chapter_quotes():
    defaults = quiet(lambda: DeepseekV3Config())
    assert (defaults.num_attention_heads, defaults.qk_nope_head_dim, defaults.qk_rope_head_dim,
            defaults.kv_lora_rank, defaults.v_head_dim, defaults.rope_interleave) == (128, 128, 64, 512, 128, True)
    assert mla.cache_entries(defaults.kv_lora_rank, defaults.qk_rope_head_dim, defaults.num_attention_heads,
                             defaults.qk_nope_head_dim, defaults.v_head_dim) == (576, 40960)
    k2 = json.loads((Path(__file__).resolve().parent / "data" / "published_configs" / "kimi-k2-instruct.json")
                    .read_text())
    assert (k2["qk_nope_head_dim"], k2["qk_rope_head_dim"], k2["kv_lora_rank"], k2["num_attention_heads"]) == \
        (128, 64, 512, 64)
    v32 = quiet(lambda: DeepseekV32Config())
    assert (v32.index_head_dim, v32.qk_rope_head_dim, v32.index_topk) == (128, 64, 2048)
