"""Tests for companion.nope: Haviv et al. (2022) and Llama 4's iRoPE (2025)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import attention, nope


def test_no_positions_is_the_identity():
    x = np.arange(12.0).reshape(4, 3)
    assert nope.no_positions(x) is x
    np.testing.assert_array_equal(nope.no_positions(x), np.arange(12.0).reshape(4, 3))


# --- the causal mask counts ------------------------------------------------------------


def test_uniform_causal_weights_are_what_attention_gives_for_equal_scores():
    n = 9
    zeros = np.zeros((n, 4))
    _, weights = attention.scaled_dot_product_attention(zeros, zeros, np.eye(n), mask=attention.causal_mask(n))
    np.testing.assert_allclose(nope.uniform_causal_weights(n), weights, atol=1e-15)
    for i in range(n):
        for j in range(n):
            assert nope.uniform_causal_weights(n)[i, j] == (1 / (i + 1) if j <= i else 0.0)


def test_position_is_read_back_exactly_from_a_causal_head():
    n = 2000
    zeros = np.zeros((n, 2))
    v = np.zeros((n, 1))
    v[0] = 1.0  # the first token carries a marker
    out, _ = attention.scaled_dot_product_attention(zeros, zeros, v, mask=attention.causal_mask(n))
    np.testing.assert_allclose(out[:, 0], 1.0 / np.arange(1, n + 1), rtol=1e-14)
    np.testing.assert_array_equal(nope.read_position(out[:, 0]), np.arange(n))
    np.testing.assert_array_equal(nope.read_position(nope.position_signal(n)), np.arange(n))


def test_without_the_mask_every_row_is_the_same():
    n = 50
    signal = nope.position_signal(n, causal=False)
    np.testing.assert_allclose(signal, np.full(n, 1 / n), rtol=1e-15)
    assert len(set(nope.read_position(signal).tolist())) == 1  # one answer for every position
    rng = np.random.default_rng(0)
    x, w_q, w_k, w_v = rng.normal(size=(n, 3)), *rng.normal(size=(3, 3, 3))
    perm = rng.permutation(n)
    out, _ = attention.self_attention(x, w_q, w_k, w_v)
    out_perm, _ = attention.self_attention(x[perm], w_q, w_k, w_v)
    np.testing.assert_allclose(out_perm, out[perm], atol=1e-12)  # reorder in, reorder out: no position
    np.testing.assert_allclose(nope.uniform_bidirectional_weights(4), np.full((4, 4), 0.25))


@settings(max_examples=100, deadline=None)
@given(i=st.integers(0, 10**6))
def test_read_position_inverts_one_over_i_plus_one(i):
    assert nope.read_position([1.0 / (i + 1)])[0] == i


@pytest.mark.parametrize("signal", [[0.0], [-0.5], [1.5], [0.4], [float("nan")]])
def test_read_position_rejects_values_that_are_not_one_over_a_count(signal):
    with pytest.raises(ValueError, match="signal"):
        nope.read_position(signal)


# --- Llama 4 iRoPE -------------------------------------------------------------------


def test_irope_every_fourth_layer_is_position_free():
    pattern = nope.irope_layer_pattern(48)
    hf_no_rope_layers = [int((layer + 1) % 4 != 0) for layer in range(48)]  # 1 = uses RoPE
    assert pattern == ["rope" if flag else "nope" for flag in hf_no_rope_layers]
    assert [i for i, kind in enumerate(pattern) if kind == "nope"] == list(range(3, 48, 4))
    assert nope.irope_layer_pattern(8) == ["rope", "rope", "rope", "nope"] * 2
    assert nope.irope_layer_pattern(3) == ["rope"] * 3
    assert nope.irope_layer_pattern(5, nope_every=1) == ["nope"] * 5


def test_attention_temperature_matches_llama4_formula():
    positions = np.array([0, 1, 8190, 8191, 16382, 16383, 100_000, 10_000_000 - 1])
    expected = [math.log(math.floor((p + 1) / 8192) + 1) * 0.1 + 1 for p in positions]
    got = nope.attention_temperature(positions)
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    assert np.all(nope.attention_temperature(np.arange(8191)) == 1.0)  # short contexts untouched
    assert got[3] == pytest.approx(1 + 0.1 * math.log(2), rel=1e-15)  # first step at position 8191
    assert got[-1] == pytest.approx(1 + 0.1 * math.log(1221), rel=1e-15)  # 10M tokens
    steps = nope.attention_temperature(np.arange(0, 200_000, 97))
    assert np.all(np.diff(steps) >= 0)
    np.testing.assert_allclose(nope.attention_temperature([9], floor_scale=5, attn_scale=2.0), 1 + 2 * math.log(3))


# --- bad input -----------------------------------------------------------------------


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="n must be"):
        nope.uniform_causal_weights(0)
    with pytest.raises(ValueError, match="causal"):
        nope.position_signal(3, causal="yes")
    with pytest.raises(ValueError, match="n_layers"):
        nope.irope_layer_pattern(0)
    with pytest.raises(ValueError, match="nope_every"):
        nope.irope_layer_pattern(4, nope_every=0)
    with pytest.raises(ValueError, match="positions"):
        nope.attention_temperature([-1])
    with pytest.raises(ValueError, match="positions"):
        nope.attention_temperature([1.5])
    with pytest.raises(ValueError, match="floor_scale"):
        nope.attention_temperature([1], floor_scale=0)
    with pytest.raises(ValueError, match="attn_scale"):
        nope.attention_temperature([1], attn_scale=-0.1)
