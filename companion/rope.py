r"""Rotary position embedding (RoPE): rotate the query and key by their positions.

Su et al. (2021), "RoFormer: Enhanced Transformer with Rotary Position Embedding".
The ``d`` components of a query or key are read as ``d/2`` plane vectors (pairs);
pair ``i`` of the token at position ``m`` is turned by the angle ``m * theta_i`` with
``theta_i = base^(-2i/d)``. Because ``R_a^T R_b = R_{b-a}``, the score between a query
at ``m`` and a key at ``n`` depends on the positions only through ``n - m``: each
token is rotated by its own (absolute) position, yet attention sees relative ones.

Two pair layouts are in use and both are supported everywhere (``layout=``):

* ``"adjacent"``: pair ``i`` is components ``(2i, 2i+1)``, as in the RoFormer paper,
  GPT-J and Meta's reference code for Llama (complex numbers from neighbours);
* ``"split"``: pair ``i`` is components ``(i, i + d/2)``, as in GPT-NeoX and the
  Hugging Face ``transformers`` implementation of Llama (the ``rotate_half`` form),
  whose checkpoint conversion permutes ``W_Q`` and ``W_K`` accordingly
  (:func:`layout_permutation`).

Numbers are numpy float64; :class:`companion.rope_torch.RotaryEmbedding` is the torch
layer, in a module of its own so that this one imports no torch. Angles
``m * theta_i`` are always formed in float64, so positions of ``10^6`` and beyond
keep every pair accurate to about ``1e-9`` rad. The same angles formed in float32
are off by far more, and by more the wider the head, since the error is that of the
worst pair (each ``theta_i`` rounded to float32, times ``m``, plus the rounding of
the product): at ``m = 10^7`` the worst pair is off by 0.09 rad for ``d = 16``, 0.25
rad for ``d = 64`` and 0.77 rad for ``d = 128`` (base 10000, measured). Positions
are supported up to ``2**32`` (``companion._contracts.MAX_POSITION``), where a float64
angle is still within ``5e-7`` rad; larger ones are refused.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from . import absolute
from ._contracts import (
    ComplexArray,
    Contents,
    Distances,
    EvenSize,
    Finite,
    Frequencies,
    Integers,
    Mask,
    Matrix,
    OneOf,
    Positions,
    Positive,
    Sequences,
    Vectors,
    broadcast,
    broadcast_to_leading,
    contract,
    entries,
    mask_and_bias_fit,
    pairs_fit,
    rows_fit,
    rule,
    same_shape,
)
from .attention import scaled_dot_product_attention

__all__ = [
    "LAYOUTS",
    "inv_freq",
    "angles",
    "pair_indices",
    "layout_permutation",
    "rotate",
    "rotation_matrices",
    "rotate_by_matrices",
    "to_complex",
    "from_complex",
    "rotate_complex",
    "score",
    "relative_score",
    "complex_score",
    "self_attention",
    "long_term_decay",
    "decay_bound",
]

#: The two pair layouts in use: adjacent pairs (2i, 2i+1), split halves (i, i + d/2).
LAYOUTS = ("adjacent", "split")

#: A pair layout, one of :data:`LAYOUTS`.
Layout = Annotated[str, OneOf(*LAYOUTS)]


def _angles_fit(positions: str):
    """A rule: the angles of ``positions`` times ``inv_freq`` fit in memory."""
    return rule((positions, "inv_freq"),
                entries(f"{positions}.size * len(inv_freq)", lambda m, theta: m.size * theta.size))


# ---------------------------------------------------------------------------
# Frequencies and angles
# ---------------------------------------------------------------------------

@contract(entries("d / 2", lambda d: d // 2))
def inv_freq(d: EvenSize, base: Positive = absolute.BASE) -> np.ndarray:
    r"""The rotation frequencies ``theta_i = base^(-2i/d)``, ``i = 0 .. d/2 - 1``.

    Su et al. (2021), eq. (15), with ``base = 10000``. Pair 0 turns 1 rad per
    position step (the fastest); the last pair turns ``base^(-(d-2)/d)`` rad (the
    slowest). Shape ``(d/2,)``, float64.
    """
    # theta_i = base^(-2i/d): the frequencies of the sinusoid (Vaswani et al. 2017)
    return absolute.frequencies(d, base)


@contract(_angles_fit("positions"))
def angles(positions: Positions, inv_freq: Frequencies) -> np.ndarray:
    r"""Rotation angles ``phi[..., i] = m * theta_i``, formed in float64.

    ``positions`` (any shape ``P``) holds the integer positions ``m >= 0``;
    ``inv_freq`` (shape ``(d/2,)``) holds the frequencies ``theta_i``. Returns the
    outer product, shape ``P + (d/2,)``. Su et al. (2021).
    """
    # phi[..., i] = m theta_i, shape positions.shape + (d/2,)
    return np.multiply.outer(positions.astype(np.float64), inv_freq)


# ---------------------------------------------------------------------------
# Pair layouts
# ---------------------------------------------------------------------------

@contract
def pair_indices(d: EvenSize, layout: Layout = "adjacent") -> tuple[np.ndarray, np.ndarray]:
    r"""Component indices ``(a, b)`` of the ``d/2`` pairs, each of shape ``(d/2,)``.

    Pair ``i`` is the plane vector ``(x[a_i], x[b_i])``: ``(2i, 2i+1)`` for
    ``"adjacent"`` (Su et al. 2021; GPT-J; Meta's Llama code), ``(i, i + d/2)`` for
    ``"split"`` (GPT-NeoX, Black et al. 2022; Llama in Hugging Face ``transformers``).
    """
    i = np.arange(d // 2)
    if layout == "adjacent":
        # (2i, 2i + 1)
        return 2 * i, 2 * i + 1
    # (i, i + d/2)
    return i, i + d // 2


@contract
def layout_permutation(d: EvenSize, source: Layout = "adjacent", target: Layout = "split") -> np.ndarray:
    r"""Index array ``p`` (shape ``(d,)``) with ``x_target = x_source[..., p]``.

    Moves every component to where the other layout keeps it: the first member of
    pair ``i`` goes to the target's ``a_i`` and the second to ``b_i`` (see
    :func:`pair_indices`). Rotating in one layout equals permuting, rotating in the
    other, and permuting back; permuting the columns of ``W_Q`` and ``W_K`` by ``p``
    leaves every score unchanged. ``source == target`` gives the identity.
    """
    a_src, b_src = pair_indices(d, source)
    a_tgt, b_tgt = pair_indices(d, target)
    p = np.empty(d, dtype=np.int64)
    # the first member of pair i goes to the target's a_i, the second to b_i
    p[a_tgt] = a_src
    p[b_tgt] = b_src
    return p


# ---------------------------------------------------------------------------
# The rotation: fast path, explicit matrices, complex numbers
# ---------------------------------------------------------------------------

@contract(pairs_fit("x"), broadcast_to_leading("positions", "x"), _angles_fit("positions"))
def rotate(x: Vectors, positions: Positions, inv_freq: Frequencies, layout: Layout = "adjacent") -> np.ndarray:
    r"""Rotate every pair of ``x`` by its position: the RoPE map of Su et al. (2021).

    For pair ``i`` = ``(x_a, x_b)`` (see :func:`pair_indices`) of the row at
    position ``m``:

    .. math::

        \begin{pmatrix} x_a' \\ x_b' \end{pmatrix} =
        \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
        \begin{pmatrix} x_a \\ x_b \end{pmatrix} .

    ``x``: shape ``(..., n, d)`` (any ``(..., d)`` works); ``positions``: integers
    ``>= 0`` broadcastable to ``x.shape[:-1]``, usually ``(n,)``; ``inv_freq``:
    ``(d/2,)``. Returns float64 of the broadcast shape. Elementwise, no matrices.
    """
    return _rotate_by_angles(x, angles(positions, inv_freq), layout)


@contract(entries("positions.size * d * d", lambda positions, inv_freq: positions.size * 4 * inv_freq.size ** 2))
def rotation_matrices(positions: Positions, inv_freq: Frequencies, layout: Layout = "adjacent") -> np.ndarray:
    r"""The explicit block-diagonal rotation matrices ``R_m``, shape ``P + (d, d)``.

    ``R_m`` has the ``2 x 2`` block ``[[cos m theta_i, -sin m theta_i],
    [sin m theta_i, cos m theta_i]]`` on the rows and columns ``(a_i, b_i)`` of pair
    ``i`` and zeros elsewhere (Su et al. 2021, eq. (15)). The slow, obvious
    reference: ``rotate(x, m, theta) == R_m @ x``. ``positions`` has shape ``P``.
    """
    d = 2 * inv_freq.size
    # m theta_i, shape P + (d/2,)
    phi = angles(positions, inv_freq)
    a, b = pair_indices(d, layout)
    c, s = np.cos(phi), np.sin(phi)
    R = np.zeros(phi.shape[:-1] + (d, d))
    # [[cos m theta_i, -sin m theta_i], [sin m theta_i, cos m theta_i]] on rows and columns (a_i, b_i)
    R[..., a, a], R[..., a, b] = c, -s
    R[..., b, a], R[..., b, b] = s, c
    return R


@contract(pairs_fit("x"), broadcast_to_leading("positions", "x"),
          entries("positions.size * d * d", lambda positions, inv_freq: positions.size * 4 * inv_freq.size ** 2))
def rotate_by_matrices(x: Vectors, positions: Positions, inv_freq: Frequencies, layout: Layout = "adjacent"
                       ) -> np.ndarray:
    r"""``R_m x`` computed with the explicit matrices of :func:`rotation_matrices`.

    ``x``: ``(..., n, d)``, ``positions``: ``(n,)``. ``O(n d^2)`` work instead of
    ``O(n d)``: the reference the tests and the benchmark hold the fast path to.
    """
    R = rotation_matrices(positions, inv_freq, layout)
    # R_m x
    return np.einsum("...ij,...j->...i", R, x)


def _pairs_in(x) -> None:
    if x.shape[-1] < 2 or x.shape[-1] % 2:
        raise ValueError(f"x must have an even last dimension d >= 2 (components come in pairs), got {x.shape[-1]}")


@contract(_pairs_in)
def to_complex(x: Vectors, layout: Layout = "adjacent") -> np.ndarray:
    r"""Read ``x`` (shape ``(..., d)``) as ``d/2`` complex numbers ``x_a + i x_b``.

    Su et al. (2021), section 3.2: in the complex plane a rotation by ``phi`` is
    multiplication by ``e^{i phi}``. Returns shape ``(..., d/2)``, complex128.
    """
    a, b = pair_indices(x.shape[-1], layout)
    # x_a + i x_b, shape (..., d/2)
    return x[..., a] + 1j * x[..., b]


@contract
def from_complex(z: Annotated[np.ndarray, ComplexArray(ndim_at_least=1)], layout: Layout = "adjacent") -> np.ndarray:
    r"""Inverse of :func:`to_complex`: ``(..., d/2)`` complex to ``(..., d)`` real."""
    a, b = pair_indices(2 * z.shape[-1], layout)
    out = np.empty(z.shape[:-1] + (2 * z.shape[-1],))
    # x_a = Re z, x_b = Im z
    out[..., a], out[..., b] = z.real, z.imag
    return out


@contract(pairs_fit("x"), broadcast_to_leading("positions", "x"), _angles_fit("positions"))
def rotate_complex(x: Vectors, positions: Positions, inv_freq: Frequencies, layout: Layout = "adjacent") -> np.ndarray:
    r"""RoPE in complex form: ``x~_i * e^{i m theta_i}`` (Su et al. 2021, eq. (12)).

    Same shapes and result as :func:`rotate`; written with Euler's formula instead of
    rotation matrices.
    """
    # m theta_i
    phi = angles(positions, inv_freq)
    # x~_i e^{i m theta_i}, back to (..., d)
    return from_complex(to_complex(x, layout) * np.exp(1j * phi), layout)


# ---------------------------------------------------------------------------
# Scores: the relative-position identity
# ---------------------------------------------------------------------------

@contract(pairs_fit("q", "k"), broadcast_to_leading("m", "q"), broadcast_to_leading("n", "k"),
          broadcast(("q", 1), ("k", 1), "m", "n"), _angles_fit("m"), _angles_fit("n"))
def score(q: Vectors, k: Vectors, m: Positions, n: Positions, inv_freq: Frequencies,
          layout: Layout = "adjacent") -> np.ndarray:
    r"""The RoPE score ``(R_m q) . (R_n k)`` of a query at ``m`` and a key at ``n``.

    ``q`` and ``k``: ``(..., d)``; ``m`` and ``n``: non-negative integers
    broadcastable against them. Returns the broadcast shape without the last axis.
    Su et al. (2021), eq. (16).
    """
    # R_m q and R_n k
    q_rot = _rotate_by_angles(q, angles(m, inv_freq), layout)
    k_rot = _rotate_by_angles(k, angles(n, inv_freq), layout)
    # (R_m q) . (R_n k)
    return np.sum(q_rot * k_rot, axis=-1)


@contract(pairs_fit("q", "k"), broadcast(("q", 1), ("k", 1), "distance"), _angles_fit("distance"))
def relative_score(q: Vectors, k: Vectors, distance: Integers, inv_freq: Frequencies,
                   layout: Layout = "adjacent") -> np.ndarray:
    r"""The same score written with the distance only: ``q^T R_{(n-m)} k``.

    Since ``R_a^T = R_{-a}`` and ``R_a R_b = R_{a+b}``,
    ``(R_m q)^T (R_n k) = q^T R_m^T R_n k = q^T R_{n-m} k`` (Su et al. 2021, eq. (16)).
    ``distance = n - m`` may be negative. Shapes as in :func:`score`.
    """
    # R_{n-m} k
    k_rot = _rotate_by_angles(k, np.multiply.outer(distance.astype(np.float64), inv_freq), layout)
    # q^T R_{n-m} k
    return np.sum(q * k_rot, axis=-1)


@contract(pairs_fit("q", "k"), broadcast(("q", 1), ("k", 1), "m", "n"), _angles_fit("m"), _angles_fit("n"))
def complex_score(q: Vectors, k: Vectors, m: Positions, n: Positions, inv_freq: Frequencies,
                  layout: Layout = "adjacent") -> np.ndarray:
    r"""The score in complex form: ``Re sum_i q~_i conj(k~_i) e^{i (m - n) theta_i}``.

    Su et al. (2021), eq. (12) and section 3.4.3: content (``q~_i conj(k~_i)``) sets
    each pair's magnitude and base angle; position only turns it. Shapes as in
    :func:`score`.
    """
    # h_i = q~_i conj(k~_i)
    h = to_complex(q, layout) * np.conj(to_complex(k, layout))
    # (m - n) theta_i
    phase = np.multiply.outer(m.astype(np.float64) - n, inv_freq)
    # Re sum_i h_i e^{i (m - n) theta_i}
    return np.sum(h * np.exp(1j * phase), axis=-1).real


@contract(rows_fit("x", "w_q", "w_k", "w_v"), pairs_fit("w_q", "w_k", axis=1), broadcast_to_leading("positions", "x"),
          _angles_fit("positions"),
          rule(("x", "x", "mask"), mask_and_bias_fit),
          result=Finite("x, w_q, w_k and w_v", "x and its projections must stay finite: scale them down"))
def self_attention(x: Sequences, w_q: Matrix, w_k: Matrix, w_v: Matrix, positions: Positions, inv_freq: Frequencies,
                   layout: Layout = "adjacent", mask: Mask | None = None):
    r"""Single-head self-attention with RoPE: rotate the queries and keys, never the values.

    .. math::

        q_t = R_{m_t} W_Q^{\mathsf T} x_t, \qquad k_t = R_{m_t} W_K^{\mathsf T} x_t, \qquad
        v_t = W_V^{\mathsf T} x_t ,

    then :func:`companion.attention.scaled_dot_product_attention` with ``mask``. The
    rotation acts after the projections, inside the layer, so a model applies it in
    every attention layer (Su et al. 2021; Touvron et al. 2023). Scores depend on the
    positions only through ``m_j - m_i``; the values carry no position.

    ``x``: ``(..., n, d_model)``; ``w_q``, ``w_k``: ``(d_model, d)`` with
    ``d = 2 len(inv_freq)``; ``w_v``: ``(d_model, d_v)``; ``positions``: non-negative
    integers broadcastable to ``x.shape[:-1]``, usually ``(n,)``; ``mask``: optional
    boolean, ``True`` = may attend (e.g. :func:`companion.attention.causal_mask`).
    Returns ``(out, weights)`` of shapes ``(..., n, d_v)`` and ``(..., n, n)``.
    """
    # q = x W_Q, k = x W_K, v = x W_V
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    # R_m q and R_m k; the values are not rotated
    q = rotate(q, positions, inv_freq, layout)
    k = rotate(k, positions, inv_freq, layout)
    return scaled_dot_product_attention(q, k, v, mask, None)


# ---------------------------------------------------------------------------
# Long-term decay (RoFormer section 3.4.3)
# ---------------------------------------------------------------------------

@contract(_angles_fit("distances"))
def long_term_decay(distances: Distances, inv_freq: Frequencies) -> np.ndarray:
    r"""RoFormer's decay curve ``(1/(d/2)) sum_{j=1}^{d/2} |S_j|`` per relative distance.

    With ``S_j = sum_{k=0}^{j-1} e^{i r theta_k}`` and ``r = m - n``, Abel summation
    gives, for any content ``h_i = q~_i conj(k~_i)`` (and ``h_{d/2} = 0``),

    .. math::

        \Big|\sum_{i=0}^{d/2-1} h_i e^{i r\theta_i}\Big|
        \le \Big(\max_i |h_{i+1} - h_i|\Big) \sum_{j=1}^{d/2} |S_j| .

    The curve is the second factor divided by ``d/2``: the quantity Su et al. (2021)
    plot in their Figure 2. It shrinks (roughly) with distance; that is a property
    of the bound, not of every score. ``distances``: real, shape ``(R,)``
    (any shape); returns the same shape.
    """
    # S_j = sum_{k<j} e^{i r theta_k}, j = 1 .. d/2
    S = np.cumsum(np.exp(1j * np.multiply.outer(distances, inv_freq)), axis=-1)
    # (1 / (d/2)) sum_j |S_j|
    return np.mean(np.abs(S), axis=-1)


@contract(same_shape("inv_freq", "h", why=" (one entry per pair)"), _angles_fit("distances"))
def decay_bound(h: Contents, distances: Distances, inv_freq: Frequencies) -> tuple[np.ndarray, np.ndarray]:
    r"""Both sides of RoFormer's inequality: ``(|sum_i h_i e^{i r theta_i}|, bound)``.

    ``h``: complex content per pair, shape ``(d/2,)``; ``distances``: shape ``(R,)``.
    The bound is ``max_i |h_{i+1} - h_i| * sum_j |S_j|`` with ``h_{d/2} = 0`` (Su et
    al. 2021, section 3.4.3). Returns two arrays of shape ``(R,)``.
    """
    # e^{i r theta_i}, shape (R, d/2)
    phase = np.exp(1j * np.multiply.outer(distances, inv_freq))
    # |sum_i h_i e^{i r theta_i}|
    value = np.abs(phase @ h)
    # max_i |h_{i+1} - h_i| with h_{d/2} = 0
    step = np.max(np.abs(np.diff(np.append(h, 0.0))))
    # max_i |h_{i+1} - h_i| sum_j |S_j|
    return value, step * inv_freq.size * long_term_decay(distances, inv_freq)


# ---------------------------------------------------------------------------
# Private numpy helpers
# ---------------------------------------------------------------------------

def _rotate_by_angles(x: np.ndarray, phi: np.ndarray, layout: str) -> np.ndarray:
    """Turn pair ``i`` of ``x`` (``(..., d)``) by ``phi[..., i]`` (``(..., d/2)``, any real angles)."""
    a, b = pair_indices(x.shape[-1], layout)
    c, s = np.cos(phi), np.sin(phi)
    x1, x2 = x[..., a], x[..., b]
    out = np.empty(np.broadcast_shapes(x.shape, phi.shape[:-1] + (x.shape[-1],)))
    # x_a' = x_a cos phi - x_b sin phi
    out[..., a] = x1 * c - x2 * s
    # x_b' = x_a sin phi + x_b cos phi
    out[..., b] = x1 * s + x2 * c
    return out
