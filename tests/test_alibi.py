"""Tests for companion.alibi (Press, Smith & Lewis 2022)."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from companion import alibi, alibi_torch, attention

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _authors_get_slopes(n):
    """Literal transcription of get_slopes from the authors' fairseq code."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    extra = _authors_get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    return get_slopes_power_of_2(closest_power_of_2) + extra


# --- slopes --------------------------------------------------------------------------------


def test_eight_heads_give_one_half_to_one_256th():
    np.testing.assert_array_equal(alibi.slopes(8), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256])


@pytest.mark.parametrize("n_heads", [1, 2, 4, 16, 64])
def test_power_of_two_heads_follow_the_paper(n_heads):
    h = np.arange(1, n_heads + 1)
    np.testing.assert_allclose(alibi.slopes(n_heads), 2.0 ** (-8 * h / n_heads), rtol=1e-14)


@pytest.mark.parametrize("n_heads", [3, 5, 6, 7, 12, 20, 24, 40, 96])
def test_other_head_counts_follow_the_authors_code(n_heads):
    np.testing.assert_allclose(alibi.slopes(n_heads), _authors_get_slopes(n_heads), rtol=1e-14)


def test_twelve_heads_spelled_out():
    # the 8 slopes for 8 heads, then the 1st, 3rd, 5th, 7th slope for 16 heads
    expected = [2.0**-h for h in range(1, 9)] + [2.0 ** (-k / 2) for k in (1, 3, 5, 7)]
    np.testing.assert_allclose(alibi.slopes(12), expected, rtol=1e-15)


# --- bias -------------------------------------------------------------------------------------


def test_bias_literal_loop_with_cached_keys():
    n_heads, n_q, n_k = 4, 3, 5
    m = alibi.slopes(n_heads)
    got = alibi.bias(n_heads, n_q, n_k)
    assert got.shape == (n_heads, n_q, n_k)
    for h in range(n_heads):
        for r in range(n_q):
            i = r + n_k - n_q
            for j in range(n_k):
                if j <= i:
                    assert got[h, r, j] == -m[h] * (i - j)
                else:
                    assert got[h, r, j] == -np.inf


def test_unmasked_bias_with_separate_causal_mask_gives_the_same_attention():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4, 6, 5))
    folded = alibi.bias(4, 6)
    plain = alibi.bias(4, 6, mask_future=False)
    assert np.all(np.isfinite(plain))
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask=attention.causal_mask(6), bias=plain)
    expected = attention.softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(5) + folded)
    np.testing.assert_allclose(weights, expected, atol=1e-14)
    np.testing.assert_allclose(out, expected @ v, atol=1e-14)


def test_authors_row_constant_form_gives_the_same_softmax():
    rng = np.random.default_rng(1)
    s = rng.normal(size=(8, 7, 7))
    m = alibi.slopes(8)
    future = np.where(attention.causal_mask(7), 0.0, -np.inf)
    authors = m[:, None, None] * np.arange(7)[None, None, :] + future  # m * j, one row repeated
    np.testing.assert_allclose(attention.softmax(s + authors), attention.softmax(s + alibi.bias(8, 7)), atol=1e-14)


@settings(max_examples=50, deadline=None)
@given(
    s=arrays(np.float64, (6, 6), elements=st.floats(-5, 5)),
    head=st.integers(0, 7),
)
def test_adding_the_penalty_multiplies_by_exp_and_renormalises(s, head):
    m = alibi.slopes(8)[head]
    causal = attention.causal_mask(6)
    lhs = attention.softmax(s + alibi.bias(8, 6)[head])
    base = attention.softmax(np.where(causal, s, -np.inf))
    i, j = np.indices((6, 6))
    rhs = base * np.exp(-m * (i - j)) * causal
    rhs /= rhs.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)


def test_steep_heads_look_near_gentle_heads_look_far():
    n = 64
    weights = attention.softmax(alibi.bias(8, n))  # all content scores equal
    i, j = np.indices((n, n))
    mean_distance = np.sum(weights * np.maximum(i - j, 0), axis=-1)[:, -1]
    assert np.all(np.diff(mean_distance) > 0)  # head 1 (slope 1/2) nearest, head 8 farthest
    k = np.arange(n)
    for m, got in zip(alibi.slopes(8), mean_distance):  # last row: weights proportional to exp(-m k)
        assert got == pytest.approx(np.sum(k * np.exp(-m * k)) / np.sum(np.exp(-m * k)), rel=1e-12)
    assert mean_distance[0] == pytest.approx(1 / (math.exp(0.5) - 1), rel=1e-9)  # geometric tail


# --- equal-content weights, tails and spans --------------------------------------------------


def _brute_force_last_row(n_heads, n_keys):
    """Reference: softmax of the bias for the newest query, reordered by distance."""
    weights = attention.softmax(alibi.bias(n_heads, 1, n_keys))[:, 0, :]  # (H, n_keys), key order
    return weights[:, ::-1]  # column k = distance k


@pytest.mark.parametrize("n_heads, n_keys", [(1, 1), (8, 1), (8, 7), (12, 50), (8, 600)])
def test_distance_weights_are_the_softmax_of_the_bias(n_heads, n_keys):
    got = alibi.distance_weights(n_heads, n_keys)
    assert got.shape == (n_heads, n_keys)
    np.testing.assert_allclose(got, _brute_force_last_row(n_heads, n_keys), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-13)


def test_distance_weights_decay_geometrically():
    got = alibi.distance_weights(8, 40)
    ratios = got[:, 1:] / got[:, :-1]
    np.testing.assert_allclose(ratios, np.exp(-alibi.slopes(8))[:, None] * np.ones((1, 39)), rtol=1e-13)


@pytest.mark.parametrize("n_heads, n_keys, distance", [(8, 10, 0), (8, 10, 9), (8, 2048, 1024), (12, 300, 17)])
def test_tail_weight_sums_the_softmax_tail(n_heads, n_keys, distance):
    expected = _brute_force_last_row(n_heads, n_keys)[:, distance:].sum(axis=-1)
    np.testing.assert_allclose(alibi.tail_weight(n_heads, n_keys, distance), expected, rtol=1e-11, atol=1e-300)


def test_tail_weight_closed_form_and_bound():
    m = alibi.slopes(8)
    got = alibi.tail_weight(8, 2048, 1024)
    # (e^{-mD} - e^{-mn}) / (1 - e^{-mn}), and for n = 2D this is e^{-mD} / (1 + e^{-mD})
    np.testing.assert_allclose(got, np.exp(-1024 * m) / (1 + np.exp(-1024 * m)), rtol=1e-12)
    assert np.all(got <= np.exp(-1024 * m)) and got[-1] < math.exp(-4)
    assert got[-1] == pytest.approx(math.exp(-4) / (1 + math.exp(-4)), rel=1e-12)
    np.testing.assert_array_equal(alibi.tail_weight(8, 5, 0), np.ones(8))


@pytest.mark.parametrize("n_heads, n_keys, share", [(8, 4096, 0.9), (8, 24, 0.9), (12, 1000, 0.5), (20, 300, 0.99)])
def test_effective_span_matches_the_closed_form(n_heads, n_keys, share):
    m = alibi.slopes(n_heads)
    closed = np.ceil(-np.log1p(-share * -np.expm1(-m * n_keys)) / m) - 1
    got = alibi.effective_span(n_heads, n_keys, share)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.minimum(closed, n_keys - 1).astype(np.int64))


def test_effective_span_by_brute_force():
    cumulative = np.cumsum(_brute_force_last_row(8, 4096), axis=-1)
    got = alibi.effective_span(8, 4096)
    for h, span in enumerate(got):
        assert cumulative[h, span] >= 0.9 and (span == 0 or cumulative[h, span - 1] < 0.9)
    # a long row: ceil(ln 10 / m) - 1, doubling (almost) from head to head
    np.testing.assert_array_equal(got, [4, 9, 18, 36, 73, 147, 294, 589])


def test_effective_span_is_capped_by_the_row():
    assert alibi.effective_span(8, 3, 0.9).max() <= 2
    np.testing.assert_array_equal(alibi.effective_span(4, 1, 0.5), np.zeros(4, dtype=np.int64))


def test_effective_span_at_a_share_reached_exactly_and_a_share_within_rounding_of_one():
    """The span is the smallest D whose cumulative weight is >= share: a share equal to the first
    key's weight gives 0; a share one ulp below 1, which rounding may leave above every cumulative
    weight of the row, still gives a distance inside the row (at most n_keys - 1)."""
    first = float(alibi.distance_weights(1, 2)[0, 0])
    assert alibi.effective_span(1, 2, first)[0] == 0
    assert alibi.effective_span(1, 2, np.nextafter(first, 0.0))[0] == 0
    assert alibi.effective_span(1, 2, np.nextafter(first, 1.0))[0] == 1
    spans = alibi.effective_span(8, 100, np.nextafter(1.0, 0.0))
    assert spans.max() == 99 and spans.min() >= 0


def test_a_distance_past_the_row_is_refused_with_the_row_s_range():
    with pytest.raises(ValueError, match=r"^distance must be an integer in 0\.\.9 \(n_keys - 1\), got 10$"):
        alibi.tail_weight(8, 10, 10)


def test_bad_span_arguments_are_rejected():
    with pytest.raises(ValueError, match="share"):
        alibi.effective_span(8, 10, 1.0)
    with pytest.raises(ValueError, match="share"):
        alibi.effective_span(8, 10, 0)
    with pytest.raises(ValueError, match="share"):
        alibi.effective_span(8, 10, "0.9")
    with pytest.raises(ValueError, match="distance"):
        alibi.tail_weight(8, 10, 10)
    with pytest.raises(ValueError, match="distance"):
        alibi.tail_weight(8, 10, -1)
    with pytest.raises(ValueError, match="distance"):
        alibi.tail_weight(8, 10, 2.0)
    with pytest.raises(ValueError, match="n_keys"):
        alibi.distance_weights(8, 0)
    with pytest.raises(ValueError, match="n_heads"):
        alibi.distance_weights(0, 5)


# --- torch layer ----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n_heads, n_q, n_k", [(8, 6, 6), (12, 3, 7)])
def test_module_agrees_with_numpy(device, n_heads, n_q, n_k):
    ref = alibi.bias(n_heads, n_q, n_k)
    layer = alibi_torch.ALiBi(n_heads).to(device)
    got32 = layer(n_q, n_k)
    assert got32.shape == ref.shape and got32.device.type == device and got32.dtype == torch.float32
    np.testing.assert_allclose(got32.cpu().numpy(), ref, atol=1e-5, rtol=0)
    got64 = layer.double()(n_q, n_k)
    np.testing.assert_allclose(got64.cpu().numpy(), ref, atol=1e-12, rtol=0)
    np.testing.assert_array_equal(np.isinf(got64.cpu().numpy()), np.isinf(ref))
    assert layer.state_dict() == {}  # nothing to learn or save


def test_module_builds_on_the_buffer_device():
    assert alibi_torch.ALiBi(4).to("meta")(3, 5).device.type == "meta"


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("n_heads", [0, -2, 2.5, True])
def test_bad_head_counts_are_rejected(n_heads):
    with pytest.raises(ValueError, match="n_heads"):
        alibi.slopes(n_heads)
    with pytest.raises(ValueError, match="n_heads"):
        alibi_torch.ALiBi(n_heads)


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="n_keys must be >= n_queries"):
        alibi.bias(2, 5, 3)
    with pytest.raises(ValueError, match="n_keys must be >= n_queries"):
        alibi_torch.ALiBi(2)(5, 3)
    with pytest.raises(ValueError, match="n_queries"):
        alibi.bias(2, 0)
    with pytest.raises(ValueError, match="mask_future"):
        alibi.bias(2, 3, mask_future="no")


def test_alibi_layer_slopes_stay_exact_through_float32_and_back():
    # 12 heads have slopes 2^(-k/2), which float32 cannot hold: the layer recomputes them.
    layer = alibi_torch.ALiBi(12).float().double()
    assert torch.equal(layer(5, 7), torch.from_numpy(alibi.bias(12, 5, 7)))
