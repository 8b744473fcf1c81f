"""Tests for companion.absolute: sinusoids (Vaswani et al. 2017) and learned tables."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import absolute, absolute_torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
even_d = st.integers(1, 32).map(lambda h: 2 * h)


# --- frequencies and wavelengths --------------------------------------------------------


def test_frequencies_match_the_formula_term_by_term():
    d, base = 12, 10000.0
    expected = [base ** (-2 * i / d) for i in range(d // 2)]
    np.testing.assert_allclose(absolute.frequencies(d, base), expected, rtol=1e-15)


def test_frequencies_are_geometric_from_one():
    w = absolute.frequencies(64)
    assert w[0] == 1.0
    np.testing.assert_allclose(w[1:] / w[:-1], 10000.0 ** (-2 / 64), rtol=1e-13)


@pytest.mark.parametrize("d, rounded", [(512, 60_600), (64, 47_100)])
def test_largest_wavelength_syllabus_numbers(d, rounded):
    lam = absolute.wavelengths(d)
    assert lam[-1] == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d), rel=1e-13)
    assert round(lam[-1], -2) == rounded


def test_smallest_wavelength_is_two_pi():
    for d in (2, 64, 512):
        assert absolute.wavelengths(d)[0] == pytest.approx(2 * math.pi, rel=1e-15)


# --- the sinusoid ------------------------------------------------------------------------


def test_sinusoidal_matches_a_literal_loop():
    d, base, positions = 10, 100.0, [0, 1, 5, 17, 250]
    expected = np.zeros((len(positions), d))
    for row, p in enumerate(positions):
        for i in range(d // 2):
            w = base ** (-2 * i / d)
            expected[row, 2 * i] = math.sin(w * p)
            expected[row, 2 * i + 1] = math.cos(w * p)
    got = absolute.sinusoidal(positions, d, base)
    assert got.shape == (5, d) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, atol=1e-14)


def test_position_zero_is_sin_zero_cos_one():
    np.testing.assert_array_equal(absolute.sinusoidal([0], 6)[0], [0, 1, 0, 1, 0, 1])


def test_sinusoidal_keeps_the_shape_of_positions():
    assert absolute.sinusoidal(np.arange(6).reshape(2, 3), 4).shape == (2, 3, 4)


@settings(max_examples=60, deadline=None)
@given(p=st.integers(0, 5000), k=st.integers(-2000, 5000), d=even_d)
def test_shift_is_one_linear_map(p, k, d):
    if p + k < 0:
        p = -k
    R = absolute.rotation_for_offset(k, d)
    pe_p, pe_pk = absolute.sinusoidal([p, p + k], d)
    np.testing.assert_allclose(R @ pe_p, pe_pk, atol=1e-9)


def test_rotation_sign_convention_for_sin_cos_order():
    # d = 2, w = 1: one block [[cos k, sin k], [-sin k, cos k]] acting on (sin p, cos p).
    R = absolute.rotation_for_offset(1, 2)
    np.testing.assert_allclose(R, [[math.cos(1), math.sin(1)], [-math.sin(1), math.cos(1)]], atol=1e-15)
    pe = absolute.sinusoidal(np.arange(4), 2)
    np.testing.assert_allclose(pe[1:] @ R.T, pe[:-1] @ R.T @ R.T, atol=1e-14)
    np.testing.assert_allclose(pe[:-1] @ R.T, pe[1:], atol=1e-14)
    # the transpose (the usual counter-clockwise rotation) moves the other way
    assert not np.allclose(R.T @ pe[1], pe[2], atol=1e-3)
    np.testing.assert_allclose(R.T @ pe[2], pe[1], atol=1e-14)


def test_rotation_is_block_diagonal_orthogonal_and_composes():
    d = 8
    R3, R4, R7 = (absolute.rotation_for_offset(k, d) for k in (3, 4, 7))
    np.testing.assert_allclose(R3.T @ R3, np.eye(d), atol=1e-14)
    np.testing.assert_allclose(R3 @ R4, R7, atol=1e-14)
    np.testing.assert_allclose(absolute.rotation_for_offset(-3, d), R3.T, atol=1e-15)
    off_block = np.ones((d, d), bool)
    for b in range(0, d, 2):
        off_block[b : b + 2, b : b + 2] = False
    assert np.all(R7[off_block] == 0)


# --- dot products --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 3000), n=st.integers(0, 3000), shift=st.integers(0, 3000), d=even_d)
def test_dot_product_depends_only_on_distance(m, n, shift, d):
    here = absolute.position_dot_products(m, n, d)
    moved = absolute.position_dot_products(m + shift, n + shift, d)
    closed = sum(math.cos(w * (m - n)) for w in absolute.frequencies(d))
    assert here == pytest.approx(moved, abs=1e-9)
    assert here == pytest.approx(closed, abs=1e-9)
    assert absolute.dot_product_at_distance(m - n, d) == pytest.approx(closed, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 3000), k=st.integers(0, 3000), d=even_d)
def test_dot_product_cannot_tell_before_from_after(m, k, d):
    m = m + k  # so that m - k >= 0
    after = absolute.position_dot_products(m, m + k, d)
    before = absolute.position_dot_products(m, m - k, d)
    assert after == pytest.approx(before, abs=1e-9)


def test_dot_product_table_by_broadcasting():
    p = np.arange(7)
    table = absolute.position_dot_products(p[:, None], p[None, :], 16)
    pe = absolute.sinusoidal(p, 16)
    np.testing.assert_allclose(table, pe @ pe.T, atol=1e-13)
    np.testing.assert_allclose(table, absolute.dot_product_at_distance(p[:, None] - p[None, :], 16), atol=1e-13)
    assert absolute.dot_product_at_distance(0, 16) == 8.0  # d/2 cosines of 0


# --- scores -------------------------------------------------------------------------------


def test_score_terms_add_up_and_match_their_definitions():
    rng = np.random.default_rng(0)
    n, d_model, d_k = 5, 6, 3
    e, w_q, w_k = rng.normal(size=(n, d_model)), rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k))
    pe = absolute.sinusoidal(np.arange(n), d_model)
    t = absolute.score_terms(e, pe, w_q, w_k)
    x = e + pe
    np.testing.assert_allclose(t["total"], (x @ w_q) @ (x @ w_k).T, atol=1e-12)
    i, j = 1, 3
    assert t["content_position"][i, j] == pytest.approx((e[i] @ w_q) @ (pe[j] @ w_k), abs=1e-12)
    assert t["position_content"][i, j] == pytest.approx((pe[i] @ w_q) @ (e[j] @ w_k), abs=1e-12)
    assert t["position_position"][i, j] == pytest.approx((pe[i] @ w_q) @ (pe[j] @ w_k), abs=1e-12)
    assert t["content_content"][i, j] == pytest.approx((e[i] @ w_q) @ (e[j] @ w_k), abs=1e-12)


def test_position_score_flat_for_rotation_scaling_blocks_wobbly_otherwise():
    d, k = 64, 5
    m = np.arange(201)
    flat = absolute.position_score(m, k, np.eye(d))
    np.testing.assert_allclose(flat, absolute.dot_product_at_distance(k, d), atol=1e-10)
    rng = np.random.default_rng(1)
    blocks = np.zeros((d, d))
    for b in range(0, d, 2):
        a, c = rng.normal(size=2)
        blocks[b : b + 2, b : b + 2] = [[a, -c], [c, a]]
    commuting = absolute.position_score(m, k, blocks)
    assert np.ptp(commuting) < 1e-9
    wobbly = absolute.position_score(m, k, np.eye(d) + rng.normal(size=(d, d)))
    assert np.ptp(wobbly) > 1.0
    pe = absolute.sinusoidal([17, 17 + k], d)
    M = np.eye(d) + 0.5
    assert absolute.position_score([17], k, M)[0] == pytest.approx(pe[0] @ M @ pe[1], abs=1e-10)


# --- torch layers -------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_sinusoidal_module_agrees_with_numpy(device):
    positions = np.array([0, 1, 2, 50, 999, 4095])
    expected = absolute.sinusoidal(positions, 32, 500.0)
    layer = absolute_torch.SinusoidalPositions(32, base=500.0)
    p = torch.as_tensor(positions, device=device)
    out64 = layer(p, dtype=torch.float64)
    out32 = layer(p, dtype=torch.float32)
    assert out64.device.type == device and out64.shape == (6, 32)
    np.testing.assert_allclose(out64.cpu().numpy(), expected, atol=1e-12, rtol=0)
    assert out32.dtype == torch.float32
    np.testing.assert_allclose(out32.cpu().numpy(), expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_learned_table_looks_up_rows(device):
    layer = absolute_torch.LearnedPositions(10, 4).to(device)
    p = torch.tensor([0, 3, 9], device=device)
    out = layer(p)
    assert out.shape == (3, 4) and out.device.type == device
    torch.testing.assert_close(out, layer.table.weight[[0, 3, 9]])


def test_learned_rows_start_as_bert_and_gpt2_draw_them():
    """The rows start as N(0, 0.02^2): BERT's and GPT-2's ``initializer_range = 0.02`` (Devlin
    et al. 2018; Radford et al. 2019; Hugging Face ``BertConfig`` and ``GPT2Config``). Over
    1024 x 64 draws the sample standard deviation lies within 1% of 0.02 (its own standard
    error is 0.14%), and the mean within 0.0003 (5 standard errors) of 0."""
    from transformers import BertConfig, GPT2Config

    assert BertConfig().initializer_range == GPT2Config().initializer_range == 0.02
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        weight = absolute_torch.LearnedPositions(1024, 64).table.weight.detach().double()
    assert weight.std().item() == pytest.approx(0.02, rel=0.01)
    assert abs(weight.mean().item()) < 0.0003


def test_gpt2_table_has_no_row_for_position_1024():
    gpt2 = absolute_torch.LearnedPositions(1024, 8)
    assert gpt2(torch.arange(1024)).shape == (1024, 8)
    with pytest.raises(IndexError, match=r"positions.*0\.\.1023"):
        gpt2(torch.tensor([1024]))
    with pytest.raises(IndexError, match="1024"):
        gpt2(torch.arange(1025))


# --- perplexity ---------------------------------------------------------------------------


def test_perplexity_is_the_inverse_geometric_mean():
    probabilities = [0.5, 0.25, 0.125, 0.8, 0.01]
    reference = 1 / math.prod(probabilities) ** (1 / len(probabilities))
    assert absolute.perplexity(probabilities) == pytest.approx(reference, rel=1e-13)
    assert absolute.perplexity(np.array(probabilities).reshape(5, 1)) == pytest.approx(reference, rel=1e-13)


@pytest.mark.parametrize("vocabulary", [1, 2, 50, 50_257])
def test_perplexity_of_a_uniform_guess_is_the_vocabulary_size(vocabulary):
    assert absolute.perplexity(np.full(300, 1 / vocabulary)) == pytest.approx(vocabulary, rel=1e-12)


def test_perplexity_survives_a_product_that_underflows():
    probabilities = np.full(10_000, 0.01)
    assert np.prod(probabilities) == 0.0  # the literal definition would divide by zero
    assert absolute.perplexity(probabilities) == pytest.approx(100.0, rel=1e-12)


def test_perplexity_of_a_perfect_model_is_one():
    assert absolute.perplexity([1.0, 1.0, 1.0]) == 1.0


@pytest.mark.parametrize("bad", [[], [0.5, 0.0], [1.2], [-0.1, 0.5], [float("nan")], "half", [[0.5], [None]]])
def test_perplexity_rejects_what_is_not_a_probability(bad):
    with pytest.raises(ValueError, match="probabilities"):
        absolute.perplexity(bad)


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("d", [0, 3, 7, 2.0, "8"])
def test_odd_or_non_integer_d_is_rejected(d):
    with pytest.raises(ValueError, match="d must be"):
        absolute.frequencies(d)
    with pytest.raises(ValueError, match="d must be"):
        absolute_torch.SinusoidalPositions(d)


@pytest.mark.parametrize("base", [0, -1.0, float("inf"), "10000"])
def test_non_positive_base_is_rejected(base):
    with pytest.raises(ValueError, match="base"):
        absolute.sinusoidal([0, 1], 4, base)
    with pytest.raises(ValueError, match="base"):
        absolute_torch.SinusoidalPositions(4, base)


@pytest.mark.parametrize("positions", [[-1, 0], [0.5], [True, False]])
def test_bad_positions_are_rejected(positions):
    with pytest.raises(ValueError, match="positions"):
        absolute.sinusoidal(positions, 4)


def test_bad_torch_positions_are_rejected():
    layer, table = absolute_torch.SinusoidalPositions(4), absolute_torch.LearnedPositions(4, 2)
    for bad in (torch.tensor([0.0, 1.0]), torch.tensor([-1, 2])):
        with pytest.raises(ValueError, match="positions"):
            layer(bad)
        with pytest.raises(ValueError, match="positions"):
            table(bad)


def test_bad_offsets_and_matrices_are_rejected():
    with pytest.raises(ValueError, match="k must be an integer"):
        absolute.rotation_for_offset(1.5, 4)
    with pytest.raises(ValueError, match="k must be"):
        absolute.dot_product_at_distance(0.5, 4)
    with pytest.raises(ValueError, match="M must be"):
        absolute.position_score([0], 1, np.eye(3))
    with pytest.raises(ValueError, match="m \\+ k"):
        absolute.position_score([0, 1], -2, np.eye(4))
    with pytest.raises(ValueError, match="max_positions"):
        absolute_torch.LearnedPositions(0, 4)


def test_score_terms_reject_mismatched_shapes():
    e = np.zeros((3, 4))
    with pytest.raises(ValueError, match="pe must"):
        absolute.score_terms(e, np.zeros((3, 6)), np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="w_q must"):
        absolute.score_terms(e, e, np.zeros((5, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="w_k must"):
        absolute.score_terms(e, e, np.zeros((4, 2)), np.zeros((4, 3)))


# --- the base and the edges of the ranges ----------------------------------------------

def test_every_function_uses_the_base_it_is_given():
    """Vaswani et al.'s omega_i = base^(-2i/d) at a base other than 10000, through every function."""
    d, base = 8, 100.0
    omega = base ** (-2.0 * np.arange(d // 2) / d)
    np.testing.assert_allclose(absolute.wavelengths(d, base), 2 * np.pi / omega, rtol=1e-15)
    np.testing.assert_allclose(absolute.rotation_for_offset(3, d, base) @ absolute.sinusoidal([5], d, base)[0],
                               absolute.sinusoidal([8], d, base)[0], atol=1e-14)
    m, n = np.array([0, 7, 20]), np.array([3, 2, 9])
    by_distance = np.cos(np.multiply.outer(m - n, omega)).sum(axis=-1)
    np.testing.assert_allclose(absolute.position_dot_products(m, n, d, base), by_distance, atol=1e-13)
    np.testing.assert_allclose(absolute.dot_product_at_distance(m - n, d, base), by_distance, atol=1e-13)
    np.testing.assert_allclose(absolute.position_score(m, -3 + 4, np.eye(d), base),
                               np.cos(omega).sum() * np.ones(3), atol=1e-13)


def test_position_score_accepts_m_plus_k_at_both_ends_of_the_range():
    """``m + k`` may be 0 (the first position) and 2**32 (the last supported one); one past either is refused
    with the offending value."""
    np.testing.assert_allclose(absolute.position_score([3], -3, np.eye(2)), np.cos(3.0), rtol=1e-15)  # PE(3).PE(0)
    top = 2**32
    assert np.isfinite(absolute.position_score([top - 1], 1, np.eye(2)))
    with pytest.raises(ValueError, match=r"^m \+ k must be >= 0 .*; got min\(m\) \+ k = -1$"):
        absolute.position_score([3, 4], -4, np.eye(2))
    with pytest.raises(ValueError, match=r"^m \+ k must be at most 2\*\*32 .*; got max\(m\) \+ k = 4294967297$"):
        absolute.position_score([0, top - 1], 2, np.eye(2))


def test_the_largest_perplexity_float64_holds_is_returned():
    """A mean negative log-likelihood of exactly ln(1.8e308) gives the largest float64, not a refusal."""
    limit = float(np.log(np.finfo(np.float64).max))
    p = float(np.exp(-limit))
    assert -math.log(p) == limit
    assert absolute.perplexity([p]) == pytest.approx(np.finfo(np.float64).max, rel=1e-12)
