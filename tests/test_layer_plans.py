"""companion.layer_plans: per-layer position plans, their masks and their reach."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from companion import layer_plans, nope, rope


def test_plans_of_the_published_designs():
    assert [p.rope for p in layer_plans.llama4(8)] == [True, True, True, False] * 2
    assert [p.rope for p in layer_plans.smollm3(36)].count(False) == 9
    g3 = layer_plans.gemma3(62)
    assert sum(p.window is None for p in g3) == 10 and g3[5].base == 1e6 and g3[5].factor == 8.0
    assert [p.window for p in layer_plans.gemma2(4)] == [4096, None, 4096, None]
    assert [p.window for p in layer_plans.gpt_oss(4)] == [128, None, 128, None]
    assert [p.rope for p in layer_plans.rnope_swa(8)] == [True, True, True, False] * 2
    assert all(p.qk_norm and p.chunk == 8192 for p in layer_plans.llama4(8) if p.rope)
    assert all(p.temperature and not p.qk_norm and p.chunk is None for p in layer_plans.llama4(8) if not p.rope)


def test_masks_and_reach():
    np.testing.assert_array_equal(layer_plans.chunked_mask(7, 3)[3], [False, False, False, True, False, False, False])
    assert layer_plans.sliding_window_mask(9, 3).sum(axis=1).tolist() == [1, 2, 3, 3, 3, 3, 3, 3, 3]
    assert layer_plans.reach(layer_plans.LayerPlan(rope=True, window=128), 10_000) == 127
    assert layer_plans.reach(layer_plans.LayerPlan(rope=True, chunk=8192), 100) == 99
    assert layer_plans.reach(layer_plans.LayerPlan(rope=False), 100) == 99
    for plan in (layer_plans.LayerPlan(rope=True, window=5), layer_plans.LayerPlan(rope=True, chunk=4),
                 layer_plans.LayerPlan(rope=True)):
        mask = layer_plans.layer_mask(plan, 23)
        i, j = np.nonzero(mask)
        assert (i - j).max() == layer_plans.reach(plan, 23)


def test_longest_rotated_distance_of_whole_stacks():
    assert layer_plans.longest_rotated_distance(layer_plans.llama4(48), 10_485_760) == 8191
    assert layer_plans.longest_rotated_distance(layer_plans.smollm3(36), 131_072) == 131_071
    assert layer_plans.longest_rotated_distance(layer_plans.rnope_swa(8), 256_000) == 4095
    assert layer_plans.longest_rotated_distance(layer_plans.gemma3(62), 131_072) == 131_071
    assert layer_plans.longest_rotated_distance([layer_plans.LayerPlan(rope=False)], 10) == 0


def test_cached_keys():
    n = 131_072
    assert layer_plans.cached_keys(layer_plans.gemma3(6), n) == 5 * 1024 + n
    assert layer_plans.cached_keys(layer_plans.gpt_oss(2), n) == 128 + n
    assert layer_plans.cached_keys(layer_plans.llama4(4), 10) == 4 * 10
    assert layer_plans.cached_keys(layer_plans.smollm3(36), n) == 36 * n


def test_layer_frequencies():
    assert layer_plans.layer_frequencies(layer_plans.LayerPlan(rope=False), 64) is None
    np.testing.assert_allclose(layer_plans.layer_frequencies(layer_plans.gemma3(6)[5], 64), rope.inv_freq(64, 1e6) / 8)
    np.testing.assert_allclose(layer_plans.layer_frequencies(layer_plans.gemma3(6)[0], 64), rope.inv_freq(64, 1e4))


def test_qk_norm_commutes_with_the_rotation():
    rng = np.random.default_rng(2)
    x, theta = rng.normal(size=(9, 32)) * 3, rope.inv_freq(32)
    for layout in ("adjacent", "split"):
        a = layer_plans.qk_rms_norm(rope.rotate(x, np.arange(9), theta, layout))
        b = rope.rotate(layer_plans.qk_rms_norm(x), np.arange(9), theta, layout)
        np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(np.mean(layer_plans.qk_rms_norm(x, eps=0.0) ** 2, axis=-1), 1.0)


def test_qk_norm_holds_at_every_scale():
    """Scaled by 1e300 a vector is normalised to the same unit-RMS vector (no square
    overflows to inf and no result collapses to 0); a vector far below sqrt(eps) is
    normalised to almost 0, as x / sqrt(mean(x^2) + eps) says."""
    x = np.random.default_rng(5).normal(size=(4, 16))
    unit = layer_plans.qk_rms_norm(x, eps=0.0)
    for scale in (1e-150, 1e150, 1e300):
        np.testing.assert_allclose(layer_plans.qk_rms_norm(x * scale, eps=0.0), unit, rtol=1e-12)
    np.testing.assert_allclose(layer_plans.qk_rms_norm(x * 1e300), unit, rtol=1e-12)
    tiny = layer_plans.qk_rms_norm(x * 1e-300)
    assert np.all(np.isfinite(tiny)) and np.max(np.abs(tiny)) < 1e-290


def test_llama4_pattern_is_chapter_fives():
    assert [("rope" if p.rope else "nope") for p in layer_plans.llama4(12)] == nope.irope_layer_pattern(12)


@pytest.mark.parametrize("call", [
    lambda: layer_plans.llama4(0),
    lambda: layer_plans.gemma3(6, every=1),
    lambda: layer_plans.sliding_window_mask(5, 0),
    lambda: layer_plans.chunked_mask(0, 3),
    lambda: layer_plans.qk_rms_norm([1.0, np.nan]),
    lambda: layer_plans.qk_rms_norm([1.0, 2.0], eps=-1.0),
])
def test_bad_arguments_are_refused_by_name(call):
    with pytest.raises(ValueError, match="must"):
        call()


def test_the_plan_builders_use_their_arguments():
    """Every layer of Gemma 2 and gpt-oss rotates, with the base given; Llama 4 and SmolLM3 leave out every
    nope_every-th layer's RoPE, and their position-free layers have no base."""
    for plans, base in ((layer_plans.gemma2(4, base=20_000.0), 20_000.0), (layer_plans.gpt_oss(4, base=30_000.0), 30_000.0)):
        assert all(p.rope and p.base == base for p in plans)
    assert [p.rope for p in layer_plans.llama4(4, nope_every=2)] == [True, False, True, False]
    smol = layer_plans.smollm3(4, nope_every=2, base=7.0)
    assert [p.rope for p in smol] == [True, False, True, False]
    assert [p.base for p in smol] == [7.0, None, 7.0, None]


def test_plans_that_are_not_layer_plans_are_named():
    with pytest.raises(TypeError, match=r"^plans must hold LayerPlan entries only, one per layer, got str$"):
        layer_plans.cached_keys([layer_plans.LayerPlan(rope=True), "global"], 8)


def test_qk_norm_of_a_zero_vector_without_eps_is_refused_even_in_a_batch():
    x = np.ones((2, 3, 4))
    x[1, 2] = 0.0
    with pytest.raises(ValueError, match=r"^eps must be > 0 when a vector of x is all zeros \(its RMS is 0\), "
                                         r"got eps = 0.0$"):
        layer_plans.qk_rms_norm(x, eps=0.0)
    assert np.isfinite(layer_plans.qk_rms_norm(x)).all()


def test_qk_norm_scales_each_vector_by_its_own_size():
    """A vector of 1e150 and one of 1e-150 in one call, without eps: each has RMS 1 afterwards."""
    x = np.array([[1e150, -1e150], [1e-150, 1e-150]])
    np.testing.assert_allclose(layer_plans.qk_rms_norm(x, eps=0.0), [[1.0, -1.0], [1.0, 1.0]], rtol=1e-15)


def test_qk_norm_of_a_vector_far_below_eps_is_zero_without_a_warning():
    """eps / s^2 overflows for s ~ 1e-200: the result is 0 (x is nothing next to eps), and no division warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(layer_plans.qk_rms_norm(np.array([1e-200, -1e-200])), [0.0, 0.0])


def test_qk_norm_without_eps_of_a_tiny_vector():
    """Rescaling by s = max |x_j| is there so that no square vanishes (x ~ 1e-300): with eps = 0 a
    non-zero vector has RMS 1 afterwards, however small."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(layer_plans.qk_rms_norm(np.array([1e-200, 1e-200]), eps=0.0), [1.0, 1.0])


def test_recurrent_stacks():
    qwen = layer_plans.qwen3_next(48)
    assert [not p.recurrent for p in qwen] == [(layer + 1) % 4 == 0 for layer in range(48)]
    assert all(p.rope and p.base == 1e7 and p.rotary_dim == 64 for p in qwen if not p.recurrent)
    assert layer_plans.layer_frequencies(qwen[3], 256).size == 32
    np.testing.assert_allclose(layer_plans.layer_frequencies(qwen[3], 256), rope.inv_freq(64, 1e7), rtol=1e-15)
    assert layer_plans.cached_keys(qwen, 1000) == 12 * 1000
    assert layer_plans.longest_rotated_distance(qwen, 262_144) == 262_143
    kimi = layer_plans.kimi_linear(8)
    assert layer_plans.longest_rotated_distance(kimi, 10**6) == 0 and layer_plans.cached_keys(kimi, 50) == 100
    with pytest.raises(ValueError, match="recurrent"):
        layer_plans.layer_mask(qwen[0], 4)
    with pytest.raises(ValueError, match="recurrent"):
        layer_plans.LayerPlan(rope=True, recurrent=True)


def test_gemma3_27b_keeps_less_than_one_block_suggests():
    """62 layers, 10 of them global: 16.8% of a full cache at 128K, not one block's 17.3%."""
    n = 131_072
    share = layer_plans.cached_keys(layer_plans.gemma3(62), n) / (62 * n)
    assert round(share, 3) == 0.168
    assert round(layer_plans.cached_keys(layer_plans.gemma3(6), n) / (6 * n), 3) == 0.173
