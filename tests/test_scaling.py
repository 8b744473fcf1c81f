"""Tests for companion.scaling: the Figure 4 numbers, closed forms, and each method
against a transcription of the code that ships it (Hugging Face transformers
``modeling_rope_utils.py``, the Llama 3.1 reference ``apply_scaling``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import rope, scaling

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
# Figure 4: the numbers the book prints
# ---------------------------------------------------------------------------

def test_turns_in_training_and_slow_pairs():
    turns = scaling.training_turns(THETA, L)
    np.testing.assert_allclose(turns, L * THETA / (2 * np.pi), rtol=1e-15)
    assert int(np.sum(turns < 1)) == 18
    np.testing.assert_array_equal(np.flatnonzero(turns < 1), np.arange(46, 64))
    assert turns[0] == pytest.approx(4096 / (2 * np.pi))


def test_figure_4_numbers():
    none, pi, ntk, yarn = (scaling.extension(m, d=D, s=S, L=L, base=BASE) for m in ("none", "pi", "ntk", "yarn"))
    assert none.n_slow == pi.n_slow == ntk.n_slow == yarn.n_slow == 18
    assert none.n_out == 18 and none.worst_ratio == pytest.approx(8.0)
    assert pi.n_out == 0 and pi.worst_ratio == pytest.approx(1.0)
    assert ntk.n_out == 17
    assert 1.74 < ntk.worst_ratio < 1.76
    assert yarn.n_out == 0
    # NTK-aware: every slow pair but the last exceeds; the worst is pair 46, ratio 8^(1 - 92/126)
    np.testing.assert_array_equal(np.flatnonzero(ntk.out_of_range), np.arange(46, 63))
    assert ntk.worst_ratio == pytest.approx(8.0 ** (34 / 126), rel=1e-12)
    # PI slows every pair, the fast ones too; NTK and YaRN keep the fastest pair
    np.testing.assert_allclose(pi.ratio, 1.0, rtol=1e-12)
    assert ntk.ratio[0] == pytest.approx(8.0) and yarn.ratio[0] == pytest.approx(8.0)


def test_shipped_variants_also_stay_in_range_at_figure_4_setting():
    assert scaling.extension("yarn_code").n_out == 0
    assert scaling.extension("dynamic_ntk").n_out == 17
    assert scaling.extension("llama3", base=BASE, L=L).n_out == 0


def test_out_of_range_tolerance_treats_equality_as_inside():
    theta = np.array([1.0, 1e-4])
    exactly = np.array([1.0, 1e-4 / 8])
    assert not scaling.out_of_range(exactly, theta, 8.0, 4096).any()
    assert scaling.out_of_range(exactly * (1 + 1e-6), theta, 8.0, 4096).tolist() == [False, True]


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
    f = scaling.frequencies("yarn", D, s=S, L=L)
    assert isinstance(f, scaling.Frequencies) and f.inv_freq.shape == (64,)


@pytest.mark.parametrize("method", ["none", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code", "llama3"])
def test_scale_one_changes_nothing(method):
    f = scaling.frequencies(method, D, s=1.0, L=L, base=BASE)
    np.testing.assert_allclose(f.inv_freq, THETA, rtol=1e-15)
    assert f.attention_factor == 1.0


@settings(max_examples=40, deadline=None)
@given(half=st.integers(2, 128), s=st.floats(1.0, 64.0), log_length=st.integers(8, 17),
       method=st.sampled_from(["pi", "ntk", "yarn", "yarn_code", "llama3"]))
def test_scaled_frequencies_lie_between_interpolation_and_original(half, s, log_length, method):
    d, length = 2 * half, 2 ** log_length
    theta = rope.inv_freq(d, BASE)
    f = scaling.frequencies(method, d, s=s, L=length, base=BASE).inv_freq
    assert np.all(f <= theta * (1 + 1e-12)) and np.all(f >= theta / s * (1 - 1e-12))
    if method != "ntk":  # every pair that never turned fully is interpolated: nothing leaves the range
        assert not scaling.out_of_range(f, theta, s, length).any()


@pytest.mark.parametrize("method", ["none", "yarn", "yarn_code", "llama3", "ntk"])
def test_every_method_plugs_into_the_torch_layer(method):
    f = scaling.frequencies(method, 16, s=4.0, L=256, base=BASE)
    layer = rope.RotaryEmbedding(16, inv_freq=f.inv_freq, attention_factor=f.attention_factor, layout="split")
    x = np.random.default_rng(3).normal(size=(2, 50, 16))
    out, _ = layer(torch.tensor(x), torch.tensor(x), torch.arange(50) * 20)
    expected = f.attention_factor * rope.rotate(x, np.arange(50) * 20, f.inv_freq, "split")
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)


# ---------------------------------------------------------------------------
# The score as a function of distance (Chen et al. 2023)
# ---------------------------------------------------------------------------

def test_score_curve_equals_the_rope_score_at_integer_distances():
    rng = np.random.default_rng(11)
    d = 16
    theta = rope.inv_freq(d, BASE)
    q, k = rng.normal(size=d), rng.normal(size=d)
    h = rope.to_complex(q) * np.conj(rope.to_complex(k))
    m, n = np.array([0, 5, 40, 300]), np.array([3, 0, 40, 7])
    expected = rope.score(q, k, m, n, theta)
    np.testing.assert_allclose(scaling.score_curve(h, m - n, theta), expected, atol=1e-12)


def test_score_curve_between_integers_is_position_interpolation():
    # PI evaluates the original curve at s / factor: same as the curve of theta / factor at s
    rng = np.random.default_rng(12)
    theta = rope.inv_freq(32, BASE)
    h = rng.normal(size=16) + 1j * rng.normal(size=16)
    s = np.arange(0, 50) * 1.0
    np.testing.assert_allclose(scaling.score_curve(h, s / 4.0, theta), scaling.score_curve(h, s, theta / 4.0), atol=1e-12)


def test_fit_recovers_the_contents_of_a_well_conditioned_curve():
    theta = rope.inv_freq(8, 10.0)  # 4 pairs, all turning within the sampled range
    h_true = np.array([1.0 - 0.5j, 0.3 + 0.2j, -0.7j, 0.25])
    s = np.arange(200.0)
    h = scaling.fit_score_curve(s, scaling.score_curve(h_true, s, theta), theta)
    np.testing.assert_allclose(h, h_true, atol=1e-10)


def test_ridge_fit_minimises_the_penalised_objective():
    rng = np.random.default_rng(13)
    theta = rope.inv_freq(16, BASE)
    s = np.arange(300.0)
    y = rng.normal(size=s.size)

    def objective(h, ridge):
        return np.sum((scaling.score_curve(h, s, theta) - y) ** 2) + ridge * np.sum(np.abs(h) ** 2)

    h = scaling.fit_score_curve(s, y, theta, ridge=0.5)
    best = objective(h, 0.5)
    for _ in range(20):
        step = 1e-3 * (rng.normal(size=8) + 1j * rng.normal(size=8))
        assert objective(h + step, 0.5) >= best
    plain = scaling.fit_score_curve(s, y, theta)
    assert np.linalg.norm(h) < np.linalg.norm(plain)


def test_unregularised_fit_of_noise_extrapolates_wildly_and_ridge_does_not():
    # Chen et al. (2023), Figure 2: LLaMA 7B head (d = 128), L = 2048, random targets
    theta = rope.inv_freq(128, BASE)
    s = np.arange(2048.0)
    y = np.random.default_rng(0).normal(size=s.size)
    far = np.arange(2048.0, 4096.0)
    wild = scaling.fit_score_curve(s, y, theta, rcond=1e-8)
    tame = scaling.fit_score_curve(s, y, theta, ridge=1.0)
    inside = np.abs(scaling.score_curve(wild, s, theta)).max()
    assert inside < 1.0
    assert np.abs(scaling.score_curve(wild, far, theta)).max() > 1000 * inside
    assert np.abs(scaling.score_curve(tame, far, theta)).max() < 3 * np.abs(scaling.score_curve(tame, s, theta)).max()


def test_interpolation_error_bound_holds_and_is_sharp_for_one_slow_pair():
    rng = np.random.default_rng(14)
    theta = rope.inv_freq(64, BASE)
    h = rng.normal(size=32) + 1j * rng.normal(size=32)
    grid = np.arange(100.0)
    fine = np.linspace(0, 99, 99 * 16 + 1)
    a_fine = scaling.score_curve(h, fine, theta)
    a_lin = np.interp(fine, grid, scaling.score_curve(h, grid, theta))
    assert np.max(np.abs(a_fine - a_lin)) <= scaling.interpolation_error_bound(h, theta)
    # one pair, cos(s theta): the midpoint error is cos(theta/2)(1 - cos(theta/2)) ~ theta^2 / 8
    one = np.array([1e-2])
    midpoint = scaling.score_curve(np.array([1.0]), [0.5], one)[0] - 0.5 * (1 + np.cos(1e-2))
    assert midpoint / scaling.interpolation_error_bound(np.array([1.0]), one) == pytest.approx(1.0, rel=1e-3)
    assert scaling.interpolation_error_bound(h, theta, spacing=0.5) == pytest.approx(
        scaling.interpolation_error_bound(h, theta) / 4)


def test_pi_bound_ratio_against_a_direct_sum():
    theta = rope.inv_freq(D, BASE)
    s = np.array([0.0, 1.0, 37.0, 1000.0, 3643.0])
    B = np.array([sum(abs(np.sum(np.exp(1j * x * theta[:k]))) for k in range(1, 65)) for x in s])
    assert B[0] / D == pytest.approx(16.25)  # (d/2)(d/2 + 1)/2 / d = (d + 2)/8
    np.testing.assert_allclose(scaling.pi_bound_ratio(s, constant="exact"), 2 * B / (np.sum(theta**2) / 8), rtol=1e-12)
    np.testing.assert_allclose(scaling.pi_bound_ratio(s, constant="paper"), 64 * math.log(BASE) * B / D, rtol=1e-12)
    everywhere = np.arange(4096.0)
    assert scaling.pi_bound_ratio(everywhere, constant="paper").min() > 2 * 32 * math.log(BASE) > 589
    ratio = scaling.pi_bound_ratio(everywhere, constant="paper") / scaling.pi_bound_ratio(everywhere)
    np.testing.assert_allclose(ratio, np.sum(theta**2) / (D / (4 * math.log(BASE))), rtol=1e-12)
    assert 1.15 < ratio[0] < 1.152


# ---------------------------------------------------------------------------
# Polynomial interpolation: node polynomial, interpolant, Cauchy's bound
# ---------------------------------------------------------------------------

def test_node_polynomial_matches_numpy_poly_and_vanishes_at_the_nodes():
    nodes = np.array([0.0, 1.5, 4.0, 7.0])
    x = np.linspace(-3, 12, 61)
    reference = np.polyval(np.poly(nodes), x)          # independent: coefficients from the roots
    np.testing.assert_allclose(scaling.node_polynomial(x, nodes), reference, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(scaling.node_polynomial(nodes, nodes), 0.0)
    assert scaling.node_polynomial(np.zeros((2, 5)), nodes).shape == (2, 5)


def test_polynomial_interpolant_against_numpy_polyfit():
    rng = np.random.default_rng(5)
    nodes = np.sort(rng.uniform(-1, 1, size=6))
    values = rng.normal(size=6)
    coefficients = np.polyfit(nodes, values, deg=5)      # exact fit: 6 points, degree 5
    x = np.linspace(-2, 2, 101)
    np.testing.assert_allclose(scaling.polynomial_interpolant(nodes, values, x), np.polyval(coefficients, x),
                               rtol=1e-7, atol=1e-7)
    # at the nodes it returns the data exactly
    np.testing.assert_array_equal(scaling.polynomial_interpolant(nodes, values, nodes), values)
    assert scaling.polynomial_interpolant(nodes, values, np.zeros((3, 2))).shape == (3, 2)


def test_polynomial_interpolant_reproduces_polynomials_inside_and_far_outside():
    nodes = np.arange(0.0, 65.0, 8.0)                   # 9 nodes: degree 8
    coefficients = np.array([1e-7, -3e-6, 0.0, 2e-4, -1e-3, 0.01, -0.1, 1.0, 2.0])
    x = np.linspace(-64, 256, 321)
    np.testing.assert_allclose(scaling.polynomial_interpolant(nodes, np.polyval(coefficients, nodes), x),
                               np.polyval(coefficients, x), rtol=1e-6)   # extrapolation amplifies rounding


def test_remainder_for_x_to_the_n_plus_1_is_the_node_polynomial():
    # f = x^(n+1) has f^(n+1) = (n+1)!, so f - p = omega exactly
    nodes = np.array([0.0, 1.0, 3.0, 4.0])
    x = np.linspace(-2, 8, 41)
    np.testing.assert_allclose(x**4 - scaling.polynomial_interpolant(nodes, nodes**4, x),
                               scaling.node_polynomial(x, nodes), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(scaling.polynomial_remainder_bound(x, nodes, 24.0),
                               np.abs(scaling.node_polynomial(x, nodes)), rtol=1e-12)


def test_cauchy_bound_holds_for_a_rope_pair_inside_and_outside():
    theta = THETA[16]                                   # 0.1 rad per position
    nodes = np.arange(0.0, 65.0, 8.0)
    x = np.linspace(0, 128, 1025)
    error = np.abs(np.cos(theta * x) - scaling.polynomial_interpolant(nodes, np.cos(theta * nodes), x))
    bound = scaling.polynomial_remainder_bound(x, nodes, theta**9)
    assert np.all(error <= bound + 1e-12)
    inside, outside = x <= 64, x >= 64
    assert error[inside].max() < 1e-3 and error[outside].max() > 100


@pytest.mark.parametrize("call,match", [
    (lambda: scaling.node_polynomial([1.0], [0.0, 0.0]), "nodes"),
    (lambda: scaling.node_polynomial([1.0], []), "nodes"),
    (lambda: scaling.node_polynomial([np.inf], [0.0]), "x"),
    (lambda: scaling.polynomial_interpolant([0.0, 1.0], [1.0], [0.5]), "values"),
    (lambda: scaling.polynomial_interpolant([[0.0, 1.0]], [[1.0, 2.0]], [0.5]), "nodes"),
    (lambda: scaling.polynomial_interpolant([0.0, 1.0], [1.0, 2.0], [np.nan]), "x"),
    (lambda: scaling.polynomial_remainder_bound([0.5], [0.0, 1.0], -1.0), "derivative_bound"),
    (lambda: scaling.polynomial_remainder_bound([0.5], [0.0, 1.0], "1"), "derivative_bound"),
])
def test_interpolation_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


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
    (lambda: scaling.longrope(D, s=2.0, short_factors=np.ones(64)), "long_factors"),
    (lambda: scaling.longrope(D, s=2.0, short_factors=np.ones(63), long_factors=np.ones(64)), "short_factors"),
    (lambda: scaling.longrope(D, s=2.0, short_factors=np.ones(64), long_factors=np.ones(65)), "long_factors"),
    (lambda: scaling.longrope(D, s=2.0, short_factors=np.ones(64), long_factors=-np.ones(64)), "long_factors"),
    (lambda: scaling.frequencies("rope_scaling", D), "method"),
    (lambda: scaling.extension("ntk_by_parts"), "method"),
    (lambda: scaling.angle_ratio(np.ones(3), np.ones(4), 2.0), "scaled_inv_freq"),
    (lambda: scaling.training_turns(np.array([1.0, -1.0]), 4096), "inv_freq"),
    (lambda: scaling.score_curve(np.ones(3), [0.0], THETA), "h"),
    (lambda: scaling.score_curve(np.full(64, np.nan), [0.0], THETA), "h"),
    (lambda: scaling.score_curve(np.ones(64), [np.inf], THETA), "distances"),
    (lambda: scaling.fit_score_curve(np.arange(5.0), np.ones(4), THETA), "targets"),
    (lambda: scaling.fit_score_curve(np.ones((2, 2)), np.ones((2, 2)), THETA), "distances"),
    (lambda: scaling.fit_score_curve(np.arange(5.0), np.ones(5), THETA, ridge=-1.0), "ridge"),
    (lambda: scaling.fit_score_curve(np.arange(5.0), np.ones(5), THETA, rcond=0.0), "rcond"),
    (lambda: scaling.fit_score_curve(np.arange(5.0), np.ones(5), THETA, rcond=1e-8, ridge=1.0), "rcond"),
    (lambda: scaling.interpolation_error_bound(np.ones(64), THETA, spacing=0.0), "spacing"),
    (lambda: scaling.interpolation_error_bound(np.ones(64), -THETA), "inv_freq"),
    (lambda: scaling.pi_bound_ratio([1.0], d=127), "d"),
    (lambda: scaling.pi_bound_ratio([1.0], base=0.5), "base"),
    (lambda: scaling.pi_bound_ratio([1.0], constant="tight"), "constant"),
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
