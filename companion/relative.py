r"""Relative positions: the distance between two tokens enters the attention score.

Shaw, Uszkoreit & Vaswani (2018) add a learned vector per clipped distance to the
key (and the value); Transformer-XL (Dai et al. 2019) replaces the key's absolute
position by a sinusoid of the distance and the query's by learned vectors ``u``,
``v``; T5 (Raffel et al. 2020) adds one learned scalar per distance bucket and head
straight to the score. In all three the input carries no position at all.

Convention shared by every function here: query ``i`` and key ``j`` are numbered
from 0, and when there are more keys than queries (keys cached from earlier steps)
the queries are the *last* ``n_queries`` positions, as in
:func:`companion.attention.causal_mask`. The relative position is ``j - i`` (key
minus query) unless a paper fixes the other sign (Transformer-XL's ``R_{i-j}``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from . import _checks
from .absolute import _sinusoid
from .attention import softmax

__all__ = [
    "relative_positions",
    "clipped_distances",
    "shaw_scores",
    "shaw_attention",
    "ShawRelativeAttention",
    "XLTerms",
    "signed_sinusoid",
    "transformer_xl_terms",
    "TransformerXLScores",
    "t5_bucket",
    "t5_bias",
    "T5RelativeBias",
    "PositionCost",
    "position_cost",
]


# --- distances -----------------------------------------------------------------------


def relative_positions(n_queries: int, n_keys: int | None = None) -> np.ndarray:
    r"""Key position minus query position, :math:`j - i`, for every pair.

    Query row ``r`` sits at position :math:`i = r + n_\text{keys} - n_\text{queries}`
    (the queries are the last positions); key column ``j`` at position ``j``.
    ``n_keys`` defaults to ``n_queries`` and must be ``>= n_queries``.

    Returns an int64 array of shape ``(n_queries, n_keys)``; 0 on the diagonal,
    negative for keys in the past (Shaw et al. 2018; Raffel et al. 2020).
    """
    n_queries, n_keys = _sizes(n_queries, n_keys)
    _checks.entries("n_queries * n_keys", n_queries * n_keys)
    i = np.arange(n_queries)[:, None] + (n_keys - n_queries)
    j = np.arange(n_keys)[None, :]
    return j - i


def clipped_distances(n_queries: int, n_keys: int, k: int) -> np.ndarray:
    r"""Relative distances clipped at :math:`\pm k` (Shaw, Uszkoreit & Vaswani 2018).

    .. math:: \operatorname{clip}(j - i, k) = \max\bigl(-k, \min(k, j - i)\bigr) .

    All distances beyond ``k`` share one learned vector, so a model trained on short
    texts has seen every entry it will ever use. ``k`` is an integer >= 0 (``k = 0``
    gives every pair the same vector: no position at all). Shape
    ``(n_queries, n_keys)``, int64, values in ``-k..k``.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise ValueError(f"k (the clipping distance) must be an integer >= 0, got {k!r}")
    if n_keys is None:
        raise ValueError("n_keys must be an integer >= n_queries, got None")
    distances = relative_positions(n_queries, n_keys)
    reach = min(int(k), n_queries + n_keys)  # clipping beyond the longest distance changes nothing
    return np.clip(distances, -reach, reach)


# --- Shaw, Uszkoreit & Vaswani (2018) -----------------------------------------------


def shaw_scores(q, k, w_k) -> np.ndarray:
    r"""Scores with a learned vector per clipped distance added to each key.

    .. math::

        e_{ij} = \frac{q_i \cdot \bigl(k_j + a^K_{ij}\bigr)}{\sqrt{d}}, \qquad
        a^K_{ij} = w^K_{\operatorname{clip}(j-i,\,c)},

    Shaw, Uszkoreit & Vaswani (2018), section 3. The table row ``r`` of ``w_k``
    holds :math:`w^K_{r - c}`, so ``w_k`` has :math:`2c + 1` rows for clipping
    distance :math:`c`.

    Parameters
    ----------
    q : ``(..., n_queries, d)``; k : ``(..., n_keys, d)`` with ``n_keys >= n_queries``.
    w_k : ``(2c + 1, d)``.

    Returns
    -------
    ``(..., n_queries, n_keys)`` float64.
    """
    q, k = _query_key("q", q, "k", k)
    w_k = _checks.array("w_k", w_k)
    c = _clip_from_table("w_k", w_k, q.shape[-1])
    row = clipped_distances(q.shape[-2], k.shape[-2], c) + c
    content = q @ np.swapaxes(k, -1, -2)
    position = np.take_along_axis(q @ w_k.T, np.broadcast_to(row, q.shape[:-1] + row.shape[-1:]), axis=-1)
    with np.errstate(over="ignore", invalid="ignore"):
        e = (content + position) / np.sqrt(q.shape[-1])
    return _checks.finite_result("q, k and w_k", e, "the scores overflow float64: scale them down")


def shaw_attention(q, k, v, w_k, w_v, mask=None):
    r"""Self-attention with relative position representations on keys and values.

    .. math::

        \alpha_{ij} = \operatorname{softmax}_j(e_{ij}), \qquad
        z_i = \sum_j \alpha_{ij}\bigl(v_j + a^V_{ij}\bigr), \qquad
        a^V_{ij} = w^V_{\operatorname{clip}(j-i,\,c)},

    with :math:`e_{ij}` from :func:`shaw_scores` (Shaw, Uszkoreit & Vaswani 2018,
    section 3). The paper shares the tables across heads, so leading (head)
    dimensions of ``q``, ``k``, ``v`` broadcast against one table.

    Parameters
    ----------
    q : ``(..., n_queries, d)``; k : ``(..., n_keys, d)``; v : ``(..., n_keys, d_v)``.
    w_k : ``(2c + 1, d)``; w_v : ``(2c + 1, d_v)``, the same ``c``.
    mask : optional boolean, broadcastable to ``(..., n_queries, n_keys)``; ``True``
        means "may attend".

    Returns
    -------
    z : ``(..., n_queries, d_v)`` and alpha : ``(..., n_queries, n_keys)``.
    """
    e = shaw_scores(q, k, w_k)
    v = _checks.array("v", v, ndim_at_least=2)
    if v.shape[-2] != e.shape[-1]:
        raise ValueError(f"v must have n_keys = {e.shape[-1]} rows like k, got shape {v.shape}")
    try:
        np.broadcast_shapes(e.shape[:-2], v.shape[:-2])
    except ValueError as err:
        raise ValueError(
            f"v must have leading (batch, head) dimensions that broadcast with q and k, got v {v.shape} "
            f"for scores {e.shape}"
        ) from err
    c = (_checks.array("w_k", w_k).shape[0] - 1) // 2
    w_v = _checks.array("w_v", w_v)
    c_v = _clip_from_table("w_v", w_v, v.shape[-1])
    if c_v != c:
        raise ValueError(f"w_v must have as many rows as w_k ({2 * c + 1}), got {2 * c_v + 1}")
    alpha = softmax(_apply_mask(e, mask), axis=-1)
    a_v = w_v[clipped_distances(e.shape[-2], e.shape[-1], c) + c]  # (n_queries, n_keys, d_v)
    z = alpha @ v + np.einsum("...ij,ijd->...id", alpha, a_v)
    return z, alpha


class ShawRelativeAttention(nn.Module):
    r"""Torch layer for :func:`shaw_attention` (Shaw, Uszkoreit & Vaswani 2018).

    Holds the two learned tables ``w_k`` (``(2c + 1, d)``) and ``w_v``
    (``(2c + 1, d_v)``), one vector per clipped distance ``-c..c`` with
    ``c = max_distance`` (the paper's ``k``), shared by all heads of a layer.

    ``forward(q, k, v, mask=None)`` takes already-projected queries, keys and values
    of shapes ``(..., n_queries, d)``, ``(..., n_keys, d)``, ``(..., n_keys, d_v)`` and
    an optional boolean mask (``True`` = may attend), and returns
    ``(z, alpha)`` of shapes ``(..., n_queries, d_v)`` and ``(..., n_queries, n_keys)``.
    A tensor of the wrong type, dtype or shape, or a mask row with no key left, raises
    ``ValueError`` as :func:`shaw_attention` does; like torch's own layers, the inputs
    are not scanned for NaN.
    """

    def __init__(self, d: int, max_distance: int, d_v: int | None = None):
        super().__init__()
        self.d = _checks.size("d", d)
        self.d_v = self.d if d_v is None else _checks.size("d_v", d_v)
        self.max_distance = _checks.size("max_distance", max_distance, minimum=0)
        rows = 2 * self.max_distance + 1
        _checks.entries("(2 max_distance + 1) * max(d, d_v)", rows * max(self.d, self.d_v))
        self.w_k = nn.Parameter(0.02 * torch.randn(rows, self.d))
        self.w_v = nn.Parameter(0.02 * torch.randn(rows, self.d_v))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None):
        _torch_query_key_value(q, k, v, self.d, self.d_v)
        mask = _torch_mask("mask", mask, q.shape[:-2], k.shape[:-2], q.shape[-2], k.shape[-2], q.device)
        n_q, n_k, c = q.shape[-2], k.shape[-2], self.max_distance
        row = _torch_relative(n_q, n_k, q.device).clamp(-c, c) + c  # (n_q, n_k)
        w_k, w_v = self.w_k.to(q.dtype), self.w_v.to(v.dtype)
        position = torch.gather(q @ w_k.T, -1, row.expand(*q.shape[:-1], n_k))
        e = (q @ k.transpose(-1, -2) + position) / math.sqrt(self.d)
        if mask is not None:
            e = e.masked_fill(~mask, float("-inf"))
        alpha = torch.softmax(e, dim=-1)
        z = alpha @ v + torch.einsum("...ij,ijd->...id", alpha, w_v[row])
        return z, alpha

    def extra_repr(self) -> str:
        return f"d={self.d}, d_v={self.d_v}, max_distance={self.max_distance}"


# --- Transformer-XL (Dai et al. 2019) -----------------------------------------------


class XLTerms(NamedTuple):
    """The four Transformer-XL score terms and their sum, each ``(n_queries, n_keys)``."""

    a: object
    b: object
    c: object
    d: object
    total: object


def signed_sinusoid(distances, d: int, base: float = 10000.0) -> np.ndarray:
    r"""Sinusoid of a distance of either sign: :math:`R_t`, ``t`` any integer.

    .. math:: (R_t)_{2i} = \sin(\omega_i t), \qquad (R_t)_{2i+1} = \cos(\omega_i t),

    the sinusoid of :func:`companion.absolute.sinusoidal` extended to negative ``t``
    (sine odd, cosine even): :math:`R_{-t}` is :math:`R_{t}` with its sine components
    negated. Transformer-XL (Dai et al. 2019) uses :math:`R_{i-j}` with
    :math:`i \ge j`; negative ``t`` only occurs for masked (future) pairs.
    Shape ``distances.shape + (d,)``, float64.
    """
    t = _checks.integers("distances", distances)
    r = _sinusoid("distances", np.abs(t), d, base)
    r[..., 0::2] *= np.sign(t)[..., None]
    return r


def transformer_xl_terms(e_q, e_k, w_q, w_ke, w_kr, u, v, base: float = 10000.0) -> XLTerms:
    r"""The four terms of the Transformer-XL relative score (Dai et al. 2019, section 3.3).

    .. math::

        A^{\text{rel}}_{ij} =
        \underbrace{E_{x_i}^{\mathsf T} W_q^{\mathsf T} W_{k,E} E_{x_j}}_{(a)}
        + \underbrace{E_{x_i}^{\mathsf T} W_q^{\mathsf T} W_{k,R} R_{i-j}}_{(b)}
        + \underbrace{u^{\mathsf T} W_{k,E} E_{x_j}}_{(c)}
        + \underbrace{v^{\mathsf T} W_{k,R} R_{i-j}}_{(d)} .

    (a) content-content, (b) content-dependent distance, (c) global content bias,
    (d) global distance bias. :math:`R_{i-j}` is the sinusoid of the distance
    (:func:`signed_sinusoid`), never of an absolute position, so cached segments
    (memory) cannot collide. Written with row vectors: ``q_i = e_q[i] @ w_q`` is the
    paper's :math:`W_q E_{x_i}`. The terms are unscaled, as in the paper; the
    reference code divides their sum by :math:`\sqrt{d_\text{head}}` before the
    softmax.

    Parameters
    ----------
    e_q : ``(n_queries, d_model)`` content of the queries (the current segment).
    e_k : ``(n_keys, d_model)`` content of the keys (memory then segment),
        ``n_keys >= n_queries``; query row ``r`` is at position
        ``r + n_keys - n_queries``.
    w_q, w_ke : ``(d_model, d_head)``; w_kr : ``(d_r, d_head)`` with ``d_r`` even
        (the width of :math:`R`, ``d_model`` in the paper).
    u, v : ``(d_head,)`` learned vectors replacing the query's position.
    base : real > 0 for the sinusoid.

    Returns
    -------
    :class:`XLTerms` ``(a, b, c, d, total)``, each ``(n_queries, n_keys)`` float64.
    """
    e_q, e_k, w_q, w_ke, w_kr, u, v = _xl_arrays(e_q, e_k, w_q, w_ke, w_kr, u, v)
    n_q, n_k = e_q.shape[0], e_k.shape[0]
    _sizes(n_q, n_k)
    # Distances i - j run from 1 - n_q (row 0 of the table) to n_k - 1.
    r_table = signed_sinusoid(np.arange(1 - n_q, n_k), w_kr.shape[0], base) @ w_kr
    row = -relative_positions(n_q, n_k) + (n_q - 1)
    q = e_q @ w_q
    key = e_k @ w_ke
    a = q @ key.T
    b = np.take_along_axis(q @ r_table.T, row, axis=-1)
    c = np.broadcast_to(key @ u, (n_q, n_k))
    d = (r_table @ v)[row]
    return XLTerms(a, b, c, d, a + b + c + d)


class TransformerXLScores(nn.Module):
    r"""Torch layer for :func:`transformer_xl_terms` (Dai et al. 2019), one head.

    Learned parameters: ``w_q``, ``w_ke`` (``(d_model, d_head)``), ``w_kr``
    (``(d_model, d_head)``; :math:`R` has width ``d_model``, which must be even) and
    ``u``, ``v`` (``(d_head,)``). Here the layer owns its ``u`` and ``v``; the
    authors' code by default ties one pair across all layers (its ``untie_r`` flag).

    ``forward(e_q, e_k)`` with ``e_q`` ``(n_queries, d_model)`` and ``e_k``
    ``(n_keys, d_model)`` returns :class:`XLTerms` of ``(n_queries, n_keys)`` tensors
    on the device of ``e_q``.
    """

    def __init__(self, d_model: int, d_head: int, base: float = 10000.0):
        super().__init__()
        self.d_model = _checks.even_positive_int("d_model", d_model)
        self.d_head = _checks.size("d_head", d_head)
        _checks.entries("d_model * d_head", self.d_model * self.d_head)
        self.base = _checks.positive_float("base", base)
        scale = d_model ** -0.5
        self.w_q = nn.Parameter(scale * torch.randn(d_model, d_head))
        self.w_ke = nn.Parameter(scale * torch.randn(d_model, d_head))
        self.w_kr = nn.Parameter(scale * torch.randn(d_model, d_head))
        self.u = nn.Parameter(torch.zeros(d_head))
        self.v = nn.Parameter(torch.zeros(d_head))

    def forward(self, e_q: torch.Tensor, e_k: torch.Tensor) -> XLTerms:
        for name, e in (("e_q", e_q), ("e_k", e_k)):
            _floating_tensor(name, e)
        if e_q.ndim != 2 or e_k.ndim != 2 or e_q.shape[-1] != self.d_model or e_k.shape[-1] != self.d_model:
            raise ValueError(
                f"e_q and e_k must be (n, d_model={self.d_model}) matrices, "
                f"got {tuple(e_q.shape)} and {tuple(e_k.shape)}"
            )
        if e_k.dtype != e_q.dtype or e_k.device != e_q.device:
            raise ValueError(f"e_k must have the dtype and device of e_q ({e_q.dtype}, {e_q.device}), "
                             f"got {e_k.dtype}, {e_k.device}")
        n_q, n_k = _sizes(e_q.shape[0], e_k.shape[0])
        _checks.entries("n_queries * n_keys", n_q * n_k)
        dev, dt = e_q.device, e_q.dtype
        t = torch.arange(1 - n_q, n_k, device=dev)
        r = _torch_signed_sinusoid(t, self.d_model, self.base).to(dt) @ self.w_kr.to(dt)
        row = -_torch_relative(n_q, n_k, dev) + (n_q - 1)
        q = e_q @ self.w_q.to(dt)
        key = e_k @ self.w_ke.to(dt)
        a = q @ key.T
        b = torch.gather(q @ r.T, -1, row)
        c = (key @ self.u.to(dt)).expand(n_q, n_k)
        d = (r @ self.v.to(dt))[row]
        return XLTerms(a, b, c, d, a + b + c + d)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_head={self.d_head}, base={self.base}"


# --- T5 (Raffel et al. 2020) ----------------------------------------------------------


def t5_bucket(
    relative_position, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128
) -> np.ndarray:
    r"""T5's bucket index for each relative position (key minus query).

    Raffel et al. (2020), as in Mesh TensorFlow's ``_relative_position_bucket`` and
    Hugging Face's ``T5Attention._relative_position_bucket``:

    * bidirectional: half the buckets per direction; keys after the query
      (:math:`j - i > 0`) get ``+ num_buckets // 2``; :math:`n = |j - i|`, and ``B``
      below is ``num_buckets // 2``;
    * unidirectional (decoder): :math:`n = \max(0, i - j)` (future keys fall in
      bucket 0), ``B = num_buckets``;
    * with :math:`e = B / 2` exact buckets: bucket :math:`n` if :math:`n < e`, else

    .. math::

        \min\Bigl(B - 1,\; e + \Bigl\lfloor
        \frac{\ln(n / e)}{\ln(\text{max\_distance} / e)}\,(B - e) \Bigr\rfloor\Bigr),

    log-spaced up to ``max_distance``; every larger distance shares the last bucket.
    With the defaults (32, 128), distances 0..7 are exact in each direction, and
    every distance from 91 on (encoder; 113 for the decoder, which has twice the
    buckets for one direction) falls in the last bucket: the floor reaches ``B - 1``
    well before ``max_distance``.

    Parameters
    ----------
    relative_position : integers of any shape and sign (key position minus query
        position).
    bidirectional : bool.
    num_buckets : int; even and >= 4 when bidirectional, >= 2 otherwise.
    max_distance : int greater than the number of exact buckets.

    Returns
    -------
    int64 array of the shape of ``relative_position``, values in ``0..num_buckets-1``.
    """
    rp = _checks.integers("relative_position", relative_position)
    bidirectional, num_buckets, max_distance = _t5_options(bidirectional, num_buckets, max_distance)
    if bidirectional:
        half = num_buckets // 2
        offset = np.where(rp > 0, half, 0)
        n, buckets = np.abs(rp), half
    else:
        offset = 0
        n, buckets = np.maximum(-rp, 0), num_buckets
    exact = buckets // 2
    log_ratio = np.log(np.maximum(n, exact) / exact) / math.log(max_distance / exact)
    large = np.minimum(exact + (log_ratio * (buckets - exact)).astype(np.int64), buckets - 1)
    return offset + np.where(n < exact, n, large)


def t5_bias(
    table, n_queries: int, n_keys: int | None = None, bidirectional: bool = True, max_distance: int = 128
) -> np.ndarray:
    r"""T5's per-head score bias from a table of one scalar per bucket and head.

    .. math:: b_{h,ij} = T\bigl[\operatorname{bucket}(j - i),\, h\bigr],

    added to :math:`q_i \cdot k_j` before the softmax (Raffel et al. 2020; T5 does
    not divide scores by :math:`\sqrt{d}`, its initialisation absorbs it).

    Parameters
    ----------
    table : ``(num_buckets, n_heads)`` learned scalars.
    n_queries, n_keys : sizes; queries are the last positions (``n_keys >= n_queries``).

    Returns
    -------
    ``(n_heads, n_queries, n_keys)`` float64.
    """
    table = _checks.array("table", table)
    if table.ndim != 2 or table.shape[1] == 0:
        raise ValueError(f"table must be (num_buckets, n_heads) with n_heads >= 1, got shape {table.shape}")
    if table.shape[0] < 2:
        raise ValueError(f"table must have num_buckets >= 2 rows (one per bucket), got shape {table.shape}")
    n_queries, n_keys = _sizes(n_queries, n_keys)
    _checks.entries("n_heads * n_queries * n_keys", table.shape[1] * n_queries * n_keys)
    bucket = t5_bucket(relative_positions(n_queries, n_keys), bidirectional, table.shape[0], max_distance)
    return np.moveaxis(table[bucket], -1, 0)


class T5RelativeBias(nn.Module):
    r"""T5's learned relative position bias (Raffel et al. 2020), all heads at once.

    One learned scalar per bucket and head (an ``nn.Embedding(num_buckets,
    n_heads)``), looked up by :func:`t5_bucket` of the distance and added to the
    attention scores. In T5 only the first layer owns this table and every layer
    reuses its bias, so a single instance can be shared by all layers of a stack.

    ``forward(n_queries, n_keys=None)`` returns the bias ``(n_heads, n_queries,
    n_keys)`` on the device and in the dtype of the table; queries are the last
    positions (``n_keys >= n_queries``), as with a key cache. ``bucket(relative_position)``
    is :func:`t5_bucket` for an integer tensor.
    """

    def __init__(self, n_heads: int, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True):
        super().__init__()
        self.n_heads = _checks.size("n_heads", n_heads)
        self.bidirectional, self.num_buckets, self.max_distance = _t5_options(bidirectional, num_buckets, max_distance)
        _checks.entries("num_buckets * n_heads", self.num_buckets * self.n_heads)
        self.table = nn.Embedding(self.num_buckets, self.n_heads)

    def bucket(self, relative_position: torch.Tensor) -> torch.Tensor:
        """:func:`t5_bucket` in torch: same rule, same integers, on the input's device.

        ``relative_position``: integers (a tensor, list or array), each within the
        supported range ``±2**32``.
        """
        return self._bucket(_checks.tensor_integers("relative_position", relative_position, floats=False))

    def _bucket(self, rp: torch.Tensor) -> torch.Tensor:
        if self.bidirectional:
            half = self.num_buckets // 2
            offset = (rp > 0).long() * half
            n, buckets = rp.abs(), half
        else:
            offset = torch.zeros_like(rp)
            n, buckets = (-rp).clamp(min=0), self.num_buckets
        exact = buckets // 2
        work = torch.float32 if rp.device.type == "mps" else torch.float64
        log_ratio = torch.log(n.clamp(min=exact).to(work) / exact) / math.log(self.max_distance / exact)
        large = (exact + (log_ratio * (buckets - exact)).long()).clamp(max=buckets - 1)
        return offset + torch.where(n < exact, n, large)

    def forward(self, n_queries: int, n_keys: int | None = None) -> torch.Tensor:
        n_q, n_k = _sizes(n_queries, n_keys)
        _checks.entries("n_heads * n_queries * n_keys", self.n_heads * n_q * n_k)
        device = self.table.weight.device
        # Each distance j - i in -(n_k - 1)..(n_q - 1) is bucketed and looked up once.
        per_distance = self.table(self._bucket(torch.arange(1 - n_k, n_q, device=device)))  # (n_q + n_k - 1, H)
        index = _torch_relative(n_q, n_k, device) + (n_k - 1)
        return per_distance.T[:, index]

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, num_buckets={self.num_buckets}, "
            f"max_distance={self.max_distance}, bidirectional={self.bidirectional}"
        )


# --- cost of the three methods --------------------------------------------------------


class PositionCost(NamedTuple):
    """What a relative method costs in one model configuration (see :func:`position_cost`)."""

    parameters: int
    multiply_adds: int
    content_multiply_adds: int


def position_cost(
    method: str,
    n_layers: int,
    n_heads: int,
    d_head: int,
    n_queries: int,
    n_keys: int | None = None,
    *,
    clip: int = 16,
    num_buckets: int = 32,
    tied_uv: bool = False,
) -> PositionCost:
    r"""Learned parameters and extra score work of Shaw, Transformer-XL or T5 positions.

    For a stack of ``n_layers`` attention layers with ``n_heads`` heads of width
    ``d_head`` (model width :math:`D = H d_\text{head}`), and one sequence of
    ``n_queries`` queries :math:`n_q` against ``n_keys`` keys :math:`n_k`:

    ``parameters``: learned numbers that exist only to carry position, whole stack.

    * ``"shaw"``: one key table and one value table of :math:`2c + 1` vectors of
      width :math:`d_\text{head}` per layer, shared by the heads (Shaw, Uszkoreit &
      Vaswani 2018, section 3.3): :math:`2 L (2c + 1) d_\text{head}`.
    * ``"transformer_xl"``: per layer :math:`W_{k,R}` (:math:`D \times D` over all
      heads) and :math:`u, v` (:math:`D` each; counted once for the stack when
      ``tied_uv``): :math:`L D^2 + 2 L D`, or :math:`L D^2 + 2D` (Dai et al. 2019).
    * ``"t5"``: one scalar per bucket and head, one table for the whole stack
      (Raffel et al. 2020): :math:`B H`.

    ``multiply_adds``: extra work per layer to put distance into all
    :math:`n_q n_k` scores (and, for Shaw, outputs), each pair evaluated directly;
    adding a bias to a score counts as one.

    * ``"shaw"``: :math:`q_i \cdot a^K_{ij}` and :math:`\alpha_{ij} a^V_{ij}` for
      every pair and head: :math:`2 H n_q n_k d_\text{head}`.
    * ``"transformer_xl"``: :math:`W_{k,R} R_t` for the :math:`n_k` distances
      :math:`0..n_k-1` (:math:`n_k D^2`), term (b) for every pair
      (:math:`H n_q n_k d_\text{head}`), terms (c) and (d) once per key and per
      distance (:math:`2 H n_k d_\text{head}`).
    * ``"t5"``: one addition per pair and head: :math:`H n_q n_k`.

    ``content_multiply_adds``: plain attention's :math:`QK^{\mathsf T}` and
    :math:`AV` per layer, :math:`2 H n_q n_k d_\text{head}`, for scale.

    Parameters
    ----------
    method : ``"shaw"``, ``"transformer_xl"`` or ``"t5"``.
    n_layers, n_heads, d_head, n_queries : integers >= 1.
    n_keys : integer >= ``n_queries`` (default ``n_queries``).
    clip : Shaw's clipping distance :math:`c`, integer >= 0.
    num_buckets : T5's number of buckets :math:`B`, integer >= 2.
    tied_uv : Transformer-XL only; one :math:`u, v` pair for all layers.

    Returns
    -------
    :class:`PositionCost` ``(parameters, multiply_adds, content_multiply_adds)`` of ints.
    """
    _checks.one_of("method", method, ("shaw", "transformer_xl", "t5"))
    L = _checks.positive_int("n_layers", n_layers)
    H = _checks.positive_int("n_heads", n_heads)
    d_h = _checks.positive_int("d_head", d_head)
    n_q, n_k = _sizes(n_queries, n_keys)
    c = _nonneg_int("clip", clip)
    buckets = _checks.positive_int("num_buckets", num_buckets)
    if buckets < 2:
        raise ValueError(f"num_buckets must be an integer >= 2, got {buckets}")
    _checks.boolean("tied_uv", tied_uv)
    D = H * d_h
    content = 2 * H * n_q * n_k * d_h
    if method == "shaw":
        return PositionCost(2 * L * (2 * c + 1) * d_h, 2 * H * n_q * n_k * d_h, content)
    if method == "transformer_xl":
        uv = 2 * D if tied_uv else 2 * L * D
        work = n_k * D * D + H * n_q * n_k * d_h + 2 * H * n_k * d_h
        return PositionCost(L * D * D + uv, work, content)
    return PositionCost(buckets * H, H * n_q * n_k, content)


# --- private helpers ------------------------------------------------------------------


def _sizes(n_queries, n_keys) -> tuple[int, int]:
    n_queries = _checks.size("n_queries", n_queries)
    n_keys = n_queries if n_keys is None else _checks.size("n_keys", n_keys)
    if n_keys < n_queries:
        raise ValueError(
            f"n_keys must be >= n_queries ({n_queries}): the queries are the last positions, got n_keys={n_keys}"
        )
    return n_queries, n_keys


def _nonneg_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def _query_key(q_name, q, k_name, k):
    q = _checks.array(q_name, q, ndim_at_least=2)
    k = _checks.array(k_name, k, ndim_at_least=2)
    if q.shape[-1] != k.shape[-1] or q.shape[-1] == 0:
        raise ValueError(
            f"{q_name} and {k_name} must have the same last dimension d >= 1, got {q.shape} and {k.shape}"
        )
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    except ValueError as err:
        raise ValueError(
            f"{q_name} and {k_name} must have leading (batch, head) dimensions that broadcast, "
            f"got {q.shape} and {k.shape}"
        ) from err
    _sizes(q.shape[-2], k.shape[-2])
    return q, k


def _clip_from_table(name: str, table, width: int | None) -> int:
    """The clipping distance c of a ``(2c + 1, width)`` table, or ValueError."""
    shape = np.shape(table)
    if len(shape) != 2 or shape[0] % 2 == 0 or (width is not None and shape[1] != width):
        want = "d" if width is None else str(width)
        raise ValueError(
            f"{name} must be a (2c + 1, {want}) table (odd number of rows, one per distance -c..c), got shape {shape}"
        )
    return (shape[0] - 1) // 2


def _apply_mask(scores: np.ndarray, mask) -> np.ndarray:
    if mask is None:
        return scores
    return np.where(_checks.mask("mask", mask, scores.shape), scores, -np.inf)


def _xl_arrays(e_q, e_k, w_q, w_ke, w_kr, u, v):
    e_q = _checks.array("e_q", e_q)
    e_k = _checks.array("e_k", e_k)
    if e_q.ndim != 2 or e_k.ndim != 2 or e_q.shape[1] != e_k.shape[1]:
        raise ValueError(
            f"e_q and e_k must be (n, d_model) matrices of the same width, got {e_q.shape} and {e_k.shape}"
        )
    d_model = e_q.shape[1]
    mats = {}
    for name, w, rows in (("w_q", w_q, d_model), ("w_ke", w_ke, d_model), ("w_kr", w_kr, None)):
        w = _checks.array(name, w)
        if w.ndim != 2 or (rows is not None and w.shape[0] != rows):
            raise ValueError(f"{name} must be a ({rows or 'd_r'}, d_head) matrix, got shape {w.shape}")
        mats[name] = w
    d_head = mats["w_q"].shape[1]
    if mats["w_ke"].shape[1] != d_head or mats["w_kr"].shape[1] != d_head:
        raise ValueError(
            f"w_q, w_ke and w_kr must share d_head, got {mats['w_q'].shape}, {mats['w_ke'].shape}, {mats['w_kr'].shape}"
        )
    if mats["w_kr"].shape[0] % 2:
        raise ValueError(f"w_kr must have an even number of rows d_r (sinusoid pairs), got {mats['w_kr'].shape[0]}")
    vecs = []
    for name, x in (("u", u), ("v", v)):
        x = _checks.array(name, x)
        if x.shape != (d_head,):
            raise ValueError(f"{name} must be a vector of shape ({d_head},) (d_head), got {x.shape}")
        vecs.append(x)
    return (e_q, e_k, mats["w_q"], mats["w_ke"], mats["w_kr"], *vecs)


def _t5_options(bidirectional, num_buckets, max_distance):
    _checks.boolean("bidirectional", bidirectional)
    num_buckets = _checks.size("num_buckets", num_buckets, maximum=_checks.MAX_ENTRIES)
    if bidirectional and (num_buckets < 4 or num_buckets % 2):
        raise ValueError(
            f"num_buckets must be an even integer >= 4 when bidirectional (half per direction), got {num_buckets}"
        )
    if not bidirectional and num_buckets < 2:
        raise ValueError(f"num_buckets must be an integer >= 2, got {num_buckets}")
    exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    max_distance = _checks.size("max_distance", max_distance)
    if max_distance <= exact:
        raise ValueError(
            f"max_distance must be > {exact} (the number of exact buckets per direction), got {max_distance}"
        )
    return bool(bidirectional), num_buckets, max_distance


def _torch_relative(n_queries: int, n_keys: int, device) -> torch.Tensor:
    """``j - i`` as an int64 tensor on ``device``, queries being the last positions."""
    i = torch.arange(n_queries, device=device)[:, None] + (n_keys - n_queries)
    j = torch.arange(n_keys, device=device)[None, :]
    return j - i


def _torch_signed_sinusoid(t: torch.Tensor, d: int, base: float) -> torch.Tensor:
    work = torch.float32 if t.device.type == "mps" else torch.float64
    two_i = torch.arange(0, d, 2, device=t.device, dtype=work)
    angles = t.to(work)[:, None] * base ** (-two_i / d)
    return torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)


def _floating_tensor(name: str, x) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a floating-point torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point torch.Tensor, got dtype {x.dtype}")


def _torch_mask(name, mask, q_lead, k_lead, n_q, n_k, device):
    """``mask`` as a boolean tensor broadcastable to ``(..., n_q, n_k)`` with no all-False row, or None."""
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = f"dtype {mask.dtype}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"{name} must be a boolean torch.Tensor (True = may attend), got {got}")
    shape = torch.broadcast_shapes(q_lead, k_lead) + (n_q, n_k)
    try:
        full = mask.to(device).expand(shape) if mask.ndim <= len(shape) else None
    except RuntimeError:
        full = None
    if full is None:
        raise ValueError(f"{name} of shape {tuple(mask.shape)} must broadcast to the scores {tuple(shape)}")
    if not bool(full.any(dim=-1).all()):
        raise ValueError(f"{name} must leave every query a key to attend to; a row of {name} is all False")
    return mask.to(device)


def _torch_query_key_value(q, k, v, d, d_v):
    for name, x in (("q", q), ("k", k), ("v", v)):
        _floating_tensor(name, x)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(
            f"q, k and v must have at least 2 dimensions, got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape[-1] != d or k.shape[-1] != d:
        raise ValueError(f"q and k must have last dimension d={d}, got {tuple(q.shape)} and {tuple(k.shape)}")
    if v.shape[-1] != d_v or v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v must be (..., n_keys={k.shape[-2]}, d_v={d_v}), got {tuple(v.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError as err:
        raise ValueError(
            f"q, k and v must have leading (batch, head) dimensions that broadcast, got "
            f"{tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}"
        ) from err
    _sizes(q.shape[-2], k.shape[-2])
