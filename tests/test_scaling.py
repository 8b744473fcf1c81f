"""Tests for companion.scaling: closed forms, and each method against a transcription of
the code that ships it (Hugging Face transformers ``modeling_rope_utils.py``, the Llama
3.1 reference ``apply_scaling``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import rope, rope_torch, scaling, trained_range

D, BASE, L, S = 128, 10000.0, 4096, 8.0  # the book's Figure 4 setting (Llama 2)
THETA = rope.inv_freq(D, BASE)


# ---------------------------------------------------------------------------
# Reference transcriptions (float32 torch, as shipped)
# ---------------------------------------------------------------------------

def hf_yarn(dim, base, max_position_embeddings, factor, beta_fast=32, beta_slow=1):
    """Hugging Face ``_compute_yarn_parameters`` (also jquesnelle/yarn), transcribed."""
    attention_factor = 0.1 * math.log(factor) + 1.0

    def find_correction_dim(num_rotations):
        return (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    inv_freq = inv_freq_interpolation * (1 - extrapolation_factor) + inv_freq_extrapolation * extrapolation_factor
    return inv_freq.numpy().astype(np.float64), attention_factor


def hf_llama3(dim, base, factor, low_freq_factor, high_freq_factor, old_context_len):
    """Hugging Face ``_compute_llama3_parameters``, transcribed."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama).numpy().astype(np.float64)


def meta_apply_scaling(freqs, scale_factor=8, low_freq_factor=1, high_freq_factor=4, old_context_len=8192):
    """The Llama 3.1 reference ``apply_scaling``, one frequency at a time in Python floats."""
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    new_freqs = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            new_freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            new_freqs.append(freq / scale_factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            new_freqs.append((1 - smooth) * freq / scale_factor + smooth * freq)
    return np.array(new_freqs)


def hf_dynamic_base(base, dim, seq_len, max_position_embeddings, factor):
    """Hugging Face ``_compute_dynamic_ntk_parameters``: the new base."""
    seq_len = seq_len if seq_len > max_position_embeddings else max_position_embeddings
    return base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))


# ---------------------------------------------------------------------------
# Turns in training
# ---------------------------------------------------------------------------

def test_turns_in_training_and_slow_pairs():
    turns = scaling.training_turns(THETA, L)
    np.testing.assert_allclose(turns, L * THETA / (2 * np.pi), rtol=1e-15)
    assert int(np.sum(turns < 1)) == 18
    np.testing.assert_array_equal(np.flatnonzero(turns < 1), np.arange(46, 64))
    assert turns[0] == pytest.approx(4096 / (2 * np.pi))


# ---------------------------------------------------------------------------
# Position Interpolation and NTK-aware
# ---------------------------------------------------------------------------

def test_position_interpolation_divides_by_s():
    f = scaling.position_interpolation(D, s=S, L=L)
    np.testing.assert_array_equal(f.inv_freq, THETA / S)
    assert f.attention_factor == 1.0
    # same as feeding positions m / s: angles at position s m equal the original at m
    np.testing.assert_allclose(rope.angles([8 * 77], f.inv_freq), rope.angles([77], THETA), rtol=1e-15)


def test_ntk_new_base_and_per_pair_forms_are_identical():
    for d, s in ((128, 8.0), (64, 2.0), (4, 3.0), (256, 16.0)):
        new_base = scaling.ntk_base(d, s, BASE)
        assert new_base == pytest.approx(BASE * s ** (d / (d - 2)), rel=1e-15)
        by_base = scaling.ntk_aware(d, s=s).inv_freq
        per_pair = scaling.ntk_per_pair(d, s, BASE)
        np.testing.assert_allclose(per_pair, by_base, rtol=1e-12)
        theta = rope.inv_freq(d, BASE)
        assert by_base[0] == theta[0] == 1.0  # fastest pair unchanged
        assert by_base[-1] == pytest.approx(theta[-1] / s, rel=1e-12)  # slowest exactly like PI


def test_dynamic_scale_plain_and_hugging_face():
    assert scaling.dynamic_scale(1000, 4096) == 1.0
    assert scaling.dynamic_scale(8192, 4096) == 2.0
    assert scaling.dynamic_scale(8192, 4096, factor=1.0) == 2.0
    assert scaling.dynamic_scale(8192, 4096, factor=4.0) == 5.0  # 4 * 2 - 3
    assert scaling.dynamic_scale(100, 4096, factor=4.0) == 1.0
    for n, factor in ((8192, 4.0), (5000, 2.0), (100_000, 8.0)):
        s_dyn = scaling.dynamic_scale(n, 4096, factor)
        expected = hf_dynamic_base(BASE, D, n, 4096, factor)
        assert scaling.ntk_base(D, s_dyn, BASE) == pytest.approx(expected, rel=1e-12)
        hf = scaling.dynamic_ntk(D, s=factor, L=4096, current_length=n, hf_factor=factor).inv_freq
        np.testing.assert_allclose(hf, rope.inv_freq(D, expected), rtol=1e-12)


def test_dynamic_ntk_follows_the_length():
    np.testing.assert_allclose(scaling.dynamic_ntk(D, s=S, L=L).inv_freq, scaling.ntk_aware(D, s=S, L=L).inv_freq, rtol=1e-15)
    np.testing.assert_array_equal(scaling.dynamic_ntk(D, s=S, L=L, current_length=2000).inv_freq, THETA)
    np.testing.assert_allclose(scaling.dynamic_ntk(D, L=L, current_length=3 * L).inv_freq,
                               scaling.ntk_aware(D, s=3.0, L=L).inv_freq, rtol=1e-15)


# ---------------------------------------------------------------------------
# YaRN: paper and shipped code
# ---------------------------------------------------------------------------

def test_yarn_ramp_values():
    r = np.array([0.0, 0.5, 1.0, 16.5, 32.0, 100.0])
    np.testing.assert_allclose(scaling.yarn_ramp(r), [0, 0, 0, 0.5, 1, 1], rtol=0, atol=1e-15)


def test_yarn_paper_definition_pair_by_pair():
    f = scaling.yarn(D, s=S, L=L)
    r = L * THETA / (2 * np.pi)
    gamma = np.where(r < 1, 0.0, np.where(r > 32, 1.0, (r - 1) / 31))
    np.testing.assert_allclose(f.inv_freq, (1 - gamma) * THETA / S + gamma * THETA, rtol=1e-14)
    np.testing.assert_array_equal(f.inv_freq[r > 32], THETA[r > 32])  # untouched
    np.testing.assert_allclose(f.inv_freq[r < 1], THETA[r < 1] / S, rtol=1e-15)  # like PI
    assert f.attention_factor == pytest.approx(0.1 * math.log(8) + 1)
    assert f.attention_factor == pytest.approx(1.2079441541679836, rel=1e-15)


def test_yarn_attention_factor_is_sqrt_one_over_t():
    for s in (1.0, 2.0, 16.0, 32.0):
        assert scaling.yarn_attention_factor(s) == pytest.approx(0.1 * math.log(s) + 1.0, rel=1e-15)
    assert scaling.yarn_attention_factor(1.0) == 1.0


@pytest.mark.parametrize("d,base,length,s", [(128, 10000.0, 4096, 8.0), (128, 10000.0, 4096, 16.0),
                                             (64, 10000.0, 2048, 4.0), (128, 500000.0, 8192, 4.0),
                                             (96, 1e6, 32768, 2.0)])
def test_yarn_code_matches_hugging_face(d, base, length, s):
    expected, attention = hf_yarn(d, base, length, s)
    got = scaling.yarn_code(d, s=s, L=length, base=base)
    np.testing.assert_allclose(got.inv_freq, expected, rtol=2e-6)
    assert got.attention_factor == pytest.approx(attention, rel=1e-15)


def test_yarn_correction_range_and_curves():
    assert scaling.yarn_correction_range(D, L, BASE) == (20, 46)
    low, high = scaling.yarn_correction_range(D, L, BASE, truncate=False)
    assert low == pytest.approx(D * math.log(L / (64 * math.pi)) / (2 * math.log(BASE)))
    assert high == pytest.approx(D * math.log(L / (2 * math.pi)) / (2 * math.log(BASE)))
    assert 20 < low < 21 and 45 < high < 46
    curves = scaling.yarn_curves(D, S, L, BASE)
    np.testing.assert_allclose(curves.inv_freq_code, scaling.yarn_code(D, s=S, L=L).inv_freq, rtol=1e-15)
    np.testing.assert_allclose(curves.inv_freq_paper, scaling.yarn(D, s=S, L=L).inv_freq, rtol=1e-15)
    # both keep the fast pairs and fully interpolate the slow ones ...
    assert np.all(curves.gamma_paper[:20] == 1) and np.all(curves.gamma_code[:21] == 1)
    assert np.all(curves.gamma_paper[46:] == 0) and np.all(curves.gamma_code[46:] == 0)
    # ... but in between the shipped ramp (linear in i) keeps much more than the paper's (linear in r)
    assert curves.gamma_paper[30] == pytest.approx(0.248, abs=1e-3)
    assert curves.gamma_code[30] == pytest.approx(16 / 26)
    assert np.all(curves.gamma_code[22:46] > curves.gamma_paper[22:46])
    assert curves.gamma_code[21] < curves.gamma_paper[21]  # the bound rounded down to pair 20


# ---------------------------------------------------------------------------
# Base change, Llama 3.1, LongRoPE
# ---------------------------------------------------------------------------

def test_base_change_constants():
    assert scaling.CODE_LLAMA_BASE == 1_000_000.0 and scaling.LLAMA3_BASE == 500_000.0
    np.testing.assert_array_equal(scaling.base_change(D).inv_freq, rope.inv_freq(D, 1_000_000.0))
    np.testing.assert_array_equal(scaling.base_change(D, base=scaling.LLAMA3_BASE).inv_freq, rope.inv_freq(D, 500_000.0))
    # a bigger base: the slowest pair turns less than once even in Code Llama's 16k fine-tuning
    assert scaling.training_turns(scaling.base_change(D).inv_freq, 16_384)[-1] < 1


def test_llama3_matches_reference_and_hugging_face():
    f = scaling.llama3(D)
    meta = meta_apply_scaling(rope.inv_freq(D, 500_000.0))
    np.testing.assert_allclose(f.inv_freq, meta, rtol=1e-14)
    np.testing.assert_allclose(f.inv_freq, hf_llama3(D, 500_000.0, 8.0, 1.0, 4.0, 8192), rtol=2e-6)
    assert f.attention_factor == 1.0


def test_llama3_bands_and_relation_to_yarn_ramp():
    bands = scaling.llama3_bands(D)
    theta = rope.inv_freq(D, 500_000.0)
    wavelen = 2 * np.pi / theta
    np.testing.assert_array_equal(bands == "kept", wavelen < 8192 / 4)
    np.testing.assert_array_equal(bands == "interpolated", wavelen > 8192)
    counts = {b: int(np.sum(bands == b)) for b in ("kept", "blended", "interpolated")}
    assert sum(counts.values()) == 64 and all(v > 0 for v in counts.values())
    f = scaling.llama3(D)
    np.testing.assert_array_equal(f.inv_freq[bands == "kept"], theta[bands == "kept"])
    np.testing.assert_allclose(f.inv_freq[bands == "interpolated"], theta[bands == "interpolated"] / 8, rtol=1e-15)
    as_yarn = scaling.yarn(D, s=8.0, L=8192, base=500_000.0, alpha=1.0, beta=4.0).inv_freq
    np.testing.assert_allclose(f.inv_freq, as_yarn, rtol=1e-14)


def test_longrope_switches_factors_by_length():
    short = np.linspace(1.0, 1.2, 64)
    long = np.linspace(1.0, 40.0, 64)
    kw = dict(s=32.0, L=4096, short_factors=short, long_factors=long)
    at_long = scaling.longrope(D, **kw)
    i = np.arange(64)
    np.testing.assert_allclose(at_long.inv_freq, 1.0 / (long * BASE ** (2 * i / D)), rtol=1e-14)
    at_short = scaling.longrope(D, current_length=4096, **kw)
    np.testing.assert_allclose(at_short.inv_freq, 1.0 / (short * BASE ** (2 * i / D)), rtol=1e-14)
    np.testing.assert_allclose(scaling.longrope(D, current_length=4097, **kw).inv_freq, at_long.inv_freq)
    # Phi-3 style: 4096 -> 131072, s = 32: sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12)
    assert at_long.attention_factor == pytest.approx(math.sqrt(17 / 12), rel=1e-15)
    assert at_short.attention_factor == at_long.attention_factor  # set by the configured s, not the length
    assert scaling.longrope_attention_factor(1.0, 4096) == 1.0


# ---------------------------------------------------------------------------
# Registry and common behaviour
# ---------------------------------------------------------------------------

def test_registry_names():
    assert set(scaling.METHODS) == {"none", "linear", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code",
                                    "llama3", "longrope", "base_change"}
    assert scaling.METHODS["linear"] is scaling.METHODS["pi"] is scaling.position_interpolation
    f = scaling.scale("yarn", D, s=S, L=L)
    assert isinstance(f, scaling.ScaledRope) and f.inv_freq.shape == (64,)


@pytest.mark.parametrize("method", ["none", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code", "llama3"])
def test_scale_one_changes_nothing(method):
    f = scaling.scale(method, D, s=1.0, L=L, base=BASE)
    np.testing.assert_allclose(f.inv_freq, THETA, rtol=1e-15)
    assert f.attention_factor == 1.0


@pytest.mark.parametrize("method", [scaling.position_interpolation, scaling.ntk_aware, scaling.dynamic_ntk,
                                    scaling.yarn, scaling.yarn_code])
def test_the_default_scale_is_the_trained_length(method):
    """``s = 1``, every method's default, is the model at the length it was trained for
    (Chen et al. 2023: PI's ``s = L'/L``; Hugging Face's ``factor`` of 1.0): the
    frequencies are RoPE's own (Su et al. 2021) and the attention factor is 1."""
    f = method(D)
    np.testing.assert_allclose(f.inv_freq, rope.inv_freq(D), rtol=1e-15)
    assert f.attention_factor == 1.0


def test_longrope_at_its_default_scale_uses_the_short_factors_unscaled():
    """LongRoPE's ``s = 1``: the trained length itself, where Phi-3 and Hugging Face's
    ``_compute_longrope_parameters`` divide by the *short* factors (the long ones only past
    ``original_max_position_embeddings``), with the attention factor ``sqrt(1 + ln 1 / ln L) = 1``."""
    short, long = np.linspace(1.0, 1.2, 64), np.linspace(1.0, 40.0, 64)
    f = scaling.longrope(D, short_factors=short, long_factors=long)
    np.testing.assert_allclose(f.inv_freq, rope.inv_freq(D) / short, rtol=1e-15)
    assert f.attention_factor == 1.0


def test_proportional_at_its_default_scale_keeps_the_first_pairs_frequencies():
    """Proportional RoPE at ``s = 1`` (Gemma 4's global layers, Hugging Face
    ``_compute_proportional_rope_parameters`` with ``factor`` 1.0): the rotated pairs turn at the
    whole head's frequencies, the rest not at all."""
    theta = scaling.proportional(D, 16)
    np.testing.assert_allclose(theta[:16], rope.inv_freq(D)[:16], rtol=1e-15)
    assert np.all(theta[16:] == 0.0)


@settings(max_examples=40, deadline=None)
@given(half=st.integers(2, 128), s=st.floats(1.0, 64.0), log_length=st.integers(8, 17),
       method=st.sampled_from(["pi", "ntk", "yarn", "yarn_code", "llama3"]))
def test_scaled_frequencies_lie_between_interpolation_and_original(half, s, log_length, method):
    d, length = 2 * half, 2 ** log_length
    theta = rope.inv_freq(d, BASE)
    f = scaling.scale(method, d, s=s, L=length, base=BASE).inv_freq
    assert np.all(f <= theta * (1 + 1e-12)) and np.all(f >= theta / s * (1 - 1e-12))
    if method != "ntk":  # every pair that never turned fully is interpolated: nothing leaves the range
        assert not trained_range.out_of_range(f, theta, s, length).any()


@pytest.mark.parametrize("method", ["none", "yarn", "yarn_code", "llama3", "ntk"])
def test_every_method_plugs_into_the_torch_layer(method):
    f = scaling.scale(method, 16, s=4.0, L=256, base=BASE)
    layer = rope_torch.RotaryEmbedding(16, inv_freq=f.inv_freq, attention_factor=f.attention_factor, layout="split")
    x = np.random.default_rng(3).normal(size=(2, 50, 16))
    out, _ = layer(torch.tensor(x), torch.tensor(x), torch.arange(50) * 20)
    expected = f.attention_factor * rope.rotate(x, np.arange(50) * 20, f.inv_freq, "split")
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("call,match", [
    (lambda: scaling.position_interpolation(D, s=0.5), "s"),
    (lambda: scaling.ntk_aware(D, s=0.99), "s"),
    (lambda: scaling.yarn(127, s=2.0), "d"),
    (lambda: scaling.yarn(D, s=2.0, base=0.0), "base"),
    (lambda: scaling.yarn(D, s=2.0, L=0), "L"),
    (lambda: scaling.yarn(D, s=2.0, L=4096.5), "L"),
    (lambda: scaling.yarn(D, s=2.0, alpha=32.0, beta=1.0), "beta"),
    (lambda: scaling.ntk_per_pair(2, 2.0), "d"),
    (lambda: scaling.ntk_base(D, 0.5), "s"),
    (lambda: scaling.dynamic_ntk(D, current_length=0), "current_length"),
    (lambda: scaling.dynamic_scale(100, 4096, factor=0.5), "factor"),
    (lambda: scaling.yarn_code(D, s=2.0, beta_fast=0.0), "beta_fast"),
    (lambda: scaling.llama3(D, low_freq_factor=4.0, high_freq_factor=1.0), "high_freq_factor"),
    (lambda: scaling.llama3(D, s=0.5), "s"),
    (lambda: scaling.longrope(D, s=2.0, short_factors=np.ones(63), long_factors=np.ones(64)), "short_factors"),
    (lambda: scaling.longrope(D, s=2.0, short_factors=np.ones(64), long_factors=np.ones(65)), "long_factors"),
    (lambda: scaling.longrope(D, s=2.0, short_factors=np.ones(64), long_factors=-np.ones(64)), "long_factors"),
    (lambda: scaling.scale("rope_scaling", D), "method"),
    (lambda: scaling.training_turns(np.array([1.0, -1.0]), 4096), "inv_freq"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("truncate", [True, False])
def test_yarn_correction_range_is_clamped_to_the_last_index(truncate):
    # With base 10 the r = 1 index lies far past the last one (about 180 for d = 128, L = 4096).
    d, L = 128, 4096
    unclamped = d * math.log(L / (2.0 * math.pi)) / (2.0 * math.log(10.0))
    assert unclamped > d
    low, high = scaling.yarn_correction_range(d, L, base=10.0, truncate=truncate)
    assert high == d - 1
    assert low == (math.floor(d * math.log(L / (64.0 * math.pi)) / (2.0 * math.log(10.0))) if truncate
                   else d * math.log(L / (64.0 * math.pi)) / (2.0 * math.log(10.0)))
    ramp = scaling.yarn_code_ramp(d, L, base=10.0, truncate=truncate)
    i = np.arange(d // 2)
    assert np.allclose(ramp, 1.0 - np.clip((i - low) / (d - 1 - low), 0.0, 1.0))


def test_longrope_attention_factor_bounds():
    assert scaling.longrope_attention_factor(4.0, 2) == math.sqrt(1.0 + math.log(4.0) / math.log(2))
    assert scaling.longrope_attention_factor(1.0, 2) == 1.0
    assert scaling.longrope_attention_factor(1.5, 4096) == math.sqrt(1.0 + math.log(1.5) / math.log(4096))
    for bad_L in (1, 0, -3, 2.0, True):
        with pytest.raises(ValueError, match="L must be an integer >= 2"):
            scaling.longrope_attention_factor(4.0, bad_L)
    with pytest.raises(ValueError, match="s must"):
        scaling.longrope_attention_factor(0.99, 4096)


def test_yarn_correction_range_edges():
    # a short training length puts the fast end below pair 0: clamped to 0
    low, high = scaling.yarn_correction_range(128, 64, 10000.0)
    assert low == 0 and 0 < high < 127
    assert scaling.yarn_correction_range(16, 4096, base=1.5)[1] == 15   # any base > 1 is allowed
    with pytest.raises(ValueError, match="beta_fast must be at least beta_slow"):
        scaling.yarn_correction_range(16, 4096, beta_fast=1.0, beta_slow=2.0)
    low, high = scaling.yarn_correction_range(16, 4096, beta_fast=2.0, beta_slow=2.0)  # a step
    assert high - low == 1
    with pytest.raises(ValueError, match="base must"):
        scaling.yarn_correction_range(16, 4096, base=1.0)


def test_longrope_factors_are_keyword_only_and_required():
    """The signature says what the call needs: the two factor vectors, by name, no defaults."""
    with pytest.raises(TypeError, match="long_factors"):
        scaling.longrope(D, s=2.0, short_factors=np.ones(64))
    with pytest.raises(TypeError):
        scaling.longrope(D, 2.0, 4096, 10000.0, np.ones(64), np.ones(64))


def test_yarn_mscale_generalises_the_temperature():
    """DeepSeek's yarn_get_mscale: 1 at s = 1, YaRN's 0.1 ln s + 1 at mscale = 1, linear in mscale."""
    assert scaling.yarn_mscale(1.0, 0.707) == 1.0
    assert scaling.yarn_mscale(40.0) == pytest.approx(scaling.yarn_attention_factor(40.0), rel=1e-15)
    assert scaling.yarn_mscale(40.0, 0.707) == pytest.approx(0.1 * 0.707 * math.log(40.0) + 1.0, rel=1e-15)
    assert scaling.yarn_mscale(40.0, 0.0) == 1.0


def test_proportional_keeps_the_whole_head_exponent_on_its_first_pairs():
    """Gemma 4's proportional RoPE: theta_i = base^(-2i/d) / s on k pairs, 0 on the rest; not partial RoPE."""
    got = scaling.proportional(512, 64, s=1.0, base=1e6)
    assert got.shape == (256,) and np.all(got[64:] == 0.0)
    np.testing.assert_array_equal(got[:64], rope.inv_freq(512, 1e6)[:64])
    assert not np.allclose(got[:64], rope.inv_freq(128, 1e6))  # partial rotation over 128 would differ
    np.testing.assert_array_equal(scaling.proportional(512, 64, s=8.0, base=1e6)[:64], got[:64] / 8.0)
    with pytest.raises(ValueError, match="rotated_pairs must be at most d/2 = 256"):
        scaling.proportional(512, 257)


def test_llama3_with_equal_band_factors_has_no_blended_band():
    """Llama 4 sets low_freq_factor = high_freq_factor = 1: each pair is kept or divided by s, none blended."""
    theta = rope.inv_freq(128, 500_000.0)
    got = scaling.llama3(128, 16.0, 8192, 500_000.0, 1.0, 1.0).inv_freq
    long = 2.0 * np.pi / theta > 8192
    np.testing.assert_array_equal(got[long], theta[long] / 16.0)
    np.testing.assert_array_equal(got[~long], theta[~long])
    assert 0 < long.sum() < 64


# ---------------------------------------------------------------------------
# Every argument reaches the formula
# ---------------------------------------------------------------------------

def test_every_method_uses_the_base_it_is_given():
    """Llama 3's base 500000 instead of 10000, through every method: NTK-aware's new base
    b' = b s^(d/(d-2)) (bloc97 2023), its per-pair form, dynamic NTK at 8 L, LongRoPE's division."""
    d, s, base = 64, 4.0, 500_000.0
    theta = rope.inv_freq(d, base)
    new_base = base * s ** (d / (d - 2))
    np.testing.assert_allclose(scaling.ntk_per_pair(d, s, base), rope.inv_freq(d, new_base), rtol=1e-13)
    np.testing.assert_allclose(scaling.ntk_aware(d, s, base=base).inv_freq, rope.inv_freq(d, new_base), rtol=1e-13)
    np.testing.assert_allclose(scaling.dynamic_ntk(d, s, L, base).inv_freq, rope.inv_freq(d, new_base), rtol=1e-13)
    factors = np.linspace(1.0, 3.0, d // 2)
    np.testing.assert_allclose(scaling.longrope(d, s, L, base, short_factors=factors, long_factors=factors).inv_freq,
                               theta / factors, rtol=1e-15)


def test_yarn_curves_are_the_four_functions_at_the_arguments_given():
    """The figure's curves at d = 64, s = 4, L = 2048, base 500000 and a ramp from 2 to 16 turns: the
    paper's (alpha, beta) are the code's (beta_slow, beta_fast)."""
    d, s, length, base, alpha, beta = 64, 4.0, 2048, 500_000.0, 2.0, 16.0
    curves = scaling.yarn_curves(d, s, length, base, alpha, beta)
    turns = length * rope.inv_freq(d, base) / (2 * np.pi)
    np.testing.assert_allclose(curves.turns, turns, rtol=1e-15)
    np.testing.assert_allclose(curves.gamma_paper, scaling.yarn_ramp(turns, alpha, beta), rtol=1e-15)
    np.testing.assert_allclose(curves.gamma_code, scaling.yarn_code_ramp(d, length, base, beta, alpha), rtol=1e-15)
    np.testing.assert_allclose(curves.inv_freq_paper, scaling.yarn(d, s, length, base, alpha, beta).inv_freq, rtol=1e-15)
    np.testing.assert_allclose(curves.inv_freq_code, scaling.yarn_code(d, s, length, base, beta, alpha).inv_freq,
                               rtol=1e-15)
    assert not np.allclose(curves.gamma_paper, scaling.yarn_ramp(turns))   # the betas matter here


def test_llama3_uses_its_band_factors():
    """Llama 3.1's rule with other band factors (2 and 8) against Hugging Face's _compute_llama3_parameters."""
    got = scaling.llama3(D, 8.0, 8192, 500_000.0, low_freq_factor=2.0, high_freq_factor=8.0)
    np.testing.assert_allclose(got.inv_freq, hf_llama3(D, 500_000.0, 8.0, 2.0, 8.0, 8192), rtol=2e-6)
    bands = scaling.llama3_bands(D, 8192, 500_000.0, 2.0, 8.0)
    wavelen = 2 * np.pi / rope.inv_freq(D, 500_000.0)
    np.testing.assert_array_equal(bands == "interpolated", wavelen > 8192 / 2.0)
    np.testing.assert_array_equal(bands == "kept", wavelen < 8192 / 8.0)


def test_llama3_bands_at_their_edges():
    """A wavelength exactly L / high_freq_factor is not "kept" (the rule is strict), one exactly
    L / low_freq_factor is not "interpolated"; with equal factors (Llama 4) that pair is kept as it is.
    Pair 0 of a head of width 2 has wavelength 2 pi, and L = 1024 over 1024 / (2 pi) gives it back."""
    length = 1024
    edge = length / (2 * np.pi)
    assert length / edge == 2 * np.pi
    assert scaling.llama3_bands(2, length, 10000.0, 1.0, edge)[0] == "blended"
    assert scaling.llama3_bands(2, length, 10000.0, edge, 2 * edge)[0] == "blended"
    kept = scaling.llama3(2, 8.0, length, 10000.0, edge, edge)
    assert kept.inv_freq.dtype == np.float64 and kept.inv_freq[0] == 1.0


def test_proportional_rotates_every_pair_of_the_head_at_most():
    np.testing.assert_allclose(scaling.proportional(D, D // 2), rope.inv_freq(D), rtol=1e-15)
    with pytest.raises(ValueError, match=r"^rotated_pairs must be at most d/2 = 64 \(the pairs of the head\), got 65$"):
        scaling.proportional(D, D // 2 + 1)
