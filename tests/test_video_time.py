"""companion.video_time: Qwen3-VL's timestamps and frames, and VideoRoPE's allocation and layout."""
from __future__ import annotations

import numpy as np
import pytest

from companion import mrope, rope, video_time


def test_timestamps_are_the_mean_time_of_each_temporal_patch():
    np.testing.assert_allclose(video_time.frame_timestamps([0, 12, 24, 36], 24.0), [0.25, 1.25])
    # an odd count repeats the last frame
    np.testing.assert_allclose(video_time.frame_timestamps([0, 1, 2], 1.0), [0.5, 2.0])


def test_timestamped_frames_are_images_between_text():
    segments = video_time.timestamped_segments([4, 5], (4, 6), 2, before=3, after=2)
    assert segments == [8, (1, 4, 6), 7, (1, 4, 6), 3]
    positions, _ = mrope.multimodal_positions(segments, 2)
    frame = positions[:, 8:8 + 6]
    assert (frame[0] == 8).all() and frame[1].max() == 9 and frame[2].max() == 10


def test_videorope_gives_time_the_slowest_pairs():
    axes = video_time.videorope_pair_axes((16, 24, 24))
    assert (axes[48:] == 0).all() and (axes[:48:2] == 1).all() and (axes[1:48:2] == 2).all()
    wavelengths = 2 * np.pi / rope.inv_freq(128, 1e6)
    assert wavelengths[axes == 0].min() > wavelengths[axes != 0].max()


def test_videorope_positions_follow_the_diagonal_with_spacing_delta():
    p = video_time.videorope_positions([4, (3, 6, 4), 2], 2, temporal_spacing=2)
    v = p[:, 4:4 + 18].reshape(3, 3, 3, 2)          # axis, frame k, row r, column c
    k, r, c = np.meshgrid(np.arange(3), np.arange(3), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(v[0], 4 + 2 * k)                  # time: start + delta k
    np.testing.assert_array_equal(v[1], 4 + 2 * k + r - 1)          # rows centred, (3 - 1) // 2 = 1
    np.testing.assert_array_equal(v[2], 4 + 2 * k + c)              # columns centred, (2 - 1) // 2 = 0
    assert p[0, -2:].tolist() == [9, 10]                            # text after the last time, 8


@pytest.mark.parametrize("call", [
    lambda: video_time.frame_timestamps([], 2.0),
    lambda: video_time.frame_timestamps([0, 1], 0.0),
    lambda: video_time.timestamped_segments([], (4, 4)),
    lambda: video_time.timestamped_segments([3], (3, 4), 2),
    lambda: video_time.videorope_pair_axes((16, 24, 20)),
    lambda: video_time.videorope_positions([3, (1, 3, 4)], 2),
])
def test_bad_arguments_are_refused_by_name(call):
    with pytest.raises(ValueError, match="must"):
        call()
