"""companion.sparse: the lightning indexer, selected keys, compressed entries and the output turned back."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from companion import rope, sparse, symbolic


def test_indexer_scores_are_the_weighted_relu_of_rotated_dot_products():
    rng = np.random.default_rng(0)
    n, heads, width = 6, 3, 8
    q, k, w = rng.normal(size=(n, heads, width)), rng.normal(size=(n, width)), rng.normal(size=(n, heads))
    theta = rope.inv_freq(4)
    got = sparse.indexer_scores(q, k, w, theta)
    for t in range(n):
        for s in range(n):
            if s > t:
                assert got[t, s] == -np.inf
                continue
            qt = np.concatenate([rope.rotate(q[t, :, :4], t, theta, "split"), q[t, :, 4:]], axis=-1)
            ks = np.concatenate([rope.rotate(k[s, :4], s, theta, "split"), k[s, 4:]])
            assert np.isclose(got[t, s], w[t] @ np.maximum(qt @ ks, 0.0), rtol=1e-12, atol=1e-12)


def test_the_indexer_is_relative_in_its_own_layout_and_its_layout_matters():
    rng = np.random.default_rng(1)
    n, heads, width = 8, 2, 8
    q, k, w = rng.normal(size=(n, heads, width)), rng.normal(size=(n, width)), rng.normal(size=(n, heads))
    theta = rope.inv_freq(4)
    split, adjacent = sparse.indexer_scores(q, k, w, theta, "split"), sparse.indexer_scores(q, k, w, theta, "adjacent")
    finite = np.isfinite(split)
    assert np.abs(split[finite] - adjacent[finite]).max() > 0.1


def test_selected_keys_keep_the_top_k_finite_scores():
    scores = np.array([[1.0, -np.inf, -np.inf], [0.5, 2.0, -np.inf], [3.0, 1.0, 2.0]])
    np.testing.assert_array_equal(sparse.selected_keys(scores, 2),
                                  [[True, False, False], [True, True, False], [True, False, True]])
    # ties go to the earlier key
    np.testing.assert_array_equal(sparse.selected_keys(np.array([[1.0, 1.0, 1.0]] * 3), 2)[0], [True, True, False])


def test_pooled_entries_are_softmax_weighted_sums_per_window():
    rng = np.random.default_rng(2)
    kv, gate, bias = rng.normal(size=(9, 3)), rng.normal(size=(9, 3)), rng.normal(size=(4, 3))
    got = sparse.pooled_entries(kv, gate, bias, 4)
    assert got.shape == (2, 3)
    for i in range(2):
        z = gate[4 * i:4 * i + 4] + bias
        weights = np.exp(z) / np.exp(z).sum(axis=0)
        np.testing.assert_allclose(got[i], (weights * kv[4 * i:4 * i + 4]).sum(axis=0), rtol=1e-12)


def test_entries_sit_at_the_start_of_their_window_and_are_seen_once_it_is_past():
    assert sparse.entry_positions(10, 4).tolist() == [0, 4]
    mask = sparse.entry_mask(10, 2, 4)
    assert mask[:3].sum() == 0 and mask[3].tolist() == [True, False] and mask[7].tolist() == [True, True]
    # every visible entry is at least m - 1 and at most t tokens back
    t, starts = np.arange(40)[:, None], sparse.entry_positions(40, 4)[None, :]
    distances = np.where(sparse.entry_mask(40, 10, 4), t - starts, -1)
    assert distances[distances >= 0].min() == 3 and distances.max() == 39


def test_unrotate_inverts_rotate_and_turns_a_value_by_its_distance():
    rng = np.random.default_rng(3)
    theta = rope.inv_freq(8)
    x = rng.normal(size=(5, 8))
    for layout in rope.LAYOUTS:
        np.testing.assert_allclose(sparse.unrotate(rope.rotate(x, np.arange(5), theta, layout), np.arange(5), theta,
                                                   layout), x, atol=1e-12)
    # R_{-t} sum_n w_n R_n v_n = sum_n w_n R_{n - t} v_n, for t = 4
    w = rng.random(5)
    left = sparse.unrotate((w[:, None] * rope.rotate(x, np.arange(5), theta)).sum(0), 4, theta)
    right = sum(w[n] * sparse.unrotate(x[n], 4 - n, theta) for n in range(5))
    np.testing.assert_allclose(left, right, atol=1e-12)
    t_, n_, phi = sp.symbols("t n phi", real=True)
    R = lambda a: symbolic.rotation_matrix(a, [phi])  # noqa: E731
    assert symbolic.is_zero_matrix((R(-t_) * R(n_) - R(n_ - t_)).applyfunc(lambda e: sp.simplify(sp.expand_trig(e))))


@pytest.mark.parametrize("call", [
    lambda: sparse.indexer_scores(np.zeros((3, 2, 4)), np.zeros((3, 5)), np.zeros((3, 2)), rope.inv_freq(4)),
    lambda: sparse.indexer_scores(np.zeros((3, 2, 4)), np.zeros((3, 4)), np.zeros((3, 2)), rope.inv_freq(6)),
    lambda: sparse.selected_keys(np.zeros((2, 3)), 1),
    lambda: sparse.pooled_entries(np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((4, 2)), 4),
    lambda: sparse.entry_mask(4, 2, 0),
])
def test_bad_arguments_are_refused_by_name(call):
    with pytest.raises(ValueError, match="must"):
        call()
