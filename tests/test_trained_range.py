"""Tests for companion.trained_range: the Figure 4 numbers the book prints."""
from __future__ import annotations

import numpy as np
import pytest

from companion import rope, scaling, trained_range

D, BASE, L, S = 128, 10000.0, 4096, 8.0  # the book's Figure 4 setting (Llama 2)
THETA = rope.inv_freq(D, BASE)


def test_figure_4_numbers():
    none, pi, ntk, yarn = (trained_range.extension(m, d=D, s=S, L=L, base=BASE) for m in ("none", "pi", "ntk", "yarn"))
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
    assert trained_range.extension("yarn_code").n_out == 0
    assert trained_range.extension("dynamic_ntk").n_out == 17
    assert trained_range.extension("llama3", base=BASE, L=L).n_out == 0


def test_out_of_range_tolerance_treats_equality_as_inside():
    theta = np.array([1.0, 1e-4])
    exactly = np.array([1.0, 1e-4 / 8])
    assert not trained_range.out_of_range(exactly, theta, 8.0, 4096).any()
    assert trained_range.out_of_range(exactly * (1 + 1e-6), theta, 8.0, 4096).tolist() == [False, True]


@pytest.mark.parametrize("call,match", [
    (lambda: trained_range.extension("ntk_by_parts"), "method"),
    (lambda: trained_range.angle_ratio(np.ones(3), np.ones(4), 2.0), "scaled_inv_freq"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_pair_that_turned_exactly_once_has_seen_every_angle():
    """r_i = L theta_i / (2 pi) = 1 exactly (theta = 2 pi, L = 1): a full turn was made, so even at twice the
    angle the pair stays inside; r_i just below 1 does not."""
    theta = np.array([2 * np.pi])
    assert not trained_range.out_of_range(theta, theta, 2.0, 1).any()
    assert trained_range.out_of_range(theta * 0.999, theta * 0.999, 2.0, 1).all()


def test_out_of_range_with_no_tolerance_keeps_an_exact_ratio_of_one_inside():
    theta = np.array([1.0, 1e-4])
    assert not trained_range.out_of_range(theta / 8, theta, 8.0, 4096, tol=0.0).any()
    assert trained_range.out_of_range(theta / 7.999, theta, 8.0, 4096, tol=0.0).tolist() == [False, True]


def test_extension_passes_its_base_options_and_attention_factor_on():
    """The figure's quantities at Llama 3's base with YaRN's betas changed: the same as the method itself."""
    got = trained_range.extension("yarn_code", d=64, s=4.0, L=2048, base=500_000.0, beta_fast=16.0, beta_slow=2.0)
    scaled = scaling.yarn_code(64, 4.0, 2048, 500_000.0, beta_fast=16.0, beta_slow=2.0)
    theta = rope.inv_freq(64, 500_000.0)
    np.testing.assert_allclose(got.turns, 2048 * theta / (2 * np.pi), rtol=1e-15)
    np.testing.assert_allclose(got.ratio, 4.0 * scaled.inv_freq / theta, rtol=1e-15)
    assert got.attention_factor == scaled.attention_factor == pytest.approx(0.1 * np.log(4.0) + 1.0)
    assert not np.allclose(got.ratio, trained_range.extension("yarn_code", d=64, s=4.0, L=2048, base=500_000.0).ratio)
