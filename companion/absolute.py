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

from typing import Annotated

import numpy as np

from ._contracts import (
    MAX_POSITION,
    Array,
    EvenSize,
    Finite,
    Matrix,
    Offset,
    Positions,
    Positive,
    WholeNumbers,
    broadcast,
    contract,
    entries,
    rows_fit,
    same_shape,
    square,
)

__all__ = [
    "BASE",
    "frequencies",
    "wavelengths",
    "sinusoidal",
    "rotation_for_offset",
    "position_dot_products",
    "dot_product_at_distance",
    "score_terms",
    "position_score",
    "perplexity",
]

#: The base of the sinusoid, 10000 (Vaswani et al. 2017, section 3.5), which RoPE kept
#: (Su et al. 2021; Llama 1 and 2): the default base of every function of the package.
BASE = 10_000.0


@contract(entries("d / 2", lambda d: d // 2))
def frequencies(d: EvenSize, base: Positive = BASE) -> np.ndarray:
    r"""Angular frequency of each pair of components.

    .. math:: \omega_i = \text{base}^{-2i/d}, \qquad i = 0, \dots, d/2 - 1 .

    A geometric progression that starts at :math:`\omega_0 = 1` and shrinks by the
    factor :math:`\text{base}^{-2/d}` per pair (Vaswani et al. 2017, section 3.5).
    ``d`` is the width of the position vector; ``base`` is 10000 in the paper
    (:data:`BASE`).

    Shapes: returns ``(d // 2,)``, float64.
    """
    # i = 0 .. d/2 - 1
    i = np.arange(d // 2)
    # omega_i = base^(-2i/d)
    return base ** (-2.0 * i / d)


@contract(entries("d / 2", lambda d: d // 2))
def wavelengths(d: EvenSize, base: Positive = BASE) -> np.ndarray:
    r"""Wavelength, in tokens, of each pair of components.

    .. math:: \lambda_i = \frac{2\pi}{\omega_i} = 2\pi\,\text{base}^{2i/d} .

    From :math:`2\pi \approx 6.3` tokens (pair 0) up to
    :math:`2\pi\,\text{base}^{(d-2)/d}`: about 60,600 tokens at ``d = 512`` and
    about 47,100 at ``d = 64`` (Vaswani et al. 2017). ``d`` and ``base`` are those of
    :func:`frequencies`.

    Shapes: returns ``(d // 2,)``, float64.
    """
    # lambda_i = 2 pi / omega_i
    return 2.0 * np.pi / frequencies(d, base)


@contract(entries("positions.size * d", lambda positions, d: positions.size * d))
def sinusoidal(positions: Positions, d: EvenSize, base: Positive = BASE) -> np.ndarray:
    r"""Sinusoidal position vectors of Vaswani et al. (2017).

    .. math::

        PE(p)_{2i} = \sin(\omega_i p), \qquad PE(p)_{2i+1} = \cos(\omega_i p),
        \qquad \omega_i = \text{base}^{-2i/d} .

    ``positions`` holds the token positions :math:`p`; ``d`` is the width of each
    vector and ``base`` that of the frequencies :math:`\omega_i` (:func:`frequencies`).

    Shapes: ``positions`` any shape, usually ``(n,)``; returns ``positions.shape + (d,)``,
    float64: ``(n, d)`` for ``n`` positions.
    """
    # omega_i p, shape positions.shape + (d/2,)
    angles = positions.astype(np.float64)[..., None] * frequencies(d, base)
    pe = np.empty(positions.shape + (d,))
    # PE(p)_{2i} = sin(omega_i p)
    pe[..., 0::2] = np.sin(angles)
    # PE(p)_{2i+1} = cos(omega_i p)
    pe[..., 1::2] = np.cos(angles)
    return pe


@contract(entries("d * d", lambda d: d * d))
def rotation_for_offset(k: Offset, d: EvenSize, base: Positive = BASE) -> np.ndarray:
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
    R_k^{\mathsf T} = R_k^{-1}` (Vaswani et al. 2017, section 3.5). ``k`` is the
    offset in positions and may be negative; ``d`` and ``base`` are those of
    :func:`sinusoidal`.

    Shapes: returns ``(d, d)``, float64, block-diagonal with 2 x 2 blocks.
    """
    # omega_i k
    angle = frequencies(d, base) * float(k)
    c, s = np.cos(angle), np.sin(angle)
    sin_row = np.arange(0, d, 2)
    cos_row = sin_row + 1
    R = np.zeros((d, d))
    # B_i = [[cos omega_i k, sin omega_i k], [-sin omega_i k, cos omega_i k]] on rows and columns (2i, 2i+1)
    R[sin_row, sin_row] = c
    R[sin_row, cos_row] = s
    R[cos_row, sin_row] = -s
    R[cos_row, cos_row] = c
    return R


@contract(broadcast("m", "n"), entries("m.size * d", lambda m, d: m.size * d),
          entries("n.size * d", lambda n, d: n.size * d))
def position_dot_products(m: Positions, n: Positions, d: EvenSize, base: Positive = BASE) -> np.ndarray:
    r"""Dot products :math:`PE(m) \cdot PE(n)` of sinusoidal position vectors.

    .. math::

        PE(m)\cdot PE(n) = \sum_{i=0}^{d/2-1} \bigl(\sin\omega_i m \sin\omega_i n
        + \cos\omega_i m \cos\omega_i n\bigr) = \sum_{i} \cos\bigl(\omega_i (m-n)\bigr),

    a function of the distance :math:`m - n` only, and an even one: :math:`k` and
    :math:`-k` give the same value (Vaswani et al. 2017). Computed here from the
    vectors themselves; :func:`dot_product_at_distance` is the closed form. ``m`` and
    ``n`` are the two positions; ``d`` and ``base`` are those of :func:`sinusoidal`.

    Shapes: ``m`` and ``n`` broadcastable; returns their broadcast shape (use
    ``m[:, None]`` and ``n[None, :]`` for a table).
    """
    # PE(m) . PE(n), summed over the d components
    return np.sum(sinusoidal(m, d, base) * sinusoidal(n, d, base), axis=-1)


@contract(entries("k.size * d / 2", lambda k, d: k.size * (d // 2)))
def dot_product_at_distance(k: Annotated[np.ndarray, WholeNumbers(signed=True)], d: EvenSize,
                            base: Positive = BASE) -> np.ndarray:
    r"""Closed form of :math:`PE(m)\cdot PE(m + k)`: :math:`\sum_i \cos(\omega_i k)`.

    Vaswani et al. (2017) sinusoids; ``k`` is the distance, an integer of either sign.
    Equal at ``k`` and ``-k``: the dot product alone cannot tell before from after.

    Shapes: ``k`` any shape; returns the shape of ``k``, float64.
    """
    # omega_i k, shape k.shape + (d/2,)
    angles = k.astype(np.float64)[..., None] * frequencies(d, base)
    # sum_i cos(omega_i k)
    return np.sum(np.cos(angles), axis=-1)


@contract(same_shape("e", "pe"), rows_fit("e", "w_q", "w_k"), same_shape("w_q", "w_k"),
          result=Finite("e and pe", "the four terms must stay finite: scale e and pe down"))
def score_terms(e: Matrix, pe: Matrix, w_q: Matrix, w_k: Matrix) -> dict:
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

    ``e`` holds the token embeddings :math:`e_i` and ``pe`` the position vectors
    :math:`p_i`, one row per token; ``w_q`` and ``w_k`` are the query and key
    projections :math:`W_Q` and :math:`W_K`. Returns a dict with the keys
    ``"content_content"``, ``"content_position"``, ``"position_content"``,
    ``"position_position"`` and ``"total"`` (the sum of the four).

    Shapes: ``e`` and ``pe`` ``(n, d_model)``; ``w_q`` and ``w_k`` ``(d_model, d_k)``;
    each entry of the result ``(n, n)``, float64.
    """
    # M = W_Q W_K^T, shape (d_model, d_model)
    M = w_q @ w_k.T
    terms = {
        # e_i M e_j^T
        "content_content": e @ M @ e.T,
        # e_i M p_j^T
        "content_position": e @ M @ pe.T,
        # p_i M e_j^T
        "position_content": pe @ M @ e.T,
        # p_i M p_j^T
        "position_position": pe @ M @ pe.T,
    }
    # x_i M x_j^T, the sum of the four
    terms["total"] = sum(terms.values())
    return terms


def _shifted_positions(m, k) -> None:
    if m.size and m.min() + k < 0:
        raise ValueError(f"m + k must be >= 0 for every m (positions start at 0); got min(m) + k = {m.min() + k}")
    if m.size and m.max() + k > MAX_POSITION:
        raise ValueError(f"m + k must be at most 2**32 (the supported range); got max(m) + k = {m.max() + k}")


@contract(square("M", even=True), _shifted_positions, entries("m.size * d", lambda m, M: m.size * M.shape[0]),
          result=Finite("M's entries", "the score overflows float64: scale M down"))
def position_score(m: Positions, k: Offset, M: Matrix, base: Positive = BASE) -> np.ndarray:
    r"""Position-position score :math:`PE(m)^{\mathsf T} M\, PE(m + k)` at a fixed distance.

    For :math:`M = I` this is :func:`dot_product_at_distance` and does not depend on
    :math:`m`; for a general :math:`M` it does, unless :math:`M` is block-diagonal
    with 2 x 2 blocks of the form :math:`\begin{pmatrix} a & -b \\ b & a\end{pmatrix}`
    (Vaswani et al. 2017 sinusoids; the chapter's interactive figure).

    ``m`` holds the positions :math:`m` and ``k`` the distance, an integer of either
    sign such that every ``m + k`` is >= 0; ``M`` is the matrix between the two
    position vectors, whose (even) size is the width :math:`d` of the sinusoids.

    Shapes: ``m`` any shape; ``M`` ``(d, d)``, ``d`` even; returns the shape of ``m``,
    float64.
    """
    d = M.shape[0]
    # PE(m)^T M PE(m + k)
    return np.einsum("...i,ij,...j->...", sinusoidal(m, d, base), M, sinusoidal(m + k, d, base))


_LOG_MAX_FLOAT = float(np.log(np.finfo(np.float64).max))


def _not_too_small(probabilities) -> None:
    mean_nll = -np.mean(np.log(probabilities))
    if mean_nll > _LOG_MAX_FLOAT:
        raise ValueError(
            "probabilities must not be this small: the perplexity exceeds the largest float64 "
            f"(1.8e308); the mean negative log-likelihood is {mean_nll:.6g} nats, report that instead"
        )


@contract(_not_too_small)
def perplexity(probabilities: Annotated[np.ndarray, Array(nonempty=True, positive=True, at_most=1.0, why=(
        "a probability of 0 for the true token gives an infinite perplexity"))]) -> float:
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

    ``probabilities`` holds the :math:`N \ge 1` probabilities :math:`p_t`, each in
    :math:`(0, 1]`. Returns a float >= 1.

    Shapes: ``probabilities`` any shape (it is flattened), e.g. ``(N,)`` for one text.
    """
    # exp(-(1/N) sum_t ln p_t)
    return float(np.exp(-np.mean(np.log(probabilities))))
