r"""Relative positions as torch layers: Shaw et al., Transformer-XL and T5 for a model's tensors.

Each layer computes what its numpy function in :mod:`companion.relative` computes (the
tests hold them equal): :class:`ShawRelativeAttention` (Shaw, Uszkoreit & Vaswani 2018),
:class:`TransformerXLScores` (Dai et al. 2019) and :class:`T5RelativeBias` (Raffel et
al. 2020). A module of its own, so that the numpy formulas import no torch.
"""
from __future__ import annotations

import math
from typing import Annotated

import torch
from torch import nn

from . import _tensors, absolute
from ._contracts import (
    EvenSize,
    Flag,
    Integer,
    Positive,
    Size,
    contract,
    entries,
    keys_after_queries,
    layer_width,
    leading_dims_broadcast,
    rule,
    same_dtype,
    same_size,
)
from ._tensors import Tensor, TensorMask, TensorPositions
from .relative import Buckets, XLTerms, _rows_of, _t5_options

__all__ = ["ShawRelativeAttention", "TransformerXLScores", "T5RelativeBias"]


#: A floating-point tensor ``(..., n, d)``.
TensorSequences = Annotated[torch.Tensor, Tensor(ndim_at_least=2)]


#: A floating-point tensor ``(n, d)``.
TensorMatrix = Annotated[torch.Tensor, Tensor(ndim=2)]


def _tensor_mask_fits(q, k, mask) -> None:
    """``mask`` broadcasts to the scores ``(..., n_queries, n_keys)`` and leaves every query a key."""
    if mask is None:
        return
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    try:
        full = mask.to(q.device).expand(shape) if mask.ndim <= len(shape) else None
    except RuntimeError:
        full = None
    if full is None:
        raise ValueError(f"mask of shape {tuple(mask.shape)} must broadcast to the scores {tuple(shape)}")
    if not bool(full.any(dim=-1).all()):
        raise ValueError("mask must leave every query a key to attend to; a row of mask is all False")


class ShawRelativeAttention(nn.Module):
    r"""Torch layer for :func:`companion.relative.shaw_attention` (Shaw, Uszkoreit & Vaswani 2018).

    Holds the two learned tables ``w_k`` (``(2c + 1, d)``) and ``w_v``
    (``(2c + 1, d_v)``), one vector per clipped distance ``-c..c`` with
    ``c = max_distance`` (the paper's ``k``), shared by all heads of a layer.

    ``forward(q, k, v, mask=None)`` takes already-projected queries, keys and values
    of shapes ``(..., n_queries, d)``, ``(..., n_keys, d)``, ``(..., n_keys, d_v)`` and
    an optional boolean mask (``True`` = may attend), and returns
    ``(z, alpha)`` of shapes ``(..., n_queries, d_v)`` and ``(..., n_queries, n_keys)``.
    A tensor of the wrong type, dtype or shape, or a mask row with no key left, raises
    ``ValueError`` as :func:`companion.relative.shaw_attention` does; like torch's own layers, the inputs
    are not scanned for NaN.
    """

    @contract(entries("(2 max_distance + 1) * max(d, d_v)",
                      lambda d, max_distance, d_v: (2 * max_distance + 1) * max(d, d_v or d)))
    def __init__(self, d: Size, max_distance: Annotated[int, Integer(0, 2**32)], d_v: Size | None = None):
        super().__init__()
        self.d = d
        self.d_v = d if d_v is None else d_v
        self.max_distance = max_distance
        rows = 2 * max_distance + 1
        # w^K_t and w^V_t for t = -c..c, N(0, 0.02^2)
        self.w_k = nn.Parameter(0.02 * torch.randn(rows, self.d))
        self.w_v = nn.Parameter(0.02 * torch.randn(rows, self.d_v))

    @contract(layer_width("d", "q", "k"), layer_width("d_v", "v"), same_size("k", "v", axis=-2, what="n_keys"),
              same_dtype("q", "k", "v"), leading_dims_broadcast("q", "k", "v"), _rows_of, _tensor_mask_fits)
    def forward(self, q: TensorSequences, k: TensorSequences, v: TensorSequences,
                mask: Annotated[torch.Tensor, TensorMask()] | None = None):
        n_q, n_k, c = q.shape[-2], k.shape[-2], self.max_distance
        # clip(j - i, c) + c, the table row of each pair, shape (n_q, n_k)
        row = _tensors.relative_positions(n_q, n_k, q.device).clamp(-c, c) + c
        w_k, w_v = self.w_k.to(q.dtype), self.w_v.to(v.dtype)
        # q_i . a^K_ij, looked up from q_i . w^K_r
        position = torch.gather(q @ w_k.T, -1, row.expand(*q.shape[:-1], n_k))
        # e_ij = (q_i . k_j + q_i . a^K_ij) / sqrt(d)
        e = (q @ k.transpose(-1, -2) + position) / math.sqrt(self.d)
        if mask is not None:
            e = e.masked_fill(~mask.to(q.device), float("-inf"))
        # alpha_ij = softmax_j(e_ij)
        alpha = torch.softmax(e, dim=-1)
        # z_i = sum_j alpha_ij (v_j + a^V_ij)
        z = alpha @ v + torch.einsum("...ij,ijd->...id", alpha, w_v[row])
        return z, alpha

    def extra_repr(self) -> str:
        return f"d={self.d}, d_v={self.d_v}, max_distance={self.max_distance}"


class TransformerXLScores(nn.Module):
    r"""Torch layer for :func:`companion.relative.transformer_xl_terms` (Dai et al. 2019), one head.

    Learned parameters: ``w_q``, ``w_ke`` (``(d_model, d_head)``), ``w_kr``
    (``(d_model, d_head)``; :math:`R` has width ``d_model``, which must be even) and
    ``u``, ``v`` (``(d_head,)``). Here the layer owns its ``u`` and ``v``; the
    authors' code by default ties one pair across all layers (its ``untie_r`` flag).

    ``forward(e_q, e_k)`` with ``e_q`` ``(n_queries, d_model)`` and ``e_k``
    ``(n_keys, d_model)`` returns :class:`XLTerms` of ``(n_queries, n_keys)`` tensors
    on the device of ``e_q``.
    """

    @contract(entries("d_model * d_head", lambda d_model, d_head: d_model * d_head))
    def __init__(self, d_model: EvenSize, d_head: Size, base: Positive = absolute.BASE):
        super().__init__()
        self.d_model = d_model
        self.d_head = d_head
        self.base = base
        scale = d_model ** -0.5
        self.w_q = nn.Parameter(scale * torch.randn(d_model, d_head))
        self.w_ke = nn.Parameter(scale * torch.randn(d_model, d_head))
        self.w_kr = nn.Parameter(scale * torch.randn(d_model, d_head))
        self.u = nn.Parameter(torch.zeros(d_head))
        self.v = nn.Parameter(torch.zeros(d_head))

    @contract(layer_width("d_model", "e_q", "e_k"), same_dtype("e_q", "e_k"), rule(("e_q", "e_k"), _rows_of),
              entries("n_queries * n_keys", lambda e_q, e_k: e_q.shape[0] * e_k.shape[0]))
    def forward(self, e_q: TensorMatrix, e_k: TensorMatrix) -> XLTerms:
        n_q, n_k = e_q.shape[0], e_k.shape[0]
        dev, dt = e_q.device, e_q.dtype
        # R_t W_kR for t = 1 - n_q .. n_k - 1
        r = _tensors.sinusoid(torch.arange(1 - n_q, n_k, device=dev), self.d_model, self.base).to(dt) @ self.w_kr.to(dt)
        # the row of r of each pair: (i - j) + n_q - 1
        row = -_tensors.relative_positions(n_q, n_k, dev) + (n_q - 1)
        # W_q E_{x_i} and W_kE E_{x_j}, as rows
        q = e_q @ self.w_q.to(dt)
        key = e_k @ self.w_ke.to(dt)
        # (a) E_{x_i}^T W_q^T W_kE E_{x_j}
        a = q @ key.T
        # (b) E_{x_i}^T W_q^T W_kR R_{i-j}
        b = torch.gather(q @ r.T, -1, row)
        # (c) u^T W_kE E_{x_j}
        c = (key @ self.u.to(dt)).expand(n_q, n_k)
        # (d) v^T W_kR R_{i-j}
        d = (r @ self.v.to(dt))[row]
        return XLTerms(a, b, c, d, a + b + c + d)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_head={self.d_head}, base={self.base}"


class T5RelativeBias(nn.Module):
    r"""T5's learned relative position bias (Raffel et al. 2020), all heads at once.

    One learned scalar per bucket and head (an ``nn.Embedding(num_buckets,
    n_heads)``), looked up by :func:`companion.relative.t5_bucket` of the distance and added to the
    attention scores. In T5 only the first layer owns this table and every layer
    reuses its bias, so a single instance can be shared by all layers of a stack.

    ``forward(n_queries, n_keys=None)`` returns the bias ``(n_heads, n_queries,
    n_keys)`` on the device and in the dtype of the table; queries are the last
    positions (``n_keys >= n_queries``), as with a key cache. ``bucket(relative_position)``
    is :func:`companion.relative.t5_bucket` for an integer tensor.
    """

    @contract(_t5_options, entries("num_buckets * n_heads", lambda n_heads, num_buckets: num_buckets * n_heads))
    def __init__(self, n_heads: Size, num_buckets: Buckets = 32, max_distance: Size = 128, bidirectional: Flag = True):
        super().__init__()
        self.n_heads = n_heads
        self.bidirectional, self.num_buckets, self.max_distance = bidirectional, num_buckets, max_distance
        self.table = nn.Embedding(self.num_buckets, self.n_heads)

    @contract
    def bucket(self, relative_position: Annotated[torch.Tensor, TensorPositions(signed=True, floats=False)]
               ) -> torch.Tensor:
        """:func:`companion.relative.t5_bucket` in torch: same rule, same integers, on the input's device.

        ``relative_position``: integers (a tensor, list or array), each within the
        supported range ``±2**32``.
        """
        return self._bucket(relative_position)

    def _bucket(self, rp: torch.Tensor) -> torch.Tensor:
        if self.bidirectional:
            # keys after the query take the upper half of the buckets; n = |j - i|
            half = self.num_buckets // 2
            offset = (rp > 0).long() * half
            n, buckets = rp.abs(), half
        else:
            # decoder: n = max(0, i - j)
            offset = torch.zeros_like(rp)
            n, buckets = (-rp).clamp(min=0), self.num_buckets
        exact = buckets // 2
        # ln(n / e) / ln(max_distance / e), in float64 where the device has it
        log_ratio = torch.log(n.clamp(min=exact).to(_tensors.work_dtype(rp.device)) / exact) \
            / math.log(self.max_distance / exact)
        # min(B - 1, e + floor(log_ratio (B - e)))
        large = (exact + (log_ratio * (buckets - exact)).long()).clamp(max=buckets - 1)
        # n itself below e, the log-spaced bucket above
        return offset + torch.where(n < exact, n, large)

    @contract(keys_after_queries,
              entries("n_heads * n_queries * n_keys",
                      lambda self, n_queries, n_keys: self.n_heads * n_queries * (n_keys or n_queries)))
    def forward(self, n_queries: Size, n_keys: Size | None = None) -> torch.Tensor:
        n_q, n_k = n_queries, n_queries if n_keys is None else n_keys
        device = self.table.weight.device
        # each distance j - i in -(n_k - 1)..(n_q - 1) bucketed and looked up once: (n_q + n_k - 1, H)
        per_distance = self.table(self._bucket(torch.arange(1 - n_k, n_q, device=device)))
        # the row of each pair: (j - i) + n_k - 1
        index = _tensors.relative_positions(n_q, n_k, device) + (n_k - 1)
        # (H, n_q, n_k)
        return per_distance.T[:, index]

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, num_buckets={self.num_buckets}, "
            f"max_distance={self.max_distance}, bidirectional={self.bidirectional}"
        )
