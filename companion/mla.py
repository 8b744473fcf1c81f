r"""Multi-head latent attention (MLA) and its decoupled RoPE: a rotated slice beside a compressed cache.

DeepSeek-V2 (DeepSeek-AI 2024, "DeepSeek-V2: A Strong, Economical, and Efficient
Mixture-of-Experts Language Model", arXiv:2405.04434, section 2.1) caches one short
latent vector per token instead of every head's key and value. Token ``n``'s hidden
state ``h_n`` is compressed to ``c_n = W_DKV h_n`` (``kv_lora_rank`` entries), and
head ``j`` reads its key and value from it, ``k^C_{n,j} = W_UK,j c_n`` and
``v_{n,j} = W_UV,j c_n``. The score of a query ``q^C_{m,j}`` is then

.. math:: q^C_{m,j} \cdot (W_{UK,j}\, c_n) = (W_{UK,j}^{\mathsf T} q^C_{m,j}) \cdot c_n ,

so at inference ``W_UK`` can be *absorbed* into the query: each new query is mapped
into the latent space once, and the cache holds ``c_n`` only (:func:`absorbed_scores`).

RoPE breaks this. Rotating the compressed key gives
``(R_m q)^T R_n W_UK c_n = (W_UK^T R_{m-n} q)^T c_n``: the matrix that would have
to be absorbed, ``W_UK^T R_{m-n}``, changes with the distance, so no single query
vector serves every key, and the keys would have to be expanded (and rotated) for
every cached token. Because ``R_Delta - I`` is invertible for a rotation with no
pair at a multiple of ``2 pi``, ``W_UK^T R_Delta = W_UK^T`` for a ``Delta != 0``
forces ``W_UK = 0``.

The *decoupled* RoPE of DeepSeek-V2 (its section 2.1.3) adds a separate, small
rotated part: every head gets ``qk_rope_head_dim`` extra query components
``q^R_{m,j}``, and all heads share one rotated key ``k^R_n = R_n W_KR h_n`` of the
same width, cached beside ``c_n``. The score of head ``j`` is

.. math::

    s_{mn,j} = q^C_{m,j} \cdot k^C_{n,j} + (R_m\, q^R_{m,j}) \cdot (R_n\, k^R_n) ,

a head of ``qk_nope_head_dim + qk_rope_head_dim`` components of which only the last
``qk_rope_head_dim`` turn (:func:`scores`): partial rotation with a key slice shared
by all heads. DeepSeek-V3 (arXiv:2412.19437, section 2.1.1) and Kimi K2
(arXiv:2507.20534) keep it: 128 unrotated and 64 rotated components per head, a
512-entry latent. Per token and layer the cache holds ``kv_lora_rank +
qk_rope_head_dim`` numbers instead of ``n_heads (qk_head_dim + v_head_dim)``
(:func:`cache_entries`).

In Hugging Face Transformers (``models/deepseek_v3/modeling_deepseek_v3.py``,
``DeepseekV3Attention``) the query of each head is split into ``q_pass`` (the first
``qk_nope_head_dim``) and ``q_rot`` (the last ``qk_rope_head_dim``); ``k_rot`` has one
head, shape ``[batch, 1, seq, qk_rope_head_dim]``, expanded to all heads. With
``rope_interleave=True`` (the default) ``apply_rotary_pos_emb_interleave`` rotates
the pairs ``(x_0, x_1), (x_2, x_3), ...`` -- the ``"adjacent"`` layout of
:mod:`companion.rope` -- and writes the result de-interleaved, which permutes the
components of ``q`` and ``k`` alike and leaves every dot product unchanged. The
softmax scale is ``qk_head_dim^{-1/2}`` times ``mscale^2`` for YaRN files that set
``mscale_all_dim`` (:func:`companion.configs.applied.softmax_scale_factor`). Kimi Linear's
MLA layers (``models/kimi_linear``, ``KimiLinearAttention``, "MLA ... with NoPE")
rotate nothing: pass ``inv_freq`` of zeros.

Numbers are numpy float64. Queries and keys are per head, ``(heads, n, width)``;
the rotated key is one for all heads, ``(n, qk_rope_head_dim)``.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from . import attention as _attention
from . import rope as _rope
from ._contracts import (
    Array,
    Frequencies,
    Mask,
    Positions,
    Positive,
    Size,
    contract,
    entries,
    pairs_fit,
    rule,
)

__all__ = ["scores", "absorbed_scores", "attention", "cache_entries"]

#: Per-head arrays ``(heads, n, width)``.
PerHead = Annotated[np.ndarray, Array(ndim=3, nonempty=True)]
#: The key slice shared by all heads, ``(n, qk_rope_head_dim)``.
SharedKey = Annotated[np.ndarray, Array(ndim=2, nonempty=True)]
#: The cached latent vectors, ``(n, kv_lora_rank)``.
Latent = Annotated[np.ndarray, Array(ndim=2, nonempty=True)]
#: The key up-projections, one per head, ``(heads, qk_nope_head_dim, kv_lora_rank)``.
UpProjections = Annotated[np.ndarray, Array(ndim=3, nonempty=True)]
#: A pair layout of :mod:`companion.rope`.
Layout = _rope.Layout


def _heads_fit(q_nope, q_rope, k_nope=None, v=None) -> None:
    """The per-head arrays share their number of heads and of tokens."""
    arrays = {"q_nope": q_nope, "q_rope": q_rope, "k_nope": k_nope, "v": v}
    shapes = {name: a.shape[:2] for name, a in arrays.items() if a is not None}
    if len(set(shapes.values())) > 1 or 0 in q_nope.shape[:2]:
        got = ", ".join(f"{name} {arrays[name].shape}" for name in shapes)
        raise ValueError(f"{', '.join(shapes)} must share (heads, n) >= 1, got {got}")


def _nope_widths(q_nope, k_nope) -> None:
    """Queries and keys of the unrotated part have one width."""
    if q_nope.shape[-1] != k_nope.shape[-1]:
        raise ValueError(f"q_nope and k_nope must have the same width qk_nope_head_dim, got {q_nope.shape[-1]} "
                         f"and {k_nope.shape[-1]}")


def _one_key_per_token(q_rope, k_rope, positions) -> None:
    """One shared rotated key and one position per token."""
    n = q_rope.shape[1]
    if k_rope.shape[0] != n:
        raise ValueError(f"k_rope must have one row per token, n = {n} (shape (n, qk_rope_head_dim)), "
                         f"got shape {k_rope.shape}")
    if positions.shape != (n,):
        raise ValueError(f"positions must have one entry per token, shape ({n},), got {positions.shape}")


def _latent_fits(q_nope, latent, w_uk) -> None:
    """``w_uk`` maps the latent to each head's unrotated key: ``(heads, qk_nope_head_dim, kv_lora_rank)``."""
    want = (q_nope.shape[0], q_nope.shape[-1], latent.shape[-1])
    if w_uk.shape != want:
        raise ValueError(f"w_uk must have shape (heads, qk_nope_head_dim, kv_lora_rank) = {want}, got {w_uk.shape}")
    if latent.shape[0] != q_nope.shape[1]:
        raise ValueError(f"latent must have one row per token, n = {q_nope.shape[1]}, got shape {latent.shape}")


def _mask_fits(q_nope, mask) -> None:
    """The mask is ``(n, n)`` and leaves every query a key."""
    n = q_nope.shape[1]
    if mask is None:
        return
    if mask.shape != (n, n):
        raise ValueError(f"mask must have shape (n, n) = {(n, n)}, got {mask.shape}")
    if not mask.any(axis=-1).all():
        raise ValueError("mask must leave every query a key to attend to; a row of mask is all False")


_SCORES_FIT = entries("heads * n * n", lambda q_nope: q_nope.shape[0] * q_nope.shape[1] ** 2)
_CHECKS = (rule(("q_nope", "q_rope", "k_nope"), _heads_fit), _nope_widths, pairs_fit("q_rope", "k_rope"),
           _one_key_per_token, _SCORES_FIT)


def _rotated_part(q_rope, k_rope, positions, inv_freq, layout) -> np.ndarray:
    """``(R_m q^R_{m,j}) . (R_n k^R_n)`` for every head ``j``: ``(heads, n, n)``."""
    # every head's rotated query slice, (heads, n, d_r); one rotated key for all heads, (n, d_r)
    q_turned = _rope.rotate(q_rope, positions, inv_freq, layout)
    k_turned = _rope.rotate(k_rope, positions, inv_freq, layout)
    return q_turned @ k_turned.T


@contract(*_CHECKS)
def scores(q_nope: PerHead, q_rope: PerHead, k_nope: PerHead, k_rope: SharedKey, positions: Positions,
           inv_freq: Frequencies, layout: Layout = "adjacent") -> np.ndarray:
    r"""Scores of MLA heads with decoupled RoPE: ``q^C . k^C + (R_m q^R) . (R_n k^R)``, unscaled.

    .. math:: s_{mn,j} = q^C_{m,j} \cdot k^C_{n,j} + (R_m\, q^R_{m,j}) \cdot (R_n\, k^R_n)

    ``q_nope``, ``k_nope``: ``(heads, n, qk_nope_head_dim)``, never rotated;
    ``q_rope``: ``(heads, n, qk_rope_head_dim)``; ``k_rope``: ``(n, qk_rope_head_dim)``,
    one rotated key shared by every head; ``positions``: ``(n,)``; ``inv_freq``:
    ``(qk_rope_head_dim / 2,)``; ``layout``: DeepSeek's ``rope_interleave=True`` is
    ``"adjacent"``. Returns ``(heads, n, n)``; multiply by the softmax scale.
    """
    # content part: no rotation, (heads, n, n)
    content = q_nope @ np.swapaxes(k_nope, -1, -2)
    # position part: the rotated slices
    return content + _rotated_part(q_rope, k_rope, positions, inv_freq, layout)


@contract(rule(("q_nope", "q_rope"), _heads_fit), pairs_fit("q_rope", "k_rope"), _one_key_per_token, _latent_fits,
          _SCORES_FIT)
def absorbed_scores(q_nope: PerHead, q_rope: PerHead, latent: Latent, k_rope: SharedKey, w_uk: UpProjections,
                    positions: Positions, inv_freq: Frequencies, layout: Layout = "adjacent") -> np.ndarray:
    r"""The same scores as :func:`scores` from the cached latent, with ``W_UK`` absorbed into the query.

    .. math::

        s_{mn,j} = (W_{UK,j}^{\mathsf T} q^C_{m,j}) \cdot c_n + (R_m\, q^R_{m,j}) \cdot (R_n\, k^R_n),
        \qquad k^C_{n,j} = W_{UK,j}\, c_n .

    ``latent``: ``(n, kv_lora_rank)``, the cached ``c_n``; ``w_uk``: ``(heads,
    qk_nope_head_dim, kv_lora_rank)``; the rest as in :func:`scores`. No key is
    expanded: the cache of an MLA layer is ``latent`` and ``k_rope``. This works only
    because the rotation stays out of ``k^C``.
    """
    # W_UK,j^T q^C_{m,j}: every query mapped into the latent space, (heads, n, kv_lora_rank)
    q_latent = q_nope @ w_uk
    # (W^T q) . c_n, then the rotated slices
    return q_latent @ latent.T + _rotated_part(q_rope, k_rope, positions, inv_freq, layout)


@contract(*_CHECKS, rule(("q_nope", "q_rope", "k_nope", "v"), _heads_fit), _mask_fits)
def attention(q_nope: PerHead, q_rope: PerHead, k_nope: PerHead, k_rope: SharedKey, v: PerHead,
              positions: Positions, inv_freq: Frequencies, scale: Positive, layout: Layout = "adjacent",
              mask: Mask | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""MLA heads with decoupled RoPE: ``softmax(scale * s) v`` per head, ``s`` from :func:`scores`.

    ``scale`` is the softmax scale: ``(qk_nope_head_dim + qk_rope_head_dim)^{-1/2}``
    times :func:`companion.configs.applied.softmax_scale_factor` of the file (DeepSeek-V3's
    ``yarn_get_mscale(factor, mscale_all_dim)^2``). ``v``: ``(heads, n, v_head_dim)``;
    ``mask``: optional boolean ``(n, n)``, ``True`` = may attend. Returns ``(out,
    weights)``, ``(heads, n, v_head_dim)`` and ``(heads, n, n)``.
    """
    logits = scale * scores(q_nope, q_rope, k_nope, k_rope, positions, inv_freq, layout)
    if mask is not None:
        # masked keys get -inf and weight 0
        logits = np.where(mask, logits, -np.inf)
    weights = _attention.softmax(logits, -1)
    return weights @ v, weights


@contract
def cache_entries(kv_lora_rank: Size, qk_rope_head_dim: Size, n_heads: Size, qk_nope_head_dim: Size,
                  v_head_dim: Size) -> tuple[int, int]:
    r"""Numbers cached per token and layer: MLA's ``(kv_lora_rank + qk_rope_head_dim)``, and the expanded heads'.

    Returns ``(latent, expanded)``: the latent ``c_n`` plus the one shared rotated key
    ``k^R_n``, and what keys and values of every head would take,
    ``n_heads (qk_nope_head_dim + qk_rope_head_dim + v_head_dim)``. DeepSeek-V3:
    ``(576, 40960)``.
    """
    # c_n and k^R_n
    latent = kv_lora_rank + qk_rope_head_dim
    # every head's key (both parts) and value
    expanded = n_heads * (qk_nope_head_dim + qk_rope_head_dim + v_head_dim)
    return latent, expanded
