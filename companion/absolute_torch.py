r"""Absolute positions as torch layers: the sinusoid of ``companion.absolute``, and a learned table.

:class:`SinusoidalPositions` computes Vaswani et al.'s (2017) sinusoid for a tensor of
positions exactly as :func:`companion.absolute.sinusoidal` does for an array (the tests
hold them equal); :class:`LearnedPositions` is the learned table of ConvS2S, BERT and
GPT-2. A module of its own, so that the numpy formulas import no torch.
"""
from __future__ import annotations

from typing import Annotated

import torch
from torch import nn

from . import _tensors, absolute
from ._contracts import EvenSize, Positive, Size, contract, entries
from ._tensors import TensorPositions, TorchDtype

__all__ = ["SinusoidalPositions", "LearnedPositions"]


class SinusoidalPositions(nn.Module):
    r"""Torch layer for :func:`companion.absolute.sinusoidal` (Vaswani et al. 2017); nothing is learned.

    ``forward(positions)`` takes an integer tensor of positions of shape ``(n,)`` (any
    shape works) and returns ``positions.shape + (d,)`` on the same device, in
    ``dtype`` (default: ``torch.get_default_dtype()``). Angles are computed in float64
    (float32 on devices without float64), then cast.
    """

    @contract
    def __init__(self, d: EvenSize, base: Positive = absolute.BASE):
        super().__init__()
        self.d = d
        self.base = base

    @contract(entries("positions.numel() * d", lambda self, positions: positions.numel() * self.d))
    def forward(self, positions: Annotated[torch.Tensor, TensorPositions(floats=False)],
                dtype: Annotated[torch.dtype, TorchDtype()] | None = None) -> torch.Tensor:
        # PE(p) in float64, shape positions.shape + (d,), then cast
        return _tensors.sinusoid(positions, self.d, self.base).to(dtype or torch.get_default_dtype())

    def extra_repr(self) -> str:
        return f"d={self.d}, base={self.base}"


def _row_exists(self, positions) -> None:
    if positions.numel() and int(positions.max()) >= self.max_positions:
        raise IndexError(
            f"positions must lie in 0..{self.max_positions - 1}: this table has "
            f"{self.max_positions} rows (max_positions), so position {int(positions.max())} has no vector"
        )


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

    @contract(entries("max_positions * d", lambda max_positions, d: max_positions * d))
    def __init__(self, max_positions: Size, d: Size):
        super().__init__()
        self.max_positions = max_positions
        self.d = d
        self.table = nn.Embedding(self.max_positions, self.d)
        # P[p] ~ N(0, 0.02^2)
        nn.init.normal_(self.table.weight, mean=0.0, std=0.02)

    @contract(_row_exists)
    def forward(self, positions: Annotated[torch.Tensor, TensorPositions(floats=False)]) -> torch.Tensor:
        # P[p], shape positions.shape + (d,)
        return self.table(positions.to(self.table.weight.device))

    def extra_repr(self) -> str:
        return f"max_positions={self.max_positions}, d={self.d}"
