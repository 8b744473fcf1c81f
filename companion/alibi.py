r"""ALiBi: a fixed linear penalty on distance, added to the attention score.

Press, Smith & Lewis (2022), "Train Short, Test Long: Attention with Linear Biases
Enables Input Length Extrapolation" (arXiv, August 2021), add no position vectors
at all: under a causal mask, head :math:`h` adds :math:`-m_h (i - j)` to the score
of query :math:`i` and key :math:`j`, with a fixed slope :math:`m_h` per head.
Adding the penalty multiplies :math:`e^{s_{ij}}` by :math:`e^{-m_h (i-j)}` before
renormalising, so steep heads look nearby and gentle heads look far.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from ._contracts import MAX_ENTRIES, Flag, Integer, NonNegative, Real, Size, contract, entries, keys_after_queries
from .attention import relative_positions

__all__ = ["slopes", "largest_power_of_two", "bias", "distance_weights", "tail_weight", "effective_span"]

#: A number of heads: an integer in 1..2**28.
Heads = Annotated[int, Integer(1, MAX_ENTRIES)]


@contract
def largest_power_of_two(n_heads: Heads) -> int:
    """``P``, the largest power of two ``<= n_heads``: how many heads get the first, geometric slopes."""
    # 2^floor(log2 H), from the bit length of H
    return 1 << (n_heads.bit_length() - 1)


@contract
def slopes(n_heads: Heads) -> np.ndarray:
    r"""The fixed slope of each head (Press, Smith & Lewis 2022, section 3).

    For :math:`H` a power of two, a geometric sequence that starts and shrinks by
    :math:`2^{-8/H}`:

    .. math:: m_h = 2^{-8h/H}, \qquad h = 1, \dots, H,

    so :math:`H = 8` gives :math:`1/2, 1/4, \dots, 1/256`. For other :math:`H`, the
    rule of the authors' code (``get_slopes``): the slopes for :math:`P`, the largest
    power of two below :math:`H`, followed by every other slope of the list for
    :math:`2P` (its 1st, 3rd, 5th, ...), :math:`2^{-4(2k+1)/P}` for
    :math:`k = 0, 1, \dots`, until there are :math:`H`.

    Returns float64 of shape ``(n_heads,)``.
    """
    p = largest_power_of_two(n_heads)
    h = np.arange(1, p + 1)
    # m_h = 2^(-8h/P), h = 1..P
    first = 2.0 ** (-8.0 * h / p)
    k = np.arange(n_heads - p)
    # 2^(-4(2k+1)/P): every other slope of the list for 2P heads
    rest = 2.0 ** (-8.0 * (2 * k + 1) / (2 * p))
    return np.concatenate([first, rest])


@contract(keys_after_queries, entries("n_heads * n_queries * n_keys",
                                      lambda n_heads, n_queries, n_keys: n_heads * n_queries * (n_keys or n_queries)))
def bias(n_heads: Heads, n_queries: Size, n_keys: Size | None = None, mask_future: Flag = True) -> np.ndarray:
    r"""ALiBi's causal score bias for every head (Press, Smith & Lewis 2022, section 3).

    .. math::

        b_{h,ij} = \begin{cases} -m_h\,(i - j) & j \le i \\ -\infty & j > i \end{cases}

    so that :math:`\operatorname{softmax}_j(q_i\cdot k_j/\sqrt d + b_{h,ij})` is
    ALiBi attention with the causal mask already folded in (as the authors' code adds
    its future mask and bias into one tensor). Query row ``r`` sits at position
    :math:`i = r + n_\text{keys} - n_\text{queries}` (the queries are the last
    positions, as with a key cache); ``n_keys`` defaults to ``n_queries``.

    With ``mask_future=False`` every entry is :math:`-m_h (i - j)`, finite (positive
    above the diagonal); use it with a separate boolean mask such as
    :func:`companion.attention.causal_mask`, e.g. as the ``bias`` of
    :func:`companion.attention.scaled_dot_product_attention` (which accepts both
    forms: ``-inf`` entries mask a key out, like ``mask``). The finite form is
    convenient where one bias must serve several masks, or where ``-inf`` would turn
    into NaN, as in a sum with another infinite bias or a product with zero.

    The authors' code adds :math:`m_h j` instead, which differs from
    :math:`-m_h (i - j)` by :math:`m_h i`, a constant along each row: the softmax is
    the same.

    Returns float64 of shape ``(n_heads, n_queries, n_keys)``.
    """
    m = slopes(n_heads)
    # j - i, the query rows being the last positions: (n_queries, n_keys)
    distance = relative_positions(n_queries, n_keys)
    # b_{h,ij} = -m_h (i - j), written m_h (j - i) so that the diagonal is +0.0: (n_heads, n_queries, n_keys)
    b = m[:, None, None] * distance
    if mask_future:
        # -inf where j > i
        b = np.where(distance <= 0, b, -np.inf)
    return b


@contract(entries("n_heads * n_keys", lambda n_heads, n_keys: n_heads * n_keys))
def distance_weights(n_heads: Heads, n_keys: Size) -> np.ndarray:
    r"""Each head's weights by distance when every content score is the same.

    With equal content scores :math:`q_i \cdot k_j`, ALiBi's softmax for the newest
    query (it sees ``n_keys`` keys, at distances :math:`k = 0, \dots, n - 1`) is a
    truncated geometric distribution, a direct consequence of the bias of
    Press, Smith & Lewis (2022):

    .. math::

        w_{h,k} = \frac{e^{-m_h k}}{\sum_{l=0}^{n-1} e^{-m_h l}}
                = e^{-m_h k}\,\frac{1 - e^{-m_h}}{1 - e^{-m_h n}} .

    Column ``k`` is distance ``k`` (key position ``n_keys - 1 - k``), the reverse of
    the key order in :func:`bias`. Computed in closed form (``expm1`` for accuracy),
    so long rows cost no softmax.

    Returns float64 of shape ``(n_heads, n_keys)``; each row sums to 1.
    """
    m = slopes(n_heads)[:, None]
    k = np.arange(n_keys)[None, :]
    # w_{h,k} = e^{-m_h k} (1 - e^{-m_h}) / (1 - e^{-m_h n})
    return np.exp(-m * k) * (np.expm1(-m) / np.expm1(-m * n_keys))


def _distance_in_row(n_keys, distance) -> None:
    if distance >= n_keys:
        raise ValueError(f"distance must be an integer in 0..{n_keys - 1} (n_keys - 1), got {distance!r}")


@contract(_distance_in_row)
def tail_weight(n_heads: Heads, n_keys: Size, distance: NonNegative) -> np.ndarray:
    r"""The weight each head puts on keys ``distance`` or more positions back, for equal content.

    Summing :func:`distance_weights` over :math:`k \ge D` (a geometric tail):

    .. math::

        T_h(D) = \sum_{k=D}^{n-1} w_{h,k} = \frac{e^{-m_h D} - e^{-m_h n}}{1 - e^{-m_h n}}
               \;\le\; e^{-m_h D},

    and :math:`T_h(D) \to e^{-m_h D}` as the row grows (equality only at :math:`D = 0`).
    ``distance`` is an integer in ``0 .. n_keys - 1``; :math:`T_h(0) = 1`.

    Returns float64 of shape ``(n_heads,)``.
    """
    m = slopes(n_heads)
    # T_h(D) = (e^{-m_h D} - e^{-m_h n}) / (1 - e^{-m_h n})
    return np.exp(-m * distance) * (np.expm1(-m * (n_keys - distance)) / np.expm1(-m * n_keys))


@contract(entries("n_heads * n_keys", lambda n_heads, n_keys: n_heads * n_keys))
def effective_span(n_heads: Heads, n_keys: Size, share: Annotated[float, Real(gt=0.0, lt=1.0)] = 0.9) -> np.ndarray:
    r"""Each head's effective span: the smallest distance that holds ``share`` of the weight.

    For equal content scores and the newest query of a row of ``n_keys`` keys, the
    smallest :math:`D` with :math:`\sum_{k=0}^{D} w_{h,k} \ge \rho` (:func:`distance_weights`,
    :math:`\rho` = ``share``). From the geometric sum,

    .. math::

        D_h = \left\lceil \frac{-\ln\bigl(1 - \rho\,(1 - e^{-m_h n})\bigr)}{m_h} \right\rceil - 1
        \;\xrightarrow{\;n \to \infty\;}\;
        \left\lceil \frac{\ln \frac{1}{1-\rho}}{m_h} \right\rceil - 1 ,

    so :math:`\rho = 0.9` gives about :math:`\ln 10 / m_h \approx 2.3 / m_h` tokens for the
    slopes :math:`m_h` of Press, Smith & Lewis (2022). Computed from the cumulative
    weights by the definition, the same definition as the ``span90`` of
    :func:`companion.figures.alibi.alibi_heatmap_data` (which adds random content).
    ``share`` must lie strictly between 0 and 1.

    Returns int64 of shape ``(n_heads,)``, each in ``0 .. n_keys - 1``.
    """
    # sum_{k <= D} w_{h,k}, per head
    cumulative = np.cumsum(distance_weights(n_heads, n_keys), axis=-1)
    # the smallest D whose cumulative weight reaches the share
    return np.minimum((cumulative < share).sum(axis=-1), n_keys - 1).astype(np.int64)


