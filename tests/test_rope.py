"""Tests for companion.rope: fast path vs explicit matrices, complex form, layouts,
the relative-score identity, precision at large positions, RoFormer's decay bound,
and the torch layer."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import rope, rope_torch, symbolic

RNG = np.random.default_rng(20210420)
LAYOUTS = rope.LAYOUTS


def random(*shape):
    return RNG.normal(size=shape)


# ---------------------------------------------------------------------------
# Frequencies, angles, layouts
# ---------------------------------------------------------------------------

def test_inv_freq_matches_the_formula():
    theta = rope.inv_freq(128)
    assert theta.shape == (64,) and theta.dtype == np.float64
    assert theta[0] == 1.0
    i = np.arange(64)
    np.testing.assert_allclose(theta, 10000.0 ** (-2 * i / 128), rtol=1e-15)
    np.testing.assert_allclose(theta[-1], 10000.0 ** (-126 / 128), rtol=1e-15)
    assert np.all(np.diff(theta) < 0)
    np.testing.assert_allclose(rope.inv_freq(8, base=500_000.0), 500_000.0 ** (-np.arange(4) / 4), rtol=1e-15)


def test_angles_are_the_float64_outer_product():
    theta = rope.inv_freq(8)
    phi = rope.angles(np.array([0, 3, 7]), theta)
    assert phi.shape == (3, 4) and phi.dtype == np.float64
    np.testing.assert_array_equal(phi, np.array([0.0, 3.0, 7.0])[:, None] * theta[None, :])
    assert rope.angles(np.zeros((2, 5), dtype=int), theta).shape == (2, 5, 4)


def test_pair_indices():
    a, b = rope.pair_indices(8, "adjacent")
    np.testing.assert_array_equal(a, [0, 2, 4, 6])
    np.testing.assert_array_equal(b, [1, 3, 5, 7])
    a, b = rope.pair_indices(8, "split")
    np.testing.assert_array_equal(a, [0, 1, 2, 3])
    np.testing.assert_array_equal(b, [4, 5, 6, 7])


def test_layout_permutation_values_and_inverse():
    p = rope.layout_permutation(8, "adjacent", "split")
    back = rope.layout_permutation(8, "split", "adjacent")
    np.testing.assert_array_equal(p, [0, 2, 4, 6, 1, 3, 5, 7])
    np.testing.assert_array_equal(back, [0, 4, 1, 5, 2, 6, 3, 7])
    np.testing.assert_array_equal(p[back], np.arange(8))
    np.testing.assert_array_equal(rope.layout_permutation(8, "split", "split"), np.arange(8))


@pytest.mark.parametrize("source,target", [("adjacent", "split"), ("split", "adjacent")])
def test_rotating_in_one_layout_is_permute_rotate_permute_back(source, target):
    d, n = 16, 11
    theta = rope.inv_freq(d)
    x, m = random(3, n, d), RNG.integers(0, 10_000, size=n)
    p = rope.layout_permutation(d, source, target)
    back = rope.layout_permutation(d, target, source)
    direct = rope.rotate(x, m, theta, source)
    via_other = rope.rotate(x[..., p], m, theta, target)[..., back]
    np.testing.assert_allclose(direct, via_other, rtol=0, atol=1e-13)


def test_scores_identical_after_permuting_weight_columns():
    """A checkpoint stored for one layout serves the other after permuting W_Q, W_K columns."""
    d_model, d, n = 12, 8, 9
    theta = rope.inv_freq(d)
    tokens, w_q, w_k = random(n, d_model), random(d_model, d), random(d_model, d)
    m = np.arange(n)
    p = rope.layout_permutation(d, "adjacent", "split")
    q_adj = rope.rotate(tokens @ w_q, m, theta, "adjacent")
    k_adj = rope.rotate(tokens @ w_k, m, theta, "adjacent")
    q_split = rope.rotate(tokens @ w_q[:, p], m, theta, "split")
    k_split = rope.rotate(tokens @ w_k[:, p], m, theta, "split")
    np.testing.assert_allclose(q_adj @ k_adj.T, q_split @ k_split.T, rtol=1e-12, atol=1e-12)
    # ... and without the permutation the two layouts genuinely differ.
    q_wrong = rope.rotate(tokens @ w_q, m, theta, "split")
    k_wrong = rope.rotate(tokens @ w_k, m, theta, "split")
    assert np.abs(q_adj @ k_adj.T - q_wrong @ k_wrong.T).max() > 1e-3


# ---------------------------------------------------------------------------
# The rotation: explicit matrices and complex numbers as references
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_fast_rotation_equals_explicit_block_diagonal_matrices(layout):
    d, n = 16, 13
    theta = rope.inv_freq(d)
    x, m = random(2, 3, n, d), RNG.integers(0, 5000, size=n)
    R = rope.rotation_matrices(m, theta, layout)
    assert R.shape == (n, d, d)
    expected = np.einsum("nij,bhnj->bhni", R, x)
    np.testing.assert_allclose(rope.rotate(x, m, theta, layout), expected, rtol=0, atol=1e-13)
    np.testing.assert_allclose(rope.rotate_by_matrices(x, m, theta, layout), expected, rtol=0, atol=1e-13)


def test_rotation_matrix_block_by_hand():
    """d = 4, position 1: blocks [[cos 1, -sin 1], [sin 1, cos 1]] and the same for theta_1 = 0.01."""
    R = rope.rotation_matrices(1, rope.inv_freq(4), "adjacent")
    c0, s0, c1, s1 = np.cos(1.0), np.sin(1.0), np.cos(0.01), np.sin(0.01)
    expected = np.array([[c0, -s0, 0, 0], [s0, c0, 0, 0], [0, 0, c1, -s1], [0, 0, s1, c1]])
    np.testing.assert_allclose(R, expected, rtol=0, atol=1e-15)
    R_split = rope.rotation_matrices(1, rope.inv_freq(4), "split")
    p = rope.layout_permutation(4, "adjacent", "split")
    np.testing.assert_allclose(R_split, R[np.ix_(p, p)], rtol=0, atol=1e-15)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotation_matrices_are_orthogonal_and_compose(layout):
    theta = rope.inv_freq(10)
    Ra, Rb, Rd = rope.rotation_matrices(np.array([17, 250, 233]), theta, layout)
    np.testing.assert_allclose(Ra.T @ Ra, np.eye(10), atol=1e-14)
    np.testing.assert_allclose(Ra.T @ Rb, Rd, atol=1e-12)  # R_a^T R_b = R_{b-a}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_complex_form_equals_rotation(layout):
    d, n = 12, 7
    theta = rope.inv_freq(d)
    x, m = random(4, n, d), RNG.integers(0, 100_000, size=n)
    np.testing.assert_allclose(rope.rotate_complex(x, m, theta, layout), rope.rotate(x, m, theta, layout), atol=1e-12)
    np.testing.assert_array_equal(rope.from_complex(rope.to_complex(x, layout), layout), x)


def test_rotation_preserves_norms_and_position_zero_is_identity():
    x = random(5, 32)
    theta = rope.inv_freq(32)
    np.testing.assert_array_equal(rope.rotate(x, np.zeros(5, dtype=int), theta), x)
    rotated = rope.rotate(x, np.arange(5) * 1000, theta)
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-14)


def test_rotate_accepts_any_frequency_vector():
    x = random(3, 6)
    theta = np.array([0.5, 0.0, 2.0])  # a zero frequency leaves its pair alone
    out = rope.rotate(x, np.arange(3), theta)
    np.testing.assert_array_equal(out[:, 2:4], x[:, 2:4])
    np.testing.assert_allclose(out, rope.rotate_by_matrices(x, np.arange(3), theta), atol=1e-14)


# ---------------------------------------------------------------------------
# The relative-position identity
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_score_relative_score_and_complex_score_agree(layout):
    d = 16
    theta = rope.inv_freq(d)
    q, k = random(d), random(d)
    m, n = np.arange(0, 40, 3), np.arange(50, 10, -3)[:14]
    s = rope.score(q, k, m, n, theta, layout)
    np.testing.assert_allclose(rope.relative_score(q, k, n - m, theta, layout), s, atol=1e-12)
    np.testing.assert_allclose(rope.complex_score(q, k, m, n, theta, layout), s, atol=1e-12)


def test_score_at_equal_positions_is_the_plain_dot_product():
    q, k = random(8), random(8)
    theta = rope.inv_freq(8)
    for m in (0, 5, 123_456):
        np.testing.assert_allclose(rope.score(q, k, m, m, theta), q @ k, rtol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    half=st.integers(1, 12),
    layout=st.sampled_from(LAYOUTS),
    m=st.integers(0, 100_000),
    n=st.integers(0, 100_000),
    shift=st.integers(0, 100_000),
    seed=st.integers(0, 2**32 - 1),
)
def test_scores_unchanged_under_a_common_shift(half, layout, m, n, shift, seed):
    rng = np.random.default_rng(seed)
    d = 2 * half
    theta = rope.inv_freq(d, base=rng.uniform(2.0, 1e6))
    q, k = rng.normal(size=d), rng.normal(size=d)
    before = rope.score(q, k, m, n, theta, layout)
    after = rope.score(q, k, m + shift, n + shift, theta, layout)
    np.testing.assert_allclose(after, before, rtol=0, atol=1e-8 * (1 + np.abs(q) @ np.abs(k)))
    np.testing.assert_allclose(rope.relative_score(q, k, n - m, theta, layout), before, atol=1e-8 * d)


# ---------------------------------------------------------------------------
# Precision at large positions
# ---------------------------------------------------------------------------

def exact_rotation(x, positions, theta, dps=50):
    """The rotation with angles m * theta evaluated in mpmath at ``dps`` digits."""
    a, b = rope.pair_indices(x.shape[-1], "adjacent")
    out = np.empty_like(x)
    with mpmath.workdps(dps):
        for row, m in enumerate(positions):
            for i, t in enumerate(theta):
                phi = mpmath.mpf(int(m)) * mpmath.mpf(float(t))  # the float64 theta, exactly
                c, s = mpmath.cos(phi), mpmath.sin(phi)
                x1, x2 = mpmath.mpf(float(x[row, a[i]])), mpmath.mpf(float(x[row, b[i]]))
                out[row, a[i]] = float(x1 * c - x2 * s)
                out[row, b[i]] = float(x1 * s + x2 * c)
    return out


def test_float64_angles_keep_fast_pairs_exact_at_ten_million():
    d = 16
    theta = rope.inv_freq(d)
    m = np.array([1_000_003, 2_718_281, 3_141_592, 9_999_991, 10_000_000, 12_345_678, 16_777_215])
    x = RNG.normal(size=(m.size, d))
    exact = exact_rotation(x, m, theta)
    assert np.abs(rope.rotate(x, m, theta) - exact).max() < 1e-9
    # The documented contrast: the same angles formed in float32 are off by a large amount.
    phi32 = m.astype(np.float32)[:, None] * theta.astype(np.float32)[None, :]
    with mpmath.workdps(50):
        phi_exact = np.array([[float(mpmath.mpf(int(mm)) * mpmath.mpf(float(t)) % (2 * mpmath.pi)) for t in theta]
                              for mm in m])
    angle_error = np.abs(np.angle(np.exp(1j * (phi32.astype(np.float64) - phi_exact))))
    assert angle_error.max() > 0.1  # radians
    a, b = rope.pair_indices(d, "adjacent")
    c, s = np.cos(phi32.astype(np.float64)), np.sin(phi32.astype(np.float64))
    float32_rotated = np.empty_like(x)
    float32_rotated[:, a] = x[:, a] * c - x[:, b] * s
    float32_rotated[:, b] = x[:, a] * s + x[:, b] * c
    assert np.abs(float32_rotated - exact).max() > 1e-2


def test_torch_layer_keeps_float64_angles_for_float32_inputs():
    d = 16
    theta = rope.inv_freq(d)
    m = np.array([1_000_003, 9_999_991, 12_345_678])
    x = RNG.normal(size=(m.size, d))
    layer = rope_torch.RotaryEmbedding(d)
    out = layer.rotate(torch.tensor(x, dtype=torch.float32), torch.tensor(m)).numpy()
    np.testing.assert_allclose(out, exact_rotation(x, m, theta), atol=1e-5)


# ---------------------------------------------------------------------------
# RoFormer's long-term decay bound
# ---------------------------------------------------------------------------

def test_decay_curve_at_zero_and_its_trend():
    theta = rope.inv_freq(128)
    curve = rope.long_term_decay(np.arange(256), theta)
    assert curve[0] == pytest.approx(32.5)  # (1/64) sum_{j=1}^{64} j
    assert curve[:25].mean() > curve[100:125].mean() > curve[225:250].mean()
    assert curve[200] < curve[0] / 3


def test_decay_curve_closed_forms():
    """theta_k = k t: S_j is a geometric series, |S_j| = |sin(j r t / 2) / sin(r t / 2)|."""
    t, half = 0.3, 10
    r = np.array([1.0, 2.5, 7.0, 40.0])
    j = np.arange(1, half + 1)
    closed = np.abs(np.sin(np.multiply.outer(r, j) * t / 2) / np.sin(r * t / 2)[:, None]).mean(axis=-1)
    np.testing.assert_allclose(rope.long_term_decay(r, t * np.arange(half)), closed, rtol=1e-12)
    # all theta equal: |S_j| = j whatever r, so the curve is flat at (half + 1) / 2
    np.testing.assert_allclose(rope.long_term_decay(r, np.full(half, t)), (half + 1) / 2, rtol=1e-14)


def test_decay_bound_holds_for_random_content():
    theta = rope.inv_freq(64)
    r = np.arange(-300, 301)
    for _ in range(20):
        h = RNG.normal(size=32) + 1j * RNG.normal(size=32)
        value, bound = rope.decay_bound(h, r, theta)
        assert np.all(value <= bound * (1 + 1e-12))
    # constant content h = 1 at r = 0: |sum h| = 32; bound = |0 - 1| * sum_{j=1}^{32} j = 528
    value, bound = rope.decay_bound(np.ones(32), [0.0], theta)
    assert value[0] == pytest.approx(32.0) and bound[0] == pytest.approx(528.0)


def test_decay_bound_value_of_two_equal_contents():
    """|e^{i r theta_0} + e^{i r theta_1}| = 2 |cos(r (theta_0 - theta_1) / 2)|: the sum turns by r theta_i."""
    theta = rope.inv_freq(4)                            # [1, 0.01]
    r = np.array([0.0, 1.0, 3.0, 100.0])
    value, _ = rope.decay_bound(np.ones(2), r, theta)
    np.testing.assert_allclose(value, 2.0 * np.abs(np.cos(r * (theta[0] - theta[1]) / 2.0)), rtol=1e-12, atol=1e-12)


def test_complex_score_is_the_sum_in_the_bound():
    q, k = random(16), random(16)
    theta = rope.inv_freq(16)
    h = rope.to_complex(q) * np.conj(rope.to_complex(k))
    value, _ = rope.decay_bound(h, [3 - 10], theta)
    assert abs(rope.complex_score(q, k, 3, 10, theta)) <= value[0] + 1e-12


# ---------------------------------------------------------------------------
# torch layer
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_torch_layer_matches_numpy(layout, dtype, atol):
    d, n = 16, 33
    x, y = random(2, 3, n, d), random(2, 3, n, d)
    theta = rope.inv_freq(d)
    layer = rope_torch.RotaryEmbedding(d, layout=layout, attention_factor=1.25)
    q_rot, k_rot = layer(torch.tensor(x, dtype=dtype), torch.tensor(y, dtype=dtype))
    assert q_rot.dtype == dtype and q_rot.shape == (2, 3, n, d)
    np.testing.assert_allclose(q_rot.numpy(), 1.25 * rope.rotate(x, np.arange(n), theta, layout), atol=atol, rtol=0)
    np.testing.assert_allclose(k_rot.numpy(), 1.25 * rope.rotate(y, np.arange(n), theta, layout), atol=atol, rtol=0)
    m = RNG.integers(0, 2_000_000, size=n)
    q_given, _ = layer(torch.tensor(x, dtype=dtype), torch.tensor(y, dtype=dtype), torch.tensor(m))
    np.testing.assert_allclose(q_given.numpy(), 1.25 * rope.rotate(x, m, theta, layout), atol=atol, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_torch_layer_gradients_and_paths_agree(layout):
    d, n = 8, 6
    layer = rope_torch.RotaryEmbedding(d, layout=layout).double()
    x = torch.randn(2, n, d, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        fast = layer.rotate(x)
    with_grad = layer.rotate(x)
    torch.testing.assert_close(with_grad, fast, rtol=0, atol=1e-14)
    assert torch.autograd.gradcheck(lambda t: layer.rotate(t, torch.arange(n) * 7), (x,))


def test_torch_layer_per_batch_positions_and_scores():
    d, n = 8, 5
    layer = rope_torch.RotaryEmbedding(d, layout="split")
    q, k = torch.randn(2, 4, n, d, dtype=torch.float64), torch.randn(2, 4, n, d, dtype=torch.float64)
    positions = torch.tensor([[0, 1, 2, 3, 4], [100, 101, 102, 103, 104]])[:, None, :]  # (batch, 1, n)
    q_rot, k_rot = layer(q, k, positions)
    scores = q_rot @ k_rot.transpose(-1, -2)
    shifted = layer(q, k, positions + 5000)
    torch.testing.assert_close(shifted[0] @ shifted[1].transpose(-1, -2), scores, rtol=1e-10, atol=1e-10)
    expected = rope.rotate(q.numpy(), positions.numpy(), rope.inv_freq(d), "split")
    np.testing.assert_allclose(q_rot.numpy(), expected, atol=1e-12)


def test_torch_layer_half_precision_and_custom_frequencies():
    theta = np.linspace(1.0, 0.001, 8)
    layer = rope_torch.RotaryEmbedding(16, inv_freq=theta)
    x = torch.randn(3, 10, 16)
    out = layer.rotate(x.to(torch.bfloat16))
    assert out.dtype == torch.bfloat16
    np.testing.assert_allclose(out.float().numpy(), rope.rotate(x.to(torch.bfloat16).double().numpy(), np.arange(10), theta),
                               atol=5e-2)
    layer.set_frequencies(theta / 2, attention_factor=2.0)
    np.testing.assert_allclose(layer.rotate(x.double()).numpy(), 2.0 * rope.rotate(x.double().numpy(), np.arange(10), theta / 2),
                               atol=1e-12)


def test_casting_the_layer_does_not_round_its_frequencies():
    layer = rope_torch.RotaryEmbedding(16, base=500_000.0).half()
    x = np.random.default_rng(5).normal(size=(4, 16))
    m = np.array([3, 70_000, 1_000_000, 9_000_001])
    out = layer.rotate(torch.tensor(x), torch.tensor(m)).numpy()
    np.testing.assert_allclose(out, rope.rotate(x, m, rope.inv_freq(16, 500_000.0)), atol=1e-12)
    assert layer.inv_freq.dtype == torch.float64 and list(layer.parameters()) == []


def test_torch_layer_cache_is_per_length():
    layer = rope_torch.RotaryEmbedding(8)
    a = layer.rotate(torch.ones(1, 4, 8))
    b = layer.rotate(torch.ones(1, 9, 8))
    torch.testing.assert_close(b[:, :4], a)


def test_torch_layer_rotates_keys_of_another_length_by_their_own_positions():
    """q and k of unequal lengths (a query block over a longer key cache): each is turned by
    its own positions 0..n-1, so the key may not reuse the query's tables."""
    layer = rope_torch.RotaryEmbedding(8)
    q, k = random(2, 3, 8), random(2, 7, 8)
    theta = rope.inv_freq(8)
    for _ in range(2):  # the second call reads the cached tables
        q_rot, k_rot = layer(torch.tensor(q), torch.tensor(k))
        np.testing.assert_allclose(q_rot.numpy(), rope.rotate(q, np.arange(3), theta), atol=1e-12, rtol=0)
        np.testing.assert_allclose(k_rot.numpy(), rope.rotate(k, np.arange(7), theta), atol=1e-12, rtol=0)
    k_rot, q_rot = layer(torch.tensor(k), torch.tensor(q))  # the longer one first
    np.testing.assert_allclose(q_rot.numpy(), rope.rotate(q, np.arange(3), theta), atol=1e-12, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_torch_layer_gives_each_of_q_and_k_tables_in_its_own_dtype(layout):
    """Equal lengths, different dtypes: each tensor is rotated with cos and sin in its own dtype,
    so a float64 key keeps float64 accuracy next to a float32 query (float32 tables would be off
    by about 1e-7), and a float32 key stays float32 next to a float64 query."""
    layer = rope_torch.RotaryEmbedding(16, layout=layout)
    x, y = random(5, 16), random(5, 16)
    m = np.array([3, 70_000, 1_000_003, 9_999_991, 12_345_678])
    theta = rope.inv_freq(16)
    for q_dtype, k_dtype in ((torch.float32, torch.float64), (torch.float64, torch.float32)):
        q_rot, k_rot = layer(torch.tensor(x, dtype=q_dtype), torch.tensor(y, dtype=k_dtype), torch.tensor(m))
        assert (q_rot.dtype, k_rot.dtype) == (q_dtype, k_dtype)
        for out, source, dtype in ((q_rot, x, q_dtype), (k_rot, y, k_dtype)):
            exact = rope.rotate(torch.tensor(source, dtype=dtype).double().numpy(), m, theta, layout)
            atol = 1e-12 if dtype == torch.float64 else 1e-5
            np.testing.assert_allclose(out.double().numpy(), exact, atol=atol, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("given", [False, True])
def test_torch_layer_gives_each_of_q_and_k_tables_on_its_own_device(layout, given):
    """Equal lengths and dtypes on two devices (the CPU and PyTorch's data-less "meta" device):
    each tensor gets tables (and its output) on its own device, from positions on the CPU or none;
    tables of the other device would be refused."""
    layer = rope_torch.RotaryEmbedding(8, layout=layout)
    q = torch.tensor(random(2, 4, 8))
    positions = torch.tensor([3, 5, 8, 13]) if given else None
    m = positions.numpy() if given else np.arange(4)
    q_rot, k_rot = layer(q, torch.empty(2, 4, 8, dtype=torch.float64, device="meta"), positions)
    assert k_rot.device.type == "meta" and k_rot.shape == (2, 4, 8)
    np.testing.assert_allclose(q_rot.numpy(), rope.rotate(q.numpy(), m, rope.inv_freq(8), layout), atol=1e-12)
    meta_rot, cpu_rot = layer(torch.empty(2, 4, 8, dtype=torch.float64, device="meta"), q, positions)
    assert meta_rot.device.type == "meta"
    torch.testing.assert_close(cpu_rot, q_rot, rtol=0, atol=0)


def test_torch_layer_given_positions_do_not_replace_the_tables_of_no_positions():
    """Tables for 0..n-1 are cached; tables for given positions are not, so a later call without
    positions still turns by 0..n-1."""
    layer = rope_torch.RotaryEmbedding(8)
    x = random(1, 3, 8)
    layer.rotate(torch.tensor(x), torch.tensor([7, 8, 9]))
    np.testing.assert_allclose(layer.rotate(torch.tensor(x)).numpy(), rope.rotate(x, np.arange(3), rope.inv_freq(8)),
                               atol=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_torch_layer_in_half_precision_with_and_without_gradients(layout):
    """bfloat16 takes the real path in both layouts: with gradients (plain ops) and without (fused into
    one buffer) it gives the numpy rotation to bfloat16's precision, and the same result both ways."""
    layer = rope_torch.RotaryEmbedding(16, layout=layout)
    x = torch.tensor(random(2, 5, 16)).to(torch.bfloat16)
    exact = rope.rotate(x.double().numpy(), np.arange(5), rope.inv_freq(16), layout)
    with torch.no_grad():
        fused = layer.rotate(x)
    plain = layer.rotate(x.clone().requires_grad_(True))
    assert fused.dtype == plain.dtype == torch.bfloat16 and plain.requires_grad
    for out in (fused, plain.detach()):
        np.testing.assert_allclose(out.double().numpy(), exact, atol=0.05, rtol=0)
    torch.testing.assert_close(plain.detach(), fused, rtol=0.02, atol=0.02)


def test_torch_layer_broadcasts_positions_over_more_leading_dimensions_than_x():
    """Positions of shape (2, 1, n) turn x of shape (4, n, d) into (2, 4, n, d), as numpy broadcasting does."""
    layer = rope_torch.RotaryEmbedding(8, layout="split")
    x = random(4, 3, 8)
    positions = np.array([[[0, 1, 2]], [[50, 60, 70]]])
    out = layer.rotate(torch.tensor(x), torch.tensor(positions))
    assert out.shape == (2, 4, 3, 8)
    np.testing.assert_allclose(out.numpy(), rope.rotate(np.broadcast_to(x, (2, 4, 3, 8)), np.broadcast_to(positions, (2, 4, 3)),
                                                        rope.inv_freq(8), "split"), atol=1e-12)


def test_one_pair_is_enough():
    """d = 2, a single pair: the smallest width RoPE turns."""
    np.testing.assert_allclose(rope.to_complex(np.array([3.0, 4.0])), [3.0 + 4.0j])
    np.testing.assert_allclose(rope.from_complex(np.array([3.0 + 4.0j])), [3.0, 4.0])


def test_decay_curve_of_distances_of_any_shape():
    theta = rope.inv_freq(16)
    r = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(rope.long_term_decay(r, theta), rope.long_term_decay(r.ravel(), theta).reshape(3, 4),
                               rtol=1e-15)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_torch_layer_on_cuda_matches_cpu():
    for layout in LAYOUTS:
        layer = rope_torch.RotaryEmbedding(64, layout=layout)
        q = torch.randn(2, 4, 128, 64)
        cpu = layer(q, q, torch.arange(128) * 1000)[0]
        gpu = layer.to("cuda")(q.cuda(), q.cuda(), (torch.arange(128) * 1000).cuda())[0]
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# SymPy rotation matrices and RoPE self-attention
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_symbolic_rotation_matrix_matches_the_numeric_one(layout):
    import sympy as sp

    m = sp.Symbol("m")
    t = sp.symbols("t0:3")
    R = symbolic.rotation_matrix(m, t, layout)
    assert R.shape == (6, 6)
    theta = np.array([1.0, 0.3, 0.01])
    values = {m: 7, **dict(zip(t, theta))}
    numeric = np.array(R.subs(values).evalf(), dtype=float)
    np.testing.assert_allclose(numeric, rope.rotation_matrices(7, theta, layout), atol=1e-14)


def test_symbolic_plane_rotation_by_hand():
    import sympy as sp

    a = sp.Symbol("a")
    R = symbolic.rotation_matrix(a, [1])
    assert R == sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])


def test_symbolic_relative_identity_for_two_pairs():
    import sympy as sp

    from companion import symbolic

    m, n = sp.symbols("m n", real=True)
    t = sp.symbols("t0:2", real=True)
    lhs = symbolic.rotation_matrix(m, t).T * symbolic.rotation_matrix(n, t)
    assert symbolic.is_zero_matrix(lhs - symbolic.rotation_matrix(n - m, t))


def reference_rope_attention(x, w_q, w_k, w_v, positions, theta, layout, mask=None):
    """Explicit matrices R_m and a hand-written softmax: independent of rope.rotate and companion.attention."""
    R = rope.rotation_matrices(positions, theta, layout)
    q = np.einsum("nij,nj->ni", R, x @ w_q)
    k = np.einsum("nij,nj->ni", R, x @ w_k)
    s = q @ k.T / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    a = e / e.sum(axis=-1, keepdims=True)
    return a @ (x @ w_v), a


@pytest.mark.parametrize("layout", LAYOUTS)
def test_self_attention_matches_explicit_reference(layout):
    n, d_model, d, d_v = 7, 10, 8, 5
    theta = rope.inv_freq(d)
    x, w_q, w_k, w_v = random(n, d_model), random(d_model, d), random(d_model, d), random(d_model, d_v)
    positions = RNG.integers(0, 5000, size=n)
    mask = np.tril(np.ones((n, n), dtype=bool))
    out, weights = rope.self_attention(x, w_q, w_k, w_v, positions, theta, layout, mask=mask)
    ref_out, ref_weights = reference_rope_attention(x, w_q, w_k, w_v, positions, theta, layout, mask)
    assert out.shape == (n, d_v) and weights.shape == (n, n)
    np.testing.assert_allclose(out, ref_out, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-12)


def test_self_attention_is_shift_invariant_and_leaves_values_alone():
    n, d_model, d = 9, 12, 16
    theta = rope.inv_freq(d)
    x, w_q, w_k, w_v = random(n, d_model), random(d_model, d), random(d_model, d), random(d_model, d)
    base = np.arange(n)
    out0, w0 = rope.self_attention(x, w_q, w_k, w_v, base, theta)
    out1, w1 = rope.self_attention(x, w_q, w_k, w_v, base + 123_457, theta)
    np.testing.assert_allclose(out1, out0, atol=1e-10)
    np.testing.assert_allclose(w1, w0, atol=1e-10)
    # the output is the weights times the unrotated values
    np.testing.assert_allclose(out0, w0 @ (x @ w_v), atol=1e-12)
    # batch dimensions broadcast
    out_b, _ = rope.self_attention(np.stack([x, x]), w_q, w_k, w_v, base, theta)
    np.testing.assert_allclose(out_b[1], out0, atol=1e-12)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("call,match", [
    (lambda: rope.inv_freq(7), "d"),
    (lambda: rope.inv_freq(0), "d"),
    (lambda: rope.inv_freq(8, base=0.0), "base"),
    (lambda: rope.inv_freq(8, base=-10.0), "base"),
    (lambda: rope.angles([-1, 2], rope.inv_freq(4)), "positions"),
    (lambda: rope.angles([0.5, 2], rope.inv_freq(4)), "positions"),
    (lambda: rope.angles([1, 2], [[1.0]]), "inv_freq"),
    (lambda: rope.rotate(np.zeros((3, 6)), np.arange(3), rope.inv_freq(4)), "x"),
    (lambda: rope.rotate(np.zeros((3, 4)), np.arange(5), rope.inv_freq(4)), "positions"),
    (lambda: rope.rotate(np.zeros((3, 4)), np.arange(3), rope.inv_freq(4), layout="interleaved"), "layout"),
    (lambda: rope.layout_permutation(8, source="halves"), "source"),
    (lambda: rope.layout_permutation(8, target="pairs"), "target"),
    (lambda: rope.rotation_matrices([1], rope.inv_freq(4), layout="neox"), "layout"),
    (lambda: rope.relative_score(np.ones(4), np.ones(4), 1.5, rope.inv_freq(4)), "distance"),
    (lambda: rope.score(np.ones(4), np.ones(6), 0, 1, rope.inv_freq(4)), "k must"),
    (lambda: rope.complex_score(np.ones(4), np.ones(6), 0, 1, rope.inv_freq(4)), "k"),
    (lambda: rope.to_complex(np.ones(5)), "x"),
    (lambda: rope.decay_bound(np.ones(3), [1.0], rope.inv_freq(4)), "h"),
    (lambda: symbolic.rotation_matrix(1, [], "adjacent"), "thetas"),
    (lambda: symbolic.rotation_matrix(1, 0.5), "thetas"),
    (lambda: symbolic.rotation_matrix(1, [1], layout="neox"), "layout"),
    (lambda: rope.self_attention(np.ones((3, 4)), np.ones((5, 4)), np.ones((4, 4)), np.ones((4, 2)),
                                 np.arange(3), rope.inv_freq(4)), "w_q"),
    (lambda: rope.self_attention(np.ones((3, 4)), np.ones((4, 4)), np.ones((4, 6)), np.ones((4, 2)),
                                 np.arange(3), rope.inv_freq(4)), "w_k"),
    (lambda: rope.self_attention(np.ones((3, 4)), np.ones((4, 4)), np.ones((4, 4)), np.ones(4),
                                 np.arange(3), rope.inv_freq(4)), "w_v"),
    (lambda: rope.self_attention(np.ones((3, 4)), np.ones((4, 4)), np.ones((4, 4)), np.ones((4, 2)),
                                 np.arange(5), rope.inv_freq(4)), "positions"),
    (lambda: rope.self_attention(np.ones(4), np.ones((4, 4)), np.ones((4, 4)), np.ones((4, 2)),
                                 np.arange(1), rope.inv_freq(4)), "x"),
    (lambda: rope.self_attention(np.ones((3, 4)), np.ones((4, 4)), np.ones((4, 4)), np.ones((4, 2)),
                                 np.arange(3), rope.inv_freq(4), layout="halves"), "layout"),
    (lambda: rope_torch.RotaryEmbedding(9), "d"),
    (lambda: rope_torch.RotaryEmbedding(8, inv_freq=np.ones(3)), "inv_freq"),
    (lambda: rope_torch.RotaryEmbedding(8, layout="half"), "layout"),
    (lambda: rope_torch.RotaryEmbedding(8, attention_factor=0.0), "attention_factor"),
    (lambda: rope_torch.RotaryEmbedding(8)(torch.ones(2, 6), torch.ones(2, 8)), "q"),
    (lambda: rope_torch.RotaryEmbedding(8)(torch.ones(2, 8), torch.ones(2, 6)), "k"),
    (lambda: rope_torch.RotaryEmbedding(8)(torch.ones(2, 8), torch.ones(2, 8), torch.tensor([0, -1])), "positions"),
    (lambda: rope_torch.RotaryEmbedding(8)(torch.ones(2, 8), torch.ones(2, 8), torch.tensor([0.0, 0.5])), "positions"),
    (lambda: rope_torch.RotaryEmbedding(8)(torch.ones(2, 8), torch.ones(2, 8), torch.arange(3)), "positions"),
    (lambda: rope_torch.RotaryEmbedding(8).rotate(torch.ones(2, 8), torch.tensor([0.0, float("inf")])), "positions"),
    (lambda: rope_torch.RotaryEmbedding(8).rotate(torch.ones(2, 8, dtype=torch.int64)), "x"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
