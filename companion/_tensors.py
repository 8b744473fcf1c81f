"""What the torch layers share: the working dtype of a device, sinusoids and distances as tensors.

The numpy functions of each module are the reference; these are their torch twins,
kept in one place so that every layer computes them the same way.
"""
from __future__ import annotations

import torch

from .attention import relative_positions as _relative_positions


def work_dtype(device: torch.device) -> torch.dtype:
    """float64 for exact-as-possible angles, except on devices that lack it (Apple MPS): float32."""
    return torch.float32 if device.type == "mps" else torch.float64


def sinusoid(p: torch.Tensor, d: int, base: float) -> torch.Tensor:
    r"""``(sin omega_i p, cos omega_i p)`` interleaved, ``omega_i = base^(-2i/d)``: shape ``p.shape + (d,)``.

    Vaswani et al. (2017); integer positions ``p`` of either sign, computed in
    :func:`work_dtype` on ``p``'s device.
    """
    work = work_dtype(p.device)
    # 2i, i = 0 .. d/2 - 1
    two_i = torch.arange(0, d, 2, device=p.device, dtype=work)
    # omega_i p, shape p.shape + (d/2,)
    angles = p.to(work)[..., None] * base ** (-two_i / d)
    # (sin, cos) per pair, interleaved: shape p.shape + (d,)
    return torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)


def relative_positions(n_queries: int, n_keys: int, device) -> torch.Tensor:
    """:func:`companion.attention.relative_positions` (``j - i``, queries last) as an int64 tensor on ``device``."""
    return torch.from_numpy(_relative_positions(n_queries, n_keys)).to(device)
