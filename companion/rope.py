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

Numbers are numpy float64; :class:`RotaryEmbedding` is the torch layer. Angles
``m * theta_i`` are always formed in float64, so positions of ``10^6`` and beyond
keep every pair accurate to about ``1e-9`` rad. The same angles formed in float32
are off by far more, and by more the wider the head, since the error is that of the
worst pair (each ``theta_i`` rounded to float32, times ``m``, plus the rounding of
the product): at ``m = 10^7`` the worst pair is off by 0.09 rad for ``d = 16``, 0.25
rad for ``d = 64`` and 0.77 rad for ``d = 128`` (base 10000, measured). Positions
are supported up to ``2**32`` (``companion._checks.MAX_POSITION``), where a float64
angle is still within ``5e-7`` rad; larger ones are refused.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from . import _checks
from . import attention as _attention

__all__ = [
    "LAYOUTS",
    "DEFAULT_BASE",
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
    "symbolic_rotation_matrix",
    "score",
    "relative_score",
    "complex_score",
    "self_attention",
    "long_term_decay",
    "decay_bound",
    "aliased_step",
    "pair_readings",
    "reading_distance",
    "nearest_return",
    "RotaryEmbedding",
]

#: The two pair layouts in use: adjacent pairs (2i, 2i+1), split halves (i, i + d/2).
LAYOUTS = ("adjacent", "split")
#: The base of RoFormer, Llama 1 and Llama 2.
DEFAULT_BASE = 10000.0


# ---------------------------------------------------------------------------
# Frequencies and angles
# ---------------------------------------------------------------------------

def inv_freq(d: int, base: float = DEFAULT_BASE) -> np.ndarray:
    r"""The rotation frequencies ``theta_i = base^(-2i/d)``, ``i = 0 .. d/2 - 1``.

    Su et al. (2021), eq. (15), with ``base = 10000``. Pair 0 turns 1 rad per
    position step (the fastest); the last pair turns ``base^(-(d-2)/d)`` rad (the
    slowest). Shape ``(d/2,)``, float64.
    """
    d = _checks.even_positive_int("d", d)
    _checks.entries("d / 2", d // 2)
    base = _checks.positive_float("base", base)
    i = np.arange(d // 2, dtype=np.float64)
    return base ** (-2.0 * i / d)


_default_inv_freq = inv_freq  # the class below has an argument of the same name


def angles(positions, inv_freq) -> np.ndarray:
    r"""Rotation angles ``phi[..., i] = m * theta_i``, formed in float64.

    ``positions`` (any shape ``P``) holds the integer positions ``m >= 0``;
    ``inv_freq`` (shape ``(d/2,)``) holds the frequencies ``theta_i``. Returns the
    outer product, shape ``P + (d/2,)``. Su et al. (2021).
    """
    m = _checks.positions("positions", positions).astype(np.float64)
    theta = _frequency_vector(inv_freq)
    _checks.entries("positions.size * len(inv_freq)", m.size * theta.size)
    return np.multiply.outer(m, theta)


# ---------------------------------------------------------------------------
# Pair layouts
# ---------------------------------------------------------------------------

def pair_indices(d: int, layout: str = "adjacent") -> tuple[np.ndarray, np.ndarray]:
    r"""Component indices ``(a, b)`` of the ``d/2`` pairs, each of shape ``(d/2,)``.

    Pair ``i`` is the plane vector ``(x[a_i], x[b_i])``: ``(2i, 2i+1)`` for
    ``"adjacent"`` (Su et al. 2021; GPT-J; Meta's Llama code), ``(i, i + d/2)`` for
    ``"split"`` (GPT-NeoX, Black et al. 2022; Llama in Hugging Face ``transformers``).
    """
    d = _checks.even_positive_int("d", d)
    layout = _checks.one_of("layout", layout, LAYOUTS)
    i = np.arange(d // 2)
    if layout == "adjacent":
        return 2 * i, 2 * i + 1
    return i, i + d // 2


def layout_permutation(d: int, source: str = "adjacent", target: str = "split") -> np.ndarray:
    r"""Index array ``p`` (shape ``(d,)``) with ``x_target = x_source[..., p]``.

    Moves every component to where the other layout keeps it: the first member of
    pair ``i`` goes to the target's ``a_i`` and the second to ``b_i`` (see
    :func:`pair_indices`). Rotating in one layout equals permuting, rotating in the
    other, and permuting back; permuting the columns of ``W_Q`` and ``W_K`` by ``p``
    leaves every score unchanged. ``source == target`` gives the identity.
    """
    a_src, b_src = pair_indices(d, _checks.one_of("source", source, LAYOUTS))
    a_tgt, b_tgt = pair_indices(d, _checks.one_of("target", target, LAYOUTS))
    p = np.empty(d, dtype=np.int64)
    p[a_tgt] = a_src
    p[b_tgt] = b_src
    return p


# ---------------------------------------------------------------------------
# The rotation: fast path, explicit matrices, complex numbers
# ---------------------------------------------------------------------------

def rotate(x, positions, inv_freq, layout: str = "adjacent") -> np.ndarray:
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
    x, theta = _rotation_inputs(x, inv_freq)
    m = _broadcast_positions(positions, x)
    return _rotate_by_angles(x, angles(m, theta), _checks.one_of("layout", layout, LAYOUTS))


def rotation_matrices(positions, inv_freq, layout: str = "adjacent") -> np.ndarray:
    r"""The explicit block-diagonal rotation matrices ``R_m``, shape ``P + (d, d)``.

    ``R_m`` has the ``2 x 2`` block ``[[cos m theta_i, -sin m theta_i],
    [sin m theta_i, cos m theta_i]]`` on the rows and columns ``(a_i, b_i)`` of pair
    ``i`` and zeros elsewhere (Su et al. 2021, eq. (15)). The slow, obvious
    reference: ``rotate(x, m, theta) == R_m @ x``. ``positions`` has shape ``P``.
    """
    theta = _frequency_vector(inv_freq)
    m = _checks.positions("positions", positions)
    _checks.entries("positions.size * d * d", m.size * 4 * theta.size**2)
    phi = angles(m, theta)
    a, b = pair_indices(2 * theta.size, _checks.one_of("layout", layout, LAYOUTS))
    c, s = np.cos(phi), np.sin(phi)
    R = np.zeros(phi.shape[:-1] + (2 * theta.size, 2 * theta.size))
    R[..., a, a], R[..., a, b] = c, -s
    R[..., b, a], R[..., b, b] = s, c
    return R


def rotate_by_matrices(x, positions, inv_freq, layout: str = "adjacent") -> np.ndarray:
    r"""``R_m x`` computed with the explicit matrices of :func:`rotation_matrices`.

    ``x``: ``(..., n, d)``, ``positions``: ``(n,)``. ``O(n d^2)`` work instead of
    ``O(n d)``: the reference the tests and the benchmark hold the fast path to.
    """
    x, theta = _rotation_inputs(x, inv_freq)
    R = rotation_matrices(_broadcast_positions(positions, x), theta, layout)
    return np.einsum("...ij,...j->...i", R, x)


def to_complex(x, layout: str = "adjacent") -> np.ndarray:
    r"""Read ``x`` (shape ``(..., d)``) as ``d/2`` complex numbers ``x_a + i x_b``.

    Su et al. (2021), section 3.2: in the complex plane a rotation by ``phi`` is
    multiplication by ``e^{i phi}``. Returns shape ``(..., d/2)``, complex128.
    """
    x = _checks.array("x", x, ndim_at_least=1)
    a, b = pair_indices(_even_last_dim("x", x), layout)
    return x[..., a] + 1j * x[..., b]


def from_complex(z, layout: str = "adjacent") -> np.ndarray:
    r"""Inverse of :func:`to_complex`: ``(..., d/2)`` complex to ``(..., d)`` real."""
    z = _checks.complex_array("z", z)
    if z.ndim < 1 or z.shape[-1] < 1:
        raise ValueError(f"z must have at least 1 dimension with >= 1 entry, got shape {z.shape}")
    a, b = pair_indices(2 * z.shape[-1], layout)
    out = np.empty(z.shape[:-1] + (2 * z.shape[-1],))
    out[..., a], out[..., b] = z.real, z.imag
    return out


def rotate_complex(x, positions, inv_freq, layout: str = "adjacent") -> np.ndarray:
    r"""RoPE in complex form: ``x~_i * e^{i m theta_i}`` (Su et al. 2021, eq. (12)).

    Same shapes and result as :func:`rotate`; written with Euler's formula instead of
    rotation matrices.
    """
    x, theta = _rotation_inputs(x, inv_freq)
    phi = angles(_broadcast_positions(positions, x), theta)
    return from_complex(to_complex(x, layout) * np.exp(1j * phi), layout)


def symbolic_rotation_matrix(position, thetas, layout: str = "adjacent"):
    r"""The rotation ``R_m`` as a SymPy matrix, for proofs: shape ``(d, d)``, ``d = 2 len(thetas)``.

    The same block-diagonal matrix as :func:`rotation_matrices`, with entries
    ``cos(position * theta_i)`` and ``sin(position * theta_i)`` left symbolic: the
    ``2 x 2`` block ``[[cos, -sin], [sin, cos]]`` of pair ``i`` sits on the rows and
    columns ``(a_i, b_i)`` of :func:`pair_indices` (Su et al. 2021, eq. (15)).
    ``position``: any SymPy expression or number (a symbol ``m``, ``n - m``, ``7``);
    ``thetas``: a non-empty sequence of SymPy expressions or numbers, one per pair.
    ``symbolic_rotation_matrix(a, [1])`` is the plane rotation by the angle ``a``.
    """
    import sympy as sp

    if isinstance(thetas, (str, bytes)) or not hasattr(thetas, "__len__"):
        raise ValueError(f"thetas must be a non-empty sequence (one frequency per pair), got {thetas!r}")
    if len(thetas) == 0:
        raise ValueError("thetas must be a non-empty sequence (one frequency per pair), got an empty one")
    position = _symbolic_number("position", position)
    thetas = [_symbolic_number("thetas", t) for t in thetas]
    d = 2 * len(thetas)
    a, b = pair_indices(d, _checks.one_of("layout", layout, LAYOUTS))
    R = sp.zeros(d, d)
    for i, theta in enumerate(thetas):
        phi = position * theta
        R[int(a[i]), int(a[i])], R[int(a[i]), int(b[i])] = sp.cos(phi), -sp.sin(phi)
        R[int(b[i]), int(a[i])], R[int(b[i]), int(b[i])] = sp.sin(phi), sp.cos(phi)
    return R


# ---------------------------------------------------------------------------
# Scores: the relative-position identity
# ---------------------------------------------------------------------------

def _symbolic_number(name: str, value):
    """``value`` as a finite SymPy expression (a symbol, a number, a formula), or ValueError."""
    import sympy as sp

    if isinstance(value, (str, bytes)) or value is None:
        raise ValueError(f"{name} must be SymPy expressions or numbers, got {value!r}")
    try:
        expr = sp.sympify(value)
    except (sp.SympifyError, TypeError, ValueError) as err:
        raise ValueError(f"{name} must be SymPy expressions or numbers, got {value!r}") from err
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"{name} must be SymPy expressions or numbers, got {value!r}")
    if expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise ValueError(f"{name} must be finite (no nan or infinity), got {value!r}")
    return expr


def score(q, k, m, n, inv_freq, layout: str = "adjacent") -> np.ndarray:
    r"""The RoPE score ``(R_m q) . (R_n k)`` of a query at ``m`` and a key at ``n``.

    ``q`` and ``k``: ``(..., d)``; ``m`` and ``n``: non-negative integers
    broadcastable against them. Returns the broadcast shape without the last axis.
    Su et al. (2021), eq. (16).
    """
    q, theta = _rotation_inputs(q, inv_freq, name="q")
    k, _ = _rotation_inputs(k, theta, name="k")
    layout = _checks.one_of("layout", layout, LAYOUTS)
    m = _broadcast_positions(m, q, name="m", against="q")
    n = _broadcast_positions(n, k, name="n", against="k")
    q_rot = _rotate_by_angles(q, angles(m, theta), layout)
    k_rot = _rotate_by_angles(k, angles(n, theta), layout)
    try:
        return np.sum(q_rot * k_rot, axis=-1)
    except ValueError as err:
        raise ValueError(f"q, k, m and n must broadcast together, got shapes {q.shape}, {k.shape}, "
                         f"{m.shape} and {n.shape}") from err


def relative_score(q, k, distance, inv_freq, layout: str = "adjacent") -> np.ndarray:
    r"""The same score written with the distance only: ``q^T R_{(n-m)} k``.

    Since ``R_a^T = R_{-a}`` and ``R_a R_b = R_{a+b}``,
    ``(R_m q)^T (R_n k) = q^T R_m^T R_n k = q^T R_{n-m} k`` (Su et al. 2021, eq. (16)).
    ``distance = n - m`` may be negative. Shapes as in :func:`score`.
    """
    q, theta = _rotation_inputs(q, inv_freq, name="q")
    k, _ = _rotation_inputs(k, theta, name="k")
    delta = _checks.integers("distance", distance).astype(np.float64)
    k_rot = _rotate_by_angles(k, np.multiply.outer(delta, theta), _checks.one_of("layout", layout, LAYOUTS))
    return np.sum(q * k_rot, axis=-1)


def complex_score(q, k, m, n, inv_freq, layout: str = "adjacent") -> np.ndarray:
    r"""The score in complex form: ``Re sum_i q~_i conj(k~_i) e^{i (m - n) theta_i}``.

    Su et al. (2021), eq. (12) and section 3.4.3: content (``q~_i conj(k~_i)``) sets
    each pair's magnitude and base angle; position only turns it. Shapes as in
    :func:`score`.
    """
    q, theta = _rotation_inputs(q, inv_freq, name="q")
    k, _ = _rotation_inputs(k, theta, name="k")
    layout = _checks.one_of("layout", layout, LAYOUTS)
    try:
        h = to_complex(q, layout) * np.conj(to_complex(k, layout))
    except ValueError as err:
        raise ValueError(f"q and k must have shapes that broadcast, got {q.shape} and {k.shape}") from err
    m, n = _checks.positions("m", m), _checks.positions("n", n)
    try:
        delta = m.astype(np.float64) - n
        return np.sum(h * np.exp(1j * np.multiply.outer(delta, theta)), axis=-1).real
    except ValueError as err:
        raise ValueError(f"q, k, m and n must broadcast together, got shapes {q.shape}, {k.shape}, "
                         f"{m.shape} and {n.shape}") from err


def self_attention(x, w_q, w_k, w_v, positions, inv_freq, layout: str = "adjacent", mask=None):
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
    x = _checks.array("x", x, ndim_at_least=2)
    theta = _frequency_vector(inv_freq)
    mats = {}
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        w = _checks.projection(name, w, x.shape[-1])
        if name != "w_v" and w.shape[1] != 2 * theta.size:
            raise ValueError(
                f"{name} must have d = 2 * len(inv_freq) = {2 * theta.size} columns, got shape {w.shape}"
            )
        mats[name] = w
    with np.errstate(over="ignore", invalid="ignore"):
        q, k, v = x @ mats["w_q"], x @ mats["w_k"], x @ mats["w_v"]
    _checks.finite_result("x and its projections", (q, k, v))
    q = rotate(q, positions, theta, layout)
    k = rotate(k, positions, theta, layout)
    return _attention._attend(q, k, v, mask, None, "x, w_q and w_k")


# ---------------------------------------------------------------------------
# Long-term decay (RoFormer section 3.4.3)
# ---------------------------------------------------------------------------

def long_term_decay(distances, inv_freq) -> np.ndarray:
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
    r = _checks.bounded("distances", _checks.array("distances", distances))
    theta = _frequency_vector(inv_freq)
    _checks.entries("distances.size * len(inv_freq)", r.size * theta.size)
    S = np.cumsum(np.exp(1j * np.multiply.outer(r, theta)), axis=-1)
    return np.mean(np.abs(S), axis=-1)


def decay_bound(h, distances, inv_freq) -> tuple[np.ndarray, np.ndarray]:
    r"""Both sides of RoFormer's inequality: ``(|sum_i h_i e^{i r theta_i}|, bound)``.

    ``h``: complex content per pair, shape ``(d/2,)``; ``distances``: shape ``(R,)``.
    The bound is ``max_i |h_{i+1} - h_i| * sum_j |S_j|`` with ``h_{d/2} = 0`` (Su et
    al. 2021, section 3.4.3). Returns two arrays of shape ``(R,)``.
    """
    theta = _frequency_vector(inv_freq)
    h = _checks.complex_array("h", h)
    if h.shape != theta.shape:
        raise ValueError(f"h must have shape {theta.shape} (one entry per pair), got {h.shape}")
    r = _checks.bounded("distances", _checks.array("distances", distances))
    _checks.entries("distances.size * len(inv_freq)", r.size * theta.size)
    phase = np.exp(1j * np.multiply.outer(r, theta))
    value = np.abs(phase @ h)
    step = np.max(np.abs(np.diff(np.append(h, 0.0))))
    return value, step * theta.size * long_term_decay(r, theta)


# ---------------------------------------------------------------------------
# Aliasing (reading angles only at integer positions)
# ---------------------------------------------------------------------------

def aliased_step(phi) -> np.ndarray:
    r"""The step in ``(-pi, pi]`` that looks identical to ``phi`` at integer positions.

    ``phi - 2 pi k`` for the integer ``k`` that lands in ``(-pi, pi]``: since
    ``e^{i m (phi - 2 pi k)} = e^{i m phi}`` for every integer ``m``, a pair turning by
    ``phi > pi`` per step cannot be told from one turning by ``phi - 2 pi`` the other
    way (Nyquist; Shannon 1949). RoPE's fastest pair turns 1 rad, inside the limit.
    ``phi``: any shape; same shape out.
    """
    phi = _checks.bounded("phi", _checks.array("phi", phi), what="angles")
    return phi - 2.0 * np.pi * np.ceil((phi - np.pi) / (2.0 * np.pi))


def pair_readings(phi, positions) -> np.ndarray:
    r"""Where a pair turning ``phi`` per step points: ``e^{i phi m}`` (complex).

    ``phi``: scalar step (rad); ``positions``: real, any shape (non-integer positions
    show the difference that integer ones hide). Same shape as ``positions``.
    """
    phi = _checks.bounded("phi", _checks.array("phi", phi), what="angles")
    if phi.ndim != 0:
        raise ValueError(f"phi must be a single angle (a scalar), got shape {phi.shape}")
    m = _checks.bounded("positions", _checks.array("positions", positions))
    return np.exp(1j * float(phi) * m)


# ---------------------------------------------------------------------------
# Clock hands: how far apart the readings of two positions are
# ---------------------------------------------------------------------------

def reading_distance(k, inv_freq) -> np.ndarray:
    r"""Distance between the readings of all pairs at positions ``m`` and ``m + k``.

    Pair ``i`` at position ``m`` points at ``e^{i m theta_i}`` (a clock hand turning
    ``theta_i`` per step); the readings of all pairs form the vector
    ``r(m) = (e^{i m theta_i})_i``, which is the sinusoidal position vector of
    Vaswani et al. (2017) in complex form and the RoPE rotation of a unit vector per
    pair (Su et al. 2021). Its distance to ``r(m + k)`` does not depend on ``m``:

    .. math::

        \lVert r(m + k) - r(m) \rVert^2 = \sum_i \lvert e^{i k \theta_i} - 1 \rvert^2
        = 2 \sum_i \bigl(1 - \cos k\theta_i\bigr) = 4 \sum_i \sin^2(k\theta_i / 2),

    computed with the last form (accurate for small ``k theta_i``). Zero exactly when
    every ``k theta_i`` is a whole number of turns. ``k``: real offsets, any shape
    (non-integer offsets are allowed); ``inv_freq``: ``(d/2,)``, any frequencies (a
    single pair: ``[theta]``). Returns float64 of the shape of ``k``.
    """
    k = _checks.bounded("k", _checks.array("k", k), what="offsets")
    theta = _frequency_vector(inv_freq)
    _checks.entries("k.size * len(inv_freq)", k.size * theta.size)
    half = np.sin(np.multiply.outer(k, theta) / 2.0)
    return 2.0 * np.sqrt(np.sum(half * half, axis=-1))


#: Most sines :func:`nearest_return` evaluates (about a minute of work).
_NEAREST_RETURN_WORK = 2**33


def nearest_return(n_max: int, inv_freq, k_min: int = 1) -> tuple[int, float]:
    r"""The offset ``k`` in ``k_min .. n_max`` at which all readings come closest to repeating.

    Minimises :func:`reading_distance` over the integers ``k_min <= k <= n_max`` and
    returns ``(k, distance)`` (the smallest such ``k`` on ties). Because the distance
    between ``r(m)`` and ``r(n)`` depends only on ``|m - n|``, with ``k_min = 1`` this
    is the closest pair among all readings of the positions ``0 .. n_max``: a
    distance above zero means every position in that range has its own reading. With
    one frequency it finds the turns after which a single clock hand is back nearest
    to where it started. Work is ``O(n_max d)``, done in blocks of 16,384 offsets, and
    at most ``2**33`` sines (``(n_max - k_min + 1) * len(inv_freq)``; more is refused).
    ``n_max``, ``k_min``: integers with ``1 <= k_min <= n_max``; ``inv_freq``:
    ``(d/2,)``.
    """
    n_max = _checks.size("n_max", n_max)
    k_min = _checks.size("k_min", k_min)
    if k_min > n_max:
        raise ValueError(f"k_min must be an integer in 1..n_max = {n_max}, got {k_min}")
    theta = _frequency_vector(inv_freq)
    work = (n_max - k_min + 1) * theta.size
    if work > _NEAREST_RETURN_WORK:
        raise ValueError(
            f"n_max and inv_freq must ask for at most 2**33 = {_NEAREST_RETURN_WORK:,} sines (about a minute), "
            f"got (n_max - k_min + 1) * len(inv_freq) = {work:,}; use a smaller n_max or fewer pairs"
        )
    best_k, best = k_min, np.inf
    block = 16_384
    for start in range(k_min, n_max + 1, block):
        ks = np.arange(start, min(start + block, n_max + 1), dtype=np.float64)
        dist = reading_distance(ks, theta)
        j = int(np.argmin(dist))
        if dist[j] < best:
            best_k, best = int(ks[j]), float(dist[j])
    return best_k, best


# ---------------------------------------------------------------------------
# torch layer
# ---------------------------------------------------------------------------

class RotaryEmbedding(nn.Module):
    r"""RoPE as a torch layer: ``forward(q, k, positions) -> (q_rot, k_rot)``.

    Su et al. (2021). ``inv_freq`` may be any frequency vector of length ``d/2``
    (:func:`inv_freq` with ``base`` when omitted), so every method in
    :mod:`companion.scaling` plugs in unchanged. ``attention_factor`` multiplies
    ``cos`` and ``sin`` (YaRN's "mscale", Peng et al. 2024), which is the same as
    multiplying the rotated ``q`` and ``k`` by it; each score then carries
    ``attention_factor^2`` (YaRN's ``1/t``).

    Shapes: ``q`` and ``k`` are ``(..., n, d)``; ``positions`` is ``None`` (meaning
    ``0..n-1``) or non-negative integers broadcastable to ``x.shape[:-1]``, usually
    ``(n,)``. Angles are formed in float64 on the input's device, then ``cos`` and
    ``sin`` are cast to the input dtype; tables for ``positions=None`` are cached
    per (length, device, dtype). The frequencies are kept in numpy float64, so
    ``.half()`` or ``.float()`` on the module cannot round them; the layer has no
    parameters or buffers. The ``"adjacent"`` layout in float32/float64 is one
    complex multiply; other cases use fused multiply-adds into one output buffer
    (plain ops when gradients are needed).
    """

    def __init__(self, d: int, inv_freq=None, base: float = DEFAULT_BASE,
                 layout: str = "adjacent", attention_factor: float = 1.0):
        super().__init__()
        self.d = _checks.even_positive_int("d", d)
        _checks.entries("d / 2", self.d // 2)
        self.layout = _checks.one_of("layout", layout, LAYOUTS)
        base = _checks.positive_float("base", base)
        theta = _default_inv_freq(d, base) if inv_freq is None else _frequency_vector(inv_freq, d)
        self._theta = theta.copy()  # kept in numpy float64: casting the module cannot round it
        self.attention_factor = _checks.positive_float("attention_factor", attention_factor)
        self._cache: dict = {}

    @property
    def inv_freq(self) -> torch.Tensor:
        """The frequencies ``theta_i``, shape ``(d/2,)``, float64 (a copy)."""
        return torch.tensor(self._theta, dtype=torch.float64)

    def set_frequencies(self, inv_freq, attention_factor: float = 1.0) -> None:
        """Replace the frequency vector (shape ``(d/2,)``) and attention factor; clears the cache."""
        self._theta = _frequency_vector(inv_freq, self.d).copy()
        self.attention_factor = _checks.positive_float("attention_factor", attention_factor)
        self._cache.clear()

    def forward(self, q: torch.Tensor, k: torch.Tensor, positions=None):
        """Rotate ``q`` and ``k`` (both ``(..., n, d)``) by ``positions``; see the class docstring."""
        _check_tensor("q", q, self.d)
        _check_tensor("k", k, self.d)
        q_tables = self._tables(q, positions)
        same = (q.shape[-2], q.dtype, q.device) == (k.shape[-2], k.dtype, k.device)
        k_tables = q_tables if same else self._tables(k, positions)
        return self._rotate(q, q_tables), self._rotate(k, k_tables)

    def rotate(self, x: torch.Tensor, positions=None) -> torch.Tensor:
        """Rotate one tensor ``x`` of shape ``(..., n, d)`` by ``positions`` (default ``0..n-1``)."""
        _check_tensor("x", x, self.d)
        return self._rotate(x, self._tables(x, positions))

    def _rotate(self, x: torch.Tensor, tables) -> torch.Tensor:
        cos, sin, z = tables
        if z is not None:
            pairs = torch.view_as_complex(x.contiguous().unflatten(-1, (self.d // 2, 2)))
            return torch.view_as_real(pairs * z).flatten(-2)
        return _rotate_real(x, cos, sin, self.layout)

    def _tables(self, x: torch.Tensor, positions):
        n = x.shape[-2]
        key = (n, x.device, x.dtype)
        if positions is None and key in self._cache:
            return self._cache[key]
        m = torch.arange(n, device=x.device, dtype=torch.float64) if positions is None \
            else _torch_positions(positions, x)
        phi = m[..., None] * torch.tensor(self._theta, dtype=torch.float64, device=x.device)
        cos = (torch.cos(phi) * self.attention_factor).to(x.dtype)
        sin = (torch.sin(phi) * self.attention_factor).to(x.dtype)
        use_complex = self.layout == "adjacent" and x.dtype in (torch.float32, torch.float64)
        tables = (cos, sin, torch.complex(cos, sin) if use_complex else None)
        if positions is None:
            self._cache = {key: tables}
        return tables

    def extra_repr(self) -> str:
        return f"d={self.d}, layout={self.layout!r}, attention_factor={self.attention_factor}"


def _rotate_real(x, cos, sin, layout):
    """Pairwise rotation with real ``cos``/``sin`` tables of shape ``(..., n, d/2)``."""
    x1, x2 = _torch_pairs(x, layout)
    if torch.is_grad_enabled() and (x.requires_grad or cos.requires_grad):
        y1, y2 = x1 * cos - x2 * sin, x1 * sin + x2 * cos
        return torch.stack((y1, y2), -1).flatten(-2) if layout == "adjacent" else torch.cat((y1, y2), -1)
    shape = torch.broadcast_shapes(x.shape[:-1], cos.shape[:-1]) + (x.shape[-1],)
    out = torch.empty(shape, dtype=x.dtype, device=x.device)
    o1, o2 = _torch_pairs(out, layout)
    torch.mul(x1, cos, out=o1)
    o1.addcmul_(x2, sin, value=-1)
    torch.mul(x1, sin, out=o2)
    o2.addcmul_(x2, cos)
    return out


def _torch_pairs(x, layout):
    h = x.shape[-1] // 2
    if layout == "adjacent":
        v = x.unflatten(-1, (h, 2))
        return v[..., 0], v[..., 1]
    v = x.unflatten(-1, (2, h))
    return v[..., 0, :], v[..., 1, :]


def _check_tensor(name, x, d):
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a floating-point torch.Tensor, got {got}")
    if x.ndim < 2 or x.shape[-1] != d:
        raise ValueError(f"{name} must have shape (..., n, d) with d = {d}, got {tuple(x.shape)}")


def _torch_positions(positions, x) -> torch.Tensor:
    """Validate positions (non-negative integers, broadcastable to ``x.shape[:-1]``) as float64."""
    m = _checks.tensor_integers("positions", positions, "non-negative integers")
    if m.numel() and bool(torch.any(m < 0)):
        raise ValueError(f"positions must be non-negative integers, got a minimum of {m.min().item()}")
    try:
        torch.broadcast_shapes(m.shape, x.shape[:-1])
    except RuntimeError as err:
        raise ValueError(
            f"positions of shape {tuple(m.shape)} must broadcast to x.shape[:-1] = {tuple(x.shape[:-1])}"
        ) from err
    return m.to(device=x.device, dtype=torch.float64)


# ---------------------------------------------------------------------------
# Private numpy helpers
# ---------------------------------------------------------------------------

def _rotate_by_angles(x: np.ndarray, phi: np.ndarray, layout: str) -> np.ndarray:
    """Turn pair ``i`` of ``x`` (``(..., d)``) by ``phi[..., i]`` (``(..., d/2)``, any real angles)."""
    a, b = pair_indices(x.shape[-1], layout)
    c, s = np.cos(phi), np.sin(phi)
    x1, x2 = x[..., a], x[..., b]
    out = np.empty(np.broadcast_shapes(x.shape, phi.shape[:-1] + (x.shape[-1],)))
    out[..., a] = x1 * c - x2 * s
    out[..., b] = x1 * s + x2 * c
    return out


def _frequency_vector(inv_freq, d: int | None = None) -> np.ndarray:
    """Validate a frequency vector: 1-D, finite, and of length ``d/2`` when ``d`` is given."""
    theta = _checks.array("inv_freq", inv_freq)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"inv_freq must be a non-empty 1-D array (one frequency per pair), got shape {theta.shape}")
    if d is not None and theta.size != d // 2:
        raise ValueError(f"inv_freq must have d/2 = {d // 2} entries, got {theta.size}")
    return theta


def _rotation_inputs(x, inv_freq, name: str = "x") -> tuple[np.ndarray, np.ndarray]:
    """Validate ``x`` (``(..., d)``) against ``inv_freq`` (``(d/2,)``)."""
    x = _checks.array(name, x, ndim_at_least=1)
    theta = _frequency_vector(inv_freq)
    if x.shape[-1] != 2 * theta.size:
        raise ValueError(
            f"{name} must have last dimension d = 2 * len(inv_freq) = {2 * theta.size}, got shape {x.shape}"
        )
    return x, theta


def _broadcast_positions(positions, x: np.ndarray, name: str = "positions", against: str = "x") -> np.ndarray:
    m = _checks.positions(name, positions)
    try:
        np.broadcast_shapes(m.shape, x.shape[:-1])
    except ValueError as err:
        raise ValueError(
            f"{name} of shape {m.shape} must broadcast to {against}.shape[:-1] = {x.shape[:-1]}"
        ) from err
    return m


def _even_last_dim(name: str, x: np.ndarray) -> int:
    d = x.shape[-1]
    if d < 2 or d % 2:
        raise ValueError(f"{name} must have an even last dimension d >= 2 (components come in pairs), got {d}")
    return d


