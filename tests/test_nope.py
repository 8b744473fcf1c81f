"""Tests for companion.nope: Haviv et al. (2022) and Llama 4's iRoPE (2025)."""
import math

import numpy as np
import pytest
import torch
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


# --- attention fading and the query scale ----------------------------------------------


def test_single_key_weight_is_the_softmax_entry():
    for n, margin, scale in [(1, 0.0, 1.0), (2, 0.0, 1.0), (5, 1.3, 1.0), (40, 2.0, 1.7), (1000, 9.0, 0.5)]:
        scores = np.zeros(n)
        scores[n // 2] = margin
        expected = attention.softmax(scale * scores)[n // 2]
        assert nope.single_key_weight(n, margin, scale) == pytest.approx(expected, rel=1e-13)
    assert nope.single_key_weight(10, 0.0) == pytest.approx(0.1)  # no lead: uniform, 1/n
    n = np.array([8192, 10_000_000])
    got = nope.single_key_weight(n, math.log(8191))
    np.testing.assert_allclose(got, 8191 / (8191 + n - 1), rtol=1e-13)
    grid = nope.single_key_weight(np.array([[10], [100]]), np.array([0.5, 1.0, 2.0]), 2.0)
    assert grid.shape == (2, 3) and grid.dtype == np.float64
    assert np.all(np.diff(nope.single_key_weight(np.arange(1, 50), 1.0)) < 0)  # fades with length


def test_single_key_weight_rejects_bad_input():
    with pytest.raises(ValueError, match="n_keys"):
        nope.single_key_weight(0, 1.0)
    with pytest.raises(ValueError, match="n_keys"):
        nope.single_key_weight(2.5, 1.0)
    with pytest.raises(ValueError, match="margin"):
        nope.single_key_weight(3, float("nan"))
    with pytest.raises(ValueError, match="scale"):
        nope.single_key_weight(3, 1.0, scale=0.0)
    with pytest.raises(ValueError, match="broadcast"):
        nope.single_key_weight(np.array([2, 3]), np.array([1.0, 2.0, 3.0]))


# --- a position-free layer and a probe ---------------------------------------------------


def _reference_layer(seed, n_sequences, n_tokens, causal, d, vocab, std, bos):
    """The same layer, written as loops over queries and keys."""
    rng = np.random.default_rng(seed)
    embedding = rng.normal(size=(vocab + 1, d))
    w_q, w_k, w_v = rng.normal(scale=std, size=(3, d, d))
    tokens = rng.integers(0, vocab, size=(n_sequences, n_tokens))
    if bos:
        tokens[:, 0] = vocab
    out = np.zeros((n_sequences, n_tokens, d))
    for b in range(n_sequences):
        x = embedding[tokens[b]]
        for i in range(n_tokens):
            keys = range(i + 1) if causal else range(n_tokens)
            scores = np.array([(x[i] @ w_q) @ (x[j] @ w_k) / math.sqrt(d) for j in keys])
            weights = np.exp(scores - scores.max())
            weights /= weights.sum()
            out[b, i] = sum(w * (x[j] @ w_v) for w, j in zip(weights, keys))
    return out, tokens


@pytest.mark.parametrize("causal", [True, False])
def test_nope_layer_outputs_match_a_loop(causal):
    got, tokens = nope.nope_layer_outputs(3, 5, causal, d_model=4, vocab_size=3, weight_std=0.7, seed=11)
    expected, expected_tokens = _reference_layer(11, 3, 5, causal, 4, 3, 0.7, True)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(tokens, expected_tokens)
    assert np.all(tokens[:, 0] == 3) and np.all(tokens[:, 1:] < 3)
    first, _ = nope.nope_layer_outputs(2, 5, causal, d_model=4, vocab_size=3, weight_std=0.7, seed=11)
    np.testing.assert_array_equal(first, got[:2])  # the layer does not depend on n_sequences


def test_causal_slot_zero_is_its_own_value_and_unmasked_rows_are_exchangeable():
    out, tokens = nope.nope_layer_outputs(4, 6, True, d_model=5, vocab_size=4, seed=2, bos=False)
    out_again, _ = nope.nope_layer_outputs(4, 6, True, d_model=5, vocab_size=4, seed=2, bos=False)
    np.testing.assert_array_equal(out, out_again)
    # unmasked: reversing a sequence's tokens reverses its output rows (chapter 0's theorem)
    rng = np.random.default_rng(2)
    embedding = rng.normal(size=(5, 5))
    w_q, w_k, w_v = rng.normal(scale=0.02, size=(3, 5, 5))
    x = embedding[tokens[0]]
    forward, _ = attention.self_attention(x, w_q, w_k, w_v)
    backward, _ = attention.self_attention(x[::-1], w_q, w_k, w_v)
    np.testing.assert_allclose(backward, forward[::-1], atol=1e-15)
    # causal: slot 0 sees only itself, so its output is its own value vector
    np.testing.assert_allclose(out[:, 0], embedding[tokens[:, 0]] @ w_v, rtol=1e-12)


def test_probe_reads_position_through_the_mask_and_not_without_it():
    causal = nope.position_probe(causal=True)
    bidirectional = nope.position_probe(causal=False)
    assert causal.predicted.shape == bidirectional.predicted.shape == (128, 16)
    assert causal.baseline_mae == pytest.approx(4.0) == bidirectional.baseline_mae  # n/4 for n = 16
    assert causal.mae < 0.5 and causal.accuracy > 0.7
    assert bidirectional.mae > 0.95 * bidirectional.baseline_mae and bidirectional.accuracy < 0.15
    assert bidirectional.mae >= nope.unmasked_probe_floor(16)
    assert np.ptp(bidirectional.predicted.mean(axis=0)) < 0.5  # the same guess for every slot
    assert causal.mae < 0.15 * bidirectional.mae


def test_probe_is_deterministic_and_leaves_torch_rng_alone():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = nope.position_probe(n_tokens=6, steps=50, n_train=32, n_test=8)
    assert torch.equal(torch.get_rng_state(), state)
    b = nope.position_probe(n_tokens=6, steps=50, n_train=32, n_test=8)
    assert a.mae == b.mae and a.accuracy == b.accuracy
    np.testing.assert_array_equal(a.predicted, b.predicted)
    c = nope.position_probe(n_tokens=6, steps=50, n_train=32, n_test=8, seed=1)
    assert not np.array_equal(a.predicted, c.predicted)


def test_probe_and_layer_reject_bad_input():
    with pytest.raises(ValueError, match="causal"):
        nope.position_probe(causal=1)
    with pytest.raises(ValueError, match="n_tokens"):
        nope.position_probe(n_tokens=1)
    with pytest.raises(ValueError, match="weight_std"):
        nope.position_probe(weight_std=0.0)
    with pytest.raises(ValueError, match="steps"):
        nope.position_probe(steps=0)
    with pytest.raises(ValueError, match="lr"):
        nope.position_probe(lr=-1.0)
    with pytest.raises(ValueError, match="seed"):
        nope.position_probe(seed=-1)
    with pytest.raises(ValueError, match="bos"):
        nope.nope_layer_outputs(2, 3, True, bos="yes")
    with pytest.raises(ValueError, match="vocab_size"):
        nope.nope_layer_outputs(2, 3, True, vocab_size=0)
    with pytest.raises(ValueError, match="n_sequences"):
        nope.nope_layer_outputs(0, 3, True)


def test_probe_restores_the_thread_count():
    before = torch.get_num_threads()
    nope.position_probe(n_tokens=4, steps=5, n_train=4, n_test=2)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("bos", [True, False])
def test_unmasked_probe_floor_is_the_best_constant_guess(bos):
    for n in range(1, 40):
        slots = np.arange(1 if bos else 0, n)
        guesses = np.linspace(0, n, 40 * n + 1)
        brute = min(np.sum(np.abs(c - slots)) for c in guesses) / n if slots.size else 0.0
        assert nope.unmasked_probe_floor(n, bos=bos) == pytest.approx(brute, abs=1e-12)
    assert nope.unmasked_probe_floor(16, bos=False) == 4.0
    assert nope.unmasked_probe_floor(16) == 3.5
    with pytest.raises(ValueError, match="n_tokens"):
        nope.unmasked_probe_floor(0)
    with pytest.raises(ValueError, match="bos"):
        nope.unmasked_probe_floor(4, bos=None)


@pytest.mark.parametrize("signal", [[0.0], [-1.0], [1.9], [2.5], [0.5, 1.9]])
def test_read_position_refuses_a_signal_outside_zero_to_one(signal):
    with pytest.raises(ValueError, match=r"^signal must lie in \(0, 1\]: a uniform causal head gives 1/\(i\+1\) at position i$"):
        nope.read_position(signal)


def test_read_position_at_the_ends_of_its_range_and_of_its_tolerance():
    """1/(2**32 + 1) is the last position of the supported range, 1/(2**32 + 2) one beyond; an entry
    exactly rtol away from 1/(i+1) still reads as i; positions come back as int64."""
    got = nope.read_position([1 / (2**32 + 1), 1.0, 0.5])
    assert got.dtype == np.int64 and got.tolist() == [2**32, 0, 1]
    with pytest.raises(ValueError, match=r"^signal must be at least 1/\(2\*\*32 \+ 1\): smaller entries stand for "
                                         r"positions beyond the supported range 0\.\.2\*\*32, got a minimum of 2\.32831e-10$"):
        nope.read_position([1 / (2**32 + 2)])
    assert nope.read_position([1.5], rtol=0.5).tolist() == [0]
    assert nope.read_position([0.75], rtol=0.5).tolist() == [0]
