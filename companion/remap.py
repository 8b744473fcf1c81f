r"""Training-free extension by remapping distances: ReRoPE, Leaky ReRoPE and Dual Chunk Attention.

The scaling methods of chapter 6 change the frequencies ``theta_i``. The methods here
leave the frequencies alone and change the *distance* each query-key pair is rotated
by, so that no pair ever sees a distance the model was not trained on. With RoPE the
score of a query at ``m`` and a key at ``n`` depends only on ``Delta = m - n``
(chapter 3), through

.. math:: S(\Delta) = \operatorname{Re} \sum_i \tilde q_i\, \overline{\tilde k_i}\, e^{\mathrm{i}\Delta\theta_i} ;

replacing ``Delta`` by a remapped ``D(m, n)`` (:func:`remapped_scores`) is all three
methods do. What they cost is that ``D`` is no longer ``m' - n'`` for one position per
token, so one rotation per query and one per key no longer suffices.

* **ReRoPE** (Su 2023, "Rectified Rotary Position Embeddings", kexue.fm/archives/9708;
  code: github.com/bojone/rerope, ``rerope_patch.py``): ``D = min(Delta, w)``. Every
  distance beyond the window ``w`` is read as ``w``; two score matrices are needed
  (:func:`rerope_two_pass`).
* **Leaky ReRoPE** (same post and ``leaky_rerope_patch.py``): ``D = Delta`` below the
  window and ``w + (Delta - w)/k`` beyond it: the far distances are compressed by
  ``k`` instead of frozen.
* **Dual Chunk Attention** (An et al. 2024, "Training-Free Long-Context Scaling of
  Large Language Models", ICML, arXiv:2402.17463; used for Qwen2.5-1M): the sequence
  is cut into chunks of ``s`` tokens; keys are placed at ``n mod s``; a query is
  placed at ``m mod s`` for keys of its own chunk, at ``s, s+1, ..., s+w-1, c-1,
  ..., c-1`` for the previous chunk and at ``c - 1`` for every earlier one, where
  ``c`` is the training length and ``w = c - s`` (the paper's equations 2, 5 and 7;
  :func:`dca_distances`). No distance reaches ``c``, and keys are rotated once, by
  ``n mod s``, so a cache of rotated keys still works; each query is rotated three
  times (:func:`dca_scores`).

Neither ReRoPE needs keys rotated again at generation. Both of Su's passes rotate a
key by its own position only (``R_n k``; and ``k`` itself for ReRoPE, ``R_n k`` with
``theta / k`` for Leaky ReRoPE), so a cache can hold the two copies each key gets
when it arrives, and each new query is rotated twice (:func:`rerope_step`): exact,
at twice the key memory. The released decoding path instead rotates every cached raw
key by its clipped distance at every step (``q_len == 1`` in ``rerope_patch.py``).

The released DCA code (github.com/HKUNLP/ChunkLlama, ``chunkllama_attn_replace.py``,
``replace_with_chunkllama``) sets ``chunk_size = 3 L / 4`` as its largest query index
and ``local_window = L / 16`` for a pretraining length ``L``, and cuts chunks of
``chunk_size - local_window`` tokens: in the terms above ``s = 3L/4 - L/16`` and
``c - 1 = 3L/4`` (:func:`dca_released_settings`).

Su's ReRoPE code also multiplies every query at position ``m`` by
``max(1, ln(m + 1) / ln L)`` for a training length ``L`` (:func:`logn_scale`), the
"log n" scaling that keeps the softmax from flattening as the number of keys grows.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from . import rope as _rope
from ._contracts import (
    MAX_POSITION,
    Array,
    Factor,
    Frequencies,
    Integer,
    Matrix,
    Positions,
    Size,
    contract,
    entries,
    limit,
    ordered,
    pairs_fit,
    rule,
    same_size,
)

__all__ = [
    "rerope_distance",
    "leaky_rerope_distance",
    "relative_distances",
    "dca_query_positions",
    "dca_distances",
    "remapped_scores",
    "rerope_two_pass",
    "dca_scores",
    "logn_scale",
    "rerope_cache",
    "rerope_step",
    "dca_released_settings",
]

#: A training length: an integer in 2..2**32 (``ln L > 0``).
TrainedLength = Annotated[int, Integer(2, MAX_POSITION, why="ln trained_length > 0")]
#: Causal distances ``Delta >= 0`` (query position minus key position) within the supported range.
CausalDistances = Annotated[np.ndarray, Array(nonnegative=True, bounded=True, what="distances",
                                              why="query position minus key position")]
#: A pair layout of :mod:`companion.rope`.
Layout = _rope.Layout

_SQUARE = entries("n * n", lambda n: n * n)


def _one_distance_per_pair(q, k, distances) -> None:
    """``distances`` has one entry per query-key pair: shape ``(n_q, n_k)``."""
    if distances.shape != (q.shape[0], k.shape[0]):
        raise ValueError(f"distances must have shape (n_q, n_k) = {(q.shape[0], k.shape[0])}, got {distances.shape}")


_CHUNK_INSIDE_TRAINING = ordered("chunk", "trained_length",
                                 why=": the local window trained_length - chunk is at least one token")
_SCORES_FIT = entries("n_q * n_k * d / 2", lambda q, k, inv_freq: q.shape[0] * k.shape[0] * inv_freq.size)
_SAME_N = same_size(("q", 0), ("k", 0), what="number of rows n (one query and one key per position)")


@contract
def rerope_distance(distance: CausalDistances, window: Size) -> np.ndarray:
    r"""ReRoPE's distance: ``D = min(Delta, w)`` for causal distances ``Delta >= 0`` (Su 2023).

    Float64 of the shape of ``distance``. Beyond the window every key is "``w`` tokens
    away": the score still depends on the key's content, no longer on how far it is.
    """
    # D = min(Delta, w)
    return np.minimum(distance, window)


@contract
def leaky_rerope_distance(distance: CausalDistances, window: Size, leak: Factor) -> np.ndarray:
    r"""Leaky ReRoPE's distance: ``D = Delta`` for ``Delta < w``, ``D = w + (Delta - w)/k`` beyond (Su 2023).

    ``leak`` is ``k >= 1`` (Su's code uses 16); ``k = 1`` is plain RoPE and ``k -> inf``
    is ReRoPE. Float64 of the shape of ``distance``.
    """
    # D = Delta inside the window, w + (Delta - w) / k outside
    return np.where(distance < window, distance, window + (distance - window) / leak)


@contract(_SQUARE)
def relative_distances(n: Size) -> np.ndarray:
    r"""The RoPE distance matrix ``Delta[m, n] = m - n`` of a causal sequence (``-1`` above the diagonal).

    Shape ``(n, n)``, int64; entries above the diagonal, which a causal mask hides,
    are set to ``-1`` so that they cannot be mistaken for distances.
    """
    idx = np.arange(n)
    # Delta = m - n on and below the diagonal
    delta = idx[:, None] - idx[None, :]
    return np.where(delta >= 0, delta, -1)


@contract(_CHUNK_INSIDE_TRAINING)
def dca_query_positions(n: Size, chunk: Size, trained_length: TrainedLength) -> dict:
    r"""Dual Chunk Attention's position indices for ``n`` tokens (An et al. 2024, equations 2, 5, 7).

    With chunk size ``s = chunk``, training length ``c = trained_length`` and local
    window ``w = c - s``:

    * keys: ``P_k[n] = n mod s``;
    * queries against their own chunk: ``P_intra[m] = m mod s``;
    * against the previous chunk: ``P_succ[m] = s + (m mod s)`` if ``m mod s < w``,
      else ``c - 1``;
    * against every earlier chunk: ``P_inter[m] = c - 1``.

    Returns a dict of int64 arrays of shape ``(n,)``: ``"key"``, ``"intra"``,
    ``"successive"``, ``"inter"``. Requires ``1 <= s < c``.
    """
    s, c = chunk, trained_length
    idx = np.arange(n)
    # P_k = P_intra = index mod s
    local = idx % s
    # P_succ = s + (m mod s) for the first w = c - s tokens of a chunk, c - 1 after
    successive = np.where(local < c - s, s + local, c - 1)
    return {"key": local, "intra": local, "successive": successive, "inter": np.full(n, c - 1)}


@contract(_CHUNK_INSIDE_TRAINING, _SQUARE)
def dca_distances(n: Size, chunk: Size, trained_length: TrainedLength) -> np.ndarray:
    r"""The distance matrix ``M[m, n]`` of Dual Chunk Attention (An et al. 2024, section 3.3).

    .. math::

        M[m][n] = \begin{cases}
          P_\text{intra}[m] - P_k[n] & \lfloor m/s \rfloor = \lfloor n/s \rfloor \\
          P_\text{succ}[m] - P_k[n] & \lfloor m/s \rfloor - \lfloor n/s \rfloor = 1 \\
          P_\text{inter}[m] - P_k[n] & \lfloor m/s \rfloor - \lfloor n/s \rfloor > 1
        \end{cases}

    for ``n <= m``; ``-1`` above the diagonal. Within a chunk the true distance is kept;
    the ``w`` nearest keys of the previous chunk keep theirs too; all other distances
    lie between ``w`` and ``c - 1``. Shape ``(n, n)``, int64.
    """
    p = dca_query_positions(n, chunk, trained_length)
    block = np.arange(n) // chunk
    # how many chunks back the key lies: 0, 1 or more
    gap = block[:, None] - block[None, :]
    query = np.where(gap == 0, p["intra"][:, None], np.where(gap == 1, p["successive"][:, None], p["inter"][:, None]))
    # M = P_q - P_k on and below the diagonal
    return np.where(relative_distances(n) >= 0, query - p["key"][None, :], -1)


@contract(pairs_fit("q", "k"), _one_distance_per_pair, _SCORES_FIT)
def remapped_scores(q: Matrix, k: Matrix, inv_freq: Frequencies, distances: Matrix, layout: Layout = "split"
                    ) -> np.ndarray:
    r"""RoPE scores with the distance of each query-key pair replaced: ``S[m, n] = q_m^T R_{-D[m, n]} k_n``.

    Written with complex pairs (Su et al. 2021, eq. (12)):

    .. math::

        S[m, n] = \operatorname{Re} \sum_i \tilde q_{m,i}\, \overline{\tilde k_{n,i}}\,
                  e^{\mathrm{i} D[m,n] \theta_i} ,

    which for ``D[m, n] = m - n`` is the ordinary RoPE score of ``q`` at ``m`` and ``k``
    at ``n``. ``q``: ``(n_q, d)``; ``k``: ``(n_k, d)``; ``distances``: ``(n_q, n_k)``,
    any real numbers (negative entries are scored too; mask them afterwards).
    Returns ``(n_q, n_k)`` float64, unscaled (divide by ``sqrt(d)`` for attention).
    """
    # h_{mn,i} = q~_{m,i} conj(k~_{n,i}), shape (n_q, n_k, d/2)
    to_complex = _rope.to_complex
    h = to_complex(q, layout)[:, None, :] * np.conj(to_complex(k, layout))[None, :, :]
    # S = Re sum_i h e^{i D theta}
    return np.sum(h * np.exp(1j * distances[..., None] * inv_freq), axis=-1).real


@contract(pairs_fit("q", "k"), _SCORES_FIT,
          limit("window * leak", lambda window, leak: window * (leak or 1), MAX_POSITION,
                "2**32, the supported range of positions"))
def rerope_two_pass(q: Matrix, k: Matrix, inv_freq: Frequencies, window: Size, leak: Size | None = None,
                    layout: Layout = "split") -> np.ndarray:
    r"""(Leaky) ReRoPE as Su's code computes it: two score matrices, merged by the window.

    * pass 1: ``q`` at ``m`` and ``k`` at ``n`` with the frequencies ``theta`` (plain RoPE);
    * pass 2, ReRoPE: ``q`` rotated by ``w``, ``k`` not rotated, so the distance is ``w``;
      Leaky ReRoPE (integer ``leak = k``): ``q`` at ``m + w(k - 1)`` and ``k`` at ``n``,
      both with the frequencies ``theta / k``, so the distance is
      ``(m - n + w(k - 1)) / k = w + (Delta - w)/k``;
    * ``S = pass 1`` where ``|Delta| < w``, ``pass 2`` elsewhere.

    The same numbers as :func:`remapped_scores` with :func:`rerope_distance` or
    :func:`leaky_rerope_distance`, for twice the work. ``q`` and ``k``: ``(n, d)``,
    positions ``0 .. n-1``. Returns ``(n, n)``, unscaled.
    """
    rotate, theta, w = _rope.rotate, inv_freq, window
    m = np.arange(q.shape[0])
    n = np.arange(k.shape[0])
    # pass 1: plain RoPE scores (R_m q) . (R_n k)
    first = rotate(q, m, theta, layout) @ rotate(k, n, theta, layout).T
    if leak is None:
        # pass 2: (R_w q) . k, the distance frozen at w
        second = rotate(q, np.full_like(m, w), theta, layout) @ k.T
    else:
        # theta / k
        slow = theta / leak
        # pass 2: (R_{m + w(k-1)}(theta/k) q) . (R_n(theta/k) k)
        second = rotate(q, m + w * (leak - 1), slow, layout) @ rotate(k, n, slow, layout).T
    # inside the window pass 1, outside pass 2
    return np.where(np.abs(m[:, None] - n[None, :]) < w, first, second)


@contract(pairs_fit("q", "k"), _SAME_N, _SCORES_FIT, _CHUNK_INSIDE_TRAINING)
def dca_scores(q: Matrix, k: Matrix, inv_freq: Frequencies, chunk: Size, trained_length: TrainedLength,
               layout: Layout = "split") -> np.ndarray:
    r"""Dual Chunk Attention's scores as its implementation forms them: three query rotations, one key rotation.

    Keys are rotated once by ``P_k``; each query is rotated by ``P_intra``, ``P_succ``
    and ``P_inter`` (:func:`dca_query_positions`), and the score of each pair is taken
    from the rotation that matches how many chunks apart the two tokens are. Equal to
    :func:`remapped_scores` with :func:`dca_distances` on and below the diagonal.
    ``q``, ``k``: ``(n, d)``. Returns ``(n, n)``, unscaled; entries above the diagonal
    are 0.
    """
    rotate, n = _rope.rotate, q.shape[0]
    p = dca_query_positions(n, chunk, trained_length)
    # keys rotated once, by n mod s: what a cache of rotated keys holds
    k_rot = rotate(k, p["key"], inv_freq, layout)
    # each query rotated three times: (R_{P_kind} q) . (R_{P_k} k)
    scores = {kind: rotate(q, p[kind], inv_freq, layout) @ k_rot.T for kind in ("intra", "successive", "inter")}
    block = np.arange(n) // chunk
    gap = block[:, None] - block[None, :]
    # same chunk, previous chunk, earlier chunks; nothing above the diagonal
    merged = np.where(gap == 0, scores["intra"], np.where(gap == 1, scores["successive"], scores["inter"]))
    return np.where(relative_distances(n) >= 0, merged, 0.0)


@contract
def logn_scale(positions: Positions, trained_length: TrainedLength) -> np.ndarray:
    r"""The "log n" query scale of Su's ReRoPE code: ``max(1, ln(m + 1) / ln L)``.

    Equal to 1 inside the training length ``L`` and growing like ``ln m`` beyond it, so
    that the scores of a query that sees ``m + 1`` keys sharpen as the keys multiply
    (the same idea as Llama 4's temperature, :func:`companion.nope.attention_temperature`).
    Float64 of the shape of ``positions``.
    """
    # max(1, ln(m + 1) / ln L)
    return np.maximum(1.0, np.log(positions + 1.0) / np.log(trained_length))



def _one_query(q, k_near, k_far) -> None:
    """One query ``(d,)`` and two cached copies ``(n, d)`` of the same keys."""
    if q.ndim != 1 or k_near.shape != k_far.shape or k_near.ndim != 2 or k_near.shape[1] != q.size:
        raise ValueError(f"q must have shape (d,) and k_near, k_far the same shape (n, d), got {q.shape}, "
                         f"{k_near.shape} and {k_far.shape}")


@contract(pairs_fit("k"), limit("window * leak", lambda window, leak: window * (leak or 1), MAX_POSITION,
                               "2**32, the supported range of positions"))
def rerope_cache(k: Matrix, window: Size, inv_freq: Frequencies, leak: Size | None = None,
                 layout: Layout = "split") -> tuple[np.ndarray, np.ndarray]:
    r"""The two copies (Leaky) ReRoPE can cache for keys ``k`` at positions ``0 .. n-1``: ``(R_n k_n, far copy)``.

    The near copy ``R_n k_n`` serves the distances below the window (pass 1 of
    :func:`rerope_two_pass`); the far copy serves the rest: ``k_n`` itself for ReRoPE,
    ``R_n k_n`` with the frequencies ``theta / leak`` for Leaky ReRoPE. Both depend on
    the key's own position only, so neither changes while the cache grows. Returns two
    ``(n, d)`` arrays.
    """
    n = np.arange(k.shape[0])
    near = _rope.rotate(k, n, inv_freq, layout)
    far = k.copy() if leak is None else _rope.rotate(k, n, inv_freq / leak, layout)
    return near, far


@contract(rule(("q", "k_near", "k_far"), _one_query), pairs_fit("q"),
          limit("window * leak", lambda window, leak: window * (leak or 1), MAX_POSITION,
                "2**32, the supported range of positions"))
def rerope_step(q: Annotated[np.ndarray, Array(ndim=1)], k_near: Matrix, k_far: Matrix, window: Size,
                inv_freq: Frequencies, leak: Size | None = None, layout: Layout = "split") -> np.ndarray:
    r"""Scores of the newest query, at position ``t = n - 1``, against ``n`` cached keys, no key rotated again.

    ``k_near``, ``k_far``: the copies of :func:`rerope_cache`. The query is rotated
    twice: by ``t`` for the keys with ``t - n < w`` (against ``k_near``), and by ``w``
    (ReRoPE) or by ``t + w (leak - 1)`` with ``theta / leak`` (Leaky ReRoPE) for the
    rest (against ``k_far``). Equal to the last row of :func:`remapped_scores` with
    :func:`rerope_distance` or :func:`leaky_rerope_distance`. Returns ``(n,)``, unscaled.
    """
    n = k_near.shape[0]
    t, w = n - 1, window
    near = k_near @ _rope.rotate(q, t, inv_freq, layout)
    if leak is None:
        far = k_far @ _rope.rotate(q, w, inv_freq, layout)
    else:
        far = k_far @ _rope.rotate(q, t + w * (leak - 1), inv_freq / leak, layout)
    # distances t - j below the window use the near copies
    return np.where(t - np.arange(n) < w, near, far)


@contract
def dca_released_settings(pretraining_length: Annotated[int, Integer(16, MAX_POSITION, multiple=16,
                                                                     why="the code takes 3L/4 and L/16")],
                          local_window: Size | None = None) -> tuple[int, int]:
    r"""The ``(chunk, trained_length)`` of :func:`dca_distances` that the released DCA code uses.

    ``chunkllama_attn_replace.replace_with_chunkllama``: ``chunk_size = 3 L // 4``,
    ``local_window = L // 16`` unless given; chunks of ``chunk_len = chunk_size -
    local_window`` tokens; keys at ``n mod chunk_len``, queries at ``m mod chunk_len``
    (own chunk), ``min(m mod chunk_len + chunk_len, chunk_size)`` (previous chunk) and
    ``chunk_size`` (earlier chunks). That is :func:`dca_distances` with ``s =
    chunk_len`` and ``c - 1 = chunk_size``: the code never rotates by more than ``3L/4``,
    and its exact window is ``c - s = local_window + 1`` tokens. Returns
    ``(chunk_len, chunk_size + 1)``.
    """
    chunk_size = pretraining_length * 3 // 4
    window = pretraining_length // 16 if local_window is None else local_window
    if window >= chunk_size:
        raise ValueError(f"local_window must be below chunk_size = 3 L / 4 = {chunk_size}, got {window}")
    return chunk_size - window, chunk_size + 1
