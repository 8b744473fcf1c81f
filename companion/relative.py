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
from typing import Annotated, NamedTuple

import numpy as np

from . import absolute
from ._contracts import (
    MAX_ENTRIES,
    Array,
    BooleanMask,
    Count,
    EvenSize,
    Finite,
    Flag,
    Integer,
    Integers,
    Matrix,
    NonNegative,
    OneOf,
    Positive,
    Sequences,
    Size,
    contract,
    entries,
    keys_after_queries,
    leading_dims_broadcast,
    mask_and_bias_fit,
    rows_fit,
    rule,
    same_last_dim,
    same_size,
)
from .absolute import sinusoidal
from .attention import relative_positions, softmax

__all__ = [
    "relative_positions",
    "clipped_distances",
    "shaw_scores",
    "shaw_attention",
    "XLTerms",
    "signed_sinusoid",
    "transformer_xl_terms",
    "t5_bucket",
    "t5_bias",
    "PositionCost",
    "position_cost",
]

#: A vector of learned numbers (Transformer-XL's ``u`` and ``v``).
Vector = Annotated[np.ndarray, Array(ndim=1)]
#: A number of buckets.
Buckets = Annotated[int, Integer(1, MAX_ENTRIES)]


def _rows_of(q, k) -> None:
    """``q`` has a query (a row) and ``k`` as many keys or more: the queries are the last positions."""
    if q.shape[-2] == 0:
        raise ValueError(f"n_queries must be an integer >= 1: q must have a row, got shape {tuple(q.shape)}")
    keys_after_queries(q.shape[-2], k.shape[-2])


# --- distances -----------------------------------------------------------------------


@contract(keys_after_queries, entries("n_queries * n_keys", lambda n_queries, n_keys: n_queries * n_keys))
def clipped_distances(n_queries: Size, n_keys: Size, k: Annotated[int, Integer(0, why="the clipping distance")]
                      ) -> np.ndarray:
    r"""Relative distances clipped at :math:`\pm k` (Shaw, Uszkoreit & Vaswani 2018).

    .. math:: \operatorname{clip}(j - i, k) = \max\bigl(-k, \min(k, j - i)\bigr) .

    All distances beyond ``k`` share one learned vector, so a model trained on short
    texts has seen every entry it will ever use. ``k`` is the paper's clipping
    distance, an integer >= 0 (``k = 0`` gives every pair the same vector: no position
    at all); the ``n_queries`` queries are the last of ``n_keys`` positions.

    Shapes: returns ``(n_queries, n_keys)``, int64, values in ``-k..k``.
    """
    # j - i, shape (n_queries, n_keys)
    distances = relative_positions(n_queries, n_keys)
    # clipping beyond the longest distance changes nothing (and keeps the bounds small)
    reach = min(k, n_queries + n_keys)
    # max(-k, min(k, j - i))
    return np.clip(distances, -reach, reach)


# --- Shaw, Uszkoreit & Vaswani (2018) -----------------------------------------------


def _clip_table(name: str, width_of: str | None = None):
    """A rule: the array ``name`` is a ``(2c + 1, width)`` table, one row per distance ``-c..c``."""
    def check(table, like=None):
        width = None if like is None else like.shape[-1]
        if table.shape[0] % 2 == 0 or (width is not None and table.shape[1] != width):
            want = "d" if width is None else str(width)
            raise ValueError(f"{name} must be a (2c + 1, {want}) table (odd number of rows, one per distance "
                             f"-c..c), got shape {table.shape}")
    return rule((name, width_of) if width_of else (name,), check)


@contract(same_last_dim("q", "k"), leading_dims_broadcast("q", "k"), _rows_of, _clip_table("w_k", "q"),
          result=Finite("q, k and w_k", "the scores overflow float64: scale them down"))
def shaw_scores(q: Sequences, k: Sequences, w_k: Matrix) -> np.ndarray:
    r"""Scores with a learned vector per clipped distance added to each key.

    .. math::

        e_{ij} = \frac{q_i \cdot \bigl(k_j + a^K_{ij}\bigr)}{\sqrt{d}}, \qquad
        a^K_{ij} = w^K_{\operatorname{clip}(j-i,\,c)},

    Shaw, Uszkoreit & Vaswani (2018), section 3. The table row ``r`` of ``w_k``
    holds :math:`w^K_{r - c}`, so ``w_k`` has :math:`2c + 1` rows for clipping
    distance :math:`c`. ``q`` and ``k`` hold the queries :math:`q_i` and keys
    :math:`k_j`, at least as many keys as queries.

    Shapes: ``q`` ``(..., n_queries, d)``; ``k`` ``(..., n_keys, d)`` with
    ``n_keys >= n_queries``; ``w_k`` ``(2c + 1, d)``; returns ``(..., n_queries, n_keys)``,
    float64.
    """
    c = (w_k.shape[0] - 1) // 2
    # row r of w_k holds w^K_{r - c}: the row of each pair is clip(j - i, c) + c, shape (n_queries, n_keys)
    row = clipped_distances(q.shape[-2], k.shape[-2], c) + c
    # q_i . k_j, shape (..., n_queries, n_keys)
    content = q @ np.swapaxes(k, -1, -2)
    # q_i . a^K_ij: q_i . w^K_r for every row r, then the row of each pair
    position = np.take_along_axis(q @ w_k.T, np.broadcast_to(row, q.shape[:-1] + row.shape[-1:]), axis=-1)
    # e_ij = q_i . (k_j + a^K_ij) / sqrt(d)
    return (content + position) / np.sqrt(q.shape[-1])


@contract(same_last_dim("q", "k"), leading_dims_broadcast("q", "k", "v"), _rows_of, _clip_table("w_k", "q"),
          same_size("k", "v", axis=-2, what="number of rows n_keys"),
          same_size("w_k", "w_v", axis=0, what="number of rows 2c + 1"), _clip_table("w_v", "v"),
          rule(("q", "k", "mask"), mask_and_bias_fit),
          result=Finite("q, k, v, w_k and w_v", "the scores overflow float64: scale them down"))
def shaw_attention(q: Sequences, k: Sequences, v: Sequences, w_k: Matrix, w_v: Matrix,
                   mask: Annotated[np.ndarray, BooleanMask()] | None = None):
    r"""Self-attention with relative position representations on keys and values.

    .. math::

        \alpha_{ij} = \operatorname{softmax}_j(e_{ij}), \qquad
        z_i = \sum_j \alpha_{ij}\bigl(v_j + a^V_{ij}\bigr), \qquad
        a^V_{ij} = w^V_{\operatorname{clip}(j-i,\,c)},

    with :math:`e_{ij}` from :func:`shaw_scores` (Shaw, Uszkoreit & Vaswani 2018,
    section 3). The paper shares the tables across heads, so leading (head)
    dimensions of ``q``, ``k``, ``v`` broadcast against one table.

    ``w_k`` and ``w_v`` are the tables of :math:`w^K` and :math:`w^V`, with the same
    clipping distance :math:`c`; ``mask``, if given, is ``True`` where a query may
    attend to a key. Returns ``(z, alpha)``: the outputs :math:`z_i` and the weights
    :math:`\alpha_{ij}`.

    Shapes: ``q`` ``(..., n_queries, d)``; ``k`` ``(..., n_keys, d)``; ``v``
    ``(..., n_keys, d_v)``; ``w_k`` ``(2c + 1, d)``; ``w_v`` ``(2c + 1, d_v)``; ``mask``
    broadcastable to ``(..., n_queries, n_keys)``; returns ``z`` ``(..., n_queries, d_v)``
    and ``alpha`` ``(..., n_queries, n_keys)``.
    """
    # e_ij, shape (..., n_queries, n_keys)
    e = shaw_scores(q, k, w_k)
    if mask is not None:
        # e_ij = -inf where the mask forbids key j
        e = np.where(mask, e, -np.inf)
    # alpha_ij = softmax_j(e_ij)
    alpha = softmax(e, axis=-1)
    c = (w_v.shape[0] - 1) // 2
    # a^V_ij = w^V_{clip(j - i, c)}, shape (n_queries, n_keys, d_v)
    a_v = w_v[clipped_distances(e.shape[-2], e.shape[-1], c) + c]
    # z_i = sum_j alpha_ij (v_j + a^V_ij), shape (..., n_queries, d_v)
    z = alpha @ v + np.einsum("...ij,ijd->...id", alpha, a_v)
    return z, alpha


# --- Transformer-XL (Dai et al. 2019) -----------------------------------------------


class XLTerms(NamedTuple):
    """The four Transformer-XL score terms and their sum, each ``(n_queries, n_keys)``."""

    a: object
    b: object
    c: object
    d: object
    total: object


@contract(entries("distances.size * d", lambda distances, d: distances.size * d))
def signed_sinusoid(distances: Integers, d: EvenSize, base: Positive = absolute.BASE) -> np.ndarray:
    r"""Sinusoid of a distance of either sign: :math:`R_t`, ``t`` any integer.

    .. math:: (R_t)_{2i} = \sin(\omega_i t), \qquad (R_t)_{2i+1} = \cos(\omega_i t),

    the sinusoid of :func:`companion.absolute.sinusoidal` extended to negative ``t``
    (sine odd, cosine even): :math:`R_{-t}` is :math:`R_{t}` with its sine components
    negated. Transformer-XL (Dai et al. 2019) uses :math:`R_{i-j}` with
    :math:`i \ge j`; negative ``t`` only occurs for masked (future) pairs.
    ``distances`` holds the distances ``t``; ``d`` and ``base`` are those of
    :func:`companion.absolute.sinusoidal`.

    Shapes: ``distances`` any shape; returns ``distances.shape + (d,)``, float64.
    """
    # R_|t|, shape distances.shape + (d,)
    r = sinusoidal(np.abs(distances), d, base)
    # R_{-t}: the sine components change sign (sine odd, cosine even)
    r[..., 0::2] *= np.sign(distances)[..., None]
    return r


def _sinusoid_rows(w_kr) -> None:
    if w_kr.shape[0] % 2:
        raise ValueError(f"w_kr must have an even number of rows d_r (sinusoid pairs), got {w_kr.shape[0]}")


@contract(same_size("e_q", "e_k", what="width d_model"), rows_fit("e_q", "w_q", "w_ke"),
          same_size("w_q", "w_ke", "w_kr", ("u", 0), ("v", 0), what="d_head"), _sinusoid_rows,
          rule(("e_q", "e_k"), _rows_of),
          entries("(n_queries + n_keys) * d_r", lambda e_q, e_k, w_kr: (e_q.shape[0] + e_k.shape[0]) * w_kr.shape[0]),
          entries("n_queries * n_keys", lambda e_q, e_k: e_q.shape[0] * e_k.shape[0]))
def transformer_xl_terms(e_q: Matrix, e_k: Matrix, w_q: Matrix, w_ke: Matrix, w_kr: Matrix, u: Vector, v: Vector,
                         base: Positive = absolute.BASE) -> XLTerms:
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

    ``e_q`` is the content of the queries (the current segment) and ``e_k`` that of the
    keys (memory then segment), with at least as many keys as queries: query row ``r``
    is at position ``r + n_keys - n_queries``. ``w_q``, ``w_ke`` and ``w_kr`` are
    :math:`W_q`, :math:`W_{k,E}` and :math:`W_{k,R}`; the number ``d_r`` of rows of
    ``w_kr`` is the width of :math:`R` (``d_model`` in the paper), even. ``u`` and
    ``v`` are the learned vectors that replace the query's position, and ``base`` is
    that of the sinusoid. Returns :class:`XLTerms` ``(a, b, c, d, total)``.

    Shapes: ``e_q`` ``(n_queries, d_model)``; ``e_k`` ``(n_keys, d_model)``; ``w_q`` and
    ``w_ke`` ``(d_model, d_head)``; ``w_kr`` ``(d_r, d_head)``; ``u`` and ``v``
    ``(d_head,)``; each term ``(n_queries, n_keys)``, float64.
    """
    n_q, n_k = e_q.shape[0], e_k.shape[0]
    # R_t W_kR for the distances t = i - j from 1 - n_q (row 0) to n_k - 1
    r_table = signed_sinusoid(np.arange(1 - n_q, n_k), w_kr.shape[0], base) @ w_kr
    # the row of r_table of each pair: (i - j) + n_q - 1, shape (n_q, n_k)
    row = -relative_positions(n_q, n_k) + (n_q - 1)
    # W_q E_{x_i} and W_kE E_{x_j}, as rows
    q = e_q @ w_q
    key = e_k @ w_ke
    # (a) E_{x_i}^T W_q^T W_kE E_{x_j}
    a = q @ key.T
    # (b) E_{x_i}^T W_q^T W_kR R_{i-j}
    b = np.take_along_axis(q @ r_table.T, row, axis=-1)
    # (c) u^T W_kE E_{x_j}, the same for every query
    c = np.broadcast_to(key @ u, (n_q, n_k))
    # (d) v^T W_kR R_{i-j}
    d = (r_table @ v)[row]
    return XLTerms(a, b, c, d, a + b + c + d)


# --- T5 (Raffel et al. 2020) ----------------------------------------------------------


def _t5_options(bidirectional, num_buckets, max_distance) -> None:
    if bidirectional and (num_buckets < 4 or num_buckets % 2):
        raise ValueError(
            f"num_buckets must be an even integer >= 4 when bidirectional (half per direction), got {num_buckets}")
    if not bidirectional and num_buckets < 2:
        raise ValueError(f"num_buckets must be an integer >= 2, got {num_buckets}")
    exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    if max_distance <= exact:
        raise ValueError(
            f"max_distance must be > {exact} (the number of exact buckets per direction), got {max_distance}")


@contract(_t5_options)
def t5_bucket(relative_position: Integers, bidirectional: Flag = True, num_buckets: Buckets = 32,
              max_distance: Size = 128) -> np.ndarray:
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

    ``relative_position`` holds integers of either sign, the key's position minus the
    query's; ``bidirectional`` picks the encoder's rule (true) or the decoder's.
    ``num_buckets`` must be even and >= 4 when bidirectional, >= 2 otherwise, and
    ``max_distance`` greater than the number of exact buckets.

    Shapes: ``relative_position`` any shape; returns its shape, int64, values in
    ``0..num_buckets-1``.
    """
    rp = relative_position
    if bidirectional:
        # keys after the query take the upper half of the buckets; n = |j - i|
        half = num_buckets // 2
        offset = np.where(rp > 0, half, 0)
        n, buckets = np.abs(rp), half
    else:
        # decoder: n = max(0, i - j), future keys in bucket 0
        offset = 0
        n, buckets = np.maximum(-rp, 0), num_buckets
    exact = buckets // 2
    # ln(n / e) / ln(max_distance / e)
    log_ratio = np.log(np.maximum(n, exact) / exact) / math.log(max_distance / exact)
    # min(B - 1, e + floor(log_ratio (B - e)))
    large = np.minimum(exact + (log_ratio * (buckets - exact)).astype(np.int64), buckets - 1)
    # n itself below e, the log-spaced bucket above
    return offset + np.where(n < exact, n, large)


def _table_fits(table, bidirectional, max_distance) -> None:
    if table.shape[1] == 0:
        raise ValueError(f"table must be (num_buckets, n_heads) with n_heads >= 1, got shape {table.shape}")
    if table.shape[0] < 2:
        raise ValueError(f"table must have num_buckets >= 2 rows (one per bucket), got shape {table.shape}")
    _t5_options(bidirectional, table.shape[0], max_distance)


@contract(_table_fits, keys_after_queries,
          entries("n_heads * n_queries * n_keys",
                  lambda table, n_queries, n_keys: table.shape[1] * n_queries * (n_keys or n_queries)))
def t5_bias(table: Matrix, n_queries: Size, n_keys: Size | None = None, bidirectional: Flag = True,
            max_distance: Size = 128) -> np.ndarray:
    r"""T5's per-head score bias from a table of one scalar per bucket and head.

    .. math:: b_{h,ij} = T\bigl[\operatorname{bucket}(j - i),\, h\bigr],

    added to :math:`q_i \cdot k_j` before the softmax (Raffel et al. 2020; T5 does
    not divide scores by :math:`\sqrt{d}`, its initialisation absorbs it).

    ``table`` is :math:`T`, the learned scalars, one row per bucket and one column per
    head. The ``n_queries`` queries are the last positions of the ``n_keys`` keys
    (``n_keys >= n_queries``); ``bidirectional`` and ``max_distance`` are those of
    :func:`t5_bucket`.

    Shapes: ``table`` ``(num_buckets, n_heads)``; returns ``(n_heads, n_queries, n_keys)``,
    float64.
    """
    # bucket(j - i), shape (n_queries, n_keys)
    bucket = t5_bucket(relative_positions(n_queries, n_keys), bidirectional, table.shape[0],
                                   max_distance)
    # b_{h,ij} = T[bucket(j - i), h], shape (n_heads, n_queries, n_keys)
    return np.moveaxis(table[bucket], -1, 0)


# --- cost of the three methods --------------------------------------------------------


class PositionCost(NamedTuple):
    """What a relative method costs in one model configuration (see :func:`position_cost`)."""

    parameters: int
    multiply_adds: int
    content_multiply_adds: int


@contract(keys_after_queries)
def position_cost(
    method: Annotated[str, OneOf("shaw", "transformer_xl", "t5")],
    n_layers: Count,
    n_heads: Count,
    d_head: Count,
    n_queries: Size,
    n_keys: Size | None = None,
    *,
    clip: NonNegative = 16,
    num_buckets: Annotated[int, Integer(2)] = 32,
    tied_uv: Flag = False,
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

    ``method`` is one of ``"shaw"``, ``"transformer_xl"`` and ``"t5"``; ``n_keys``
    defaults to ``n_queries`` and may not be fewer. ``clip`` is Shaw's clipping
    distance :math:`c`, ``num_buckets`` T5's number of buckets :math:`B`, and
    ``tied_uv`` (Transformer-XL only) counts one :math:`u, v` pair for all layers.
    Returns a :class:`PositionCost` ``(parameters, multiply_adds,
    content_multiply_adds)`` of ints.
    """
    L, H, d_h = n_layers, n_heads, d_head
    n_q, n_k = n_queries, n_queries if n_keys is None else n_keys
    # D = H d_head
    D = H * d_h
    # QK^T and AV: 2 H n_q n_k d_head
    content = 2 * H * n_q * n_k * d_h
    if method == "shaw":
        # 2 L (2c + 1) d_head parameters; 2 H n_q n_k d_head multiply-adds
        return PositionCost(2 * L * (2 * clip + 1) * d_h, 2 * H * n_q * n_k * d_h, content)
    if method == "transformer_xl":
        # u, v: 2D for the stack, or 2 L D
        uv = 2 * D if tied_uv else 2 * L * D
        # n_k D^2 + H n_q n_k d_head + 2 H n_k d_head
        work = n_k * D * D + H * n_q * n_k * d_h + 2 * H * n_k * d_h
        return PositionCost(L * D * D + uv, work, content)
    # T5: B H parameters; H n_q n_k additions
    return PositionCost(num_buckets * H, H * n_q * n_k, content)
