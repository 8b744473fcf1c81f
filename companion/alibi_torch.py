r"""ALiBi as a torch layer: the bias of ``companion.alibi``, for the scores of a model.

Press, Smith & Lewis (2022). :class:`ALiBi` returns the same bias as
:func:`companion.alibi.bias` (the tests hold them equal), as a tensor on the module's
device. A module of its own, so that the numpy formulas import no torch.
"""
from __future__ import annotations

import torch
from torch import nn

from . import _tensors
from ._contracts import Size, contract, entries, keys_after_queries
from .alibi import Heads, slopes

__all__ = ["ALiBi"]


class ALiBi(nn.Module):
    r"""Torch layer for :func:`companion.alibi.bias` (Press, Smith & Lewis 2022); nothing is learned.

    The slopes are shown in a (non-persistent) buffer ``slopes``, which ``.to(device)``
    and ``.double()`` move and cast. ``forward(n_queries, n_keys=None)`` returns the
    bias ``(n_heads, n_queries, n_keys)`` with :math:`-\infty` above the diagonal, on
    the buffer's device and in its dtype (slopes exact in float64, then cast); add it to
    the scores before the softmax.
    """

    @contract
    def __init__(self, n_heads: Heads):
        super().__init__()
        self.n_heads = n_heads
        shown = torch.from_numpy(slopes(self.n_heads)).to(torch.get_default_dtype())
        self.register_buffer("slopes", shown, persistent=False)

    @contract(keys_after_queries,
              entries("n_heads * n_queries * n_keys",
                      lambda self, n_queries, n_keys: self.n_heads * n_queries * (n_keys or n_queries)))
    def forward(self, n_queries: Size, n_keys: Size | None = None) -> torch.Tensor:
        device, dtype = self.slopes.device, self.slopes.dtype
        # exact slopes at every call, so that casting the module to float32 and back loses nothing
        m = torch.tensor(slopes(self.n_heads), dtype=_tensors.work_dtype(device), device=device).to(dtype)
        # j - i, shape (n_queries, n_keys)
        distance = _tensors.relative_positions(n_queries, n_queries if n_keys is None else n_keys, device)
        # m_h (j - i), shape (n_heads, n_queries, n_keys)
        b = m[:, None, None] * distance.to(dtype)
        # -inf where j > i
        return b.masked_fill(distance > 0, float("-inf"))

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"
