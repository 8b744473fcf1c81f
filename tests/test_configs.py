"""companion.configs (reading config.json) and companion.precision (RoPE in low precision)."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

from companion import configs, mrope, precision, rope, scaling

LLAMA31 = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
           "rope_theta": 500000.0,
           "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"}}


def test_plain_rope_from_the_top_level_keys():
    s = configs.read_config({"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 10000.0,
                             "max_position_embeddings": 4096})
    assert (s.rope_type, s.head_dim, s.rotary_dim, s.source) == ("default", 128, 128, "top level")
    f = configs.frequencies_at(s, 4096)
    assert np.array_equal(f.inv_freq, rope.inv_freq(128, 10000.0)) and f.attention_factor == 1.0


def test_llama31_is_companion_llama3():
    f = configs.frequencies_at(LLAMA31, 131072)
    assert np.array_equal(f.inv_freq, scaling.llama3(128).inv_freq)
    assert configs.read_config(LLAMA31).original_length == 8192


def test_yarn_defaults_and_attention_factors():
    base = {"head_dim": 64, "rope_theta": 10000.0, "max_position_embeddings": 163840}
    ds = dict(base, rope_scaling={"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                  "beta_fast": 32, "beta_slow": 1, "original_max_position_embeddings": 4096})
    f = configs.frequencies_at(ds, 1000)
    assert f.attention_factor == 1.0                      # mscale / mscale_all_dim = 1
    assert np.array_equal(f.inv_freq, scaling.yarn_code(64, 40.0, 4096, 10000.0).inv_freq)
    plain = dict(base, rope_scaling={"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096})
    assert configs.frequencies_at(plain, 1000).attention_factor == pytest.approx(0.1 * math.log(40) + 1)
    zero_betas = dict(base, rope_scaling={"type": "yarn", "factor": 40, "beta_fast": 0,
                                          "original_max_position_embeddings": 4096})
    assert configs.read_config(zero_betas).parameters["beta_fast"] == 32.0   # `or 32` in the library
    null = dict(base, rope_parameters={"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 4096})
    s = configs.read_config(null)
    assert s.parameters["factor"] == 40.0 and any("factor" in k for k in s.filled_in)


def test_truncate_changes_the_ramp():
    base = {"head_dim": 64, "rope_theta": 150000.0, "max_position_embeddings": 131072}
    yarn = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}
    on = configs.frequencies_at(dict(base, rope_parameters=yarn), 10)
    off = configs.frequencies_at(dict(base, rope_parameters=dict(yarn, truncate=False)), 10)
    assert not np.allclose(on.inv_freq, off.inv_freq)
    assert np.array_equal(off.inv_freq, scaling.yarn_code(64, 32.0, 4096, 150000.0, truncate=False).inv_freq)


def test_longrope_switches_strictly_above_the_original_length():
    short, long = [1.0] * 48, [4.0] * 48
    phi = {"hidden_size": 3072, "num_attention_heads": 32, "rope_theta": 10000.0,
           "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
           "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long}}
    at, past = configs.frequencies_at(phi, 4096), configs.frequencies_at(phi, 4097)
    theta = rope.inv_freq(96, 10000.0)
    assert np.array_equal(at.inv_freq, theta) and np.allclose(past.inv_freq, theta / 4)
    expected = math.sqrt(1 + math.log(32) / math.log(4096))
    assert at.attention_factor == past.attention_factor == pytest.approx(expected)


def test_llama4_equal_band_factors_leave_two_bands():
    scout = {"head_dim": 128, "rope_theta": 500000.0, "max_position_embeddings": 10485760,
             "rope_parameters": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}
    f = configs.frequencies_at(scout, 100)
    theta = rope.inv_freq(128, 500000.0)
    slow = 2 * np.pi / theta > 8192
    assert np.array_equal(f.inv_freq[~slow], theta[~slow]) and np.allclose(f.inv_freq[slow], theta[slow] / 16)


def test_partial_rotary_and_proportional_exponents():
    neox = {"hidden_size": 6144, "num_attention_heads": 64, "rotary_pct": 0.25, "rotary_emb_base": 10000,
            "max_position_embeddings": 2048}
    s = configs.read_config(neox)
    assert (s.head_dim, s.rotary_dim, s.partial_rotary_factor) == (96, 24, 0.25)
    assert np.array_equal(configs.frequencies_at(s, 10).inv_freq, rope.inv_freq(24, 10000.0))
    prop = {"head_dim": 256, "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "proportional", "rope_theta": 1e6, "partial_rotary_factor": 0.25}}
    f = configs.frequencies_at(prop, 10)
    assert f.inv_freq.shape == (128,) and f.proportional and np.count_nonzero(f.inv_freq) == 32
    assert np.allclose(f.inv_freq[:32], rope.inv_freq(256, 1e6)[:32], rtol=1e-15)
    # the exponent identity: over the head with base b equals over the rotated 64 with base b^(64/256)
    assert np.allclose(f.inv_freq[:32], rope.inv_freq(64, 1e6 ** 0.25), rtol=1e-13)


def test_rotate_leaves_the_unrotated_components_and_scales_the_rotated_ones():
    cfg = {"head_dim": 8, "rope_theta": 100.0, "max_position_embeddings": 64, "partial_rotary_factor": 0.5,
           "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "attention_factor": 2.0,
                               "original_max_position_embeddings": 16}}
    f = configs.frequencies_at(cfg, 10)
    x = np.random.default_rng(0).normal(size=(5, 8))
    out = configs.rotate(x, np.arange(5), f, "split")
    assert np.array_equal(out[:, 4:], x[:, 4:])
    assert np.allclose(out[:, :4], 2.0 * rope.rotate(x[:, :4], np.arange(5), f.inv_freq, "split"))
    with pytest.raises(ValueError, match="head_dim = 8"):
        configs.rotate(x[:, :6], np.arange(5), f)


def test_version_4_and_5_spellings_agree():
    v5 = {"head_dim": 64, "max_position_embeddings": 8192,
          "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}
    v4 = {"head_dim": 64, "max_position_embeddings": 8192, "rope_theta": 1e4,
          "rope_scaling": {"type": "linear", "factor": 2.0}}
    a, b = configs.read_config(v5), configs.read_config(v4)
    assert a.source == "rope_parameters" and b.source == "rope_scaling"
    assert np.array_equal(configs.frequencies_at(a, 9).inv_freq, configs.frequencies_at(b, 9).inv_freq)
    both = dict(v5, rope_scaling={"type": "linear", "factor": 4.0})
    with pytest.raises(ValueError, match="rope_scaling and rope_parameters disagree"):
        configs.read_config(both)


def test_gemma3_local_and_global_layers():
    gemma = {"head_dim": 128, "max_position_embeddings": 131072, "rope_theta": 1e6,
             "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}
    local = configs.read_config(gemma, layer_type="sliding_attention")
    glob = configs.read_config(gemma, layer_type="full_attention")
    assert (local.rope_type, local.base) == ("default", 10000.0)
    assert (glob.rope_type, glob.base, glob.parameters["factor"]) == ("linear", 1e6, 8.0)
    with pytest.raises(ValueError, match="pass layer_type"):
        configs.read_config(gemma)


@pytest.mark.parametrize("change,message", [
    ({"rope_scaling": {"rope_type": "yarn"}}, "needs the key 'factor'"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0}}, "'high_freq_factor'"),
    ({"rope_scaling": {"rope_type": "ntk", "factor": 2.0}}, "rope_type must be one of"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 0.5}}, "factor must be"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0}},
     "high_freq_factor must be at least low_freq_factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 1.0, "beta_slow": 2.0}},
     "beta_fast must be at least beta_slow"),
    ({"rope_scaling": {"rope_type": "su", "short_factor": [1.0] * 32, "long_factor": [1.0] * 32}},
     "'su' is LongRoPE's pre-release name"),
    ({"rope_scaling": {"rope_type": "default", "mrope_section": [8, 12, 10]}},
     "mrope_section must give every one of the rotary_dim/2 = 32"),
    ({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}, "max_position_embeddings": None},
     "max_position_embeddings is missing: .* rope_type 'dynamic'"),
    ({"rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 3, "long_factor": [1.0] * 32}},
     "short_factor must have rotary_dim/2 = 32 entries"),
    ({"rope_scaling": {"rope_type": "yarn", "type": "linear", "factor": 2.0}}, "rope_type and type disagree"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 2.0, "truncate": "no"}}, "truncate must be"),
    ({"partial_rotary_factor": 1.5}, "partial_rotary_factor must be .* in \\(0.0, 1.0\\] \\(a fraction\\)"),
    ({"partial_rotary_factor": 0.01}, "even rotated size"),
    ({"rope_theta": None}, "rope_theta is missing"),
    ({"rope_scaling": [1, 2]}, "rope_scaling must be a dictionary"),
])
def test_bad_configurations_name_the_key(change, message):
    config = {"head_dim": 64, "rope_theta": 10000.0, "max_position_embeddings": 4096, **change}
    with pytest.raises(ValueError, match=message):
        configs.read_config(config)


def test_missing_head_size_and_bad_types():
    with pytest.raises(ValueError, match="head_dim is missing"):
        configs.read_config({"rope_theta": 1e4})
    with pytest.raises(TypeError, match="config must be a mapping"):
        configs.read_config([("rope_theta", 1e4)])
    with pytest.raises(ValueError, match="seq_len must be an integer"):
        configs.frequencies_at({"head_dim": 8, "rope_theta": 1e4}, 0)


def test_unknown_keys_are_reported_not_ignored():
    config = {"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 4096,
              "rope_scaling": {"rope_type": "linear", "factor": 2.0, "low_freq_factor": 1.0, "finetuned": True}}
    with pytest.warns(configs.UnknownKeysWarning, match="finetuned, low_freq_factor") as caught:
        s = configs.read_config(config)
    assert s.unknown_keys == ("finetuned", "low_freq_factor")
    # the warning never claims the key changes nothing: the model's own code may read it
    message = str(caught[0].message)
    assert "nothing" not in message and "may still read them" in message


def test_dynamic_state_keeps_and_resets():
    cfg = {"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 4096,
           "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    state = configs.DynamicNTKState(cfg)
    grown = state.update(8192).inv_freq
    assert np.array_equal(grown, scaling.dynamic_ntk(64, L=4096, current_length=8192, hf_factor=2.0).inv_freq)
    assert np.array_equal(state.update(4096).inv_freq, grown)            # exactly L: kept
    assert np.array_equal(state.update(4095).inv_freq, rope.inv_freq(64))  # below L: reset
    with pytest.raises(ValueError, match="config must have rope_type 'dynamic'"):
        configs.DynamicNTKState(LLAMA31)


def test_config_extension_counts_out_of_range_pairs():
    # factor 8 against a 16-fold extension (131072 / 8192): every slow pair reaches twice its angle
    ext = configs.config_extension(LLAMA31, 131072)
    assert ext.method == "llama3" and ext.n_slow == 29 and ext.n_out == 29 and ext.worst_ratio == pytest.approx(2.0)
    assert configs.config_extension(LLAMA31, 65536).n_out == 0
    llama2 = {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 1e4, "max_position_embeddings": 4096}
    assert configs.config_extension(llama2, 32768).n_out == 18
    with pytest.raises(ValueError, match="context must be at least"):
        configs.config_extension(llama2, 100)


def test_float32_angle_error_grows_with_the_position():
    theta = rope.inv_freq(128, 500000.0)
    m = np.array([1024, 8192, 131071])
    worst = precision.angle_error(m, theta, "float32").max(axis=-1)
    assert worst[0] < worst[1] < worst[2] < 1e-2
    bound = m * theta[0] * 2.0 ** -24 + m * theta[0] * 2.0 ** -24  # product rounding + frequency rounding
    assert np.all(worst <= bound * 1.01)
    assert np.isinf(precision.angle_error([70000], theta, "float16")).any()
    assert precision.angle_error([100_001], theta, "bfloat16").max() > 1.0   # the position itself rounds
    assert precision.angle_error(m, theta, "float64").max() < 1e-9
    # the bound is not the error: theta_0 = 1 times an integer below 2^24 is exact in float32, and the worst pair
    # at 131071 is pair 2, at about a quarter of its own bound (companion.precision's docstring)
    per_pair = precision.angle_error(m, theta, "float32")
    assert np.all(per_pair[:, 0] == 0) and per_pair[2].argmax() == 2
    assert round(per_pair[2, 2], 4) == 0.0028 and 0.2 < per_pair[2, 2] / (2.0 ** -23 * m[2] * theta[2]) < 0.3


def test_tables_and_scores_in_low_precision():
    theta = rope.inv_freq(64)
    m = np.arange(0, 2000, 100)
    err = precision.table_error(m, theta, "float32", "bfloat16")
    assert err.max() <= 2.0 ** -8 and err.max() > 2.0 ** -12
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=64), rng.normal(size=64)
    assert np.abs(precision.score_error(q, k, m + 5, 5, theta, "float64", "float64")).max() < 1e-10
    assert np.abs(precision.score_error(q, k, m + 5, 5, theta, "float32", "bfloat16")).max() > 1e-3
    with pytest.raises(ValueError, match="dtype must be one of"):
        precision.angles_in([1], theta, "int8")
    with pytest.raises(ValueError, match="query_positions must be"):
        precision.score_error(q, k, [1], 5, theta)


def test_the_angle_error_is_the_float32_rounding_of_the_angle():
    """float32 rounds m and theta_i, then their product (IEEE arithmetic, as numpy's float32 does it): the
    error is that rounding, wrapped into [-pi, pi]."""
    theta = rope.inv_freq(16, 500000.0)
    m = np.array([3, 1000, 123_457])
    low = (m.astype(np.float32)[:, None] * theta.astype(np.float32)).astype(np.float64)
    np.testing.assert_allclose(precision.angle_error(m, theta), np.abs(low - np.multiply.outer(m, theta)),
                               rtol=1e-9, atol=1e-15)


def test_tables_are_computed_in_the_angle_dtype_then_cast():
    """Angles 1, 2, 3 rad are exact in float32, but their cosines and sines computed in float32 are off by
    up to half a float32 ulp, which a float64 table keeps."""
    err = precision.table_error([1, 2, 3], [1.0], "float32", "float64")
    assert 1e-9 < err.max() <= 2.0 ** -24
    assert precision.table_error([1, 2, 3], [1.0], "float64", "float64").max() < 1e-15


@pytest.mark.parametrize("table_dtype", ["bfloat16", "float16"])
def test_the_library_s_rotation_is_done_in_the_table_dtype_for_every_sequence(table_dtype):
    """x, cos and sin in the model's dtype and the arithmetic there: every output is a number of that
    dtype; a batch of sequences is each sequence rotated."""
    import torch

    theta = rope.inv_freq(8)
    x = np.random.default_rng(3).normal(size=(2, 5, 8))
    out = precision.rotate_like_library(x, np.arange(5), theta, "float32", table_dtype)
    dtype = precision.DTYPES[table_dtype]
    np.testing.assert_array_equal(torch.tensor(out).to(dtype).double().numpy(), out)
    for b in range(2):
        np.testing.assert_array_equal(out[b], precision.rotate_like_library(x[b], np.arange(5), theta, "float32",
                                                                           table_dtype))
    np.testing.assert_allclose(out, rope.rotate(x, np.arange(5), theta, "split"), atol=0.05)


def test_angles_at_the_largest_float32_and_no_positions_at_all():
    top = float(np.finfo(np.float32).max)
    assert np.isfinite(precision.table_error([1], [top], "float32", "float32")).all()
    with pytest.raises(ValueError, match=r"^positions and inv_freq must give angles that angle_dtype float32 can hold"):
        precision.table_error([2], [top], "float32", "float32")
    assert precision.table_error(np.zeros(0, dtype=int), [1.0]).shape == (0, 1)


def test_a_frequency_the_angle_dtype_cannot_hold_is_refused_at_position_zero_too():
    with pytest.raises(ValueError, match="angle_dtype float32 can hold"):
        precision.table_error([0], [1e39], "float32", "float32")


def test_score_error_takes_one_query_or_more_on_a_line():
    q = k = np.ones(8)
    theta = rope.inv_freq(8)
    assert precision.score_error(q, k, [5], 5, theta).shape == (1,)
    for bad in ([], [[5, 6]], [4]):
        with pytest.raises(ValueError, match=r"^query_positions must be a non-empty 1-D array of integers >= distance \(5\)$"):
            precision.score_error(q, k, bad, 5, theta)


def test_every_published_configuration_reads_cleanly():
    for entry in configs.PUBLISHED:
        with warnings.catch_warnings():
            warnings.simplefilter("error", configs.UnknownKeysWarning)
            s = configs.read_config(entry.config, entry.layer_type)
        assert entry.sources and all(isinstance(src, str) for src in entry.sources), entry.name
        assert entry.context >= entry.trained_length, entry.name
        configs.config_extension(s, entry.context, entry.trained_length)
    phi = configs.published("Phi-3.5-mini").config["rope_scaling"]
    assert len(phi["long_factor"]) == len(phi["short_factor"]) == 48
    assert configs.read_config(configs.published("DeepSeek-V3").config).rotary_dim == 64
    with pytest.raises(ValueError, match="name must be one of"):
        configs.published("GPT-5")


def test_equal_yarn_betas_are_a_step_not_an_error():
    config = {"head_dim": 64, "rope_theta": 50000.0, "max_position_embeddings": 131072,
              "rope_scaling": {"type": "yarn", "factor": 32.0, "beta_fast": 1.0, "beta_slow": 1.0,
                               "original_max_position_embeddings": 4096}}
    f = configs.frequencies_at(config, 100)
    theta = rope.inv_freq(64, 50000.0)
    slow = 4096 * theta / (2 * np.pi) < 1  # fewer than one turn in the original length
    assert np.allclose(f.inv_freq[~slow], theta[~slow], rtol=1e-12)
    assert np.allclose(f.inv_freq[slow], theta[slow] / 32, rtol=1e-12)
    # rounded outward, the two ends of the ramp are one pair apart: a step between pairs 19 and 20
    assert scaling.yarn_correction_range(64, 4096, 50000.0, 1.0, 1.0) == (19, 20)


def test_mrope_files_read_as_default_rope_with_three_axes():
    qwen_vl = {"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1e6,
               "max_position_embeddings": 128000, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
    s = configs.read_config(qwen_vl)
    assert (s.rope_type, s.mrope_section, s.mrope_layout, s.model_type) == (
        "default", (16, 24, 24), "sectioned", "qwen2_5_vl_text")
    f = configs.frequencies_at(s, 10)
    assert np.array_equal(f.axes, mrope.pair_axes((16, 24, 24)))
    positions, _ = mrope.multimodal_positions([2, (1, 4, 4), 1], spatial_merge_size=2)
    x = np.random.default_rng(1).normal(size=(positions.shape[1], 128))
    assert np.allclose(configs.rotate(x, positions, f), mrope.rotate(x, positions, f.inv_freq, f.axes))
    text = mrope.text_positions(4, start=7)
    assert np.allclose(configs.rotate(x[:4], text, f), configs.rotate(x[:4], np.arange(7, 11), f))
    # Qwen3-VL's class interleaves whatever the flag says; a class the library lacks follows the flag
    q3 = {"model_type": "qwen3_vl_text", "head_dim": 128, "rope_theta": 5e6,
          "rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20], "mrope_interleaved": False}}
    assert configs.read_config(q3).mrope_layout == "interleaved"
    other = {**q3, "model_type": "someone_vl", "rope_scaling": {**q3["rope_scaling"], "mrope_interleaved": True}}
    assert configs.read_config(other).mrope_layout == "interleaved"
    with pytest.raises(ValueError, match="needs an M-RoPE configuration"):
        configs.rotate(x, positions, configs.frequencies_at({"head_dim": 128, "rope_theta": 1e4}, 10))


def test_a_text_config_takes_its_class_defaults_and_says_so():
    gemma3 = {"model_type": "gemma3", "text_config": {
        "hidden_size": 2560, "model_type": "gemma3_text", "num_hidden_layers": 34, "sliding_window": 1024,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}}
    full = configs.read_config(gemma3, "full_attention")
    local = configs.read_config(gemma3, "sliding_attention")
    assert (full.rope_type, full.base, full.parameters["factor"], full.head_dim) == ("linear", 1e6, 8.0, 256)
    assert (local.rope_type, local.base, local.head_dim) == ("default", 1e4, 256)
    assert any("head_dim = 256 (Gemma3TextConfig's default)" == note for note in full.filled_in)
    table = configs.model_defaults()
    assert table["text_model_types"]["gemma3"] == "gemma3_text" and table["transformers"]
    with pytest.raises(ValueError, match="rope_theta is missing.*'nobody_text' is not one of"):
        configs.read_config({"model_type": "nobody_text", "head_dim": 64})
    with pytest.raises(ValueError, match="head_dim is missing.*names no model_type"):
        configs.read_config({"rope_theta": 1e4})


def test_gemma4_global_layers_use_global_head_dim():
    gemma4 = {"model_type": "gemma4_text", "head_dim": 256, "global_head_dim": 512,
              "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
              "rope_parameters": {"full_attention": {"rope_type": "proportional", "rope_theta": 1e6,
                                                     "partial_rotary_factor": 0.25},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    full = configs.frequencies_at(gemma4, 10, layer_type="full_attention")
    assert full.head_dim == 512 and full.inv_freq.size == 256 and np.count_nonzero(full.inv_freq) == 64
    assert full.inv_freq[1] == pytest.approx(10 ** (-12 / 512), rel=1e-12)
    assert configs.frequencies_at(gemma4, 10, layer_type="sliding_attention").head_dim == 256
    # the class's own global size when the file leaves it out
    implicit = {k: v for k, v in gemma4.items() if k != "global_head_dim"}
    assert configs.read_config(implicit, "full_attention").head_dim == 512


def test_layer_plan_names_the_layers_without_rope():
    hybrid = {"model_type": "qwen3_5_text", "head_dim": 256, "num_hidden_layers": 8,
              "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3
              + ["full_attention"],
              "rope_parameters": {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25,
                                  "mrope_section": [11, 11, 10], "mrope_interleaved": True}}
    plan = configs.layer_plan(hybrid)
    assert [layer.settings is None for layer in plan] == [True, True, True, False] * 2
    assert plan[3].settings.rotary_dim == 64 and "linear_attention" in plan[0].why
    nope = {"model_type": "smollm3", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4,
            "rope_theta": 5e6, "no_rope_layers": [1, 1, 1, 0]}
    assert [layer.settings is None for layer in configs.layer_plan(nope)] == [False, False, False, True]
    with pytest.raises(ValueError, match="no_rope_layers must have one entry per layer"):
        configs.layer_plan({**nope, "no_rope_layers": [1, 0]})


def test_layer_plan_of_a_class_that_rotates_only_in_its_sliding_layers():
    # Cohere 2 (Command R7B): three sliding-window layers with RoPE, then a global layer without
    cohere2 = {"model_type": "cohere2", "head_dim": 128, "num_hidden_layers": 8, "rope_theta": 5e4,
               "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 2}
    plan = configs.layer_plan(cohere2)
    assert [layer.settings is None for layer in plan] == [False, False, False, True] * 2
    assert "sliding-window" in plan[3].why and plan[0].settings.base == 5e4


def test_layer_plan_derives_layer_kinds_as_the_class_does():
    # Qwen3-Next's class derives linear and full attention layers from full_attention_interval
    qwen3_next = {"model_type": "qwen3_next", "head_dim": 256, "num_hidden_layers": 8,
                  "rope_theta": 1e7, "partial_rotary_factor": 0.25, "full_attention_interval": 4}
    assert configs.read_config(qwen3_next).rotary_dim == 64  # one layer type's settings are known
    plan = configs.layer_plan(qwen3_next)
    assert [layer.layer_type for layer in plan] == (["linear_attention"] * 3 + ["full_attention"]) * 2
    assert [layer.settings is None for layer in plan] == [True, True, True, False] * 2
    assert configs.read_config(qwen3_next, "linear_attention").rope_type == "none"
    # EXAONE 4: sliding_window_pattern 4 (its class's rule), RoPE only in the sliding-window layers
    exaone = {"model_type": "exaone4", "head_dim": 128, "num_hidden_layers": 8, "rope_theta": 1e6,
              "sliding_window": 4096, "sliding_window_pattern": 4}
    assert [layer.settings is None for layer in configs.layer_plan(exaone)] == [False, False, False, True] * 2
    for pattern, message in (("LLLG", "sliding_window_pattern must be a whole number"), (0, "fails on 0")):
        with pytest.raises(ValueError, match=message):
            configs.layer_plan({**exaone, "sliding_window_pattern": pattern})
    with pytest.raises(ValueError, match="sliding_window must not be null"):
        configs.layer_plan({**exaone, "sliding_window": None})
    # without a window, EXAONE 4's class rotates every layer (if sliding_window is None or is_sliding), Cohere 2's none
    types = (["sliding_attention"] * 3 + ["full_attention"]) * 2
    no_window = {**exaone, "sliding_window": None, "layer_types": types}
    assert all(layer.settings is not None for layer in configs.layer_plan(no_window))
    cohere2 = {"model_type": "cohere2", "head_dim": 128, "num_hidden_layers": 8, "rope_theta": 5e4,
               "sliding_window": None, "layer_types": types}
    assert all(layer.settings is None for layer in configs.layer_plan(cohere2))
    assert configs.read_config(cohere2).rope_type == "none"
    # Llama 4 Maverick's 48 layers: no_rope_layer_interval 4 (the class's default) leaves 36 with RoPE
    maverick = {"model_type": "llama4", "text_config": {"model_type": "llama4_text", "head_dim": 128,
                                                        "num_hidden_layers": 48, "rope_theta": 5e5}}
    plan = configs.layer_plan(maverick)
    assert sum(layer.settings is not None for layer in plan) == 36 and plan[3].settings is None
    assert "no_rope_layers" in plan[3].why


def test_the_reader_refuses_what_it_does_not_model_by_name():
    # a key the library's class reads for positions that the reader does not model
    with pytest.raises(ValueError, match=r"^layer_rope_theta = .* must be left out: .*GraniteSWAConfig .* does not"):
        configs.read_config({"model_type": "granite_swa", "layer_rope_theta": [1e4] * 24})
    # a file that names its own code: every key whose name is one of positions must be modelled
    own_code = {"model_type": "mimo_v2", "auto_map": {"AutoConfig": "configuration_mimo_v2.MiMoV2Config"},
                "head_dim": 192, "rope_theta": 1e7, "swa_rope_theta": 1e4, "hybrid_layer_pattern": [0, 1, 1, 0],
                "partial_rotary_factor": 0.334}
    with pytest.raises(ValueError, match=r"^hybrid_layer_pattern = \[0, 1, 1, 0\], swa_rope_theta = 10000.0 must be "
                                         r"left out: the file names its own code"):
        configs.read_config(own_code)
    plain = {k: v for k, v in own_code.items() if k not in ("swa_rope_theta", "hybrid_layer_pattern")}
    assert configs.read_config(plain).rotary_dim == 64  # what is left is modelled
    # DeepSeek-OCR's language model (its own code) does not use latent attention: its qk_rope_head_dim = 0
    # decides nothing, and what the file lacks is named
    ocr = {"model_type": "deepseek_vl_v2", "auto_map": {"AutoConfig": "modeling_deepseekocr.DeepseekOCRConfig"},
           "hidden_size": 1280, "num_attention_heads": 10, "kv_lora_rank": None, "qk_nope_head_dim": 0,
           "qk_rope_head_dim": 0, "use_mla": False, "max_position_embeddings": 8192}
    with pytest.raises(ValueError, match=r"^rope_theta is missing: .*'deepseek_vl_v2' is not one of"):
        configs.read_config(ocr)
    assert configs.read_config({**ocr, "rope_theta": 1e4}).head_dim == 128
    # vision encoders and classes without a model in the library
    with pytest.raises(ValueError, match=r"^model_type must be a language model's: 'qwen2_vl_vision' is the vision"):
        configs.read_config({"model_type": "qwen2_vl_vision"})


def test_no_rotation_is_an_answer():
    # GraniteMoeHybrid builds no rotary module unless position_embedding_type is "rope"
    granite = {"model_type": "granitemoehybrid", "hidden_size": 768, "num_attention_heads": 12,
               "num_hidden_layers": 4, "layer_types": ["mamba", "attention", "mamba", "mamba"],
               "position_embedding_type": "nope", "rope_theta": 10000}
    nothing = configs.read_config(granite)
    assert (nothing.rope_type, nothing.rotary_dim, nothing.head_dim) == ("none", 0, 64)
    assert "position_embedding_type = 'nope'" in nothing.why
    freqs = configs.frequencies_at(granite, 100)
    x = np.random.default_rng(0).normal(size=(3, 64))
    assert freqs.inv_freq.size == 0 and np.array_equal(configs.rotate(x, [5, 6, 7], freqs), x)
    assert all(layer.settings is None for layer in configs.layer_plan(granite))
    assert configs.read_config({**granite, "position_embedding_type": "rope"}).rope_type == "default"
    with pytest.raises(ValueError, match="config must rotate something.*position_embedding_type = 'nope'"):
        configs.config_extension(granite, 8192, 4096)
    # Kimi Linear: the library's class builds no rotary module, and the file's own flag agrees
    kimi = {"model_type": "kimi_linear", "auto_map": {"AutoConfig": "configuration_kimi.KimiLinearConfig"},
            "mla_use_nope": True, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "rope_theta": 10000.0, "num_hidden_layers": 4}
    assert "builds no rotary module" in configs.read_config(kimi).why
    with pytest.raises(ValueError, match="^mla_use_nope = False must agree .* the model's own code rotates"):
        configs.read_config({**kimi, "mla_use_nope": False})
    with pytest.raises(ValueError, match="^mla_use_nope = True must agree .* while the library's DeepseekV3Config"):
        configs.read_config({**kimi, "model_type": "deepseek_v3"})


def test_deepseek_v4_reads_its_two_rotary_branches():
    v4 = {"model_type": "deepseek_v4", "head_dim": 512, "qk_rope_head_dim": 64, "num_hidden_layers": 6,
          "max_position_embeddings": 1048576, "rope_theta": 10000, "compress_rope_theta": 160000,
          "compress_ratios": [0, 0, 4, 128, 4, 0, 4],
          "rope_scaling": {"type": "yarn", "factor": 16, "beta_fast": 32, "beta_slow": 1,
                           "original_max_position_embeddings": 65536}}
    main, compress = (configs.read_config(v4, branch) for branch in ("main", "compress"))
    assert (main.rope_type, main.base, main.rotary_dim) == ("default", 10000, 64)
    assert (compress.rope_type, compress.base, compress.rotary_dim) == ("yarn", 160000, 64)
    assert configs.frequencies_at(compress, 16).attention_factor == 1.0  # the class sets it, not 0.1 ln 16 + 1
    plan = configs.layer_plan(v4)
    assert [layer.layer_type for layer in plan] == ["sliding_attention"] * 2 + [
        "compressed_sparse_attention", "heavily_compressed_attention", "compressed_sparse_attention",
        "sliding_attention"]
    assert [layer.settings.base for layer in plan] == [10000, 10000, 160000, 160000, 160000, 10000]
    with pytest.raises(ValueError, match="nested by rotary branch .*: pass layer_type"):
        configs.read_config(v4)


def test_a_text_config_variant_is_read_as_the_library_renames_it():
    # Kimi K2.5's class reads its text_config's model_type "kimi_k2" as "deepseek_v3"
    kimi = {"model_type": "kimi_k25", "text_config": {
        "model_type": "kimi_k2", "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "kv_lora_rank": 512,
        "rope_theta": 50000.0, "max_position_embeddings": 262144,
        "rope_scaling": {"type": "yarn", "factor": 64.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                         "original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0}}}
    settings = configs.read_config(kimi)
    assert settings.model_type == "deepseek_v3" and any("read as 'deepseek_v3'" in n for n in settings.filled_in)
    assert configs.softmax_scale_factor(settings) == pytest.approx((0.1 * np.log(64) + 1) ** 2, rel=1e-12)
    assert [e.key for e in settings.effects] == ["mscale_all_dim", "rope_interleave"]


def test_scales_outside_the_frequencies():
    ministral = {"model_type": "ministral3", "head_dim": 128, "max_position_embeddings": 262144,
                 "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0,
                                     "original_max_position_embeddings": 16384, "llama_4_scaling_beta": 0.1}}
    scale = configs.query_scale(ministral, [0, 16383, 16384, 262143])
    assert np.allclose(scale, [1, 1, 1 + 0.1 * math.log(2), 1 + 0.1 * math.log(16)], rtol=1e-15)
    assert np.array_equal(configs.query_scale({**ministral, "model_type": "llama"}, [16384]), [1.0])
    deepseek = {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "rope_theta": 1e4,
                "max_position_embeddings": 163840,
                "rope_scaling": {"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                 "original_max_position_embeddings": 4096}}
    assert configs.softmax_scale_factor(deepseek) == pytest.approx((0.1 * math.log(40) + 1) ** 2, rel=1e-15)
    assert configs.softmax_scale_factor({**deepseek, "model_type": "llama"}) == 1.0
    with pytest.warns(configs.UnmodelledEffectWarning, match="llama_4_scaling_beta"):
        configs.read_config({**ministral, "model_type": "llama"})


def test_old_spellings_of_the_rotated_size_and_a_length_free_linear():
    minimax = {"model_type": "minimax_m2", "head_dim": 128, "rope_theta": 5e6, "rotary_dim": 64}
    s = configs.read_config(minimax)
    assert (s.rotary_dim, s.partial_rotary_factor) == (64, 0.5)
    assert any(note.startswith("partial_rotary_factor = rotary_dim / head_dim") for note in s.filled_in)
    linear = {"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    assert np.array_equal(configs.frequencies_at(linear, 9).inv_freq, rope.inv_freq(64, 1e4) / 4)


# ---------------------------------------------------------------------------
# What the reader says it did, and how it refuses: the words a reader of the book sees
# ---------------------------------------------------------------------------

GEMMA3_FLAT = {"model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
               "rope_theta": 1e6, "rope_local_base_freq": 10000.0, "max_position_embeddings": 131072,
               "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}
KIMI = {"model_type": "kimi_k2", "auto_map": {"AutoConfig": "moonshot.configuration_deepseek.DeepseekV3Config"},
        "qk_rope_head_dim": 64, "rope_theta": 50000.0, "max_position_embeddings": 131072,
        "rope_scaling": {"type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096, "mscale": 1.0,
                         "mscale_all_dim": 1.0, "beta_fast": 1, "beta_slow": 1}}


def quiet_read(config, layer_type=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return configs.read_config(config, layer_type)


def test_the_reader_names_what_it_filled_in():
    """Gemma 3's flat rope_scaling goes to the full-attention layers and the class's dictionary to the
    sliding ones; with no dictionary, each layer type takes its class's base; a remote-code file is read
    as the class its auto_map names (the last part of a dotted path); a missing factor is computed."""
    assert quiet_read(GEMMA3_FLAT, "full_attention").filled_in == (
        "rope_parameters['full_attention'] = the file's rope_scaling, as the class nests it by layer type",)
    assert quiet_read(GEMMA3_FLAT, "sliding_attention").filled_in == (
        "rope_parameters['sliding_attention'] = the class's dictionary, as the class nests it by layer type",)
    bare = {k: v for k, v in GEMMA3_FLAT.items() if k not in ("rope_theta", "rope_local_base_freq", "rope_scaling")}
    assert quiet_read(bare, "full_attention").filled_in == (
        "rope_theta = 1000000.0 for full_attention (Gemma3TextConfig's default)",)
    assert quiet_read(bare, "sliding_attention").filled_in == (
        "rope_theta = 10000.0 for sliding_attention (Gemma3TextConfig's default)",)
    assert (quiet_read(bare, "full_attention").base, quiet_read(bare, "sliding_attention").base) == (1e6, 1e4)
    kimi = quiet_read(KIMI)
    assert kimi.model_type == "deepseek_v3" and kimi.filled_in[0] == (
        "model_type 'kimi_k2' read as 'deepseek_v3' (its auto_map names DeepseekV3Config)")
    phi3 = {"head_dim": 8, "rope_theta": 1e4, "max_position_embeddings": 8192, "original_max_position_embeddings": 4096,
            "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
                             "original_max_position_embeddings": 2048}}
    settings = quiet_read(phi3)
    assert settings.filled_in == ("original_max_position_embeddings (top level over the dictionary's)",
                                  "factor = max_position_embeddings / original_max_position_embeddings")
    assert (settings.parameters["original_max_position_embeddings"], settings.parameters["factor"]) == (4096, 2.0)
    agree = {**phi3, "rope_scaling": {**phi3["rope_scaling"], "original_max_position_embeddings": 4096}}
    assert quiet_read(agree).filled_in == ("factor = max_position_embeddings / original_max_position_embeddings",)
    yarn = {"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 8192, "rope_scaling": {"rope_type": "yarn",
                                                                                                 "factor": 2.0}}
    assert quiet_read(yarn).filled_in == ("original_max_position_embeddings = max_position_embeddings",)


def test_a_multimodal_file_s_text_model_type_comes_from_its_class():
    """A text_config without a model_type is the language model of the file's multimodal class."""
    file = {"model_type": "gemma3", "text_config": {k: v for k, v in GEMMA3_FLAT.items() if k != "model_type"}}
    assert quiet_read(file, "full_attention").model_type == "gemma3_text"


@pytest.mark.parametrize("file, layer_type, message", [
    ({"rope_parameters": [1, 2]}, None, "rope_parameters must be a dictionary or null, got list"),
    ({"head_dim": 64, "rope_theta": 1e4, "rope_scaling": "linear"}, None,
     "rope_scaling must be a dictionary or null, got str"),
    ({"head_dim": 64, "rope_theta": 1e4, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4},
      "rope_scaling": {"rope_type": "linear", "factor": 2.0}}, None,
     "rope_scaling and rope_parameters disagree: keep one (rope_parameters in version 5); the library would use "
     "rope_scaling"),
    ({"head_dim": 64, "layer_types": ["full_attention", "sliding_attention"],
      "rope_parameters": {"full_attention": {"rope_theta": 1e4}, "sliding_attention": {"rope_theta": 1e4}}}, None,
     "rope_parameters is nested by layer type (full_attention, sliding_attention): pass layer_type"),
    ({"head_dim": 64, "layer_types": ["full_attention", "sliding_attention"],
      "rope_parameters": {"full_attention": {"rope_theta": 1e4}}}, "sliding_attention",
     "layer_type must be one of 'full_attention'; got 'sliding_attention'"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}, "sliding_attention",
     "layer_type must be None or one of the file's layer_types (none): rope_parameters is not nested by layer type, "
     "got 'sliding_attention'"),
    ({"head_dim": 64, "layer_types": ["full_attention", "sliding_attention"],
      "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}, "chunked_attention",
     "layer_type must be None or one of the file's layer_types ('full_attention', 'sliding_attention'): "
     "rope_parameters is not nested by layer type, got 'chunked_attention'"),
    ({"head_dim": 64, "rope_theta": 1.0}, None, "rope_theta must be a base > 0 and != 1 (every frequency would be 1), "
                                                "got 1.0"),
    ({"head_dim": 64}, None, "rope_theta is missing: give the RoPE base in rope_parameters or at the top level; the "
                             "file names no model_type whose class defaults could fill it in"),
    ({"head_dim": 10, "rope_theta": 1e4, "partial_rotary_factor": 0.3}, None,
     "partial_rotary_factor * head_dim must give an even rotated size >= 2, got int(0.3 * 10) = 3"),
    ({"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 0}, None,
     "max_position_embeddings must be an integer >= 1, got 0"),
    ({"head_dim": 64, "rope_theta": 1e4, "rotary_dim": 0}, None, "rotary_dim must be"),
    ({"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, None,
     "rope_type 'llama3' needs the key 'low_freq_factor' in rope_scaling (required: factor, low_freq_factor, "
     "high_freq_factor)"),
    ({"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "linear", "factor": 0.5}}, None, "factor must be"),
    ({"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, None,
     "max_position_embeddings is missing: the library uses it as the length rope_type 'dynamic' scales from"),
    ({"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "yarn", "factor": None,
                                                          "original_max_position_embeddings": 2048}}, None,
     "max_position_embeddings is missing: the library uses it as the length a missing factor is computed from"),
    ({"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, None,
     "max_position_embeddings is missing: the library uses it as original_max_position_embeddings, missing too"),
    ({"head_dim": 8, "rope_theta": 1e4, "max_position_embeddings": 8,
      "rope_scaling": {"type": "longrope", "short_factor": 5, "long_factor": [1.0] * 4}}, None,
     "short_factor must be a list of 4 numbers, got 5"),
    ({"head_dim": 2, "rope_theta": 1e4, "rope_parameters": {"rope_type": "proportional",
                                                            "partial_rotary_factor": 0.25}}, None,
     "partial_rotary_factor (0.25) rotates no pair of a 2-wide head"),
])
def test_the_reader_refuses_with_the_key_and_the_reason(file, layer_type, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        quiet_read(file, layer_type)


def test_keys_outside_the_frequencies_depend_on_the_class_and_the_rope_type():
    """DeepSeek's softmax mscale only when the rope type scales; Hunyuan's alpha is an effect only where
    it is not already read as NTK-alpha; Ministral 3's beta is computed for its class and only reported
    for another, each with the words that say so."""
    deepseek = {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 4096}
    # DeepseekV3Config's rope_interleave = True is an effect of every deepseek_v3 file (the pairs' layout)
    (interleave,) = quiet_read({**deepseek, "rope_scaling": {"type": "default", "mscale_all_dim": 1.0}}).effects
    assert (interleave.key, interleave.value, interleave.modelled) == ("rope_interleave", True,
                                                                       "rotate(layout='adjacent')")
    effect, interleave_too = quiet_read({**deepseek, "rope_scaling": {
        "type": "yarn", "factor": 4.0, "mscale_all_dim": 0.5, "original_max_position_embeddings": 1024}}).effects
    assert interleave_too == interleave
    assert effect == configs.PositionEffect(
        "mscale_all_dim", 0.5, "the attention's softmax scale is multiplied by (0.1 mscale_all_dim ln s + 1)^2",
        "softmax_scale_factor")
    hunyuan = {"model_type": "hunyuan_v1_dense", "head_dim": 128, "rope_theta": 1e4, "max_position_embeddings": 4096,
               "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0}}
    settings = quiet_read(hunyuan)
    assert settings.rope_type == "ntk_alpha" and settings.effects == ()
    assert settings.filled_in[-1] == "rope_type 'dynamic' with alpha read as static NTK-alpha (Hunyuan's rotary class)"
    (alpha,) = quiet_read({**hunyuan, "model_type": "llama"}).effects
    assert alpha.effect == ("read by Hunyuan's rotary class as static NTK-alpha (base alpha^(d/(d-2)) times larger); "
                            "changes what that class computes, not modelled for model_type 'llama'")
    beta = {"head_dim": 64, "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "llama_4_scaling_beta": 0.1,
                                "original_max_position_embeddings": 1024}}
    (computed,) = quiet_read({**beta, "model_type": "ministral3"}).effects
    assert (computed.key, computed.value, computed.modelled) == ("llama_4_scaling_beta", 0.1, "query_scale")
    assert computed.effect == ("every query is multiplied by 1 + beta ln(1 + floor(m / "
                               "original_max_position_embeddings))")
    (reported,) = quiet_read({**beta, "model_type": "mistral"}).effects
    assert reported.effect == ("read by Ministral 3's attention as a position-dependent query scale; not by the class "
                               "of model_type 'mistral'") and reported.modelled == ""


def test_warnings_name_the_keys_the_source_and_the_caller_s_line():
    """An unknown key and an effect not computed here are reported in words that name them and where they
    were found, at the line that called read_config."""
    file = {"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "foo": 1,
                                                                "llama_4_scaling_beta": 0.1}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        configs.read_config(file)
    messages = {w.category: str(w.message) for w in caught}
    assert messages[configs.UnknownKeysWarning] == (
        "rope_type 'linear' does not use the keys foo (in rope_scaling) in the library's computation of its "
        "frequencies; the model's own code may still read them (check its attention class)")
    assert messages[configs.UnmodelledEffectWarning] == (
        "llama_4_scaling_beta = 0.1 (in rope_scaling) read by Ministral 3's attention as a position-dependent query "
        "scale; not by the class of model_type None")
    assert {w.filename for w in caught} == {__file__}


def test_functions_of_one_layer_type_read_that_layer_type():
    """A dictionary nested by layer type: the frequencies, the dynamic state, the softmax factor and the
    extension figure of a layer type are those of its entry."""
    nested = {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "max_position_embeddings": 8192,
              "layer_types": ["full_attention", "sliding_attention"],
              "rope_parameters": {"full_attention": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0,
                                                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096},
                                  "sliding_attention": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}}}
    assert configs.softmax_scale_factor(nested, "full_attention") == pytest.approx((0.1 * math.log(2) + 1) ** 2)
    assert configs.softmax_scale_factor(nested, "sliding_attention") == 1.0
    state = configs.DynamicNTKState(nested, "sliding_attention")
    assert state.update(16384).seq_len == 16384
    full = configs.config_extension(nested, 8192, layer_type="full_attention")
    assert full.method == "yarn" and full.attention_factor == pytest.approx(0.1 * math.log(2) + 1)
    frequencies = configs.frequencies_at(nested, 5000, "full_attention")
    assert (frequencies.rope_type, frequencies.seq_len) == ("yarn", 5000)


def test_attention_factors_at_a_factor_of_two():
    """YaRN's 0.1 ln s + 1 with mscale alone (the ratio needs both mscale keys), LongRoPE's
    sqrt(1 + ln s / ln L) from s = 2 on and 1 at s = 1, DeepSeek's softmax factor squared."""
    yarn = {"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 8192,
            "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "mscale": 0.707}}
    assert configs.frequencies_at(yarn, 10).attention_factor == pytest.approx(0.1 * math.log(2) + 1)
    longrope = {"head_dim": 8, "rope_theta": 1e4, "max_position_embeddings": 8192, "original_max_position_embeddings": 4096,
                "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4}}
    assert quiet_read(longrope).parameters["factor"] == 2.0
    assert configs.frequencies_at(longrope, 10).attention_factor == pytest.approx(math.sqrt(1 + math.log(2) / math.log(4096)))
    at_one = {**longrope, "rope_scaling": {**longrope["rope_scaling"], "factor": 1.0}}
    assert configs.frequencies_at(at_one, 10).attention_factor == 1.0
    deepseek = {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 4096,
                "rope_scaling": {"type": "yarn", "factor": 2.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 2048}}
    assert configs.softmax_scale_factor(deepseek) == pytest.approx((0.1 * math.log(2) + 1) ** 2)


def test_the_base_of_the_file_reaches_every_method():
    """LongRoPE, dynamic NTK and Hunyuan's NTK-alpha at a base of 500000."""
    base = 500_000.0
    longrope = {"head_dim": 8, "rope_theta": base, "max_position_embeddings": 8192,
                "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4, "factor": 1.0,
                                 "original_max_position_embeddings": 8192}}
    np.testing.assert_allclose(configs.frequencies_at(longrope, 10).inv_freq, rope.inv_freq(8, base), rtol=1e-15)
    dynamic = {"head_dim": 8, "rope_theta": base, "max_position_embeddings": 4096,
               "rope_scaling": {"type": "dynamic", "factor": 2.0}}
    np.testing.assert_allclose(configs.frequencies_at(dynamic, 10).inv_freq, rope.inv_freq(8, base), rtol=1e-15)
    hunyuan = {"model_type": "hunyuan_v1_dense", "head_dim": 8, "rope_theta": base, "max_position_embeddings": 4096,
               "rope_scaling": {"type": "dynamic", "alpha": 4.0, "factor": 1.0}}
    got = configs.frequencies_at(hunyuan, 10)
    np.testing.assert_allclose(got.inv_freq, rope.inv_freq(8, base * 4.0 ** (8 / 6)), rtol=1e-13)
    assert got.attention_factor == 1.0


def test_proportional_rope_of_one_rotated_pair_and_its_extension_figure():
    """partial_rotary_factor 0.25 of a head of 8 rotates one pair; the figure compares the rotated pair
    with the whole head's frequency (Hugging Face's _compute_proportional_rope_parameters)."""
    file = {"head_dim": 8, "rope_theta": 1e4, "max_position_embeddings": 1024,
            "rope_parameters": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "factor": 2.0}}
    assert quiet_read(file).parameters == {"factor": 2.0, "rotated_pairs": 1}
    ext = configs.config_extension(file, 2048)
    assert ext.turns.shape == (1,) and ext.ratio.tolist() == [1.0]   # theta / 2 at twice the length


def test_the_layer_plan_records_each_layer_s_index_type_and_settings():
    cohere2 = {"model_type": "cohere2", "head_dim": 64, "rope_theta": 1e4, "num_hidden_layers": 4,
               "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    plan = configs.layer_plan(cohere2)
    assert [(layer.index, layer.layer_type) for layer in plan] == [
        (0, "sliding_attention"), (1, "sliding_attention"), (2, "sliding_attention"), (3, "full_attention")]
    assert plan[3].settings is None and plan[0].settings.base == 1e4
    llama = {"model_type": "llama", "head_dim": 64, "rope_theta": 1e4, "num_hidden_layers": 2,
             "layer_types": ["sliding_attention", "full_attention"]}
    assert all(layer.settings is not None for layer in configs.layer_plan(llama))   # a class that rotates everywhere
    nested = {"head_dim": 64, "num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"],
              "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    assert [(layer.index, layer.layer_type, layer.settings.base) for layer in configs.layer_plan(nested)] == [
        (0, "sliding_attention", 1e4), (1, "full_attention", 1e6)]


def test_positions_for_the_rotation_of_a_file():
    """A (temporal, height, width) grid needs an M-RoPE file; the refusal says so, and names x's shape."""
    plain = configs.frequencies_at({"head_dim": 8, "rope_theta": 1e4}, 5)
    with pytest.raises(ValueError, match=re.escape("positions of shape (3, 5) must broadcast to x.shape[:-1] = (2, 5) "
                                                   "(a (temporal, height, width) grid of shape (3, n) needs an M-RoPE "
                                                   "configuration: mrope_section)")):
        configs.rotate(np.zeros((2, 5, 8)), np.zeros((3, 5), dtype=int), plain)
    qwen = configs.frequencies_at({"model_type": "qwen2_vl", "head_dim": 8, "rope_theta": 1e4,
                                   "rope_scaling": {"type": "mrope", "mrope_section": [2, 1, 1]}}, 5)
    with pytest.raises(ValueError, match=re.escape("positions of shape (3, 4) must broadcast to x.shape[:-1] = (2, 5)") + "$"):
        configs.rotate(np.zeros((2, 5, 8)), np.zeros((3, 4), dtype=int), qwen)
    x = np.random.default_rng(0).normal(size=(5, 8))
    grid = np.array([[0, 1, 1, 1, 2], [0, 0, 1, 1, 2], [0, 0, 0, 1, 2]])
    np.testing.assert_allclose(configs.rotate(x, grid, qwen, layout="adjacent"),
                               mrope.rotate(x, grid, qwen.inv_freq, qwen.axes, "adjacent"), rtol=1e-15)


def test_source_links_keep_the_punctuation_and_the_version_outside_the_link():
    assert configs.source_link("see https://example.org/a/b.") == "see [example.org/a/b](https://example.org/a/b)."
    assert configs.source_link("(https://github.com/o/r/blob/main/x.py);") == "([o/r: x.py](https://github.com/o/r/blob/main/x.py));"
    assert configs.source_link("arXiv:2307.09288v2, table 1") == \
        "[arXiv:2307.09288v2](https://arxiv.org/abs/2307.09288), table 1"
    assert configs.source_links(("arXiv:2307.09288", "b")) == "[arXiv:2307.09288](https://arxiv.org/abs/2307.09288); b"
