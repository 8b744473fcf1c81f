r"""ALiBi: a fixed linear penalty on distance, added to the attention score.

Press, Smith & Lewis (2022), "Train Short, Test Long: Attention with Linear Biases
Enables Input Length Extrapolation" (arXiv, August 2021), add no position vectors
at all: under a causal mask, head :math:`h` adds :math:`-m_h (i - j)` to the score
of query :math:`i` and key :math:`j`, with a fixed slope :math:`m_h` per head.
Adding the penalty multiplies :math:`e^{s_{ij}}` by :math:`e^{-m_h (i-j)}` before
renormalising, so steep heads look nearby and gentle heads look far.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from . import _checks

__all__ = ["slopes", "bias", "ALiBi"]


def slopes(n_heads: int) -> np.ndarray:
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
    n_heads = _checks.positive_int("n_heads", n_heads)
    p = 1 << (n_heads.bit_length() - 1)  # largest power of two <= n_heads
    h = np.arange(1, p + 1)
    first = 2.0 ** (-8.0 * h / p)
    k = np.arange(n_heads - p)
    rest = 2.0 ** (-8.0 * (2 * k + 1) / (2 * p))
    return np.concatenate([first, rest])


def bias(n_heads: int, n_queries: int, n_keys: int | None = None, mask_future: bool = True) -> np.ndarray:
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
    :func:`companion.attention.scaled_dot_product_attention`, which accepts only
    finite biases.

    The authors' code adds :math:`m_h j` instead, which differs from
    :math:`-m_h (i - j)` by :math:`m_h i`, a constant along each row: the softmax is
    the same.

    Returns float64 of shape ``(n_heads, n_queries, n_keys)``.
    """
    m = slopes(n_heads)
    n_queries = _checks.positive_int("n_queries", n_queries)
    n_keys = n_queries if n_keys is None else _checks.positive_int("n_keys", n_keys)
    if n_keys < n_queries:
        raise ValueError(f"n_keys must be >= n_queries ({n_queries}): the queries are the last positions, got {n_keys}")
    if not isinstance(mask_future, bool | np.bool_):
        raise ValueError(f"mask_future must be True or False, got {mask_future!r}")
    i = np.arange(n_queries)[:, None] + (n_keys - n_queries)
    j = np.arange(n_keys)[None, :]
    b = m[:, None, None] * (j - i)  # = -m (i - j), written so the diagonal is +0.0
    if mask_future:
        b = np.where(j <= i, b, -np.inf)
    return b


class ALiBi(nn.Module):
    r"""Torch layer for :func:`bias` (Press, Smith & Lewis 2022); nothing is learned.

    The slopes are shown in a (non-persistent) buffer ``slopes``, which ``.to(device)``
    and ``.double()`` move and cast. ``forward(n_queries, n_keys=None)`` returns the
    bias ``(n_heads, n_queries, n_keys)`` with :math:`-\infty` above the diagonal, on
    the buffer's device and in its dtype (slopes exact in float64, then cast); add it to
    the scores before the softmax.
    """

    def __init__(self, n_heads: int):
        super().__init__()
        self.n_heads = _checks.positive_int("n_heads", n_heads)
        shown = torch.from_numpy(slopes(self.n_heads)).to(torch.get_default_dtype())
        self.register_buffer("slopes", shown, persistent=False)

    def forward(self, n_queries: int, n_keys: int | None = None) -> torch.Tensor:
        n_queries = _checks.positive_int("n_queries", n_queries)
        n_keys = n_queries if n_keys is None else _checks.positive_int("n_keys", n_keys)
        if n_keys < n_queries:
            raise ValueError(
                f"n_keys must be >= n_queries ({n_queries}): the queries are the last positions, got {n_keys}"
            )
        device, dtype = self.slopes.device, self.slopes.dtype
        work = torch.float32 if device.type == "mps" else torch.float64
        # Exact slopes at every call, so that casting the module to float32 and back loses nothing.
        m = torch.tensor(slopes(self.n_heads), dtype=work, device=device).to(dtype)
        i = torch.arange(n_queries, device=device)[:, None] + (n_keys - n_queries)
        j = torch.arange(n_keys, device=device)[None, :]
        b = m[:, None, None] * (j - i).to(dtype)
        return b.masked_fill(j > i, float("-inf"))

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"
