r"""RoPE over several position axes: multimodal RoPE (M-RoPE) and 2-D RoPE for vision.

A text token has one position ``m``; an image patch has a row and a column, a video
patch a time as well. Rotary embeddings extend to several axes by giving each pair of
components to one axis: pair ``i`` of a token with position vector
``p = (p_0, p_1, ...)`` is turned by

.. math:: \varphi_i(p) = p_{a(i)}\,\theta_i ,

where ``a(i)`` is the axis that owns pair ``i`` (:func:`pair_axes`). Because each pair
still turns by one number times its frequency, the score between a query at ``p`` and
a key at ``p'`` depends on the positions only through the differences
``p'_a - p_a``, axis by axis, and when every axis of a token holds the same number
``m`` (a text token) the angle is ``m theta_i`` for every pair: plain 1-D RoPE.

Three layouts of the owners are in use:

* **sectioned M-RoPE** (Qwen2-VL, Wang et al. 2024, arXiv:2409.12191; also Qwen2.5-VL
  and GLM-4.5V): the ``d/2`` pairs are cut into three consecutive sections, temporal,
  height and width, of sizes ``mrope_section`` (``[16, 24, 24]`` for a 128-wide head).
  The temporal axis gets the fastest pairs, the width axis the slowest. Hugging Face
  Transformers: ``Qwen2VLRotaryEmbedding.recomposition_frequencies``
  (``freq.split(mrope_section)``, section ``j`` taken from axis ``j % 3``).
* **interleaved M-RoPE** (Qwen3-VL; the "MRoPE-Interleave" of Huang et al. 2025,
  arXiv:2510.23095): pair ``i`` with ``i % 3 == 1`` belongs to height and
  ``i % 3 == 2`` to width while ``i < 3 * sections[axis]``, every other pair to time,
  so that every axis has fast and slow pairs. Transformers:
  ``Qwen3VLTextRotaryEmbedding.recomposition_frequencies`` (default sections
  ``[24, 20, 20]``).
* **axial 2-D RoPE** for a vision transformer (Heo et al. 2024, "Rotary Position
  Embedding for Vision Transformer", arXiv:2403.13298, RoPE-Axial; Qwen2-VL's vision
  tower): the first half of the pairs turns with the patch's row, the second half
  with its column, each half with the frequencies of a ``d/2``-wide head,
  ``theta_j = base^(-2j/(d/2))`` (:func:`axial_inv_freq`). Transformers:
  ``Qwen2VLVisionRotaryEmbedding`` (``rope_type: "axial"``).

The positions that a vision-language model gives a mixed sequence of text, images and
videos are built by :func:`vision_positions` and :func:`multimodal_positions`: text
tokens count up on all three axes at once; the patches of an image share one temporal
position and count rows and columns from where the image starts; the next segment
starts one past the largest position used so far (the ``get_rope_index`` released with
Qwen2-VL, and Transformers' before version 5).

Numbers are numpy float64 and angles are formed in float64; ``x`` may use either pair
layout of :mod:`companion.rope` (``"split"``, the ``rotate_half`` form of the library,
is the default here).
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _checks
from . import rope as _rope

__all__ = [
    "AXES",
    "LAYOUTS",
    "QWEN2_VL_SECTIONS",
    "QWEN3_VL_SECTIONS",
    "pair_axes",
    "axis_frequencies",
    "angles",
    "rotate",
    "text_positions",
    "vision_positions",
    "multimodal_positions",
    "axial_inv_freq",
    "axial_pair_axes",
    "patch_positions",
]

#: The three position axes of M-RoPE, in the order of ``mrope_section``.
AXES = ("temporal", "height", "width")
#: How the pairs are given to the axes: consecutive sections (Qwen2-VL) or interleaved (Qwen3-VL).
LAYOUTS = ("sectioned", "interleaved")
#: ``mrope_section`` of Qwen2-VL and Qwen2.5-VL (128-wide heads): pairs per temporal, height, width axis.
QWEN2_VL_SECTIONS = (16, 24, 24)
#: ``mrope_section`` of Qwen3-VL (128-wide heads), laid out interleaved.
QWEN3_VL_SECTIONS = (24, 20, 20)


# ---------------------------------------------------------------------------
# Which axis turns which pair
# ---------------------------------------------------------------------------

def pair_axes(sections, layout: str = "sectioned") -> np.ndarray:
    r"""The axis ``a(i)`` that owns each pair ``i``: an int array of shape ``(d/2,)``, ``d/2 = sum(sections)``.

    ``sections`` lists how many pairs each axis owns (``mrope_section``; any number of
    axes for ``"sectioned"``, three for ``"interleaved"``).

    * ``"sectioned"``: ``a(i) = j`` for ``s_0 + ... + s_{j-1} <= i < s_0 + ... + s_j``
      (Qwen2-VL's consecutive sections, Wang et al. 2024).
    * ``"interleaved"``: ``a(i) = 1`` if ``i % 3 == 1`` and ``i < 3 s_1``; ``a(i) = 2``
      if ``i % 3 == 2`` and ``i < 3 s_2``; otherwise ``a(i) = 0`` (Qwen3-VL;
      Transformers' ``Qwen3VLTextRotaryEmbedding``). Axis 0 then owns ``s_0`` pairs
      because the sections add up to ``d/2``.
    """
    sections, layout = _sections(sections, layout)
    if layout == "sectioned":
        # a(i) = j on the j-th run of s_j consecutive pairs
        return np.repeat(np.arange(len(sections)), sections)
    owner = np.zeros(sum(sections), dtype=np.int64)
    # height: pairs 1, 4, 7, ... below 3 s_1; width: pairs 2, 5, 8, ... below 3 s_2
    owner[1:3 * sections[1]:3] = 1
    owner[2:3 * sections[2]:3] = 2
    return owner


def axis_frequencies(inv_freq, axes) -> np.ndarray:
    r"""The frequency vector of each axis: ``theta^(a)_i = theta_i`` if ``a(i) = a``, else 0.

    Shape ``(n_axes, d/2)`` with ``n_axes = max(axes) + 1``. Row ``a`` is a RoPE
    frequency vector that turns only the pairs of axis ``a``; a pair with frequency 0
    is left as it is, so rotating by every row in turn, each with its own axis's
    position, is the multi-axis rotation (:func:`rotate`).
    """
    theta, owner = _frequencies_and_axes(inv_freq, axes)
    # theta^(a)_i = theta_i [a(i) = a]
    return np.where(owner[None, :] == np.arange(owner.max() + 1)[:, None], theta[None, :], 0.0)


def angles(positions, inv_freq, axes) -> np.ndarray:
    r"""The angles ``phi[..., i] = p_{a(i)} theta_i``, formed in float64.

    ``positions`` has shape ``(n_axes, ...)``: one row of positions per axis (temporal,
    height, width for M-RoPE; row, column for 2-D RoPE). Returns shape ``(..., d/2)``.
    For a text token, whose axes all hold ``m``, this is ``m theta_i``: the angles of
    :func:`companion.rope.angles`.
    """
    theta, owner = _frequencies_and_axes(inv_freq, axes)
    p = _axis_positions(positions, owner)
    # p_{a(i)} for every pair i: shape (..., d/2)
    owned = np.moveaxis(p[owner], 0, -1).astype(np.float64)
    # phi_i = p_{a(i)} theta_i
    return owned * theta


def rotate(x, positions, inv_freq, axes, layout: str = "split") -> np.ndarray:
    r"""Multi-axis RoPE: turn pair ``i`` of each row of ``x`` by ``p_{a(i)} theta_i``.

    Written as the product of one ordinary rotation per axis, each with that axis's
    positions and frequencies (:func:`axis_frequencies`):

    .. math:: R(p) = \prod_a R_{p_a}\bigl(\theta^{(a)}\bigr) ,

    the factors acting on disjoint pairs, so they commute. ``x``: ``(..., n, d)``;
    ``positions``: ``(n_axes, n)`` (or ``(n_axes,) + x.shape[:-1]``); ``inv_freq``:
    ``(d/2,)``; ``layout``: the pair layout of :mod:`companion.rope`. Returns float64
    of the shape of ``x``.
    """
    per_axis = axis_frequencies(inv_freq, axes)
    p = _axis_positions(positions, np.asarray(axes))
    out = _checks.array("x", x, ndim_at_least=1)
    # R(p) x = R_{p_0}(theta^(0)) R_{p_1}(theta^(1)) ... x
    for a, theta_a in enumerate(per_axis):
        out = _rope.rotate(out, p[a], theta_a, layout)
    return out


# ---------------------------------------------------------------------------
# Position grids of a mixed text / image / video sequence
# ---------------------------------------------------------------------------

def text_positions(n: int, start: int = 0) -> np.ndarray:
    r"""Positions of ``n`` text tokens from ``start``: every axis counts ``start, start + 1, ...``.

    Shape ``(3, n)``, int64. With equal rows, M-RoPE turns these tokens exactly as 1-D
    RoPE does (Wang et al. 2024).
    """
    n = _checks.size("n", n)
    start = _checks.size("start", start, minimum=0)
    # p_t = p_h = p_w = start + j
    return np.tile(start + np.arange(n, dtype=np.int64), (3, 1))


def vision_positions(grid_thw, start: int = 0, spatial_merge_size: int = 1,
                     time_interval: float = 1.0) -> np.ndarray:
    r"""Positions of the patches of one image or video, in the order the model reads them.

    ``grid_thw = (t, h, w)`` is the grid of patches the vision tower produces; after
    merging ``spatial_merge_size x spatial_merge_size`` neighbours the language model
    sees ``t * h' * w'`` tokens, ``h' = h / merge``, ``w' = w / merge``, in
    time-major, then row-major order. Patch ``(k, r, c)`` gets

    .. math:: (p_t, p_h, p_w) = (\text{start} + \lfloor k\,\tau \rfloor,\ \text{start} + r,\ \text{start} + c)

    with ``tau = time_interval`` (1 for Qwen2-VL; Qwen2.5-VL uses
    ``tokens_per_second * seconds_per_grid`` to tie the temporal axis to time).
    Shape ``(3, t h' w')``, int64. Transformers: ``Qwen2VLModel.get_vision_position_ids``.
    """
    t, h, w = _grid(grid_thw)
    start = _checks.size("start", start, minimum=0)
    merge = _checks.size("spatial_merge_size", spatial_merge_size)
    if h % merge or w % merge:
        raise ValueError(f"grid_thw's height and width must be multiples of spatial_merge_size = {merge}, "
                         f"got (t, h, w) = {(t, h, w)}")
    tau = _checks.positive_float("time_interval", time_interval)
    # k tau, rounded down as the library does (.long()), then the row and column indices
    k = np.floor(np.arange(t) * tau).astype(np.int64)
    tk, rows, cols = np.meshgrid(k, np.arange(h // merge), np.arange(w // merge), indexing="ij")
    # every axis offset by the start of the segment
    return start + np.stack([tk.ravel(), rows.ravel(), cols.ravel()])


def multimodal_positions(segments, spatial_merge_size: int = 1) -> tuple[np.ndarray, int]:
    r"""M-RoPE positions of a sequence of text runs and images/videos, and the position delta.

    ``segments`` lists the sequence in order: an int ``n`` is a run of ``n`` text
    tokens, a triple ``(t, h, w)`` an image (``t = 1``) or video grid as in
    :func:`vision_positions`. Each segment starts at

    .. math:: \text{start} = 1 + \max(\text{every position of every earlier token}) ,

    0 for the first (the ``get_rope_index`` released with Qwen2-VL, Wang et al. 2024,
    takes ``llm_pos_ids_list[-1].max() + 1``). Returns the positions, shape
    ``(3, N)`` with ``N`` the number of tokens, and the *delta* ``max + 1 - N``: a
    token generated after the sequence, at index ``N + j``, gets position
    ``N + j + delta`` on every axis (Transformers' ``rope_deltas``). Because an image
    of ``h' x w'`` tokens advances the positions only by ``max(h', w')``, the delta is
    negative: a multimodal sequence uses fewer positions than it has tokens.

    Transformers 5.24's ``get_rope_index`` advances by ``max(h', w')`` after a grid
    whatever its temporal extent; for an image, or a video whose ``t`` (times the
    time interval) does not exceed ``max(h', w')``, that is the same start.
    """
    merge = _checks.size("spatial_merge_size", spatial_merge_size)
    parts, start = [], 0
    for segment in _segments(segments):
        if isinstance(segment, tuple):
            part = vision_positions(segment, start, merge)
        else:
            part = text_positions(segment, start)
        parts.append(part)
        # the next segment starts one past the largest position so far
        start = int(part.max()) + 1
    positions = np.concatenate(parts, axis=1)
    # delta = max + 1 - N
    return positions, start - positions.shape[1]


# ---------------------------------------------------------------------------
# 2-D (axial) RoPE for vision transformers
# ---------------------------------------------------------------------------

def axial_inv_freq(d: int, base: float = 10000.0) -> np.ndarray:
    r"""Frequencies of axial 2-D RoPE for a ``d``-wide head: ``(theta, theta)`` with ``theta_j = base^(-2j/(d/2))``.

    Each axis gets the frequencies of a ``d/2``-wide head (``j < d/4``): the first ``d/4``
    pairs turn with the row, the next ``d/4`` with the column (:func:`axial_pair_axes`).
    Heo et al. (2024), RoPE-Axial (``compute_axial_cis`` in naver-ai/rope-vit, with
    ``base = 100``); Transformers' ``Qwen2VLVisionRotaryEmbedding.compute_axial_rope_parameters``
    (``base = 10000``). Shape ``(d/2,)``; ``d`` must be a multiple of 4.
    """
    d = _checks.even_positive_int("d", d)
    if d % 4:
        raise ValueError(f"d must be a multiple of 4 (two axes of whole pairs), got {d}")
    # theta_j = base^(-2j/(d/2)), once for rows and once for columns
    return np.tile(_rope.inv_freq(d // 2, base), 2)


def axial_pair_axes(d: int) -> np.ndarray:
    r"""Owners of the pairs in axial 2-D RoPE: axis 0 (row) for pairs ``0 .. d/4 - 1``, axis 1 (column) after.

    The same as ``pair_axes((d // 4, d // 4))``. Shape ``(d/2,)``.
    """
    d = _checks.even_positive_int("d", d)
    if d % 4:
        raise ValueError(f"d must be a multiple of 4 (two axes of whole pairs), got {d}")
    return pair_axes((d // 4, d // 4))


def patch_positions(h: int, w: int, spatial_merge_size: int = 1) -> np.ndarray:
    r"""(row, column) of each patch of an ``h x w`` grid, in the order a Qwen-VL vision tower reads them.

    The patches are read block by block, ``spatial_merge_size`` rows and columns per
    block, so that the patches merged into one language-model token are neighbours in
    the sequence; with ``spatial_merge_size = 1`` this is row-major order. Shape
    ``(2, h w)``, int64. Transformers: ``vision_utils.get_vision_position_ids``.
    """
    h = _checks.size("h", h)
    w = _checks.size("w", w)
    merge = _checks.size("spatial_merge_size", spatial_merge_size)
    if h % merge or w % merge:
        raise ValueError(f"h and w must be multiples of spatial_merge_size = {merge}, got h = {h}, w = {w}")
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    # (h/m, m, w/m, m) blocks, read block by block
    block = (h // merge, merge, w // merge, merge)
    return np.stack([rows.reshape(block).transpose(0, 2, 1, 3).ravel(),
                     cols.reshape(block).transpose(0, 2, 1, 3).ravel()])


# ---------------------------------------------------------------------------
# Argument checks (kept apart from the math)
# ---------------------------------------------------------------------------

def _sections(sections, layout) -> tuple[list[int], str]:
    layout = _checks.one_of("layout", layout, LAYOUTS)
    sections = _checks.positive_ints("sections", sections)
    if layout == "interleaved":
        if len(sections) != 3:
            raise ValueError(f"sections must list 3 sizes (temporal, height, width) for the interleaved "
                             f"layout, got {sections}")
        if 3 * max(sections[1], sections[2]) > sum(sections):
            raise ValueError(f"sections must leave room to interleave: 3 * max(height, width) <= "
                             f"sum(sections) = {sum(sections)}, got {sections}")
    return sections, layout


def _frequencies_and_axes(inv_freq, axes) -> tuple[np.ndarray, np.ndarray]:
    theta = _rope._frequency_vector(inv_freq)
    owner = _checks.integers("axes", axes)
    if owner.shape != theta.shape:
        raise ValueError(f"axes must give one axis per pair, shape {theta.shape}, got {owner.shape}")
    if np.any(owner < 0):
        raise ValueError(f"axes must hold axis numbers >= 0, got a minimum of {owner.min()}")
    return theta, owner


def _axis_positions(positions, owner) -> np.ndarray:
    p = _checks.positions("positions", positions)
    if p.ndim < 1 or p.shape[0] <= int(np.max(owner)):
        raise ValueError(f"positions must have one row per axis, at least {int(np.max(owner)) + 1} rows "
                         f"(shape (n_axes, ...)), got shape {p.shape}")
    return p


def _grid(grid_thw) -> tuple[int, int, int]:
    if not isinstance(grid_thw, (tuple, list, np.ndarray)) or len(grid_thw) != 3:
        raise ValueError(f"grid_thw must be three integers (t, h, w), got {grid_thw!r}")
    return tuple(_checks.positive_ints("grid_thw", grid_thw))


def _segments(segments) -> list:
    try:
        items = list(segments)
    except TypeError as err:
        raise ValueError(f"segments must be a list of text lengths and (t, h, w) grids, got {segments!r}") from err
    if not items:
        raise ValueError("segments must hold at least one text run or grid, got an empty list")
    out = []
    for item in items:
        if isinstance(item, numbers.Integral) and not isinstance(item, bool):
            out.append(_checks.size("segments (a text run)", item))
        else:
            out.append(_grid(item))
    return out
