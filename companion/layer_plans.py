r"""Position settings per layer: which layers rotate, with which base, over which span.

Models of 2024-2026 do not give every layer the same position scheme. A layer's
settings are a :class:`LayerPlan`: whether it applies RoPE (``rope``), with which
base and linear factor, whether its queries see every earlier key or only a
*sliding window* of the last ``window`` keys or their own *chunk* of ``chunk``
tokens, whether queries and keys are RMS-normalised (QK-norm), and whether its
queries get Llama 4's inference-time temperature. The plans of published designs:

* **Gemma 2** (Gemma Team 2024, arXiv:2408.00118): local sliding-window layers (4,096)
  and global layers alternate, every layer with RoPE base 10,000 (:func:`gemma2`).
* **Gemma 3** (Gemma Team 2025, arXiv:2503.19786): five local layers (window 1,024,
  base 10,000) for every global one (base 1,000,000, positions interpolated by 8 for
  128K) (:func:`gemma3`; Transformers' ``Gemma3RotaryEmbedding`` keeps one frequency
  vector per layer type).
* **gpt-oss** (OpenAI 2025, arXiv:2508.10925): banded layers (window 128) and dense
  layers alternate, the same YaRN RoPE in both, plus an attention sink per head
  (:mod:`companion.sinks`) (:func:`gpt_oss`).
* **Llama 4** (Meta 2025, "iRoPE"): every fourth layer has no RoPE and attends to the
  whole context with the temperature :func:`companion.nope.attention_temperature`; the
  other three rotate, attend within chunks of 8,192 tokens and RMS-normalise ``q`` and
  ``k`` (Meta's ``llama-models``, ``models/llama4/model.py``; Transformers'
  ``Llama4TextConfig``: ``no_rope_layers``, ``attention_chunk_size``, ``use_qk_norm``,
  ``floor_scale``, ``attn_scale``) (:func:`llama4`).
* **SmolLM3** (Hugging Face 2025): RoPE in three of every four layers, none in the
  fourth, every layer global (:func:`smollm3`; Transformers' ``SmolLM3Config.no_rope_layers``).
* **RNoPE-SWA** (Yang et al. 2025, "Rope to Nope and Back Again: A New Hybrid Attention
  Strategy", arXiv:2501.18795): RoPE only in sliding-window layers, global layers
  without positions (:func:`rnope_swa`; Transformers' ``Cohere2Attention`` rotates
  only when the layer has a sliding window).
* **Qwen3-Next and Qwen3.5** (Qwen Team 2025): three *recurrent* layers (Gated DeltaNet,
  Yang, Kautz and Hatamizadeh 2025, arXiv:2412.06464) for every attention layer; the
  attention layers are global and rotate the first quarter of each 256-wide head,
  ``partial_rotary_factor`` 0.25, with base 10^7 (:func:`qwen3_next`; Transformers'
  ``Qwen3NextConfig.layer_types`` from ``full_attention_interval``).
* **Kimi Linear** (Kimi Team 2025, arXiv:2510.26692): three recurrent layers (Kimi Delta
  Attention) for every global MLA layer, and the MLA layers carry no position at all
  (:func:`kimi_linear`; Transformers' ``KimiLinearAttention``, "MLA ... with NoPE").

A *recurrent* layer (``recurrent=True``) mixes tokens through a state updated once per
token, not through attention: it has no keys to cache and no rotation, and the order of
the tokens reaches it through the recurrence itself.

Numbers are numpy float64; masks are boolean, ``True`` where a query may attend.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from . import absolute
from . import nope as _nope
from . import scaling as _scaling
from ._contracts import (
    Array,
    Count,
    EvenSize,
    Factor,
    Flag,
    InstanceOf,
    Integer,
    NonNegativeReal,
    Positive,
    Size,
    contract,
    entries,
)
from .attention import causal_mask as _causal_mask

__all__ = [
    "LayerPlan",
    "gemma2",
    "gemma3",
    "gpt_oss",
    "llama4",
    "smollm3",
    "rnope_swa",
    "qwen3_next",
    "kimi_linear",
    "sliding_window_mask",
    "chunked_mask",
    "layer_mask",
    "reach",
    "longest_rotated_distance",
    "cached_keys",
    "layer_frequencies",
    "qk_rms_norm",
]

#: A number of layers: an integer in 1..2**20.
Layers = Annotated[int, Integer(1, 2**20)]
#: A period of layers, at least 2 (a pattern needs one layer of each kind).
Period = Annotated[int, Integer(2, 2**20)]

_SQUARE = entries("n * n", lambda n: n * n)


def _recurrent_has_no_attention(rope, window, chunk, qk_norm, temperature, rotary_dim, recurrent) -> None:
    """A recurrent layer has no rotation, window, chunk, QK-norm, temperature or partial rotation."""
    if recurrent and (rope or window is not None or chunk is not None or qk_norm or temperature
                      or rotary_dim is not None):
        raise ValueError("recurrent must be False for a layer with rope, a window, a chunk, qk_norm, a temperature "
                         "or a rotary_dim: a recurrent layer has no attention to rotate, cut or scale")


@contract(_recurrent_has_no_attention)
@dataclass(frozen=True)
class LayerPlan:
    """The position settings of one attention layer.

    ``rope``: whether ``q`` and ``k`` are rotated; ``base`` and ``factor``: the RoPE base
    and the linear interpolation factor (``theta_i / factor``); ``window``: a query sees
    its last ``window`` keys (itself included), ``None`` for all; ``chunk``: a query
    sees only the keys of its own block of ``chunk`` tokens, ``None`` for no chunks;
    ``qk_norm``: ``q`` and ``k`` RMS-normalised per head; ``temperature``: queries
    scaled by Llama 4's :func:`companion.nope.attention_temperature`; ``rotary_dim``:
    the number of leading components of a head that turn (partial rotation, the rest
    pass through), ``None`` for the whole head; ``recurrent``: a linear-attention layer
    (a state updated per token) instead of attention, with no keys and no rotation.
    """

    rope: Flag
    base: Positive | None = None
    factor: Factor = 1.0
    window: Size | None = None
    chunk: Size | None = None
    qk_norm: Flag = False
    temperature: Flag = False
    rotary_dim: EvenSize | None = None
    recurrent: Flag = False


def _rms_above_zero(x, eps) -> None:
    """``mean(x^2) + eps > 0`` for every vector: a zero vector needs ``eps > 0``."""
    if eps == 0 and np.any(np.all(x == 0, axis=-1)):
        raise ValueError("eps must be > 0 when a vector of x is all zeros (its RMS is 0), got eps = 0.0")


#: Vectors ``(..., d)`` with at least one component.
NonEmptyVectors = Annotated[np.ndarray, Array(ndim_at_least=1, nonempty=True)]
#: One layer's plan.
Plan = Annotated[LayerPlan, InstanceOf(LayerPlan, "a LayerPlan")]
#: A stack's plans, one per layer.
Plans = Annotated[list, InstanceOf((list, tuple), "a list of LayerPlan, one per layer")]


def _plans_are_layer_plans(plans) -> None:
    """Every entry of ``plans`` is a :class:`LayerPlan`."""
    wrong = [type(p).__name__ for p in plans if not isinstance(p, LayerPlan)]
    if wrong:
        raise TypeError(f"plans must hold LayerPlan entries only, one per layer, got {wrong[0]}")


@contract
def gemma2(n_layers: Layers, window: Size = 4096, base: Positive = absolute.BASE) -> list[LayerPlan]:
    r"""Gemma 2: local (sliding-window) and global layers alternate, the local one first; one base for all.

    Layer ``l`` is local when ``(l + 1) mod 2 != 0`` (Transformers' ``Gemma2Config.layer_types``).
    """
    return [LayerPlan(rope=True, base=base, window=window if (layer + 1) % 2 else None)
            for layer in range(n_layers)]


@contract
def gemma3(n_layers: Layers, every: Period = 6, window: Size = 1024, local_base: Positive = absolute.BASE,
           global_base: Positive = 1_000_000.0, global_factor: Factor = 8.0) -> list[LayerPlan]:
    r"""Gemma 3: ``every - 1`` local layers (window, ``local_base``) then one global layer (``global_base``,
    ``/ global_factor``).

    Layer ``l`` is global when ``(l + 1) mod every = 0`` (Transformers'
    ``Gemma3TextConfig``, ``sliding_window_pattern = 6``). Local layers keep base 10,000
    and no scaling; global layers use base 10^6 with linear factor 8 (Gemma Team 2025).
    """
    return [LayerPlan(rope=True, base=global_base, factor=global_factor) if (layer + 1) % every == 0
            else LayerPlan(rope=True, base=local_base, window=window) for layer in range(n_layers)]


@contract
def gpt_oss(n_layers: Layers, window: Size = 128, base: Positive = 150_000.0) -> list[LayerPlan]:
    r"""gpt-oss: banded (sliding window 128) and dense layers alternate, the banded one first.

    OpenAI's reference code: ``sliding_window if layer_idx % 2 == 0 else 0``. Every layer
    uses the same YaRN frequencies (``companion.configs``), which this plan does not
    repeat: ``base`` is the unscaled base.
    """
    return [LayerPlan(rope=True, base=base, window=window if layer % 2 == 0 else None)
            for layer in range(n_layers)]


@contract
def llama4(n_layers: Layers, nope_every: Count = 4, chunk: Size = 8192, base: Positive = 500_000.0,
           qk_norm: Flag = True) -> list[LayerPlan]:
    r"""Llama 4's iRoPE: RoPE layers attend in chunks with QK-norm; every ``nope_every``-th layer has neither.

    The layer pattern is :func:`companion.nope.irope_layer_pattern`; NoPE layers are
    global and carry the temperature; RoPE layers carry ``chunk`` and, if ``qk_norm``,
    RMS-normalise ``q`` and ``k`` after the rotation (``use_qk_norm and not
    is_nope_layer`` in Meta's code; the 128-expert Maverick has ``use_qk_norm`` false).
    """
    pattern = _nope.irope_layer_pattern(n_layers, nope_every)
    return [LayerPlan(rope=False, temperature=True) if kind == "nope"
            else LayerPlan(rope=True, base=base, chunk=chunk, qk_norm=qk_norm) for kind in pattern]


@contract
def smollm3(n_layers: Layers, nope_every: Count = 4, base: Positive = 5_000_000.0) -> list[LayerPlan]:
    r"""SmolLM3: layer ``l`` has no RoPE when ``(l + 1) mod nope_every = 0``; every layer attends globally.

    Transformers' ``SmolLM3Config``: ``no_rope_layers[l] = int((l + 1) % no_rope_layer_interval != 0)``
    (1 means *with* RoPE, despite the name).
    """
    pattern = _nope.irope_layer_pattern(n_layers, nope_every)
    return [LayerPlan(rope=kind == "rope", base=base if kind == "rope" else None) for kind in pattern]


@contract
def rnope_swa(n_layers: Layers, every: Period = 4, window: Size = 4096,
              base: Positive = absolute.BASE) -> list[LayerPlan]:
    r"""RNoPE-SWA: sliding-window layers with RoPE, and every ``every``-th layer global without positions.

    Yang et al. (2025); the pattern of Transformers' ``Cohere2Config`` (``sliding_window_pattern
    = 4``, window 4,096; ``Cohere2Attention`` applies RoPE only in sliding layers).
    """
    return [LayerPlan(rope=False) if (layer + 1) % every == 0 else LayerPlan(rope=True, base=base, window=window)
            for layer in range(n_layers)]


@contract
def qwen3_next(n_layers: Layers, every: Period = 4, base: Positive = 10_000_000.0,
               rotary_dim: EvenSize = 64) -> list[LayerPlan]:
    r"""Qwen3-Next / Qwen3.5: ``every - 1`` recurrent (Gated DeltaNet) layers, then one global attention layer.

    Layer ``l`` is attention when ``(l + 1) mod every = 0`` (Transformers'
    ``Qwen3NextConfig``: ``"linear_attention" if (i + 1) % full_attention_interval else
    "full_attention"``, interval 4). The attention layers rotate the first
    ``rotary_dim`` components of each head (64 of 256: ``partial_rotary_factor`` 0.25
    in the released ``config.json`` of Qwen3-Next-80B-A3B, base ``rope_theta`` 10^7)
    and attend to every earlier key.
    """
    return [LayerPlan(rope=True, base=base, rotary_dim=rotary_dim) if (layer + 1) % every == 0
            else LayerPlan(rope=False, recurrent=True) for layer in range(n_layers)]


@contract
def kimi_linear(n_layers: Layers, every: Period = 4) -> list[LayerPlan]:
    r"""Kimi Linear: ``every - 1`` recurrent (Kimi Delta Attention) layers, then one global MLA layer without RoPE.

    Kimi Team (2025) interleave KDA and MLA three to one; the MLA layers rotate nothing
    (Transformers' ``KimiLinearAttention``, "Multi-headed Latent Attention ... with
    NoPE"), so every position signal of the stack comes from the recurrent layers and
    the causal mask. Layer ``l`` is MLA when ``(l + 1) mod every = 0`` here; a
    released file lists its layers explicitly (``linear_attn_config``).
    """
    return [LayerPlan(rope=False) if (layer + 1) % every == 0 else LayerPlan(rope=False, recurrent=True)
            for layer in range(n_layers)]


@contract(_SQUARE)
def sliding_window_mask(n: Size, window: Size) -> np.ndarray:
    r"""Causal sliding window: query ``m`` sees keys ``j`` with ``m - window < j <= m`` (``window`` keys).

    Transformers' ``sliding_window_overlay`` (``kv_idx > q_idx - sliding_window``) and
    OpenAI's gpt-oss ``sdpa`` (``tril(..., diagonal=-sliding_window)`` masked). Shape ``(n, n)``.
    """
    m = np.arange(n)
    # causal and m - j < window
    return _causal_mask(n) & (m[:, None] - m[None, :] < window)


@contract(_SQUARE)
def chunked_mask(n: Size, chunk: Size) -> np.ndarray:
    r"""Causal chunked attention: query ``m`` sees keys ``j <= m`` with ``floor(j / chunk) = floor(m / chunk)``.

    Meta's ``create_chunked_attention_mask`` and Transformers' ``chunked_overlay``. The
    first query of a chunk sees only itself. Shape ``(n, n)``.
    """
    m = np.arange(n)
    # causal and in the same block of `chunk` tokens
    return _causal_mask(n) & (m[:, None] // chunk == m[None, :] // chunk)


def _attention_layer(plan) -> None:
    """A recurrent layer has no attention mask."""
    if plan.recurrent:
        raise ValueError("plan must be an attention layer (recurrent=False): a recurrent layer has no attention mask")


@contract(_SQUARE, _attention_layer)
def layer_mask(plan: Plan, n: Size) -> np.ndarray:
    r"""The attention mask of one layer for ``n`` tokens: causal, cut by its window or chunk."""
    if plan.window is not None:
        return sliding_window_mask(n, plan.window)
    if plan.chunk is not None:
        return chunked_mask(n, plan.chunk)
    return _causal_mask(n)


@contract
def reach(plan: Plan, n: Size) -> int:
    r"""The longest distance ``m - j`` any query of an ``n``-token input sees in this layer.

    ``n - 1`` for a global layer, ``min(n, window) - 1`` for a sliding window and
    ``min(n, chunk) - 1`` for chunks; ``n - 1`` for a recurrent layer, whose state
    carries every earlier token.
    """
    span = min(s for s in (n, plan.window, plan.chunk) if s is not None)
    # the farthest visible key is span - 1 tokens back
    return span - 1


@contract(_plans_are_layer_plans)
def longest_rotated_distance(plans: Plans, n: Size) -> int:
    r"""The longest distance that any RoPE layer of a stack rotates by on an ``n``-token input.

    ``max`` of :func:`reach` over the layers with ``rope``; 0 for a stack without RoPE.
    The distances a model can meet beyond its training length matter only where they
    are rotated: a NoPE layer has no angle to extrapolate.
    """
    rotating = [reach(plan, n) for plan in plans if plan.rope]
    return max(rotating, default=0)


@contract(_plans_are_layer_plans)
def cached_keys(plans: Plans, n: Size) -> int:
    r"""Keys a stack must keep per head to generate after ``n`` tokens: ``sum_l min(n, span_l)``.

    ``span_l`` is the layer's window or chunk (``n`` for a global layer): a sliding
    window needs only its last ``window`` keys. For a chunked layer ``min(n, chunk)``
    is an upper bound: the query at position ``t`` needs only the ``t mod chunk + 1``
    keys of its own chunk, ``min(n, chunk)`` when a serving engine keeps a whole chunk's
    buffer. A recurrent layer keeps a state of fixed size and no keys: 0. Divide by
    ``n * len(plans)`` for the fraction of a full cache.
    """
    # a layer holds min(n, window or chunk) keys; a recurrent layer none
    return sum(0 if plan.recurrent else reach(plan, n) + 1 for plan in plans)


def _rotary_fits(plan, d) -> None:
    """A partial rotation turns at most the whole head."""
    if plan.rotary_dim is not None and plan.rotary_dim > d:
        raise ValueError(f"d must be at least the plan's rotary_dim = {plan.rotary_dim} (the components that turn), "
                         f"got {d}")


@contract(_rotary_fits)
def layer_frequencies(plan: Plan, d: EvenSize) -> np.ndarray | None:
    r"""The RoPE frequencies of a layer, ``theta_i = base^(-2i/r) / factor``, or ``None`` for a layer without RoPE.

    ``r`` is the plan's ``rotary_dim`` (the leading components that turn), ``d`` when
    the whole head turns; the result has ``r / 2`` entries, one per turning pair.
    """
    if not plan.rope:
        return None
    rotated = d if plan.rotary_dim is None else plan.rotary_dim
    # position interpolation by `factor` of base^(-2i/r)
    return _scaling.position_interpolation(rotated, plan.factor, base=plan.base).inv_freq


@contract(_rms_above_zero)
def qk_rms_norm(x: NonEmptyVectors, eps: NonNegativeReal = 1e-5) -> np.ndarray:
    r"""QK-norm as Llama 4 applies it: ``x / sqrt(mean(x^2) + eps)`` over each head's ``d`` components.

    No learned weight (Transformers' ``Llama4TextL2Norm``; Meta's ``l2_norm``). A rotation
    keeps the norm of every pair, so normalising before or after RoPE gives the same
    vector. ``x``: ``(..., d)``.
    """
    # s = max_j |x_j|, so that no square overflows (x ~ 1e300) or vanishes (x ~ 1e-300)
    s = np.max(np.abs(x), axis=-1, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    # x / sqrt(mean_j x_j^2 + eps) = (x/s) / sqrt(mean_j (x_j/s)^2 + eps/s^2)
    # eps/s^2 taken as (eps/s)/s: s^2 underflows to 0 below about 1e-154, and with eps = 0 that is 0/0
    with np.errstate(over="ignore", divide="ignore"):  # eps/s^2 = inf for tiny s: the result is 0
        return (x / s) / np.sqrt(np.mean((x / s) ** 2, axis=-1, keepdims=True) + eps / s / s)

