"""Tests for companion.interpolation: Chen et al.'s score curve and bounds, and polynomial
interpolation inside and outside the nodes."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from companion import interpolation, rope

D, BASE, L, S = 128, 10000.0, 4096, 8.0  # the book's Figure 4 setting (Llama 2)
THETA = rope.inv_freq(D, BASE)


# ---------------------------------------------------------------------------
# The score as a function of distance (Chen et al. 2023)
# ---------------------------------------------------------------------------

def test_score_curve_equals_the_rope_score_at_integer_distances():
    rng = np.random.default_rng(11)
    d = 16
    theta = rope.inv_freq(d, BASE)
    q, k = rng.normal(size=d), rng.normal(size=d)
    h = rope.to_complex(q) * np.conj(rope.to_complex(k))
    m, n = np.array([0, 5, 40, 300]), np.array([3, 0, 40, 7])
    expected = rope.score(q, k, m, n, theta)
    np.testing.assert_allclose(interpolation.score_curve(h, m - n, theta), expected, atol=1e-12)


def test_score_curve_between_integers_is_position_interpolation():
    # PI evaluates the original curve at s / factor: same as the curve of theta / factor at s
    rng = np.random.default_rng(12)
    theta = rope.inv_freq(32, BASE)
    h = rng.normal(size=16) + 1j * rng.normal(size=16)
    s = np.arange(0, 50) * 1.0
    np.testing.assert_allclose(interpolation.score_curve(h, s / 4.0, theta), interpolation.score_curve(h, s, theta / 4.0), atol=1e-12)


def test_fit_recovers_the_contents_of_a_well_conditioned_curve():
    theta = rope.inv_freq(8, 10.0)  # 4 pairs, all turning within the sampled range
    h_true = np.array([1.0 - 0.5j, 0.3 + 0.2j, -0.7j, 0.25])
    s = np.arange(200.0)
    h = interpolation.fit_score_curve(s, interpolation.score_curve(h_true, s, theta), theta)
    np.testing.assert_allclose(h, h_true, atol=1e-10)


def test_ridge_fit_minimises_the_penalised_objective():
    rng = np.random.default_rng(13)
    theta = rope.inv_freq(16, BASE)
    s = np.arange(300.0)
    y = rng.normal(size=s.size)

    def objective(h, ridge):
        return np.sum((interpolation.score_curve(h, s, theta) - y) ** 2) + ridge * np.sum(np.abs(h) ** 2)

    h = interpolation.fit_score_curve(s, y, theta, ridge=0.5)
    best = objective(h, 0.5)
    for _ in range(20):
        step = 1e-3 * (rng.normal(size=8) + 1j * rng.normal(size=8))
        assert objective(h + step, 0.5) >= best
    plain = interpolation.fit_score_curve(s, y, theta)
    assert np.linalg.norm(h) < np.linalg.norm(plain)


def test_unregularised_fit_of_noise_extrapolates_wildly_and_ridge_does_not():
    # Chen et al. (2023), Figure 2: LLaMA 7B head (d = 128), L = 2048, random targets
    theta = rope.inv_freq(128, BASE)
    s = np.arange(2048.0)
    y = np.random.default_rng(0).normal(size=s.size)
    far = np.arange(2048.0, 4096.0)
    wild = interpolation.fit_score_curve(s, y, theta, rcond=1e-8)
    tame = interpolation.fit_score_curve(s, y, theta, ridge=1.0)
    inside = np.abs(interpolation.score_curve(wild, s, theta)).max()
    assert inside < 1.0
    assert np.abs(interpolation.score_curve(wild, far, theta)).max() > 1000 * inside
    assert np.abs(interpolation.score_curve(tame, far, theta)).max() < 3 * np.abs(interpolation.score_curve(tame, s, theta)).max()


def test_unregularised_fit_with_fewer_samples_than_unknowns_is_the_minimum_norm_fit():
    """ridge = 0 is NumPy's least squares: with 3 samples for 8 unknowns (4 pairs) the normal equations
    are singular, and the fit is the one of least norm that passes through every sample."""
    theta = rope.inv_freq(8, 10.0)
    s, y = np.array([0.0, 1.0, 5.0]), np.array([1.0, -0.5, 2.0])
    h = interpolation.fit_score_curve(s, y, theta)
    np.testing.assert_allclose(interpolation.score_curve(h, s, theta), y, atol=1e-12)
    phase = np.multiply.outer(s, theta)
    X = np.concatenate([np.cos(phase), -np.sin(phase)], axis=1)   # a(s) = X (Re h, Im h)
    coeffs = np.concatenate([h.real, h.imag])
    np.testing.assert_allclose(coeffs, np.linalg.pinv(X) @ y, atol=1e-12)   # in the row space of X


def test_rcond_drops_the_weak_directions_of_the_fit():
    """Singular values below rcond times the largest count as zero: a large rcond keeps only the strong
    directions, so the fit is shorter and no longer passes through the samples."""
    theta = rope.inv_freq(16, BASE)
    s = np.arange(64.0)
    y = np.random.default_rng(2).normal(size=s.size)
    full = interpolation.fit_score_curve(s, y, theta)
    cut = interpolation.fit_score_curve(s, y, theta, rcond=0.5)
    assert np.linalg.norm(cut) < 0.5 * np.linalg.norm(full)
    residual = np.linalg.norm(interpolation.score_curve(cut, s, theta) - y)
    assert residual > 1.01 * np.linalg.norm(interpolation.score_curve(full, s, theta) - y)


def test_rcond_and_ridge_together_are_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"^rcond and ridge must not both be given: rcond applies only to the "):
        interpolation.fit_score_curve(np.arange(5.0), np.ones(5), THETA, rcond=1e-8, ridge=1.0)


def test_pi_bound_ratio_at_another_base():
    """Chen et al.'s two bounds for Llama 3's base 500000: the frequencies, and the paper's ln(base), move."""
    base, d = 500_000.0, 64
    theta = rope.inv_freq(d, base)
    s = np.array([0.0, 3.0, 250.0])
    B = np.array([sum(abs(np.sum(np.exp(1j * x * theta[:k]))) for k in range(1, d // 2 + 1)) for x in s])
    np.testing.assert_allclose(interpolation.pi_bound_ratio(s, d, base), 2 * B / (np.sum(theta**2) / 8), rtol=1e-12)
    np.testing.assert_allclose(interpolation.pi_bound_ratio(s, d, base, "paper"), 64 * math.log(base) * B / d,
                               rtol=1e-12)


def test_interpolation_error_bound_holds_and_is_sharp_for_one_slow_pair():
    rng = np.random.default_rng(14)
    theta = rope.inv_freq(64, BASE)
    h = rng.normal(size=32) + 1j * rng.normal(size=32)
    grid = np.arange(100.0)
    fine = np.linspace(0, 99, 99 * 16 + 1)
    a_fine = interpolation.score_curve(h, fine, theta)
    a_lin = np.interp(fine, grid, interpolation.score_curve(h, grid, theta))
    assert np.max(np.abs(a_fine - a_lin)) <= interpolation.interpolation_error_bound(h, theta)
    # one pair, cos(s theta): the midpoint error is cos(theta/2)(1 - cos(theta/2)) ~ theta^2 / 8
    one = np.array([1e-2])
    midpoint = interpolation.score_curve(np.array([1.0]), [0.5], one)[0] - 0.5 * (1 + np.cos(1e-2))
    assert midpoint / interpolation.interpolation_error_bound(np.array([1.0]), one) == pytest.approx(1.0, rel=1e-3)
    assert interpolation.interpolation_error_bound(h, theta, spacing=0.5) == pytest.approx(
        interpolation.interpolation_error_bound(h, theta) / 4)


def test_pi_bound_ratio_against_a_direct_sum():
    theta = rope.inv_freq(D, BASE)
    s = np.array([0.0, 1.0, 37.0, 1000.0, 3643.0])
    B = np.array([sum(abs(np.sum(np.exp(1j * x * theta[:k]))) for k in range(1, 65)) for x in s])
    assert B[0] / D == pytest.approx(16.25)  # (d/2)(d/2 + 1)/2 / d = (d + 2)/8
    np.testing.assert_allclose(interpolation.pi_bound_ratio(s, constant="exact"), 2 * B / (np.sum(theta**2) / 8), rtol=1e-12)
    np.testing.assert_allclose(interpolation.pi_bound_ratio(s, constant="paper"), 64 * math.log(BASE) * B / D, rtol=1e-12)
    everywhere = np.arange(4096.0)
    assert interpolation.pi_bound_ratio(everywhere, constant="paper").min() > 2 * 32 * math.log(BASE) > 589
    ratio = interpolation.pi_bound_ratio(everywhere, constant="paper") / interpolation.pi_bound_ratio(everywhere)
    np.testing.assert_allclose(ratio, np.sum(theta**2) / (D / (4 * math.log(BASE))), rtol=1e-12)
    assert 1.15 < ratio[0] < 1.152


# ---------------------------------------------------------------------------
# Polynomial interpolation: node polynomial, interpolant, Cauchy's bound
# ---------------------------------------------------------------------------

def test_node_polynomial_matches_numpy_poly_and_vanishes_at_the_nodes():
    nodes = np.array([0.0, 1.5, 4.0, 7.0])
    x = np.linspace(-3, 12, 61)
    reference = np.polyval(np.poly(nodes), x)          # independent: coefficients from the roots
    np.testing.assert_allclose(interpolation.node_polynomial(x, nodes), reference, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(interpolation.node_polynomial(nodes, nodes), 0.0)
    assert interpolation.node_polynomial(np.zeros((2, 5)), nodes).shape == (2, 5)


def test_polynomial_interpolant_against_numpy_polyfit():
    rng = np.random.default_rng(5)
    nodes = np.sort(rng.uniform(-1, 1, size=6))
    values = rng.normal(size=6)
    coefficients = np.polyfit(nodes, values, deg=5)      # exact fit: 6 points, degree 5
    x = np.linspace(-2, 2, 101)
    np.testing.assert_allclose(interpolation.polynomial_interpolant(nodes, values, x), np.polyval(coefficients, x),
                               rtol=1e-7, atol=1e-7)
    # at the nodes it returns the data exactly
    np.testing.assert_array_equal(interpolation.polynomial_interpolant(nodes, values, nodes), values)
    assert interpolation.polynomial_interpolant(nodes, values, np.zeros((3, 2))).shape == (3, 2)


def test_polynomial_interpolant_reproduces_polynomials_inside_and_far_outside():
    nodes = np.arange(0.0, 65.0, 8.0)                   # 9 nodes: degree 8
    coefficients = np.array([1e-7, -3e-6, 0.0, 2e-4, -1e-3, 0.01, -0.1, 1.0, 2.0])
    x = np.linspace(-64, 256, 321)
    np.testing.assert_allclose(interpolation.polynomial_interpolant(nodes, np.polyval(coefficients, nodes), x),
                               np.polyval(coefficients, x), rtol=1e-6)   # extrapolation amplifies rounding


def test_remainder_for_x_to_the_n_plus_1_is_the_node_polynomial():
    # f = x^(n+1) has f^(n+1) = (n+1)!, so f - p = omega exactly
    nodes = np.array([0.0, 1.0, 3.0, 4.0])
    x = np.linspace(-2, 8, 41)
    np.testing.assert_allclose(x**4 - interpolation.polynomial_interpolant(nodes, nodes**4, x),
                               interpolation.node_polynomial(x, nodes), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(interpolation.polynomial_remainder_bound(x, nodes, 24.0),
                               np.abs(interpolation.node_polynomial(x, nodes)), rtol=1e-12)


def test_polynomial_interpolant_of_nodes_far_from_zero_and_close_together():
    """Nodes 1e8 + (0, 1, 2, 3) 1e-4 apart: working relative to their centre keeps the gaps exact, so a
    cubic is reproduced to rounding, between the nodes and beyond them."""
    nodes = 1e8 + np.arange(4.0) * 1e-4
    x = 1e8 + np.array([0.5, 1.5, 2.5, 4.0, -1.0]) * 1e-4

    def cubic(t):
        u = (t - 1e8) * 1e4
        return u**3 - 2 * u

    np.testing.assert_allclose(interpolation.polynomial_interpolant(nodes, cubic(nodes), x), cubic(x), atol=1e-9)


def test_polynomial_interpolant_of_tiny_nodes_about_zero():
    """Five nodes 1e-200 apart around 0 (x^2 through them): the weights, products of 1e-200 gaps, would
    overflow unless the nodes are spread over [-1, 1] first."""
    nodes = np.arange(-2.0, 3.0) * 1e-200
    got = interpolation.polynomial_interpolant(nodes, (nodes / 1e-200) ** 2, np.array([0.5e-200, 3e-200]))
    np.testing.assert_allclose(got, [0.25, 9.0], rtol=1e-12)


def test_polynomial_interpolant_at_nodes_for_x_of_two_dimensions():
    """At a node the interpolant returns the value there, for ``x`` of any shape."""
    got = interpolation.polynomial_interpolant([0.0, 1.0, 2.0], [5.0, 6.0, 9.0], np.array([[0.0, 1.0], [2.0, 0.5]]))
    np.testing.assert_array_equal(got[[0, 0, 1], [0, 1, 0]], [5.0, 6.0, 9.0])
    assert got[1, 1] == pytest.approx(5.25)   # 5 + t^2 at t = 1/2


def test_polynomial_interpolant_where_the_spread_rounds_x_onto_a_node():
    """Nodes 1e300 apart put x = 1e-310 at t = 1e-610, which rounds to the node at 0: the value there,
    not 0/0."""
    assert interpolation.polynomial_interpolant([-1e300, 0.0, 1e300], [1.0, 2.0, 3.0], [1e-310])[0] == 2.0


def test_polynomial_interpolant_of_400_chebyshev_nodes():
    """Spread over [-1, 1] the weights of 400 Chebyshev nodes stay below 2**400; over [-1/4, 1/4] they
    would pass 8**400 and overflow."""
    nodes = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    x = np.array([0.3, -0.71, 0.999])
    np.testing.assert_allclose(interpolation.polynomial_interpolant(nodes, np.cos(3.0 * nodes), x), np.cos(3.0 * x),
                               rtol=0, atol=1e-13)


def test_polynomial_interpolant_of_a_line_far_out():
    """The line through (-1, 0) and (1, 1) at x = 1.2e154: with the nodes at t = -1, 1, omega(t) = t**2 - 1 =
    1.44e308 still fits float64; a smaller half-width (nodes at -1.5, 1.5) would make it overflow."""
    assert interpolation.polynomial_interpolant([-1.0, 1.0], [0.0, 1.0], [1.2e154])[0] == pytest.approx(6e153,
                                                                                                        rel=1e-12)


def test_polynomial_interpolant_leaks_no_divide_by_zero_warning():
    """Nodes 0 and 1e-300 round together on [-1, 1], so a weight is 1 / 0: the contract refuses the call,
    and no RuntimeWarning reaches the caller first."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="overflows float64"):
            interpolation.polynomial_interpolant([0.0, 1e-300, 1.0], [1.0, 2.0, 3.0], [0.5])


def test_polynomial_interpolant_of_one_node_a_subnormal_away():
    """x a subnormal away from a node: 1 / (t - t_j) would overflow; the value is the node's."""
    assert interpolation.polynomial_interpolant([0.0], [1.0], [5e-324])[0] == 1.0
    assert interpolation.polynomial_interpolant([-1.0, 0.0, 1.0], [2.0, 3.0, 5.0], [1e-320])[0] == 3.0


def test_cauchy_bound_beyond_170_nodes_divides_by_the_whole_factorial():
    """(n + 1)! beyond 170! overflows float64; the bound divides the rest in: M |omega(x)| / 171! for 171 nodes."""
    x = np.array([1.5])
    for n_nodes in (170, 171, 200):
        nodes = np.linspace(0.0, 1.0, n_nodes)
        log_omega = np.sum(np.log(np.abs(x[0] - nodes)))
        # M = 1e300 keeps the bound a normal float (with M = 1 it is about 1e-313, inside pytest.approx's
        # default abs = 1e-12, and a bound off by a factor 171 passed)
        expected = math.exp(math.log(1e300) + log_omega - math.lgamma(n_nodes + 1))
        assert interpolation.polynomial_remainder_bound(x, nodes, 1e300)[0] == pytest.approx(expected, rel=1e-9, abs=0)


def test_cauchy_bound_holds_for_a_rope_pair_inside_and_outside():
    theta = THETA[16]                                   # 0.1 rad per position
    nodes = np.arange(0.0, 65.0, 8.0)
    x = np.linspace(0, 128, 1025)
    error = np.abs(np.cos(theta * x) - interpolation.polynomial_interpolant(nodes, np.cos(theta * nodes), x))
    bound = interpolation.polynomial_remainder_bound(x, nodes, theta**9)
    assert np.all(error <= bound + 1e-12)
    inside, outside = x <= 64, x >= 64
    assert error[inside].max() < 1e-3 and error[outside].max() > 100


@pytest.mark.parametrize("call,match", [
    (lambda: interpolation.node_polynomial([1.0], [0.0, 0.0]), "nodes"),
    (lambda: interpolation.node_polynomial([1.0], []), "nodes"),
    (lambda: interpolation.node_polynomial([np.inf], [0.0]), "x"),
    (lambda: interpolation.polynomial_interpolant([0.0, 1.0], [1.0], [0.5]), "values"),
    (lambda: interpolation.polynomial_interpolant([[0.0, 1.0]], [[1.0, 2.0]], [0.5]), "nodes"),
    (lambda: interpolation.polynomial_interpolant([0.0, 1.0], [1.0, 2.0], [np.nan]), "x"),
    (lambda: interpolation.polynomial_remainder_bound([0.5], [0.0, 1.0], -1.0), "derivative_bound"),
    (lambda: interpolation.polynomial_remainder_bound([0.5], [0.0, 1.0], "1"), "derivative_bound"),
])
def test_interpolation_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call,match", [
    (lambda: interpolation.score_curve(np.ones(3), [0.0], THETA), "h"),
    (lambda: interpolation.score_curve(np.full(64, np.nan), [0.0], THETA), "h"),
    (lambda: interpolation.score_curve(np.ones(64), [np.inf], THETA), "distances"),
    (lambda: interpolation.fit_score_curve(np.arange(5.0), np.ones(4), THETA), "targets"),
    (lambda: interpolation.fit_score_curve(np.ones((2, 2)), np.ones((2, 2)), THETA), "distances"),
    (lambda: interpolation.fit_score_curve(np.arange(5.0), np.ones(5), THETA, ridge=-1.0), "ridge"),
    (lambda: interpolation.fit_score_curve(np.arange(5.0), np.ones(5), THETA, rcond=0.0), "rcond"),
    (lambda: interpolation.fit_score_curve(np.arange(5.0), np.ones(5), THETA, rcond=1e-8, ridge=1.0), "rcond"),
    (lambda: interpolation.interpolation_error_bound(np.ones(64), THETA, spacing=0.0), "spacing"),
    (lambda: interpolation.interpolation_error_bound(np.ones(64), -THETA), "inv_freq"),
    (lambda: interpolation.pi_bound_ratio([1.0], d=127), "d"),
    (lambda: interpolation.pi_bound_ratio([1.0], base=0.5), "base"),
    (lambda: interpolation.pi_bound_ratio([1.0], constant="tight"), "constant"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
