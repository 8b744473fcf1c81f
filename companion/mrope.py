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
Qwen2-VL and Qwen2.5-VL, and Transformers' before version 5; version 5.24 moves on by
the grid's larger spatial side instead, :func:`multimodal_positions`). Qwen2.5-VL
spaces a video's temporal positions by ``tokens_per_second`` times the seconds per
grid (``time_interval``); how Qwen3-VL and VideoRoPE give a video its time is in
:mod:`companion.video_time`.

Numbers are numpy float64 and angles are formed in float64; ``x`` may use either pair
layout of :mod:`companion.rope` (``"split"``, the ``rotate_half`` form of the library,
is the default here).
"""
from __future__ import annotations

import numbers
from typing import Annotated

import numpy as np

from . import absolute
from . import rope as _rope
from ._contracts import (
    MAX_POSITION,
    Frequencies,
    InstanceOf,
    Integer,
    OneOf,
    Positions,
    Positive,
    PositiveCounts,
    Size,
    Vectors,
    WholeNumbers,
    contract,
    entries,
    limit,
    multiples,
    pairs_fit,
    same_shape,
)

__all__ = [
    "AXES",
    "LAYOUTS",
    "QWEN2_VL_SECTIONS",
    "QWEN3_VL_SECTIONS",
    "ADVANCES",
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

#: How the pairs are given to the axes, one of :data:`LAYOUTS`.
Layout = Annotated[str, OneOf(*LAYOUTS)]
#: Pairs per axis (``mrope_section``): integers >= 1.
Counts = Annotated[list, PositiveCounts()]
#: A grid of patches ``(t, h, w)``: three integers >= 1.
Grid = Annotated[list, PositiveCounts(length=3, what="(t, h, w)")]
#: The axis that owns each pair: integers >= 0.
Axes = Annotated[np.ndarray, WholeNumbers(what="axis numbers >= 0")]
#: Where a segment starts: an integer in 0..2**32.
Start = Annotated[int, Integer(0, MAX_POSITION)]
#: A head width of axial 2-D RoPE: a multiple of 4.
AxialWidth = Annotated[int, Integer(4, MAX_POSITION, multiple=4, why="two axes of whole pairs")]
#: A mixed sequence: text lengths (int) and ``(t, h, w)`` grids, in order.
Segments = Annotated[list, InstanceOf((list, tuple), "a list of text lengths and (t, h, w) grids")]


# ---------------------------------------------------------------------------
# Rules between parameters
# ---------------------------------------------------------------------------

_ONE_AXIS_PER_PAIR = same_shape("inv_freq", "axes", why=" (one axis per pair)")

def _room_to_interleave(sections, layout) -> None:
    """The interleaved layout has three sections whose strided pairs fit: ``3 s_1 - 2`` and ``3 s_2 - 1`` below
    ``sum(sections)``."""
    if layout != "interleaved":
        return
    if len(sections) != 3:
        raise ValueError(f"sections must list 3 sizes (temporal, height, width) for the interleaved "
                         f"layout, got {sections}")
    # height owns pairs 1, 4, ..., 3 s_1 - 2 and width 2, 5, ..., 3 s_2 - 1: both must lie below d/2
    if 3 * sections[1] - 2 >= sum(sections) or 3 * sections[2] - 1 >= sum(sections):
        raise ValueError(f"sections must leave room to interleave: 3 * height - 2 and 3 * width - 1 below "
                         f"sum(sections) = {sum(sections)}, got {sections}")


def _one_row_per_axis(positions, axes) -> None:
    """``positions`` has a row for every axis that owns a pair: shape ``(n_axes, ...)``."""
    if positions.ndim < 1 or positions.shape[0] <= int(np.max(axes)):
        raise ValueError(f"positions must have one row per axis, at least {int(np.max(axes)) + 1} rows "
                         f"(shape (n_axes, ...)), got shape {positions.shape}")


def _positions_fit_x(x, positions) -> None:
    """Each axis's row of ``positions`` broadcasts to ``x.shape[:-1]`` (one position per vector)."""
    try:
        np.broadcast_shapes(tuple(positions.shape[1:]), tuple(x.shape[:-1]))
    except ValueError as err:
        raise ValueError(f"positions of shape {positions.shape} must be (n_axes,) + a shape that broadcasts to "
                         f"x.shape[:-1] = {x.shape[:-1]}") from err


def _merged_grid(grid_thw, spatial_merge_size) -> None:
    """The grid's height and width are whole multiples of ``spatial_merge_size``."""
    _, h, w = grid_thw
    if h % spatial_merge_size or w % spatial_merge_size:
        raise ValueError(f"grid_thw's height and width must be multiples of spatial_merge_size = "
                         f"{spatial_merge_size}, got (t, h, w) = {tuple(grid_thw)}")


def _text_and_grids(segments, spatial_merge_size) -> None:
    """``segments`` holds at least one text run (an int >= 1) or ``(t, h, w)`` grid, each grid merged whole."""
    if not segments:
        raise ValueError("segments must hold at least one text run or grid, got an empty list")
    for item in segments:
        if isinstance(item, numbers.Integral) and not isinstance(item, bool):
            Integer(1, MAX_POSITION)("segments (a text run)", item)
        else:
            _merged_grid(PositiveCounts(length=3, what="(t, h, w)")("segments (a grid)", item), spatial_merge_size)




# ---------------------------------------------------------------------------
# Which axis turns which pair
# ---------------------------------------------------------------------------

@contract(_room_to_interleave)
def pair_axes(sections: Counts, layout: Layout = "sectioned") -> np.ndarray:
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
    if layout == "sectioned":
        # a(i) = j on the j-th run of s_j consecutive pairs
        return np.repeat(np.arange(len(sections)), sections)
    owner = np.zeros(sum(sections), dtype=np.int64)
    # height: pairs 1, 4, 7, ... below 3 s_1; width: pairs 2, 5, 8, ... below 3 s_2
    owner[1:3 * sections[1]:3] = 1
    owner[2:3 * sections[2]:3] = 2
    return owner


@contract(_ONE_AXIS_PER_PAIR)
def axis_frequencies(inv_freq: Frequencies, axes: Axes) -> np.ndarray:
    r"""The frequency vector of each axis: ``theta^(a)_i = theta_i`` if ``a(i) = a``, else 0.

    Shape ``(n_axes, d/2)`` with ``n_axes = max(axes) + 1``. Row ``a`` is a RoPE
    frequency vector that turns only the pairs of axis ``a``; a pair with frequency 0
    is left as it is, so rotating by every row in turn, each with its own axis's
    position, is the multi-axis rotation (:func:`rotate`).
    """
    # theta^(a)_i = theta_i [a(i) = a], shape (n_axes, d/2)
    return np.where(axes[None, :] == np.arange(axes.max() + 1)[:, None], inv_freq[None, :], 0.0)


@contract(_ONE_AXIS_PER_PAIR, _one_row_per_axis,
          entries("positions.size * len(inv_freq)", lambda positions, inv_freq: positions.size * inv_freq.size))
def angles(positions: Positions, inv_freq: Frequencies, axes: Axes) -> np.ndarray:
    r"""The angles ``phi[..., i] = p_{a(i)} theta_i``, formed in float64.

    ``positions`` has shape ``(n_axes, ...)``: one row of positions per axis (temporal,
    height, width for M-RoPE; row, column for 2-D RoPE). Returns shape ``(..., d/2)``.
    For a text token, whose axes all hold ``m``, this is ``m theta_i``: the angles of
    :func:`companion.rope.angles`.
    """
    # p_{a(i)} for every pair i: shape (..., d/2)
    owned = np.moveaxis(positions[axes], 0, -1).astype(np.float64)
    # phi_i = p_{a(i)} theta_i
    return owned * inv_freq


@contract(pairs_fit("x"), _ONE_AXIS_PER_PAIR, _one_row_per_axis, _positions_fit_x,
          entries("positions.size * len(inv_freq)", lambda positions, inv_freq: positions.size * inv_freq.size))
def rotate(x: Vectors, positions: Positions, inv_freq: Frequencies, axes: Axes, layout: _rope.Layout = "split"
           ) -> np.ndarray:
    r"""Multi-axis RoPE: turn pair ``i`` of each row of ``x`` by ``p_{a(i)} theta_i``.

    Written as the product of one ordinary rotation per axis, each with that axis's
    positions and frequencies (:func:`axis_frequencies`):

    .. math:: R(p) = \prod_a R_{p_a}\bigl(\theta^{(a)}\bigr) ,

    the factors acting on disjoint pairs, so they commute. ``x``: ``(..., n, d)``;
    ``positions``: ``(n_axes, n)`` (or ``(n_axes,) + x.shape[:-1]``); ``inv_freq``:
    ``(d/2,)``; ``layout``: the pair layout of :mod:`companion.rope`. Returns float64
    of the shape of ``x``.
    """
    out = x
    # R(p) x = R_{p_0}(theta^(0)) R_{p_1}(theta^(1)) ... x
    for a, theta_a in enumerate(axis_frequencies(inv_freq, axes)):
        out = _rope.rotate(out, positions[a], theta_a, layout)
    return out


# ---------------------------------------------------------------------------
# Position grids of a mixed text / image / video sequence
# ---------------------------------------------------------------------------

@contract(entries("3 * n", lambda n: 3 * n))
def text_positions(n: Size, start: Start = 0) -> np.ndarray:
    r"""Positions of ``n`` text tokens from ``start``: every axis counts ``start, start + 1, ...``.

    Shape ``(3, n)``, int64. With equal rows, M-RoPE turns these tokens exactly as 1-D
    RoPE does (Wang et al. 2024).
    """
    # p_t = p_h = p_w = start + j
    return np.tile(start + np.arange(n, dtype=np.int64), (3, 1))


@contract(_merged_grid, entries("grid_thw's 3 * t * h * w", lambda grid_thw: 3 * int(np.prod(grid_thw))),
          limit("(t - 1) * time_interval", lambda grid_thw, time_interval: (grid_thw[0] - 1) * time_interval,
                MAX_POSITION, "2**32, the supported range of positions"))
def vision_positions(grid_thw: Grid, start: Start = 0, spatial_merge_size: Size = 1,
                     time_interval: Positive = 1.0) -> np.ndarray:
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
    (t, h, w), merge, tau = grid_thw, spatial_merge_size, time_interval
    # k tau, rounded down as the library does (.long()), then the row and column indices
    k = np.floor(np.arange(t) * tau).astype(np.int64)
    tk, rows, cols = np.meshgrid(k, np.arange(h // merge), np.arange(w // merge), indexing="ij")
    # every axis offset by the start of the segment
    return start + np.stack([tk.ravel(), rows.ravel(), cols.ravel()])


#: How the start of the segment after a grid is found, one of :data:`ADVANCES`.
ADVANCES = ("largest", "spatial")


@contract(_text_and_grids, limit("(t - 1) * time_interval of each grid",
                                 lambda segments, time_interval: max(
    [(int(s[0]) - 1) * time_interval for s in segments if not isinstance(s, numbers.Integral)], default=0),
    MAX_POSITION, "2**32, the supported range of positions"))
def multimodal_positions(segments: Segments, spatial_merge_size: Size = 1, time_interval: Positive = 1.0,
                         advance: Annotated[str, OneOf(*ADVANCES)] = "largest") -> tuple[np.ndarray, int]:
    r"""M-RoPE positions of a sequence of text runs and images/videos, and the position delta.

    ``segments`` lists the sequence in order: an int ``n`` is a run of ``n`` text
    tokens, a triple ``(t, h, w)`` an image (``t = 1``) or video grid as in
    :func:`vision_positions`, whose temporal positions step by ``time_interval``
    (1 for Qwen2-VL; ``tokens_per_second * second_per_grid`` for Qwen2.5-VL, Bai et
    al. 2025, arXiv:2502.13923, section 2.1, "MRoPE aligned to absolute time"). Each
    segment starts at

    .. math:: \text{start} = 1 + \max(\text{every position of every earlier token}) ,

    0 for the first (``advance="largest"``: the ``get_rope_index`` released with
    Qwen2-VL and Qwen2.5-VL and kept in Transformers 4, which takes
    ``llm_pos_ids_list[-1].max() + 1``). With ``advance="spatial"`` a grid moves the
    start on by ``max(h', w')`` only, whatever its temporal extent, as Transformers
    5.24's ``get_rope_index`` does (``current_pos += max(grid_thw[1], grid_thw[2]) //
    spatial_merge_size``, in Qwen2-VL, Qwen2.5-VL and Qwen3-VL alike): the two agree
    on images, and on videos whose last temporal position ``(t - 1) tau`` stays below
    ``max(h', w')``; otherwise the text after a video reuses temporal positions of the
    video.

    Returns the positions, shape ``(3, N)`` with ``N`` the number of tokens, and the
    *delta* ``max + 1 - N``: a token generated after the sequence, at index ``N + j``,
    gets position ``N + j + delta`` on every axis (Transformers' ``rope_deltas``).
    Because an image of ``h' x w'`` tokens advances the positions only by
    ``max(h', w')``, the delta is negative: a multimodal sequence uses fewer positions
    than it has tokens.
    """
    parts, start = [], 0
    for segment in segments:
        if isinstance(segment, numbers.Integral):
            part = text_positions(int(segment), start)
            # the next segment starts one past this run
            start = int(part.max()) + 1
        else:
            grid = [int(v) for v in segment]
            part = vision_positions(grid, start, spatial_merge_size, time_interval)
            if advance == "largest":
                # one past the largest position so far
                start = int(part.max()) + 1
            else:
                # the start moved on by the larger spatial side only
                start += max(grid[1], grid[2]) // spatial_merge_size
        parts.append(part)
    positions = np.concatenate(parts, axis=1)
    # delta = max + 1 - N
    return positions, int(positions.max()) + 1 - positions.shape[1]


# ---------------------------------------------------------------------------
# 2-D (axial) RoPE for vision transformers
# ---------------------------------------------------------------------------

@contract
def axial_inv_freq(d: AxialWidth, base: Positive = absolute.BASE) -> np.ndarray:
    r"""Frequencies of axial 2-D RoPE for a ``d``-wide head: ``(theta, theta)`` with ``theta_j = base^(-2j/(d/2))``.

    Each axis gets the frequencies of a ``d/2``-wide head (``j < d/4``): the first ``d/4``
    pairs turn with the row, the next ``d/4`` with the column (:func:`axial_pair_axes`).
    Heo et al. (2024), RoPE-Axial (``compute_axial_cis`` in naver-ai/rope-vit, with
    ``base = 100``); Transformers' ``Qwen2VLVisionRotaryEmbedding.compute_axial_rope_parameters``
    (``base = 10000``). Shape ``(d/2,)``; ``d`` must be a multiple of 4.
    """
    # theta_j = base^(-2j/(d/2)), once for rows and once for columns
    return np.tile(_rope.inv_freq(d // 2, base), 2)


@contract
def axial_pair_axes(d: AxialWidth) -> np.ndarray:
    r"""Owners of the pairs in axial 2-D RoPE: axis 0 (row) for pairs ``0 .. d/4 - 1``, axis 1 (column) after.

    The same as ``pair_axes((d // 4, d // 4))``. Shape ``(d/2,)``.
    """
    # pairs 0 .. d/4 - 1 to the row, d/4 .. d/2 - 1 to the column
    return pair_axes([d // 4, d // 4], "sectioned")


@contract(multiples("spatial_merge_size", "h", "w"), entries("2 * h * w", lambda h, w: 2 * h * w))
def patch_positions(h: Size, w: Size, spatial_merge_size: Size = 1) -> np.ndarray:
    r"""(row, column) of each patch of an ``h x w`` grid, in the order a Qwen-VL vision tower reads them.

    The patches are read block by block, ``spatial_merge_size`` rows and columns per
    block, so that the patches merged into one language-model token are neighbours in
    the sequence; with ``spatial_merge_size = 1`` this is row-major order. Shape
    ``(2, h w)``, int64. Transformers: ``vision_utils.get_vision_position_ids``.
    """
    merge = spatial_merge_size
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    # (h/m, m, w/m, m) blocks, read block by block
    block = (h // merge, merge, w // merge, merge)
    return np.stack([rows.reshape(block).transpose(0, 2, 1, 3).ravel(),
                     cols.reshape(block).transpose(0, 2, 1, 3).ravel()])

