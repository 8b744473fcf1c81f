"""companion.remap: ReRoPE, Leaky ReRoPE and Dual Chunk Attention as remapped distances."""
from __future__ import annotations

import numpy as np
import pytest

from companion import remap, rope


def rows(seed, n=30, d=16):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, d)), rope.inv_freq(d)


def causal(a, n):
    return np.where(remap.relative_distances(n) >= 0, a, 0.0)


def test_remapped_scores_with_the_true_distances_are_rope_scores():
    q, k, theta = rows(0)
    plain = rope.rotate(q, np.arange(30), theta, "split") @ rope.rotate(k, np.arange(30), theta, "split").T
    ours = remap.remapped_scores(q, k, theta, remap.relative_distances(30))
    np.testing.assert_allclose(causal(ours, 30), causal(plain, 30), atol=1e-11)


@pytest.mark.parametrize("seed,window", [(1, 4), (2, 7), (3, 29)])
def test_rerope_two_passes_equal_the_remapped_distance(seed, window):
    q, k, theta = rows(seed)
    D = remap.rerope_distance(np.maximum(remap.relative_distances(30), 0), window)
    np.testing.assert_allclose(causal(remap.rerope_two_pass(q, k, theta, window), 30),
                               causal(remap.remapped_scores(q, k, theta, D), 30), atol=1e-11)


@pytest.mark.parametrize("seed,window,leak", [(4, 4, 2), (5, 6, 16), (6, 3, 5)])
def test_leaky_rerope_two_passes_equal_the_remapped_distance(seed, window, leak):
    q, k, theta = rows(seed)
    D = remap.leaky_rerope_distance(np.maximum(remap.relative_distances(30), 0), window, leak)
    np.testing.assert_allclose(causal(remap.rerope_two_pass(q, k, theta, window, leak=leak), 30),
                               causal(remap.remapped_scores(q, k, theta, D), 30), atol=1e-11)


def test_rerope_distances():
    delta = np.arange(10)
    assert remap.rerope_distance(delta, 4).tolist() == [0, 1, 2, 3, 4, 4, 4, 4, 4, 4]
    np.testing.assert_allclose(remap.leaky_rerope_distance(delta, 4, 2), [0, 1, 2, 3, 4, 4.5, 5, 5.5, 6, 6.5])
    np.testing.assert_array_equal(remap.leaky_rerope_distance(delta, 4, 1), delta)


def test_dca_matrix_of_the_papers_figure():
    """s = 6, c = 10, w = 4 (An et al. 2024, figure 2): distances stop at 9."""
    M = remap.dca_distances(18, 6, 10)
    assert M.max() == 9
    # the first chunk is plain RoPE
    np.testing.assert_array_equal(M[:6, :6], remap.relative_distances(6))
    # query 6 (first of chunk 2) sees the previous chunk's keys at 6 - (0..5): exact distances
    assert M[6, :6].tolist() == [6, 5, 4, 3, 2, 1]
    # query 10 (fifth of chunk 2) is capped at c - 1 = 9 against the previous chunk
    assert M[10, :6].tolist() == [9, 8, 7, 6, 5, 4]
    # query 12 (chunk 3) sees chunk 1 through the inter-chunk index c - 1 = 9
    assert M[12, :6].tolist() == [9, 8, 7, 6, 5, 4]
    # the w = 4 nearest keys of the previous chunk always keep their true distance
    delta = remap.relative_distances(18)
    assert np.all((M == delta)[(delta >= 0) & (delta <= 4)])


@pytest.mark.parametrize("n,chunk,trained", [(40, 6, 10), (50, 12, 16), (33, 5, 32)])
def test_dca_three_query_rotations_equal_the_remapped_distance(n, chunk, trained):
    q, k, theta = rows(n, n=n)
    M = remap.dca_distances(n, chunk, trained)
    assert M.max() <= trained - 1
    np.testing.assert_allclose(remap.dca_scores(q, k, theta, chunk, trained),
                               causal(remap.remapped_scores(q, k, theta, M), n), atol=1e-11)


def test_logn_scale():
    s = remap.logn_scale(np.array([0, 4094, 4095, 65535]), 4096)
    assert s[:3].tolist() == [1.0, 1.0, 1.0] and np.isclose(s[3], 16 / 12)


@pytest.mark.parametrize("call", [
    lambda: remap.rerope_distance([-1, 2], 4),
    lambda: remap.rerope_distance([1, 2], 0),
    lambda: remap.leaky_rerope_distance([1, 2], 4, 0.5),
    lambda: remap.dca_distances(10, 10, 10),
    lambda: remap.dca_query_positions(10, 0, 10),
    lambda: remap.remapped_scores(np.ones((3, 8)), np.ones((3, 8)), rope.inv_freq(8), np.zeros((3, 2))),
    lambda: remap.remapped_scores(np.ones((3, 6)), np.ones((3, 8)), rope.inv_freq(8), np.zeros((3, 3))),
    lambda: remap.logn_scale([1, 2], 1),
])
def test_bad_arguments_are_refused_by_name(call):
    with pytest.raises(ValueError, match="must"):
        call()


def test_relative_distances_of_three_tokens():
    np.testing.assert_array_equal(remap.relative_distances(3), [[0, -1, -1], [1, 0, -1], [2, 1, 0]])


def test_distances_of_the_wrong_shape_are_refused_with_the_shape_wanted():
    q, k, theta = rows(0, n=3, d=8)
    with pytest.raises(ValueError, match=r"^distances must have shape \(n_q, n_k\) = \(3, 3\), got \(2, 3\)$"):
        remap.remapped_scores(q, k, theta, np.zeros((2, 3)))


@pytest.mark.parametrize("n,window,leak", [(5, 8, None), (30, 8, None), (30, 8, 4), (64, 16, 2), (9, 3, 16)])
def test_rerope_from_two_cached_copies_is_exact_and_rotates_no_key_again(n, window, leak):
    rng = np.random.default_rng(n)
    theta = rope.inv_freq(16)
    q, k = rng.normal(size=(n, 16)), rng.normal(size=(n, 16))
    distances = np.maximum(remap.relative_distances(n), 0)
    mapped = remap.rerope_distance(distances, window) if leak is None else \
        remap.leaky_rerope_distance(distances, window, leak)
    full = remap.remapped_scores(q, k, theta, mapped)
    near, far = remap.rerope_cache(k, window, theta, leak)
    # the cache of the first m keys is the first m rows of the cache of all n: it never changes
    near_m, far_m = remap.rerope_cache(k[: n // 2 + 1], window, theta, leak)
    np.testing.assert_array_equal(near[: n // 2 + 1], near_m)
    np.testing.assert_array_equal(far[: n // 2 + 1], far_m)
    for t in range(n):
        np.testing.assert_allclose(remap.rerope_step(q[t], near[: t + 1], far[: t + 1], window, theta, leak),
                                   full[t, : t + 1], atol=1e-11)


def test_released_dca_settings_reproduce_the_released_index_rule():
    """chunkllama_attn_replace.py: keys at n mod chunk_len; queries at m mod chunk_len, at
    min(m mod chunk_len + chunk_len, chunk_size) and at chunk_size, chunk_size = 3L/4, local_window = L/16."""
    # the rule is the same at every L; L = 4,096 (Llama 2's) is checked on its settings below, its
    # 8,455 x 8,455 matrix of distances being the rule of the smaller ones at 16 times the work
    for L, local in ((64, None), (256, None), (128, 3), (1024, None)):
        chunk_size = 3 * L // 4
        window = L // 16 if local is None else local
        chunk_len = chunk_size - window
        n = 3 * chunk_len + 7
        m = np.arange(n)
        block = m // chunk_len
        gap = block[:, None] - block[None, :]
        query = np.where(gap == 0, (m % chunk_len)[:, None],
                         np.where(gap == 1, np.minimum(m % chunk_len + chunk_len, chunk_size)[:, None], chunk_size))
        code = np.where(m[:, None] >= m[None, :], query - (m % chunk_len)[None, :], -1)
        chunk, trained = remap.dca_released_settings(L, local)
        np.testing.assert_array_equal(remap.dca_distances(n, chunk, trained), code)
        assert code.max() == chunk_size == trained - 1
    assert remap.dca_released_settings(4096) == (2816, 3073)


@pytest.mark.parametrize("chunk,trained", [(s, c) for c in range(2, 25) for s in range(1, c)])
def test_what_dca_keeps_holds_for_every_small_setting(chunk, trained):
    """(a) distances in [0, c - 1]; (b) exact within a chunk, and every distance <= w exact when w <= s;
    (c) a distance that is not exact is at least w."""
    n = 3 * trained + 5
    d = remap.dca_distances(n, chunk, trained)
    true = remap.relative_distances(n)
    causal = true >= 0
    w = trained - chunk
    assert d[causal].min() >= 0 and d[causal].max() <= trained - 1
    same_chunk = causal & ((np.arange(n)[:, None] // chunk) == (np.arange(n)[None, :] // chunk))
    assert (d[same_chunk] == true[same_chunk]).all()
    wrong = causal & (d != true)
    assert (d[wrong] >= w).all()
    near = causal & (true <= w)
    if w <= chunk:
        assert (d[near] == true[near]).all()
    elif (d[near] != true[near]).any():
        assert w > chunk        # the hypothesis w <= s is needed: without it a near distance can be remapped


def test_without_w_at_most_s_a_near_distance_is_remapped():
    d, true = remap.dca_distances(30, 2, 6), remap.relative_distances(30)
    near = (true >= 0) & (true <= 4)
    assert (d[near] != true[near]).any()
