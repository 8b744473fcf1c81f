r"""Interpolating is safer than extrapolating: Chen et al.'s bounds on the RoPE score, and polynomials.

Position Interpolation (Chen et al. 2023) evaluates the score of a RoPE head, a sum
of sinusoids of the distance (:func:`score_curve`), between the integers it was
trained on instead of beyond them. Their argument is the interpolation remainder:
between two grid points the curve strays from the straight line through them by at
most ``spacing^2 / 8`` times a bound on its second derivative
(:func:`interpolation_error_bound`), while outside the trained range only RoFormer's
much weaker bound holds (:func:`pi_bound_ratio`). :func:`fit_score_curve` repeats
their experiment of fitting contents to a target curve and extrapolating.

The same contrast in its classical form (chapter 8): a polynomial through ``n + 1``
nodes errs by ``f^{(n+1)}(xi) omega(x) / (n + 1)!``, where the node polynomial
``omega`` (:func:`node_polynomial`) stays small between the nodes and grows like
``|x|^(n+1)`` outside them (:func:`polynomial_interpolant`,
:func:`polynomial_remainder_bound`; Cauchy's remainder formula, e.g. Suli & Mayers
2003, *An Introduction to Numerical Analysis*, ch. 6).
"""
from __future__ import annotations

import math
from typing import Annotated

import numpy as np

from . import absolute, rope
from ._contracts import (
    Array,
    Contents,
    Distances,
    EvenSize,
    Finite,
    NonNegativeReal,
    OneOf,
    Positive,
    PositiveFrequencies,
    Real,
    Reals,
    contract,
    entries,
    same_shape,
)

__all__ = [
    "score_curve",
    "fit_score_curve",
    "interpolation_error_bound",
    "pi_bound_ratio",
    "node_polynomial",
    "polynomial_interpolant",
    "polynomial_remainder_bound",
]

#: Sample distances: a non-empty 1-D array within the supported range.
Samples = Annotated[np.ndarray, Array(ndim=1, nonempty=True, bounded=True)]
#: Interpolation nodes: a non-empty 1-D array of distinct real numbers.
Nodes = Annotated[np.ndarray, Array(ndim=1, nonempty=True)]


_CONTENT_PER_PAIR = same_shape("inv_freq", "h", why=" (one complex number per pair)")


# ---------------------------------------------------------------------------
# Why interpolation is safer: the score as a function of distance (Chen et al. 2023)
# ---------------------------------------------------------------------------

@contract(_CONTENT_PER_PAIR,
          entries("distances.size * len(inv_freq)", lambda distances, inv_freq: distances.size * inv_freq.size))
def score_curve(h: Contents, distances: Distances, inv_freq: PositiveFrequencies) -> np.ndarray:
    r"""The RoPE score as a function of the relative distance: ``a(s) = Re sum_j h_j e^{i s theta_j}``.

    Chen et al. (2023), eq. (3), with ``h_j = (q_{2j} + i q_{2j+1})(k_{2j} - i k_{2j+1})``
    the complex content of pair ``j`` (the ``h_j`` of RoFormer section 3.4.3) and
    ``s = m - n``. The formula is defined for every real ``s``, not only for the integer
    distances a model meets; Position Interpolation evaluates it at fractions.
    ``h``: complex, shape ``(d/2,)``; ``distances``: real, any shape; ``inv_freq``:
    ``(d/2,)``. Returns float64 of the shape of ``distances``.
    """
    # a(s) = Re sum_j h_j e^{i s theta_j}
    return (np.exp(1j * np.multiply.outer(distances, inv_freq)) @ h).real


def _one_regularisation(rcond, ridge) -> None:
    if rcond is not None and ridge > 0:
        raise ValueError("rcond and ridge must not both be given: rcond applies only to the "
                         "unregularised fit (ridge = 0)")


@contract(same_shape("distances", "targets"), _one_regularisation,
          entries("distances.size * d", lambda distances, inv_freq: distances.size * 2 * inv_freq.size))
def fit_score_curve(distances: Samples, targets: Reals, inv_freq: PositiveFrequencies, rcond: Positive | None = None,
                    ridge: NonNegativeReal = 0.0) -> np.ndarray:
    r"""Least-squares contents ``h`` whose :func:`score_curve` matches ``targets`` at ``distances``.

    Writes ``a(s) = sum_j Re(h_j) cos(s theta_j) - Im(h_j) sin(s theta_j)`` as a linear
    model with the ``d`` real unknowns ``(Re h, Im h)`` and minimises
    ``sum_k (a(s_k) - y_k)^2 + ridge * sum_j |h_j|^2``: with ``ridge = 0`` by
    ``numpy.linalg.lstsq`` (the minimum-norm solution; singular values below
    ``rcond`` times the largest count as zero, NumPy's default when ``None``), with
    ``ridge > 0`` by the regularised normal equations. This is the experiment of Chen
    et al. (2023), Figure 2 and Appendix C.1 (they solve the normal equations with
    ``eps = 0`` in float32; the slow pairs make the problem very ill-conditioned, so
    the extrapolated values depend on this choice, not only on the data).
    ``distances``, ``targets``: real, shape ``(K,)``. Returns complex ``h``, shape ``(d/2,)``.
    """
    # s_k theta_j, shape (K, d/2)
    phase = np.multiply.outer(distances, inv_freq)
    # a(s) = sum_j Re(h_j) cos(s theta_j) - Im(h_j) sin(s theta_j): the columns of the linear model
    X = np.concatenate([np.cos(phase), -np.sin(phase)], axis=1)
    if ridge > 0:
        # (X^T X + ridge I) c = X^T y
        coeffs = np.linalg.solve(X.T @ X + ridge * np.eye(X.shape[1]), X.T @ targets)
    else:
        # min ||X c - y||, the minimum-norm solution
        coeffs = np.linalg.lstsq(X, targets, rcond=rcond)[0]
    n = inv_freq.size
    # h = Re h + i Im h
    return coeffs[:n] + 1j * coeffs[n:]


@contract(_CONTENT_PER_PAIR, result=Finite("h, inv_freq and spacing"))
def interpolation_error_bound(h: Contents, inv_freq: PositiveFrequencies, spacing: Positive = 1.0) -> float:
    r"""Bound on ``|a(s) - a_lin(s)|`` between two grid points ``spacing`` apart.

    ``a_lin`` is the straight line through ``a(s_1)`` and ``a(s_2)``. The classical
    interpolation remainder gives ``a(s) - a_lin(s) = a''(xi) (s - s_1)(s - s_2) / 2``
    for some ``xi`` in ``[s_1, s_2]``, and ``|a''| <= sum_j |h_j| theta_j^2``; the
    product ``(s - s_1)(s_2 - s)`` is at most ``spacing^2 / 4``. So

    .. math:: |a(s) - a_{\mathrm{lin}}(s)| \le \frac{\mathrm{spacing}^2}{8} \sum_j |h_j|\,\theta_j^2 .

    This is Chen et al. (2023), Theorem 2.1, before their last step, which replaces
    ``sum_j theta_j^2`` by ``d / (4 ln c)``; see :func:`pi_bound_ratio`. ``h``: complex,
    ``(d/2,)``. Returns a float.
    """
    # spacing^2 / 8 sum_j |h_j| theta_j^2
    return float(np.float64(spacing) ** 2 / 8.0 * np.sum(np.abs(h) * inv_freq**2))


@contract(entries("distances.size * d / 2", lambda distances, d: distances.size * (d // 2)))
def pi_bound_ratio(distances: Distances, d: EvenSize = 128,
                   base: Annotated[float, Real(gt=1.0, why="ln base > 0 for the bounds")] = absolute.BASE,
                   constant: Annotated[str, OneOf("exact", "paper")] = "exact") -> np.ndarray:
    r"""Extrapolation bound over interpolation bound, per unit ``max_j |h_j|`` (Chen et al. 2023).

    Extrapolation (RoFormer section 3.4.3, as restated in Chen et al., eq. (8)):
    ``|a(s)| <= 2 max_j |h_j| B(s)`` with ``B(s) = sum_{k=1}^{d/2} |A_k(s)|`` and
    ``A_k(s) = sum_{j<k} e^{i s theta_j}`` (``B = (d/2)`` times
    :func:`companion.rope.long_term_decay`). Interpolation, worst point of a unit gap:
    ``max_j |h_j| C`` with ``C = sum_j theta_j^2 / 8`` (``constant="exact"``, from
    :func:`interpolation_error_bound`) or ``C = d / (32 ln base)`` (``constant="paper"``,
    their eq. (7), which rests on ``c^x <= 1 + x ln c`` for ``x < 0``; convexity gives
    the opposite inequality, so the paper's ``C`` is smaller than the exact one, by a
    factor 1.15 at ``d = 128``). Returns ``2 B(s) / C``, the shape of ``distances``
    (real). With the paper's constant this is ``64 ln(base) B(s) / d``, "at least
    ~600" where ``B(s) >= d``. The two bounds bound different quantities (a deviation
    from a chord and an absolute value): the ratio compares guarantees, not scores.
    """
    theta = rope.inv_freq(d, base)
    # B(s) = (d/2) times RoFormer's decay curve
    B = (d // 2) * rope.long_term_decay(distances, theta)
    # C = sum_j theta_j^2 / 8, or the paper's d / (32 ln base)
    C = np.sum(theta**2) / 8.0 if constant == "exact" else d / (32.0 * math.log(base))
    # 2 B(s) / C
    return 2.0 * B / C


# ---------------------------------------------------------------------------
# Approximation theory: polynomial interpolation inside and outside the nodes
# ---------------------------------------------------------------------------

def _distinct(nodes) -> None:
    if np.unique(nodes).size != nodes.size:
        raise ValueError("nodes must be distinct real numbers (no node may repeat)")


_AT_X = entries("x.size * len(nodes)", lambda x, nodes: x.size * nodes.size)


@contract(_distinct, _AT_X, result=Finite("x and nodes", "omega(x) overflows float64: move x closer to the nodes"))
def node_polynomial(x: Reals, nodes: Nodes) -> np.ndarray:
    r"""The node polynomial ``omega(x) = prod_j (x - x_j)`` of the interpolation remainder.

    For ``n + 1`` distinct nodes and a function ``f`` with ``n + 1`` continuous
    derivatives, the polynomial ``p`` of degree ``<= n`` through ``(x_j, f(x_j))``
    satisfies ``f(x) - p(x) = f^{(n+1)}(xi) omega(x) / (n + 1)!`` for some ``xi`` in
    the smallest interval holding ``x`` and the nodes (Cauchy's remainder formula,
    e.g. Suli & Mayers 2003, *An Introduction to Numerical Analysis*, ch. 6). ``omega`` stays
    small between the nodes and grows like ``|x|^(n+1)`` outside them: the reason
    interpolation is safer than extrapolation. ``x``: real, any shape; ``nodes``:
    real, shape ``(n + 1,)``, distinct. Returns float64 of the shape of ``x``.
    """
    # omega(x) = prod_j (x - x_j)
    return np.prod(np.subtract.outer(x, nodes), axis=-1)


@contract(_distinct, same_shape("nodes", "values"), _AT_X,
          result=Finite("x, nodes and values", "the interpolant overflows float64 this far from the nodes"))
def polynomial_interpolant(nodes: Nodes, values: Reals, x: Reals) -> np.ndarray:
    r"""The polynomial of degree ``<= n`` through ``(nodes[j], values[j])``, evaluated at ``x``.

    Barycentric Lagrange interpolation in its "first" (modified Lagrange) form,

    .. math:: p(x) = \omega(x) \sum_j \frac{w_j f_j}{x - x_j}, \qquad
              w_j = \frac{1}{\prod_{k \ne j} (x_j - x_k)},

    with ``omega`` of :func:`node_polynomial`; at a node it returns the value there
    exactly. This form is backward stable at every ``x``, inside the nodes and
    outside (Berrut & Trefethen 2004, SIAM Review 46(3); Higham 2004, IMA J. Numer.
    Anal. 24), so extrapolated values are the polynomial's, not rounding noise.
    ``nodes``: ``(n + 1,)`` distinct reals; ``values``: ``(n + 1,)``; ``x``: any
    shape. Returns float64 of the shape of ``x``.
    """
    # The interpolant commutes with the affine map t = (x - c) / h, so work on nodes spread
    # over [-1, 1]: the weights w_j then neither underflow for nodes 1e-200 apart nor
    # overflow for nodes 1e200 apart.
    centre = (nodes.max() + nodes.min()) / 2.0
    half_width = (nodes.max() - nodes.min()) / 2.0 or 1.0
    ts = (nodes - centre) / half_width
    t = (x - centre) / half_width
    diff = ts[:, None] - ts[None, :]
    np.fill_diagonal(diff, 1.0)
    with np.errstate(divide="ignore"):
        # w_j = 1 / prod_{k != j} (t_j - t_k)
        w = 1.0 / np.prod(diff, axis=1)
        # t - t_j, shape x.shape + (n + 1,)
        gap = np.subtract.outer(t, ts)
        # on a node, or nearer to it than the smallest normal float (1e-308 in the units of t): 1 / gap
        # would overflow there, and p(t) differs from f_j by at most |p'| * 2.2e-308
        hit = (np.abs(gap) < np.finfo(np.float64).tiny) | (np.subtract.outer(x, nodes) == 0.0)
        safe = np.where(hit, 1.0, gap)
        # p(t) = omega(t) sum_j w_j f_j / (t - t_j)
        out = np.prod(gap, axis=-1) * np.sum(w * values / safe, axis=-1)
    # at a node, the value there exactly
    on_node = hit.any(axis=-1)
    if np.any(on_node):
        out = np.where(on_node, values[np.argmax(hit, axis=-1)], out)
    return out


@contract(_distinct, _AT_X, result=Finite("x, nodes and derivative_bound"))
def polynomial_remainder_bound(x: Reals, nodes: Nodes, derivative_bound: NonNegativeReal) -> np.ndarray:
    r"""Cauchy's bound on ``|f(x) - p(x)|``: ``M |omega(x)| / (n + 1)!``.

    ``M`` (``derivative_bound``) bounds ``|f^{(n+1)}|`` on the interval holding ``x``
    and the nodes; for ``f(x) = cos(theta x)``, one RoPE pair's score, ``M =
    theta^(n+1)`` works everywhere. ``p`` is the interpolant of
    :func:`polynomial_interpolant` and ``omega`` the node polynomial of
    :func:`node_polynomial` (Suli & Mayers 2003, ch. 6). ``x``: any shape; ``nodes``:
    ``(n + 1,)`` distinct; ``derivative_bound``: a real number ``>= 0``. Returns
    float64 of the shape of ``x``.
    """
    # M |omega(x)| / (n + 1)!, the factorial in float64 up to 170!
    omega = node_polynomial(x, nodes)
    bound = derivative_bound * np.abs(omega) / float(math.factorial(min(nodes.size, 170)))
    if nodes.size > 170:  # (n + 1)! beyond float64: divide the rest in as a float sum of logs
        bound = bound / np.exp(sum(math.log(k) for k in range(171, nodes.size + 1)))
    return bound
