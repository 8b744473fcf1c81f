"""companion.sinks: a softmax with a sink, gpt-oss's attention, StreamingLLM's cache, and chapter 5's count."""
from __future__ import annotations

import numpy as np
import pytest

from companion import attention, nope, rope, sinks


def test_softmax_with_sink_is_the_softmax_of_the_row_with_the_sink_appended():
    rng = np.random.default_rng(0)
    scores, z = rng.normal(size=(3, 5)), rng.normal(size=3)
    full = attention.softmax(np.concatenate([scores, z[:, None]], axis=1))
    np.testing.assert_allclose(sinks.softmax_with_sink(scores, z[:, None][:, 0]), full[:, :-1], rtol=1e-13)
    np.testing.assert_allclose(sinks.sink_weight(scores, z), full[:, -1], rtol=1e-12)
    np.testing.assert_allclose(sinks.softmax_with_sink(scores, z).sum(axis=1) + sinks.sink_weight(scores, z), 1.0)


def test_a_sink_of_minus_infinity_is_the_plain_softmax_and_large_logits_do_not_overflow():
    s = np.array([[1.0, 2.0, -np.inf]])
    np.testing.assert_allclose(sinks.softmax_with_sink(s, -np.inf), attention.softmax(s))
    w = sinks.softmax_with_sink(np.array([[800.0, 799.0]]), 801.0)
    assert np.isfinite(w).all() and np.isclose(w.sum() + sinks.sink_weight([[800.0, 799.0]], 801.0), 1.0)


def test_attention_with_sink_scales_the_plain_output_by_the_kept_mass_when_scores_are_equal():
    rng = np.random.default_rng(1)
    k = np.zeros((6, 4))
    q, v = rng.normal(size=(6, 4)), rng.normal(size=(6, 3))
    mask = attention.causal_mask(6)
    out, w = sinks.attention_with_sink(q, k, v, 0.7, mask)
    plain, _ = attention.scaled_dot_product_attention(q, k, v, mask)
    kept = sinks.counted_mass(6, 0.7)
    np.testing.assert_allclose(out, plain * kept[:, None], rtol=1e-12)
    np.testing.assert_allclose(w, sinks.uniform_weights_with_sink(6, 0.7), rtol=1e-12)


def test_without_a_sink_the_weights_are_chapter_fives():
    equal_scores = np.where(attention.causal_mask(7), 0.0, -np.inf)
    np.testing.assert_allclose(sinks.softmax_with_sink(equal_scores, -np.inf), nope.uniform_causal_weights(7))


@pytest.mark.parametrize("z", [-3.0, 0.0, 1.5, 4.0])
def test_the_count_is_read_back_exactly_from_constant_values(z):
    mass = sinks.counted_mass(200, z)
    assert np.all(np.diff(mass) > 0)
    np.testing.assert_allclose(sinks.read_count(mass, z), np.arange(200), atol=1e-7)


def test_a_marked_first_token_reads_as_a_shifted_count_through_chapter_fives_reader():
    """Chapter 5's reader, given a head with a sink, is off by e^z: 1/(i + 1 + e^z) is read as i + e^z."""
    z = np.log(3.0)
    w = sinks.uniform_weights_with_sink(10, z)
    signal = w[:, 0]                       # the first token's value is 1, the others 0
    np.testing.assert_allclose(1 / signal - 1, np.arange(10) + 3.0, rtol=1e-12)


def test_streaming_cache_keeps_the_sinks_and_the_window_and_renumbers_them():
    kept, positions = sinks.streaming_cache(12, window=5)
    assert kept.tolist() == [0, 1, 2, 3, 7, 8, 9, 10, 11] and positions.tolist() == list(range(9))
    kept, _ = sinks.streaming_cache(6, window=5)
    assert kept.tolist() == list(range(6))
    kept, _ = sinks.streaming_cache(100, window=10, n_sink=0)
    assert kept.tolist() == list(range(90, 100))
    # the paper's example: cache [0, 1, 2, 3, 6, 7, 8] and the 9th token get positions 0..7
    kept, positions = sinks.streaming_cache(10, window=4)
    assert kept.tolist() == [0, 1, 2, 3, 6, 7, 8, 9] and positions.tolist() == list(range(8))


@pytest.mark.parametrize("call", [
    lambda: sinks.softmax_with_sink([[1.0, 2.0]], [1.0, 2.0, 3.0]),
    lambda: sinks.softmax_with_sink([[-np.inf, -np.inf]], -np.inf),
    lambda: sinks.softmax_with_sink([[np.nan, 1.0]], 0.0),
    lambda: sinks.attention_with_sink(np.ones((2, 4)), np.ones((3, 4)), np.ones((2, 4)), 0.0),
    lambda: sinks.counted_mass(0, 1.0),
    lambda: sinks.counted_mass(5, [1.0, 2.0]),
    lambda: sinks.read_count([0.5, 1.0], 0.0),
    lambda: sinks.streaming_cache(10, window=0),
    lambda: sinks.streaming_cache(10, window=4, n_sink=-1),
])
def test_bad_arguments_are_refused_by_name(call):
    with pytest.raises(ValueError, match="must"):
        call()


def test_sinks_of_several_heads_act_row_by_row():
    """Scores (heads, queries, keys) with one sink logit per row: every row is the 2-D case."""
    rng = np.random.default_rng(5)
    scores, z = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 3))
    w, s = sinks.softmax_with_sink(scores, z), sinks.sink_weight(scores, z)
    assert w.shape == (2, 3, 5) and s.shape == (2, 3)
    for h in range(2):
        np.testing.assert_allclose(w[h], sinks.softmax_with_sink(scores[h], z[h]), rtol=1e-14)
        np.testing.assert_allclose(s[h], sinks.sink_weight(scores[h], z[h]), rtol=1e-14)


def test_attention_with_sink_of_several_heads_divides_by_the_square_root_of_the_width():
    rng = np.random.default_rng(6)
    q, k, v = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 3, 4))
    out, weights = sinks.attention_with_sink(q, k, v, np.array([0.5, -1.0]))
    for h, z in enumerate((0.5, -1.0)):
        expected = sinks.softmax_with_sink(q[h] @ k[h].T / np.sqrt(8), z)
        np.testing.assert_allclose(weights[h], expected, rtol=1e-13)
        np.testing.assert_allclose(out[h], expected @ v[h], rtol=1e-13)


def test_one_row_with_nothing_to_attend_to_is_refused():
    scores = np.array([[0.0, 1.0], [-np.inf, -np.inf]])
    with pytest.raises(ValueError, match=r"^scores and sink_logit must leave every row something to attend to$"):
        sinks.softmax_with_sink(scores, np.array([0.0, -np.inf]))
    np.testing.assert_allclose(sinks.softmax_with_sink(scores, np.array([-np.inf, 0.0]))[1], [0.0, 0.0])


@pytest.mark.parametrize("n,window,n_sink", [(3, 6, 4), (10, 6, 4), (11, 6, 4), (57, 6, 4), (2000, 16, 1),
                                             (300, 8, 0)])
def test_a_cache_of_rotated_keys_gives_streamingllms_scores_with_the_query_turned_twice(n, window, n_sink):
    rng = np.random.default_rng(n)
    theta = rope.inv_freq(16, 500.0)
    k, q = rng.normal(size=(n, 16)), rng.normal(size=16)
    rotated_once = rope.rotate(k, np.arange(n), theta, "split")
    expected = sinks.streaming_scores(q, k, window, theta, n_sink)
    np.testing.assert_allclose(sinks.streaming_scores_cached(q, rotated_once, window, theta, n_sink), expected,
                               atol=1e-11 * n)
    # the score of a sink is not the score at its text distance: a single rotation of the query would be wrong
    if n > n_sink + window and n_sink:
        naive = rotated_once[:n_sink] @ rope.rotate(q, n - 1, theta, "split")
        assert np.abs(naive - expected[:n_sink]).max() > 1e-3


def test_streaming_scores_follow_their_definition():
    rng = np.random.default_rng(7)
    theta = rope.inv_freq(8)
    k, q = rng.normal(size=(20, 8)), rng.normal(size=8)
    kept, cache = sinks.streaming_cache(20, 5, 2)
    expected = [rope.score(q, k[j], cache[-1], c, theta, "split") for j, c in zip(kept, cache)]
    np.testing.assert_allclose(sinks.streaming_scores(q, k, 5, theta, 2), expected, rtol=1e-12)
