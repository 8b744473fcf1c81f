r"""Where position enters the tiny model: one small object per position scheme.

Each scheme of the lab is a :class:`Scheme`, a ``torch.nn.Module`` with four hooks
that :class:`companion.lab.models.TinyTransformer` calls at fixed places (the way
labml's annotated implementations override one ``get_scores`` per variant):

==================  =======================================================  =========================================
hook                called with                                              default (the base class)
==================  =======================================================  =========================================
``embed``           the token embeddings ``(batch, n, d)``                   returned unchanged
``rotate``          queries and keys ``(batch, heads, n, d_head)``, layer    returned unchanged
``score_bias``      the length ``n``                                         ``None`` (no additive bias)
``key_mask``        the length ``n``, layer                                  ``None`` (the causal mask alone)
``attend``          ``q, k, v``, the mask, the bias, layer                   scaled dot-product attention
==================  =======================================================  =========================================

A RoPE scheme also has ``attend_within_limit``, which the model calls instead of
``rotate`` and ``attend`` while a *distance limit* is set
(:meth:`RotaryScheme.set_distance_limit`, the control that keeps every key and reads
each distance of ``limit`` or more as ``limit - 1``).

So each scheme is written in one place, and each takes its position math from the
companion module that defines it; nothing positional is re-implemented here:

==============  =================================  ===================================================
scheme          class                              companion module
==============  =================================  ===================================================
``learned``     :class:`LearnedScheme`             :class:`companion.absolute_torch.LearnedPositions`
``sinusoidal``  :class:`SinusoidalScheme`          :class:`companion.absolute_torch.SinusoidalPositions`
``shaw``        :class:`ShawScheme`                :class:`companion.relative_torch.ShawRelativeAttention`
``t5``          :class:`T5Scheme`                  :class:`companion.relative_torch.T5RelativeBias`
``rope``        :class:`RotaryScheme`              :class:`companion.rope_torch.RotaryEmbedding`
``alibi``       :class:`ALiBiScheme`               :class:`companion.alibi_torch.ALiBi`
``nope``        :class:`NoPEScheme`                :func:`companion.nope.no_positions`
``irope``       :class:`IRopeScheme`               :func:`companion.nope.irope_layer_pattern`
==============  =================================  ===================================================

p-RoPE (Barbero et al. 2025, "Round and Round We Go!") is the ``rope`` scheme with
``rope_fraction = p``: only the fastest share ``p`` of the pairs rotates, and the
slowest pairs get frequency 0, as in the authors' ``apply_p_rope``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import absolute_torch, alibi_torch, nope, relative_torch, rope, rope_torch, scaling
from .._contracts import AnyValue, Count, Factor, Frequencies, InstanceOf, OneOf, Real, contract
from .settings import ROPE_SCHEMES, SCHEMES, ModelConfig

__all__ = ["SCHEMES", "ROPE_SCHEMES", "Scheme", "NoPEScheme", "LearnedScheme", "SinusoidalScheme", "ShawScheme",
           "T5Scheme", "RotaryScheme", "ALiBiScheme", "IRopeScheme", "PartialFrequencies", "make_scheme",
           "chunked_causal_mask", "p_rope_frequencies"]


def _keeps_a_pair(inv_freq, fraction) -> None:
    """p-RoPE keeps at least one pair rotating: ``floor(fraction * d/2) >= 1``."""
    if int(fraction * inv_freq.size) < 1:
        raise ValueError(f"fraction must keep at least one of the {inv_freq.size} pairs, got {fraction!r}")


class Scheme(nn.Module):
    """The base of every scheme: each hook leaves its input as it is.

    ``config`` is the model's :class:`companion.lab.settings.ModelConfig`.
    ``layer_kinds`` names what each layer does with position.
    """

    name = "plain"

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.n_layers = config.n_heads, config.n_layers
        self.d_model, self.d_head = config.d_model, config.d_model // config.n_heads
        self.layer_kinds = [self.name] * self.n_layers
        self.distance_limit: int | None = None

    def embed(self, e: torch.Tensor) -> torch.Tensor:
        """The input of the first block from the token embeddings ``e`` ``(batch, n, d)``."""
        return e

    def rotate(self, q: torch.Tensor, k: torch.Tensor, layer: int):
        """Queries and keys ``(batch, heads, n, d_head)`` as layer ``layer`` scores them."""
        return q, k

    def score_bias(self, n: int, dtype: torch.dtype, device) -> torch.Tensor | None:
        """An additive ``(heads, n, n)`` score bias with ``-inf`` above the diagonal, or ``None``."""
        return None

    def key_mask(self, n: int, layer: int, device) -> torch.Tensor | None:
        """A boolean ``(n, n)`` mask (``True`` = may attend) that layer ``layer`` adds to causality, or ``None``."""
        return None

    def attend(self, q, k, v, mask, bias, layer: int, need_weights: bool):
        r"""``softmax(q k^T / sqrt(d_h) + bias) v`` under ``mask``: outputs ``(batch, heads, n, d_head)`` and weights.

        ``mask`` is ``None`` (causal only) or a boolean ``(n, n)`` mask that already
        includes causality; ``bias`` is ``None`` or ``(heads, n, n)`` with ``-inf``
        above the diagonal. The weights ``(batch, heads, n, n)`` are computed only when
        ``need_weights``; otherwise PyTorch's fused kernel runs and they are ``None``.
        """
        if need_weights:
            return _explicit_attention(q, k, v, _combine(mask, bias, q.shape[-2], q.device))
        if bias is not None:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=_combine(mask, bias, 0, None)), None
        if mask is not None:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
        return F.scaled_dot_product_attention(q, k, v, is_causal=True), None


class NoPEScheme(Scheme):
    """NoPE (Haviv et al. 2022): position enters nowhere; only the causal mask orders the tokens."""

    name = "nope"

    def embed(self, e):
        return nope.no_positions(e)


class LearnedScheme(Scheme):
    """A learned vector per position added to the input (GPT-2; Radford et al. 2019)."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.positions = absolute_torch.LearnedPositions(config.context_length, config.d_model)

    def embed(self, e):
        # h_t = e_t + p_t,  p_t a row of the learned table
        return e + self.positions(torch.arange(e.shape[1], device=e.device))


class SinusoidalScheme(Scheme):
    r"""A fixed sinusoid added to the scaled input: :math:`h_t = \sqrt d\, e_t + PE_t` (Vaswani et al. 2017, 3.4)."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.positions = absolute_torch.SinusoidalPositions(config.d_model)

    def embed(self, e):
        pe = self.positions(torch.arange(e.shape[1], device=e.device), dtype=e.dtype)   # (n, d)
        # h_t = sqrt(d) e_t + PE_t
        return e * math.sqrt(self.d_model) + pe


class ShawScheme(Scheme):
    """A learned vector per clipped distance on keys and values, in every layer (Shaw et al. 2018)."""

    name = "shaw"

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.layers = nn.ModuleList(relative_torch.ShawRelativeAttention(self.d_head, config.shaw_max_distance)
                                    for _ in range(self.n_layers))

    def attend(self, q, k, v, mask, bias, layer, need_weights):
        n = q.shape[-2]
        causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril() if mask is None else mask
        z, weights = self.layers[layer](q, k, v, mask=causal)
        return z, (weights if need_weights else None)


class T5Scheme(Scheme):
    """A learned scalar per distance bucket added to the score, shared by all layers (Raffel et al. 2020)."""

    name = "bias"

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        # T5's distances reach the training length, past its exact buckets, unless the configuration says otherwise
        max_distance = config.t5_max_distance
        if max_distance is None:
            max_distance = max(config.context_length, config.t5_num_buckets // 2 + 1)
        self.t5_bias = relative_torch.T5RelativeBias(config.n_heads, config.t5_num_buckets, max_distance,
                                               bidirectional=False)

    def score_bias(self, n, dtype, device):
        b = self.t5_bias(n).to(dtype)                                        # (heads, n, n)
        future = torch.ones(n, n, dtype=torch.bool, device=b.device).triu(1)
        return b.masked_fill(future, float("-inf"))


class ALiBiScheme(Scheme):
    """A fixed linear distance penalty on the score, one slope per head (Press et al. 2022)."""

    name = "bias"

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.alibi = alibi_torch.ALiBi(config.n_heads)

    def score_bias(self, n, dtype, device):
        return self.alibi(n).to(dtype)                                       # (heads, n, n), -inf above the diagonal


class RotaryScheme(Scheme):
    r"""Queries and keys rotated by their positions in every layer (Su et al. 2021).

    With ``rope_fraction = p < 1`` it is p-RoPE (Barbero et al. 2025): the pairs
    ``i >= floor(p d_h / 2)`` get frequency 0 and carry content only. The
    frequencies can be switched after training with :meth:`set_scaling` (any method
    of :data:`companion.scaling.METHODS`; the unrotated pairs stay at 0).
    """

    name = "rope"

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.context_length, self.base = config.context_length, config.rope_base
        self.fraction = config.rope_fraction
        self.rotary = rope_torch.RotaryEmbedding(self.d_head, inv_freq=self._trained_frequencies(), base=self.base)
        self.setting = {"method": "none", "s": 1.0}
        self._dynamic_cache: dict = {}

    def rotate(self, q, k, layer):
        if self.layer_kinds[layer] != "rope":
            return q, k
        # q_m <- R(m theta) q_m,  k_n <- R(n theta) k_n
        return self.rotary(q, k)

    def before_forward(self, n: int) -> None:
        """Dynamic NTK recomputes its frequencies from the length ``n`` of every input (emozilla 2023)."""
        if self.setting["method"] != "dynamic_ntk":
            return
        if n not in self._dynamic_cache:
            self._dynamic_cache[n] = self.frequencies(self.setting, current_length=n)
        freqs = self._dynamic_cache[n]
        if not np.array_equal(self.rotary.inv_freq.numpy(), freqs.inv_freq) \
                or self.rotary.attention_factor != freqs.attention_factor:
            self.rotary.set_frequencies(freqs.inv_freq, freqs.attention_factor)

    @contract
    def set_scaling(self, method: Annotated[str, OneOf(*scaling.METHODS)] = "none", s: Factor = 1.0,
                    **options) -> dict:
        """Switch the frequencies to ``method`` at scale ``s``
        (see :meth:`companion.lab.models.TinyTransformer.set_rope_scaling`)."""
        setting = {"method": method, "s": s, **options}
        freqs = self.frequencies(setting, current_length=None)
        self.rotary.set_frequencies(freqs.inv_freq, freqs.attention_factor)
        self.setting = setting
        self._dynamic_cache = {}
        return dict(setting)

    def frequencies(self, setting: dict, current_length: int | None):
        """The frequencies of ``setting`` at input length ``current_length``.

        A :class:`companion.scaling.ScaledRope`, or for p-RoPE a
        :class:`PartialFrequencies` (the same fields, with the unrotated pairs at 0).
        """
        options = {"s": setting["s"], "L": self.context_length, "base": self.base,
                   **{k: v for k, v in setting.items() if k not in ("method", "s")}}
        if setting["method"] == "dynamic_ntk" and current_length is not None:
            options["current_length"] = current_length
        freqs = scaling.scale(setting["method"], self.d_head, **options)
        if self.fraction is None:
            return freqs
        return PartialFrequencies(freqs.inv_freq * self._rotating(), freqs.attention_factor)

    def set_distance_limit(self, limit: int | None) -> None:
        r"""Read every distance of ``limit`` or more as ``limit - 1``; every key stays visible. ``None`` undoes it.

        The rule of ReRoPE (Su 2023; :func:`companion.remap.rerope_distance` with window
        ``limit - 1``): with ``limit = L`` a query meets no rotation it did not meet in
        training, yet attends to as many keys as the input holds. The key window of
        :meth:`companion.lab.models.TinyTransformer.set_key_window` removes the far keys
        instead; the two controls together separate new distances from more keys.
        """
        self.distance_limit = limit

    def attend_within_limit(self, q, k, v, mask, bias, layer, need_weights):
        r"""Attention of unrotated ``q``, ``k`` with every distance of ``distance_limit`` or more read as ``limit - 1``.

        Two score matrices, as in Su's ReRoPE: :math:`(R_m q_m)\cdot(R_n k_n)` where
        :math:`m - n < \ell` and :math:`(R_{\ell - 1} q_m)\cdot(R_0 k_n)` elsewhere, the rotation of
        a query at :math:`\ell - 1` and a key at 0 being that of any pair at distance :math:`\ell - 1`.
        A position-free layer (iRoPE's) attends as usual.
        """
        if self.layer_kinds[layer] != "rope":
            return self.attend(q, k, v, mask, bias, layer, need_weights)
        n, limit = q.shape[-2], self.distance_limit
        q_near, k_near = self.rotary(q, k)
        q_far = self.rotary.rotate(q, torch.full((n,), limit - 1, device=q.device))
        k_far = self.rotary.rotate(k, torch.zeros(n, dtype=torch.long, device=q.device))
        i = torch.arange(n, device=q.device)
        near = (i[:, None] - i[None, :]) < limit                                 # (n, n): distance below the limit
        # s_mn = (R_m q_m).(R_n k_n) below the limit, (R_{limit-1} q_m).(R_0 k_n) at and beyond it
        scores = torch.where(near, q_near @ k_near.transpose(-2, -1), q_far @ k_far.transpose(-2, -1))
        scores = scores / math.sqrt(q.shape[-1])
        allowed = torch.ones(n, n, dtype=torch.bool, device=q.device).tril() if mask is None else mask
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        return weights @ v, (weights if need_weights else None)

    def _trained_frequencies(self) -> np.ndarray:
        theta = rope.inv_freq(self.d_head, self.base)
        return theta if self.fraction is None else p_rope_frequencies(theta, self.fraction)

    def _rotating(self) -> np.ndarray:
        return (p_rope_frequencies(np.ones(self.d_head // 2), self.fraction) > 0).astype(np.float64)


class IRopeScheme(RotaryScheme):
    r"""RoPE layers with position-free layers between them (Llama 4's iRoPE; Meta 2025).

    :func:`companion.nope.irope_layer_pattern` decides which layers rotate. With
    ``irope_chunk = C`` the RoPE layers attend only within absolute chunks of ``C``
    tokens (:func:`chunked_causal_mask`); with ``irope_floor_scale`` the queries of the
    position-free layers are multiplied by :func:`companion.nope.attention_temperature`.
    """

    name = "irope"

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.layer_kinds = nope.irope_layer_pattern(self.n_layers, config.irope_nope_every)
        self.chunk, self.floor_scale = config.irope_chunk, config.irope_floor_scale

    def rotate(self, q, k, layer):
        if self.layer_kinds[layer] == "rope":
            return self.rotary(q, k)
        if self.floor_scale is None:
            return q, k
        tau = nope.attention_temperature(np.arange(q.shape[-2]), floor_scale=self.floor_scale)   # (n,)
        # q_t <- tau_t q_t in the position-free layers
        return q * torch.as_tensor(tau, dtype=q.dtype, device=q.device)[:, None], k

    def key_mask(self, n, layer, device):
        if self.chunk is None or self.layer_kinds[layer] != "rope":
            return None
        return chunked_causal_mask(n, self.chunk, device)


@dataclass(frozen=True)
class PartialFrequencies:
    """p-RoPE's frequencies: ``inv_freq`` with zeros for the unrotated pairs, and the attention factor."""

    inv_freq: np.ndarray
    attention_factor: float = 1.0


_CLASSES = {"learned": LearnedScheme, "sinusoidal": SinusoidalScheme, "shaw": ShawScheme, "t5": T5Scheme,
            "rope": RotaryScheme, "alibi": ALiBiScheme, "nope": NoPEScheme, "irope": IRopeScheme}


@contract
def make_scheme(config: Annotated[ModelConfig, InstanceOf(ModelConfig, "a companion.lab.settings.ModelConfig",
                                                          error=ValueError)]) -> Scheme:
    """The :class:`Scheme` of ``config.scheme`` for the model configuration ``config``."""
    return _CLASSES[config.scheme](config)


@contract(_keeps_a_pair)
def p_rope_frequencies(inv_freq: Frequencies,
                       fraction: Annotated[float, Real(gt=0.0, le=1.0, why="the share of pairs that rotate")]) \
        -> np.ndarray:
    r"""p-RoPE (Barbero et al. 2025): keep the fastest ``floor(fraction * d/2)`` frequencies, set the rest to 0.

    ``inv_freq`` is ordered fastest first (pair 0), as :func:`companion.rope.inv_freq`
    returns it; the authors' ``apply_p_rope`` keeps ``int(p * head_dim // 2)`` pairs.
    """
    theta = np.array(inv_freq, dtype=np.float64)
    kept = int(fraction * theta.size)
    theta[kept:] = 0.0
    return theta


@contract
def chunked_causal_mask(n: Count, chunk: Count, device: AnyValue = None) -> torch.Tensor:
    r"""Boolean ``(n, n)`` mask of causal attention within absolute chunks of ``chunk`` tokens.

    ``mask[i, j]`` is ``True`` (attend) when :math:`j \le i` and
    :math:`\lfloor j / C \rfloor = \lfloor i / C \rfloor`: the chunked local
    attention of Llama 4's RoPE layers (Meta 2025, ``attention_chunk_size``). For
    ``chunk >= n`` it is the ordinary causal mask.
    """
    i = torch.arange(n, device=device)
    same_chunk = (i[:, None] // chunk) == (i[None, :] // chunk)
    return same_chunk & (i[None, :] <= i[:, None])


def _combine(mask, bias, n, device):
    """One attention mask from a boolean ``mask`` (or ``None``) and an additive ``bias`` (or ``None``)."""
    if bias is None:
        return torch.ones(n, n, dtype=torch.bool, device=device).tril() if mask is None else mask
    return bias if mask is None else bias.masked_fill(~mask, float("-inf"))


def _explicit_attention(q, k, v, mask):
    """``softmax(q k^T / sqrt(d_h) + mask) v`` and the weights; ``mask`` boolean (True = attend) or additive."""
    # s_ij = q_i . k_j / sqrt(d_h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])                 # (batch, heads, n, n)
    scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
