r"""How a video gets its time: frame indices, absolute time, timestamps in the text, and VideoRoPE.

Multimodal RoPE (:mod:`companion.mrope`) gives every video token a temporal position.
What that position counts differs between models:

* **Qwen2-VL** (Wang et al. 2024, arXiv:2409.12191): the index ``k`` of the temporal
  grid (two frames per grid), whatever the frame rate.
* **Qwen2.5-VL** (Bai et al. 2025, "Qwen2.5-VL Technical Report", arXiv:2502.13923,
  section 2.1, "Multimodal Rotary Position Embedding Aligned to Absolute Time"):
  ``floor(k * tokens_per_second * second_per_grid)``, so that a temporal step means the
  same stretch of time at every sampling rate. :func:`companion.mrope.multimodal_positions`
  takes the product as ``time_interval``; Transformers' ``Qwen2_5_VLModel.get_rope_index``
  computes it from ``vision_config.tokens_per_second`` (2 in the released 7B file) and
  ``second_per_grid_ts`` (the processor's ``temporal_patch_size / fps``).
* **Qwen3-VL** (Qwen Team 2025, "Qwen3-VL Technical Report", arXiv:2511.21631:
  "text-based time alignment ..., evolving from T-RoPE to explicit textual timestamp
  alignment"): the time is written into the prompt. The processor puts the text
  ``<t seconds>`` before every temporal grid of a video, each grid between its own
  vision-start and vision-end tokens (Transformers' ``Qwen3VLProcessor.replace_video_token``,
  timestamps from ``_calculate_timestamps``: the mean of the first and last frame of
  each temporal patch, divided by the frame rate, :func:`frame_timestamps`), and
  ``Qwen3VLModel.get_rope_index`` splits ``video_grid_thw`` into grids with ``t = 1``.
  Every frame is then placed like an image, and the temporal axis no longer carries a
  frame index (:func:`timestamped_segments`).
* **VideoRoPE** (Wei et al. 2025, "VideoRoPE: What Makes for Good Video Rotary Position
  Embedding?", ICML 2025, arXiv:2502.05173; code: github.com/Wiselnn570/VideoRoPE,
  ``videorope-transformer/modeling_videorope.py``): the temporal axis gets the slowest
  pairs, the spatial axes alternate over the fast ones (*low-frequency temporal
  allocation*, :func:`videorope_pair_axes`); the spatial positions of a frame are
  centred and moved along the diagonal with time (*diagonal layout*), and the
  temporal step is a factor ``delta`` (*adjustable temporal spacing*, 2 in the released
  code; :func:`videorope_positions`).

Positions are int64, ``(3, N)`` rows temporal, height, width, as in :mod:`companion.mrope`.
"""
from __future__ import annotations

import numbers
from typing import Annotated

import numpy as np

from . import mrope as _mrope
from ._contracts import (
    MAX_POSITION,
    Array,
    Integer,
    Positive,
    PositiveCounts,
    Size,
    contract,
    entries,
    limit,
)

__all__ = ["frame_timestamps", "timestamped_segments", "videorope_pair_axes", "videorope_positions"]

#: Frame indices sampled from a video: non-negative numbers.
FrameIndices = Annotated[np.ndarray, Array(ndim=1, nonempty=True, nonnegative=True)]
#: A run of text tokens per frame: integers >= 1, one per temporal grid.
TokenCounts = Annotated[list, PositiveCounts(what="tokens")]
#: A frame's grid of patches ``(h, w)``.
FrameGrid = Annotated[list, PositiveCounts(length=2, what="(h, w)")]
#: A mixed sequence of text lengths and ``(t, h, w)`` grids, as in :mod:`companion.mrope`.
Segments = _mrope.Segments
#: Pairs per axis (``mrope_section``): temporal, height, width.
Sections = Annotated[list, PositiveCounts(length=3, what="(temporal, height, width)")]


def _merged(grid_hw, spatial_merge_size) -> None:
    """The frame's height and width are whole multiples of ``spatial_merge_size``."""
    if grid_hw[0] % spatial_merge_size or grid_hw[1] % spatial_merge_size:
        raise ValueError(f"grid_hw must be multiples of spatial_merge_size = {spatial_merge_size}, got {grid_hw}")


@contract
def frame_timestamps(frame_indices: FrameIndices, fps: Positive, temporal_patch_size: Size = 2) -> np.ndarray:
    r"""The time, in seconds, that Qwen3-VL writes before each temporal grid of a video.

    Frames ``i_0, i_1, ...`` sampled at ``fps`` frames per second are grouped by
    ``temporal_patch_size`` (the last frame repeated to fill the last group); each group
    is stamped with the mean of its first and last frame's time,

    .. math:: \tau_g = \tfrac12 \bigl(i_{gP} + i_{gP + P - 1}\bigr) / \text{fps} .

    Transformers' ``Qwen3VLProcessor._calculate_timestamps``; the prompt shows each as
    ``<{tau:.1f} seconds>``. Returns float64 of shape ``(ceil(len / P),)``.
    """
    idx = list(frame_indices)
    P = temporal_patch_size
    # repeat the last frame until the groups are full
    idx += [idx[-1]] * (-len(idx) % P)
    seconds = np.asarray(idx, dtype=np.float64) / float(fps)
    # the mean of the first and last frame of each group
    return (seconds[0::P] + seconds[P - 1::P]) / 2.0


@contract(_merged)
def timestamped_segments(timestamp_tokens: TokenCounts, grid_hw: FrameGrid, spatial_merge_size: Size = 1,
                         before: Annotated[int, Integer(0, MAX_POSITION)] = 0,
                         after: Annotated[int, Integer(0, MAX_POSITION)] = 0) -> list:
    r"""Qwen3-VL's prompt for one video, as segments of :func:`companion.mrope.multimodal_positions`.

    Frame ``g`` (a temporal grid of two frames) is written as the text of its
    timestamp (``timestamp_tokens[g]`` tokens), a vision-start token, the frame's
    ``h' w'`` tokens and a vision-end token. The text runs between frames are therefore
    ``1 + timestamp_tokens[g] + 1`` long (the previous frame's end, the timestamp, the
    next start), and every frame is a grid ``(1, h, w)``: its temporal position is the
    same for all its tokens, like an image's. ``before`` and ``after`` are text runs
    around the video (0 for none). Returns the list of segments.
    """
    h, w = grid_hw
    segments, pending = [], before
    for stamp in timestamp_tokens:
        # text before the frame: what came before, the timestamp, the vision-start token
        segments += [pending + stamp + 1, (1, h, w)]
        # the vision-end token opens the next text run
        pending = 1
    segments.append(pending + after)
    return segments


@contract
def videorope_pair_axes(sections: Sections) -> np.ndarray:
    r"""VideoRoPE's owners of the pairs: spatial axes alternating over the fast pairs, time on the slowest.

    With ``sections = (s_t, s_h, s_w)``, ``s_h = s_w``, and ``d/2 = s_t + s_h + s_w``
    pairs, pairs ``0 .. s_h + s_w - 1`` alternate height (even) and width (odd) and the
    last ``s_t`` pairs, the slowest, belong to time. The released code reads
    Qwen2-VL's ``mrope_section`` ``[16, 24, 24]`` this way
    (``apply_m_modify_multimodal_rotary_pos_emb``: sections ``[48, 16]`` with "t
    last"). Returns int64 ``(d/2,)``: 0 temporal, 1 height, 2 width.
    """
    s_t, s_h, s_w = sections
    if s_h != s_w:
        raise ValueError(f"sections must give height and width the same number of pairs to alternate them, "
                         f"got {tuple(sections)}")
    spatial = s_h + s_w
    # height on even pairs, width on odd pairs, time on the slowest s_t
    return np.concatenate([1 + np.arange(spatial) % 2, np.zeros(s_t, dtype=np.int64)]).astype(np.int64)


@contract(_mrope._text_and_grids,
          entries("3 * tokens", lambda segments, spatial_merge_size: 3 * sum(
              int(s) if isinstance(s, numbers.Integral) else int(np.prod(s)) // spatial_merge_size ** 2
              for s in segments)),
          limit("temporal_spacing * (text tokens + each grid's t)",
                lambda segments, temporal_spacing: temporal_spacing * sum(
                    int(s) if isinstance(s, numbers.Integral) else int(s[0]) for s in segments),
                MAX_POSITION, "2**32, the supported range of positions"))
def videorope_positions(segments: Segments, spatial_merge_size: Size = 1, temporal_spacing: Size = 2) -> np.ndarray:
    r"""VideoRoPE's positions for text runs and video grids: the diagonal layout with temporal spacing ``delta``.

    Text counts on as in M-RoPE. A grid ``(t, h, w)`` that starts at ``s`` places the
    token of frame ``k``, row ``r`` and column ``c`` (``h' = h / merge``, ``w' = w /
    merge``) at

    .. math::

        (p_t, p_h, p_w) = \bigl(s + \delta k,\; s + \delta k + r - \lfloor (h' - 1)/2 \rfloor,\;
                                s + \delta k + c - \lfloor (w' - 1)/2 \rfloor\bigr) ,

    so that the frame's centre moves along the diagonal ``p_t = p_h = p_w`` with time
    and a step of ``delta`` separates frames; the next segment starts one past the
    largest *temporal* position. The released code's ``get_t_scale_rope_index``, with
    ``scale_factor = 2.0``. Returns int64 ``(3, N)``; a frame's first rows and columns
    lie below its start ``s``, negative when a video opens the sequence.
    """
    parts, start, merge, delta = [], 0, spatial_merge_size, temporal_spacing
    for segment in segments:
        if isinstance(segment, numbers.Integral):
            part = _mrope.text_positions(int(segment), start)
        else:
            t, h, w = (int(v) for v in segment)
            hh, ww = h // merge, w // merge
            k, r, c = np.meshgrid(np.arange(t), np.arange(hh), np.arange(ww), indexing="ij")
            # the frame's time, then its rows and columns centred and carried along the diagonal
            p_t = start + delta * k.ravel()
            part = np.stack([p_t, p_t + r.ravel() - (hh - 1) // 2, p_t + c.ravel() - (ww - 1) // 2])
        parts.append(part)
        # the next segment starts one past the largest temporal position
        start = int(part[0].max()) + 1
    return np.concatenate(parts, axis=1).astype(np.int64)
