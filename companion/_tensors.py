"""What the torch layers share: the kinds of their tensor arguments, the working dtype of a
device, sinusoids and distances as tensors.

The numpy functions of each module are the reference; these are their torch twins,
kept in one place so that every layer computes them the same way. Only the torch
modules (``*_torch``, :mod:`companion.precision`, the lab) import this one.
"""
from __future__ import annotations

import numpy as np
import torch

from ._contracts import MAX_POSITION, Kind, _is_tensor, _numeric, _whole_numbers
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


class Tensor(Kind):
    """A floating-point ``torch.Tensor`` with at least ``ndim_at_least`` dimensions, or exactly ``ndim``
    (not copied)."""

    def __init__(self, ndim_at_least: int = 0, ndim: int | None = None):
        self.ndim_at_least, self.ndim = ndim_at_least, ndim

    def __call__(self, name, value):
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            got = f"dtype {value.dtype}" if _is_tensor(value) else type(value).__name__
            raise ValueError(f"{name} must be a floating-point torch.Tensor, got {got}")
        if value.ndim < self.ndim_at_least or (self.ndim is not None and value.ndim != self.ndim):
            want = f"exactly {self.ndim}" if self.ndim is not None else f"at least {self.ndim_at_least}"
            raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(value.shape)}")
        return value


class TensorPositions(Kind):
    """An int64 tensor of whole numbers within ``±MAX_POSITION`` (non-negative unless ``signed``).

    Tensors (detached), lists and numpy arrays are accepted; floating-point values
    only when ``floats`` and whole.
    """

    def __init__(self, signed: bool = False, floats: bool = True):
        self.signed, self.floats = signed, floats

    def __call__(self, name, value):
        what = "integers" if self.signed else "non-negative integers"
        if isinstance(value, torch.Tensor):
            p = value.detach()
        else:
            try:
                if not self.floats and np.issubdtype(_numeric(name, value).dtype, np.floating):
                    raise ValueError(f"{name} must be {what}, got floating-point values")
                p = torch.as_tensor(_whole_numbers(name, value, "integers"))
            except ValueError as err:
                raise ValueError(str(err).replace("integers", what, 1)) from None
        if p.dtype == torch.bool or p.is_complex() or (p.is_floating_point() and not self.floats):
            raise ValueError(f"{name} must be a tensor of {what}, got dtype {p.dtype}")
        if p.is_floating_point() and not bool(torch.all(torch.isfinite(p) & (p == torch.round(p)))):
            raise ValueError(f"{name} must be {what} (whole numbers), got non-integer values")
        if p.numel() and bool(torch.any(p.abs() > MAX_POSITION)):
            raise ValueError(f"{name} must have {what} of size at most 2**32 (the supported range), "
                             f"got {p.abs().max().item():.6g}")
        p = p.long()
        if not self.signed and p.numel() and int(p.min()) < 0:
            raise ValueError(f"{name} must be non-negative integers, got a minimum of {int(p.min())}")
        return p


class TensorMask(Kind):
    """A boolean ``torch.Tensor`` (``True`` = may attend)."""

    def __call__(self, name, value):
        if not _is_tensor(value) or value.dtype != torch.bool:
            got = f"dtype {value.dtype}" if _is_tensor(value) else type(value).__name__
            raise ValueError(f"{name} must be a boolean torch.Tensor (True = may attend), got {got}")
        return value


class TorchDtype(Kind):
    """A floating-point ``torch.dtype``."""

    def __call__(self, name, value):
        if not (isinstance(value, torch.dtype) and value.is_floating_point):
            raise ValueError(f"{name} must be a floating-point torch.dtype (or None), got {value!r}")
        return value
