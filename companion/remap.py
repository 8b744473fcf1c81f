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

Su's ReRoPE code also multiplies every query at position ``m`` by
``max(1, ln(m + 1) / ln L)`` for a training length ``L`` (:func:`logn_scale`), the
"log n" scaling that keeps the softmax from flattening as the number of keys grows.
"""
from __future__ import annotations

import numpy as np

from . import _checks
from . import rope as _rope

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
]


def rerope_distance(distance, window: int) -> np.ndarray:
    r"""ReRoPE's distance: ``D = min(Delta, w)`` for causal distances ``Delta >= 0`` (Su 2023).

    Float64 of the shape of ``distance``. Beyond the window every key is "``w`` tokens
    away": the score still depends on the key's content, no longer on how far it is.
    """
    delta = _distances(distance)
    w = _checks.size("window", window)
    # D = min(Delta, w)
    return np.minimum(delta, w)


def leaky_rerope_distance(distance, window: int, leak: float) -> np.ndarray:
    r"""Leaky ReRoPE's distance: ``D = Delta`` for ``Delta < w``, ``D = w + (Delta - w)/k`` beyond (Su 2023).

    ``leak`` is ``k >= 1`` (Su's code uses 16); ``k = 1`` is plain RoPE and ``k -> inf``
    is ReRoPE. Float64 of the shape of ``distance``.
    """
    delta = _distances(distance)
    w = _checks.size("window", window)
    k = _checks.at_least("leak", leak, 1.0)
    # D = Delta inside the window, w + (Delta - w) / k outside
    return np.where(delta < w, delta, w + (delta - w) / k)


def relative_distances(n: int) -> np.ndarray:
    r"""The RoPE distance matrix ``Delta[m, n] = m - n`` of a causal sequence (``-1`` above the diagonal).

    Shape ``(n, n)``, int64; entries above the diagonal, which a causal mask hides,
    are set to ``-1`` so that they cannot be mistaken for distances.
    """
    n = _checks.size("n", n)
    _checks.entries("n * n", n * n)
    idx = np.arange(n)
    # Delta = m - n on and below the diagonal
    delta = idx[:, None] - idx[None, :]
    return np.where(delta >= 0, delta, -1)


def dca_query_positions(n: int, chunk: int, trained_length: int) -> dict:
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
    n, s, c = _dca_sizes(n, chunk, trained_length)
    idx = np.arange(n)
    # P_k = P_intra = index mod s
    local = idx % s
    # P_succ = s + (m mod s) for the first w = c - s tokens of a chunk, c - 1 after
    successive = np.where(local < c - s, s + local, c - 1)
    return {"key": local, "intra": local, "successive": successive, "inter": np.full(n, c - 1)}


def dca_distances(n: int, chunk: int, trained_length: int) -> np.ndarray:
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
    s = int(chunk)
    block = np.arange(n) // s
    # how many chunks back the key lies: 0, 1 or more
    gap = block[:, None] - block[None, :]
    query = np.where(gap == 0, p["intra"][:, None], np.where(gap == 1, p["successive"][:, None], p["inter"][:, None]))
    # M = P_q - P_k on and below the diagonal
    return np.where(relative_distances(n) >= 0, query - p["key"][None, :], -1)


def remapped_scores(q, k, inv_freq, distances, layout: str = "split") -> np.ndarray:
    r"""RoPE scores with the distance of each query-key pair replaced: ``S[m, n] = q_m^T R_{-D[m, n]} k_n``.

    Written with complex pairs (Su et al. 2021, eq. (12)):

    .. math:: S[m, n] = \operatorname{Re} \sum_i \tilde q_{m,i}\, \overline{\tilde k_{n,i}}\, e^{\mathrm{i} D[m,n] \theta_i} ,

    which for ``D[m, n] = m - n`` is the ordinary RoPE score of ``q`` at ``m`` and ``k``
    at ``n``. ``q``: ``(n_q, d)``; ``k``: ``(n_k, d)``; ``distances``: ``(n_q, n_k)``,
    any real numbers (negative entries are scored too; mask them afterwards).
    Returns ``(n_q, n_k)`` float64, unscaled (divide by ``sqrt(d)`` for attention).
    """
    q, k, theta, D = _score_inputs(q, k, inv_freq, distances)
    # h_{mn,i} = q~_{m,i} conj(k~_{n,i}) and the angles D[m,n] theta_i
    h = _rope.to_complex(q, layout)[:, None, :] * np.conj(_rope.to_complex(k, layout))[None, :, :]
    # S = Re sum_i h e^{i D theta}
    return np.sum(h * np.exp(1j * D[..., None] * theta), axis=-1).real


def rerope_two_pass(q, k, inv_freq, window: int, leak: int | None = None, layout: str = "split") -> np.ndarray:
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
    q, k, theta, _ = _score_inputs(q, k, inv_freq, np.zeros((len(q), len(k))))
    w = _checks.size("window", window)
    m = np.arange(q.shape[0])
    n = np.arange(k.shape[0])
    # pass 1: plain RoPE scores (R_m q) . (R_n k)
    first = _rope.rotate(q, m, theta, layout) @ _rope.rotate(k, n, theta, layout).T
    if leak is None:
        # pass 2: (R_w q) . k, the distance frozen at w
        second = _rope.rotate(q, np.full_like(m, w), theta, layout) @ k.T
    else:
        k_leak = _checks.size("leak", leak)
        slow = theta / k_leak
        # pass 2: (R_{m + w(k-1)}(theta/k) q) . (R_n(theta/k) k)
        second = _rope.rotate(q, m + w * (k_leak - 1), slow, layout) @ _rope.rotate(k, n, slow, layout).T
    # inside the window pass 1, outside pass 2
    return np.where(np.abs(m[:, None] - n[None, :]) < w, first, second)


def dca_scores(q, k, inv_freq, chunk: int, trained_length: int, layout: str = "split") -> np.ndarray:
    r"""Dual Chunk Attention's scores as its implementation forms them: three query rotations, one key rotation.

    Keys are rotated once by ``P_k``; each query is rotated by ``P_intra``, ``P_succ``
    and ``P_inter`` (:func:`dca_query_positions`), and the score of each pair is taken
    from the rotation that matches how many chunks apart the two tokens are. Equal to
    :func:`remapped_scores` with :func:`dca_distances` on and below the diagonal.
    ``q``, ``k``: ``(n, d)``. Returns ``(n, n)``, unscaled; entries above the diagonal
    are 0.
    """
    q, k, theta, _ = _score_inputs(q, k, inv_freq, np.zeros((len(q), len(k))))
    p = dca_query_positions(q.shape[0], chunk, trained_length)
    # keys rotated once, by n mod s: what a cache of rotated keys holds
    k_rot = _rope.rotate(k, p["key"], theta, layout)
    scores = {kind: _rope.rotate(q, p[kind], theta, layout) @ k_rot.T for kind in ("intra", "successive", "inter")}
    block = np.arange(q.shape[0]) // int(chunk)
    gap = block[:, None] - block[None, :]
    # same chunk, previous chunk, earlier chunks; nothing above the diagonal
    merged = np.where(gap == 0, scores["intra"], np.where(gap == 1, scores["successive"], scores["inter"]))
    return np.where(relative_distances(q.shape[0]) >= 0, merged, 0.0)


def logn_scale(positions, trained_length: int) -> np.ndarray:
    r"""The "log n" query scale of Su's ReRoPE code: ``max(1, ln(m + 1) / ln L)``.

    Equal to 1 inside the training length ``L`` and growing like ``ln m`` beyond it, so
    that the scores of a query that sees ``m + 1`` keys sharpen as the keys multiply
    (the same idea as Llama 4's temperature, :func:`companion.nope.attention_temperature`).
    Float64 of the shape of ``positions``.
    """
    m = _checks.positions("positions", positions).astype(np.float64)
    L = _checks.size("trained_length", trained_length, minimum=2)
    # max(1, ln(m + 1) / ln L)
    return np.maximum(1.0, np.log(m + 1.0) / np.log(L))


# ---------------------------------------------------------------------------
# Argument checks (kept apart from the math)
# ---------------------------------------------------------------------------

def _distances(distance) -> np.ndarray:
    delta = _checks.array("distance", distance)
    if np.any(delta < 0):
        raise ValueError(f"distance must be causal distances >= 0 (query position minus key position), "
                         f"got a minimum of {delta.min()}")
    return _checks.bounded("distance", delta)


def _dca_sizes(n, chunk, trained_length) -> tuple[int, int, int]:
    n = _checks.size("n", n)
    c = _checks.size("trained_length", trained_length, minimum=2)
    s = _checks.size("chunk", chunk)
    if s >= c:
        raise ValueError(f"chunk must be smaller than trained_length = {c} (the local window is "
                         f"trained_length - chunk), got {s}")
    return n, s, c


def _score_inputs(q, k, inv_freq, distances):
    q = _checks.array("q", q)
    k = _checks.array("k", k)
    theta = _rope._frequency_vector(inv_freq)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != 2 * theta.size or k.shape[1] != 2 * theta.size:
        raise ValueError(f"q and k must have shape (n, d) with d = 2 * len(inv_freq) = {2 * theta.size}, "
                         f"got {q.shape} and {k.shape}")
    D = _checks.array("distances", distances)
    if D.shape != (q.shape[0], k.shape[0]):
        raise ValueError(f"distances must have shape (n_q, n_k) = {(q.shape[0], k.shape[0])}, got {D.shape}")
    _checks.entries("n_q * n_k * d / 2", D.size * theta.size)
    return q, k, theta, D
