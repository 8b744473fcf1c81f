"""companion.mla: decoupled RoPE scores, the absorbed form, and why a rotated compressed key cannot be absorbed."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from companion import attention, mla, rope, symbolic

H, N, NOPE, R, LATENT, V = 3, 7, 6, 4, 5, 3


def parts(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(H, N, NOPE)), rng.normal(size=(H, N, R)), rng.normal(size=(N, LATENT)),
            rng.normal(size=(N, R)), rng.normal(size=(H, NOPE, LATENT)), rng.normal(size=(H, N, V)))


def test_scores_are_an_unrotated_part_plus_a_rotated_part_with_one_shared_key():
    q_nope, q_rope, latent, k_rope, w_uk, _ = parts()
    k_nope = latent @ np.swapaxes(w_uk, -1, -2)
    theta = rope.inv_freq(R)
    s = mla.scores(q_nope, q_rope, k_nope, k_rope, np.arange(N), theta)
    for h in range(H):
        full_q = np.concatenate([q_nope[h], rope.rotate(q_rope[h], np.arange(N), theta)], axis=-1)
        full_k = np.concatenate([k_nope[h], rope.rotate(k_rope, np.arange(N), theta)], axis=-1)
        np.testing.assert_allclose(s[h], full_q @ full_k.T, rtol=1e-12, atol=1e-12)
    # only the rotated slice depends on position: shifting everything changes nothing relative
    shifted = mla.scores(q_nope, q_rope, k_nope, k_rope, np.arange(N) + 100, theta)
    np.testing.assert_allclose(shifted, s, atol=1e-10)


def test_absorbed_scores_equal_the_expanded_ones():
    q_nope, q_rope, latent, k_rope, w_uk, _ = parts(1)
    k_nope = latent @ np.swapaxes(w_uk, -1, -2)
    theta = rope.inv_freq(R, 500.0)
    for layout in rope.LAYOUTS:
        np.testing.assert_allclose(
            mla.absorbed_scores(q_nope, q_rope, latent, k_rope, w_uk, np.arange(N), theta, layout),
            mla.scores(q_nope, q_rope, k_nope, k_rope, np.arange(N), theta, layout), atol=1e-12)


def test_attention_is_a_softmax_of_the_scaled_scores():
    q_nope, q_rope, latent, k_rope, w_uk, v = parts(2)
    k_nope = latent @ np.swapaxes(w_uk, -1, -2)
    theta, mask = rope.inv_freq(R), attention.causal_mask(N)
    out, w = mla.attention(q_nope, q_rope, k_nope, k_rope, v, np.arange(N), theta, 0.3, mask=mask)
    s = 0.3 * mla.scores(q_nope, q_rope, k_nope, k_rope, np.arange(N), theta)
    np.testing.assert_allclose(w, attention.softmax(np.where(mask, s, -np.inf)), rtol=1e-12)
    np.testing.assert_allclose(out, w @ v, rtol=1e-12)
    np.testing.assert_allclose(w.sum(-1), 1.0)


def test_with_no_rotation_the_position_part_is_a_plain_dot_product():
    q_nope, q_rope, latent, k_rope, w_uk, _ = parts(3)
    k_nope = latent @ np.swapaxes(w_uk, -1, -2)
    s = mla.scores(q_nope, q_rope, k_nope, k_rope, np.arange(N), np.zeros(R // 2))
    np.testing.assert_allclose(s, q_nope @ np.swapaxes(k_nope, -1, -2) + q_rope @ k_rope.T, atol=1e-12)


def test_a_rotated_compressed_key_cannot_be_absorbed():
    """W^T R_Delta = W^T for one Delta != 0 forces W = 0: R_Delta - I is invertible."""
    phi = sp.Symbol("phi", real=True)
    R2 = symbolic.rotation_matrix(phi, [1])
    assert symbolic.is_zero(sp.simplify((R2 - sp.eye(2)).det() - 4 * sp.sin(phi / 2) ** 2))
    rng = np.random.default_rng(4)
    w_uk = rng.normal(size=(R, LATENT))
    theta = rope.inv_freq(R)
    absorbed = [rope.rotate(w_uk.T, delta, theta, "adjacent") for delta in (0, 1, 5)]
    assert np.abs(absorbed[1] - absorbed[0]).max() > 0.1 and np.abs(absorbed[2] - absorbed[0]).max() > 0.1


def test_deepseek_v3_cache_entries():
    assert mla.cache_entries(512, 64, 128, 128, 128) == (576, 40960)


@pytest.mark.parametrize("call", [
    lambda: mla.scores(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3, 5)), np.zeros((3, 4)),
                       np.arange(3), rope.inv_freq(4)),
    lambda: mla.scores(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.zeros((4, 4)),
                       np.arange(3), rope.inv_freq(4)),
    lambda: mla.scores(np.zeros((2, 3, 4)), np.zeros((2, 3, 6)), np.zeros((2, 3, 4)), np.zeros((3, 6)),
                       np.arange(3), rope.inv_freq(4)),
    lambda: mla.attention(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.zeros((3, 4)),
                          np.zeros((2, 3, 2)), np.arange(3), rope.inv_freq(4), 0.0),
    lambda: mla.cache_entries(0, 64, 128, 128, 128),
])
def test_bad_arguments_are_refused_by_name(call):
    with pytest.raises(ValueError, match="must"):
        call()
