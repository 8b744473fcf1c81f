r"""RoPE as a torch layer: the rotation of ``companion.rope``, for tensors in a model.

Su et al. (2021). :class:`RotaryEmbedding` rotates the queries and keys of a torch
model exactly as :func:`companion.rope.rotate` rotates numpy arrays (the tests hold
them equal): angles ``m * theta_i`` formed in float64 on the input's device, ``cos``
and ``sin`` cast to the input's dtype, in either pair layout. It lives apart from the
numpy formulas so that reading a configuration or computing a frequency table
(:mod:`companion.rope`, :mod:`companion.scaling`, :mod:`companion.configs`) does not
import torch.
"""
from __future__ import annotations

from typing import Annotated

import torch
from torch import nn

from . import absolute, rope
from ._contracts import (
    EvenSize,
    Frequencies,
    Positive,
    broadcast_to_leading,
    contract,
    entries,
    layer_width,
    one_per_pair,
    rule,
)
from ._tensors import Tensor, TensorPositions
from .rope import Layout

__all__ = ["RotaryEmbedding"]


#: A floating-point tensor ``(..., n, d)``.
TensorSequences = Annotated[torch.Tensor, Tensor(ndim_at_least=2)]


#: Positions for the torch layer: non-negative integers (tensor, list or array), or None for 0..n-1.
LayerPositions = Annotated[torch.Tensor, TensorPositions()]


class RotaryEmbedding(nn.Module):
    r"""RoPE as a torch layer: ``forward(q, k, positions) -> (q_rot, k_rot)``.

    Su et al. (2021). ``inv_freq`` may be any frequency vector of length ``d/2``
    (:func:`companion.rope.inv_freq` with ``base`` when omitted), so every method in
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

    @contract(entries("d / 2", lambda d: d // 2), one_per_pair("inv_freq", required=False))
    def __init__(self, d: EvenSize, inv_freq: Frequencies | None = None, base: Positive = absolute.BASE,
                 layout: Layout = "adjacent", attention_factor: Positive = 1.0):
        super().__init__()
        self.d = d
        self.layout = layout
        theta = rope.inv_freq(d, base) if inv_freq is None else inv_freq
        self._theta = theta.copy()  # kept in numpy float64: casting the module cannot round it
        self.attention_factor = attention_factor
        self._cache: dict = {}

    @property
    def inv_freq(self) -> torch.Tensor:
        """The frequencies ``theta_i``, shape ``(d/2,)``, float64 (a copy)."""
        return torch.tensor(self._theta, dtype=torch.float64)

    @contract(rule(("self", "inv_freq"), lambda self, inv_freq: one_per_pair("inv_freq")(self.d, inv_freq)))
    def set_frequencies(self, inv_freq: Frequencies, attention_factor: Positive = 1.0) -> None:
        """Replace the frequency vector (shape ``(d/2,)``) and attention factor; clears the cache."""
        self._theta = inv_freq.copy()
        self.attention_factor = attention_factor
        self._cache.clear()

    @contract(layer_width("d", "q", "k"), broadcast_to_leading("positions", "q"),
              broadcast_to_leading("positions", "k"))
    def forward(self, q: TensorSequences, k: TensorSequences, positions: LayerPositions | None = None):
        """Rotate ``q`` and ``k`` (both ``(..., n, d)``) by ``positions``; see the class docstring."""
        q_tables = self._tables(q, positions)
        same = (q.shape[-2], q.dtype, q.device) == (k.shape[-2], k.dtype, k.device)
        k_tables = q_tables if same else self._tables(k, positions)
        return self._rotate(q, q_tables), self._rotate(k, k_tables)

    @contract(layer_width("d", "x"), broadcast_to_leading("positions", "x"))
    def rotate(self, x: TensorSequences, positions: LayerPositions | None = None) -> torch.Tensor:
        """Rotate one tensor ``x`` of shape ``(..., n, d)`` by ``positions`` (default ``0..n-1``)."""
        return self._rotate(x, self._tables(x, positions))

    def _rotate(self, x: torch.Tensor, tables) -> torch.Tensor:
        cos, sin, z = tables
        if z is not None:
            # adjacent pairs as complex numbers: (x_2i + i x_2i+1) e^{i m theta_i}
            pairs = torch.view_as_complex(x.contiguous().unflatten(-1, (self.d // 2, 2)))
            return torch.view_as_real(pairs * z).flatten(-2)
        return _rotate_real(x, cos, sin, self.layout)

    def _tables(self, x: torch.Tensor, positions):
        n = x.shape[-2]
        key = (n, x.device, x.dtype)
        if positions is None and key in self._cache:
            return self._cache[key]
        m = torch.arange(n, device=x.device, dtype=torch.float64) if positions is None \
            else positions.to(device=x.device, dtype=torch.float64)
        # m theta_i in float64, shape (..., n, d/2)
        phi = m[..., None] * torch.tensor(self._theta, dtype=torch.float64, device=x.device)
        # a cos(m theta_i) and a sin(m theta_i) with the attention factor a, in the input's dtype
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
    # (x_a, x_b) of every pair, views of shape (..., n, d/2)
    x1, x2 = _torch_pairs(x, layout)
    if torch.is_grad_enabled() and (x.requires_grad or cos.requires_grad):
        # x_a' = x_a cos - x_b sin, x_b' = x_a sin + x_b cos, with plain ops for autograd
        y1, y2 = x1 * cos - x2 * sin, x1 * sin + x2 * cos
        return torch.stack((y1, y2), -1).flatten(-2) if layout == "adjacent" else torch.cat((y1, y2), -1)
    shape = torch.broadcast_shapes(x.shape[:-1], cos.shape[:-1]) + (x.shape[-1],)
    out = torch.empty(shape, dtype=x.dtype, device=x.device)
    o1, o2 = _torch_pairs(out, layout)
    # x_a' = x_a cos - x_b sin, fused into the output buffer
    torch.mul(x1, cos, out=o1)
    o1.addcmul_(x2, sin, value=-1)
    # x_b' = x_a sin + x_b cos
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
