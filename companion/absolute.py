r"""Absolute positions: one vector per position, added to the token embedding.

Vaswani et al. (2017), "Attention Is All You Need", add a fixed sinusoid
:math:`PE(p)` to the embedding of the token at position :math:`p`; its pairs of
components turn at geometrically spaced frequencies, so that moving by :math:`k`
positions is one fixed rotation. Gehring et al. (2017, ConvS2S), BERT (Devlin et al.
2018, 512 rows) and GPT-2 (Radford et al. 2019, 1,024 rows) learn one vector per
position instead, which leaves no row for a position past the table.
:func:`perplexity` is the yardstick by which Press et al. (2022) compare position
methods on inputs longer than the training length.

Component order follows Vaswani et al. (2017): pair :math:`i` occupies components
``2i`` (the sine) and ``2i + 1`` (the cosine). numpy functions work in float64;
:class:`SinusoidalPositions` and :class:`LearnedPositions` are the torch layers.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch
from torch import nn

from . import _checks

__all__ = [
    "frequencies",
    "wavelengths",
    "sinusoidal",
    "SinusoidalPositions",
    "rotation_for_offset",
    "position_dot_products",
    "dot_product_at_distance",
    "score_terms",
    "position_score",
    "LearnedPositions",
    "perplexity",
]


def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    r"""Angular frequency of each pair of components.

    .. math:: \omega_i = \text{base}^{-2i/d}, \qquad i = 0, \dots, d/2 - 1 .

    A geometric progression that starts at :math:`\omega_0 = 1` and shrinks by the
    factor :math:`\text{base}^{-2/d}` per pair (Vaswani et al. 2017, section 3.5).

    Parameters
    ----------
    d : even int >= 2, the width of the position vector.
    base : real > 0, 10000 in the paper.

    Returns
    -------
    float64 array of shape ``(d // 2,)``.
    """
    d = _checks.even_positive_int("d", d)
    _checks.entries("d / 2", d // 2)
    base = _checks.positive_float("base", base)
    i = np.arange(d // 2)
    return base ** (-2.0 * i / d)


def wavelengths(d: int, base: float = 10000.0) -> np.ndarray:
    r"""Wavelength, in tokens, of each pair of components.

    .. math:: \lambda_i = \frac{2\pi}{\omega_i} = 2\pi\,\text{base}^{2i/d} .

    From :math:`2\pi \approx 6.3` tokens (pair 0) up to
    :math:`2\pi\,\text{base}^{(d-2)/d}`: about 60,600 tokens at ``d = 512`` and
    about 47,100 at ``d = 64`` (Vaswani et al. 2017). Shape ``(d // 2,)``, float64.
    """
    return 2.0 * np.pi / frequencies(d, base)


def sinusoidal(positions, d: int, base: float = 10000.0) -> np.ndarray:
    r"""Sinusoidal position vectors of Vaswani et al. (2017).

    .. math::

        PE(p)_{2i} = \sin(\omega_i p), \qquad PE(p)_{2i+1} = \cos(\omega_i p),
        \qquad \omega_i = \text{base}^{-2i/d} .

    Parameters
    ----------
    positions : non-negative integers, any shape (usually ``(n,)``).
    d : even int >= 2.
    base : real > 0.

    Returns
    -------
    float64 array of shape ``positions.shape + (d,)``; ``(n, d)`` for ``n`` positions.
    """
    return _sinusoid("positions", _checks.positions("positions", positions), d, base)


def _sinusoid(name: str, p: np.ndarray, d: int, base: float) -> np.ndarray:
    """:func:`sinusoidal` of already validated positions ``p`` (named ``name`` in errors)."""
    w = frequencies(d, base)
    _checks.entries(f"{name}.size * d", p.size * w.size * 2)
    angles = p.astype(np.float64)[..., None] * w
    pe = np.empty(p.shape + (d,))
    pe[..., 0::2] = np.sin(angles)
    pe[..., 1::2] = np.cos(angles)
    return pe


class SinusoidalPositions(nn.Module):
    r"""Torch layer for :func:`sinusoidal` (Vaswani et al. 2017); nothing is learned.

    ``forward(positions)`` takes an integer tensor of positions of shape ``(n,)`` (any
    shape works) and returns ``positions.shape + (d,)`` on the same device, in
    ``dtype`` (default: ``torch.get_default_dtype()``). Angles are computed in float64
    (float32 on devices without float64), then cast.
    """

    def __init__(self, d: int, base: float = 10000.0):
        super().__init__()
        self.d = _checks.even_positive_int("d", d)
        self.base = _checks.positive_float("base", base)

    def forward(self, positions, dtype: torch.dtype | None = None) -> torch.Tensor:
        p = _torch_positions("positions", positions)
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ValueError(f"dtype must be a floating-point torch.dtype (or None), got {dtype!r}")
        _checks.entries("positions.numel() * d", p.numel() * self.d)
        work = _work_dtype(p.device)
        two_i = torch.arange(0, self.d, 2, device=p.device, dtype=work)
        w = self.base ** (-two_i / self.d)
        angles = p.to(work)[..., None] * w
        pe = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)
        return pe.to(dtype or torch.get_default_dtype())

    def extra_repr(self) -> str:
        return f"d={self.d}, base={self.base}"


def rotation_for_offset(k: int, d: int, base: float = 10000.0) -> np.ndarray:
    r"""The fixed linear map that moves a sinusoid ``k`` positions on.

    .. math::

        PE(p + k) = R_k\, PE(p) \quad\text{for every } p, \qquad
        R_k = \operatorname{diag}(B_0, \dots, B_{d/2-1}), \qquad
        B_i = \begin{pmatrix} \cos\omega_i k & \sin\omega_i k \\
                              -\sin\omega_i k & \cos\omega_i k \end{pmatrix},

    by the addition formulas
    :math:`\sin(a+b) = \sin a\cos b + \cos a\sin b` and
    :math:`\cos(a+b) = \cos a\cos b - \sin a\sin b`. Because each pair is stored as
    (sine, cosine), :math:`B_i` is the *transpose* of the usual counter-clockwise
    rotation matrix; it is still a rotation (by :math:`-\omega_i k` in the
    (sin, cos) plane). :math:`R_k` does not depend on :math:`p`; :math:`R_{-k} =
    R_k^{\mathsf T} = R_k^{-1}` (Vaswani et al. 2017, section 3.5).

    Parameters
    ----------
    k : int offset (may be negative).
    d : even int >= 2.
    base : real > 0.

    Returns
    -------
    float64 array of shape ``(d, d)``, block-diagonal with 2 x 2 blocks.
    """
    k = _offset("k", k)
    _checks.entries("d * d", _checks.even_positive_int("d", d) ** 2)
    angle = frequencies(d, base) * float(k)
    c, s = np.cos(angle), np.sin(angle)
    sin_row = np.arange(0, d, 2)
    cos_row = sin_row + 1
    R = np.zeros((d, d))
    R[sin_row, sin_row] = c
    R[sin_row, cos_row] = s
    R[cos_row, sin_row] = -s
    R[cos_row, cos_row] = c
    return R


def position_dot_products(m, n, d: int, base: float = 10000.0) -> np.ndarray:
    r"""Dot products :math:`PE(m) \cdot PE(n)` of sinusoidal position vectors.

    .. math::

        PE(m)\cdot PE(n) = \sum_{i=0}^{d/2-1} \bigl(\sin\omega_i m \sin\omega_i n
        + \cos\omega_i m \cos\omega_i n\bigr) = \sum_{i} \cos\bigl(\omega_i (m-n)\bigr),

    a function of the distance :math:`m - n` only, and an even one: :math:`k` and
    :math:`-k` give the same value (Vaswani et al. 2017). Computed here from the
    vectors themselves; :func:`dot_product_at_distance` is the closed form.

    ``m`` and ``n`` are non-negative integers of broadcastable shapes; the result has
    their broadcast shape (use ``m[:, None]`` and ``n[None, :]`` for a table).
    """
    m = _checks.positions("m", m)
    n = _checks.positions("n", n)
    try:
        np.broadcast_shapes(m.shape, n.shape)
    except ValueError as err:
        raise ValueError(f"m and n must have shapes that broadcast, got {m.shape} and {n.shape}") from err
    return np.sum(_sinusoid("m", m, d, base) * _sinusoid("n", n, d, base), axis=-1)


def dot_product_at_distance(k, d: int, base: float = 10000.0) -> np.ndarray:
    r"""Closed form of :math:`PE(m)\cdot PE(m + k)`: :math:`\sum_i \cos(\omega_i k)`.

    Vaswani et al. (2017) sinusoids; ``k`` is an integer distance of any sign and any
    shape, and the result (float64) has the shape of ``k``. Equal at ``k`` and ``-k``:
    the dot product alone cannot tell before from after.
    """
    k = _checks.integers("k", k).astype(np.float64)
    w = frequencies(d, base)
    _checks.entries("k.size * d / 2", k.size * w.size)
    return np.sum(np.cos(k[..., None] * w), axis=-1)


def score_terms(e, pe, w_q, w_k) -> dict:
    r"""The four terms of an attention score when positions are added to the input.

    With :math:`x_i = e_i + p_i` (token embedding plus position vector, rows) and
    :math:`M = W_Q W_K^{\mathsf T}` (the row-vector form of the paper's
    :math:`W_Q^{\mathsf T} W_K`), the unscaled score splits as

    .. math::

        x_i M x_j^{\mathsf T} = \underbrace{e_i M e_j^{\mathsf T}}_{\text{content-content}}
        + \underbrace{e_i M p_j^{\mathsf T}}_{\text{content-position}}
        + \underbrace{p_i M e_j^{\mathsf T}}_{\text{position-content}}
        + \underbrace{p_i M p_j^{\mathsf T}}_{\text{position-position}} .

    The model sees the sum, never :math:`p_i \cdot p_j` alone (Vaswani et al. 2017;
    the split is the starting point of Dai et al. 2019 and Ke et al. 2021).

    Parameters
    ----------
    e, pe : ``(n, d_model)`` token embeddings and position vectors.
    w_q, w_k : ``(d_model, d_k)`` query and key projections.

    Returns
    -------
    dict with keys ``"content_content"``, ``"content_position"``,
    ``"position_content"``, ``"position_position"`` and ``"total"``, each
    ``(n, n)`` float64 (``total`` is the sum of the four).
    """
    e = _matrix("e", e)
    pe = _matrix("pe", pe)
    if pe.shape != e.shape:
        raise ValueError(f"pe must have the shape of e {e.shape}, got {pe.shape}")
    w_q = _matrix("w_q", w_q, rows=e.shape[1])
    w_k = _matrix("w_k", w_k, rows=e.shape[1])
    if w_k.shape != w_q.shape:
        raise ValueError(f"w_k must have the shape of w_q {w_q.shape}, got {w_k.shape}")
    M = w_q @ w_k.T
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        terms = {
            "content_content": e @ M @ e.T,
            "content_position": e @ M @ pe.T,
            "position_content": pe @ M @ e.T,
            "position_position": pe @ M @ pe.T,
        }
        terms["total"] = sum(terms.values())
    _checks.finite_result("e and pe", terms["total"], "the four terms must stay finite: scale e and pe down")
    return terms


def position_score(m, k: int, M, base: float = 10000.0) -> np.ndarray:
    r"""Position-position score :math:`PE(m)^{\mathsf T} M\, PE(m + k)` at a fixed distance.

    For :math:`M = I` this is :func:`dot_product_at_distance` and does not depend on
    :math:`m`; for a general :math:`M` it does, unless :math:`M` is block-diagonal
    with 2 x 2 blocks of the form :math:`\begin{pmatrix} a & -b \\ b & a\end{pmatrix}`
    (Vaswani et al. 2017 sinusoids; the chapter's figure 1).

    Parameters
    ----------
    m : non-negative integers, any shape.
    k : int distance; every ``m + k`` must be >= 0.
    M : ``(d, d)`` matrix, ``d`` even.

    Returns
    -------
    float64 array of the shape of ``m``.
    """
    M = _checks.array("M", M)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] % 2 or M.shape[0] == 0:
        raise ValueError(f"M must be a square d x d matrix with d even and >= 2, got shape {M.shape}")
    k = _offset("k", k)
    m = _checks.positions("m", m)
    if m.size and m.min() + k < 0:
        raise ValueError(f"m + k must be >= 0 for every m (positions start at 0); got min(m) + k = {m.min() + k}")
    if m.size and m.max() + k > _checks.MAX_POSITION:
        raise ValueError(f"m + k must be at most 2**32 (the supported range); got max(m) + k = {m.max() + k}")
    d = M.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.einsum("...i,ij,...j->...", _sinusoid("m", m, d, base), M, _sinusoid("m", m + k, d, base))
    return _checks.finite_result("M's entries", out, "the score overflows float64: scale M down")


class LearnedPositions(nn.Module):
    r"""A learned table of absolute position vectors, one row per position.

    .. math:: x_p = e_p + P[p], \qquad P \in \mathbb{R}^{N \times d}\ \text{learned}.

    As in ConvS2S (Gehring et al. 2017), BERT (Devlin et al. 2018, ``N = 512``) and
    GPT-2 (Radford et al. 2019, ``N = 1024``). Rows start as :math:`\mathcal N(0,
    0.02^2)`, the initialisation of BERT and GPT-2.

    ``forward(positions)`` takes an integer tensor of shape ``(n,)`` (any shape works)
    and returns ``positions.shape + (d,)``. A position outside ``0..N-1`` has no row:
    ``IndexError`` for one past the table, ``ValueError`` for a negative one.
    """

    def __init__(self, max_positions: int, d: int):
        super().__init__()
        self.max_positions = _checks.size("max_positions", max_positions)
        self.d = _checks.size("d", d)
        _checks.entries("max_positions * d", self.max_positions * self.d)
        self.table = nn.Embedding(self.max_positions, self.d)
        nn.init.normal_(self.table.weight, mean=0.0, std=0.02)

    def forward(self, positions) -> torch.Tensor:
        p = _torch_positions("positions", positions, device=self.table.weight.device)
        if p.numel() and int(p.max()) >= self.max_positions:
            raise IndexError(
                f"positions must lie in 0..{self.max_positions - 1}: this table has "
                f"{self.max_positions} rows (max_positions), so position {int(p.max())} has no vector"
            )
        return self.table(p)

    def extra_repr(self) -> str:
        return f"max_positions={self.max_positions}, d={self.d}"


def perplexity(probabilities) -> float:
    r"""Perplexity of a language model from the probabilities it gave the true next tokens.

    .. math::

        \operatorname{PPL} = \Bigl(\prod_{t=1}^{N} p_t\Bigr)^{-1/N}
        = \exp\Bigl(-\frac{1}{N}\sum_{t=1}^{N} \ln p_t\Bigr),

    where :math:`p_t = p(x_t \mid x_{<t})` is the probability the model assigned to the
    token that actually came next: the inverse of the geometric mean of those
    probabilities, equivalently the exponential of the mean negative log-likelihood.
    It is computed in the second form, a sum of logarithms, because the product of many
    probabilities underflows float64 (``0.01 ** 10_000`` is ``0.0``). A model that spreads
    its probability evenly over :math:`V` tokens has perplexity :math:`V`; lower is
    better. Press et al. (2022) compare position methods by the perplexity of
    language models on inputs longer than those seen in training.

    Parameters
    ----------
    probabilities : array of ``N >= 1`` real numbers in ``(0, 1]``, any shape (it is
        flattened), e.g. ``(N,)`` for one text.

    Returns
    -------
    float >= 1.
    """
    p = _checks.array("probabilities", probabilities).ravel()
    if p.size == 0:
        raise ValueError("probabilities must contain at least one probability, got an empty array")
    if np.any(p <= 0) or np.any(p > 1):
        raise ValueError(
            "probabilities must lie in (0, 1] (a probability of 0 for the true token gives an "
            f"infinite perplexity), got values from {p.min()} to {p.max()}"
        )
    mean_nll = -np.mean(np.log(p))
    if mean_nll > _LOG_MAX_FLOAT:
        raise ValueError(
            "probabilities must not be this small: the perplexity exceeds the largest float64 "
            f"(1.8e308); the mean negative log-likelihood is {mean_nll:.6g} nats, report that instead"
        )
    return float(np.exp(mean_nll))


# --- private helpers ---------------------------------------------------------------

_LOG_MAX_FLOAT = float(np.log(np.finfo(np.float64).max))


def _offset(name: str, value) -> int:
    """An integer offset or distance of either sign within the supported range, or ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or abs(value) > _checks.MAX_POSITION:
        raise ValueError(
            f"{name} must be an integer offset (positive, zero or negative) of size at most 2**32, got {value!r}"
        )
    return int(value)


def _matrix(name: str, value, rows: int | None = None) -> np.ndarray:
    arr = _checks.array(name, value)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {arr.shape}")
    if rows is not None and arr.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows (the width of the embeddings), got shape {arr.shape}")
    return arr


def _torch_positions(name: str, positions, device=None) -> torch.Tensor:
    """An int64 tensor of non-negative positions (moved to ``device`` if given), or ValueError.

    Integer tensors, lists and numpy arrays are accepted, and so are floating-point
    tensors holding whole numbers (detached); every position must be at most 2**32.
    """
    p = _checks.tensor_integers(name, positions, "non-negative integers", floats=False)
    if device is not None:
        p = p.to(device)
    if p.numel() and int(p.min()) < 0:
        raise ValueError(f"{name} must be non-negative integers, got a minimum of {int(p.min())}")
    return p



def _work_dtype(device: torch.device) -> torch.dtype:
    """float64 for exact-as-possible angles, except on devices that lack it (Apple MPS)."""
    return torch.float32 if device.type == "mps" else torch.float64
