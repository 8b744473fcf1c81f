"""companion.mrope: RoPE over several position axes (M-RoPE, its interleaved layout, 2-D RoPE)."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from companion import mrope, rope, symbolic


def test_sectioned_owners_are_consecutive_runs():
    owner = mrope.pair_axes(mrope.QWEN2_VL_SECTIONS)
    assert owner.shape == (64,)
    assert (owner[:16] == 0).all() and (owner[16:40] == 1).all() and (owner[40:] == 2).all()


def test_interleaved_owners_cycle_and_count_each_axis_as_its_section():
    owner = mrope.pair_axes(mrope.QWEN3_VL_SECTIONS, "interleaved")
    assert list(owner[:6]) == [0, 1, 2, 0, 1, 2]
    assert [int(np.sum(owner == a)) for a in range(3)] == [24, 20, 20]
    # the last four pairs (60..63) lie past 3 * 20 and go to time
    assert (owner[60:] == 0).all()
    # every axis has a fast pair and a slow pair
    for a in range(3):
        assert np.flatnonzero(owner == a).min() <= 2 and np.flatnonzero(owner == a).max() >= 58


def test_interleaving_needs_room():
    with pytest.raises(ValueError, match="sections"):
        mrope.pair_axes((2, 4, 4), "interleaved")
    with pytest.raises(ValueError, match="sections"):
        mrope.pair_axes((4, 4), "interleaved")


def test_text_tokens_turn_exactly_as_plain_rope():
    theta = rope.inv_freq(128, 1e6)
    p = mrope.text_positions(50, start=7)
    for layout, sections in (("sectioned", mrope.QWEN2_VL_SECTIONS), ("interleaved", mrope.QWEN3_VL_SECTIONS)):
        axes = mrope.pair_axes(sections, layout)
        assert np.array_equal(mrope.angles(p, theta, axes), rope.angles(np.arange(7, 57), theta))
        x = np.random.default_rng(1).normal(size=(50, 128))
        np.testing.assert_allclose(mrope.rotate(x, p, theta, axes), rope.rotate(x, np.arange(7, 57), theta, "split"),
                                   atol=1e-12)


def test_score_depends_on_each_axis_only_through_its_difference():
    rng = np.random.default_rng(4)
    theta = rope.inv_freq(32, 1e4)
    axes = mrope.pair_axes((4, 6, 6))
    q, k = rng.normal(size=32), rng.normal(size=32)
    p, p2 = np.array([3, 10, 2]), np.array([1, 4, 9])
    shift = np.array([5, 17, 2])

    def score(a, b):
        return mrope.rotate(q[None], a[:, None], theta, axes)[0] @ mrope.rotate(k[None], b[:, None], theta, axes)[0]

    assert np.isclose(score(p, p2), score(p + shift, p2 + shift), atol=1e-12)
    # a shift of one axis alone changes the score: the axes are not pooled into one distance
    assert not np.isclose(score(p, p2), score(p + np.array([0, 3, 0]), p2 + np.array([0, 0, 3])), atol=1e-3)


def test_rotation_is_the_product_of_per_axis_rotations_in_sympy():
    """R(p)^T R(p') = R(p' - p) for a head of one pair per axis, entries and angles symbolic."""
    thetas = sp.symbols("theta_0:3", positive=True)
    p = sp.symbols("t h w", integer=True)
    p2 = sp.symbols("t' h' w'", integer=True)

    def rotation(pos):
        blocks = [symbolic.rotation_matrix(pos[a], [thetas[a]]) for a in range(3)]
        return sp.diag(*blocks)

    difference = rotation(p).T * rotation(p2) - rotation([b - a for a, b in zip(p, p2)])
    assert symbolic.is_zero_matrix(difference.applyfunc(sp.expand_trig))


def test_axis_frequencies_split_the_vector():
    theta = rope.inv_freq(16, 1e4)
    axes = mrope.pair_axes((2, 3, 3))
    rows = mrope.axis_frequencies(theta, axes)
    assert rows.shape == (3, 8)
    np.testing.assert_array_equal(rows.sum(axis=0), theta)
    assert (np.count_nonzero(rows, axis=1) == [2, 3, 3]).all()


def test_vision_positions_of_an_image_and_a_video():
    image = mrope.vision_positions((1, 4, 6), start=10, spatial_merge_size=2)
    assert image.shape == (3, 6)
    assert (image[0] == 10).all()
    assert list(image[1]) == [10, 10, 10, 11, 11, 11] and list(image[2]) == [10, 11, 12, 10, 11, 12]
    video = mrope.vision_positions((3, 2, 2), start=0, time_interval=2.5)
    assert list(np.unique(video[0])) == [0, 2, 5]


def test_multimodal_positions_start_each_segment_past_the_largest_so_far():
    positions, delta = mrope.multimodal_positions([4, (1, 6, 8), 3], spatial_merge_size=2)
    # 4 text tokens (0..3), a 3 x 4 image from 4 (t = 4, rows 4..6, columns 4..7), text from 8
    assert positions.shape == (3, 4 + 12 + 3)
    assert list(positions[:, -3][:]) == [8, 8, 8]
    assert delta == 11 - 19
    # a video with more frames than rows or columns: the next text starts past its last frame
    positions, _ = mrope.multimodal_positions([2, (5, 2, 2), 1])
    assert positions[0, 2:22].max() == 6 and list(positions[:, -1]) == [7, 7, 7]


def test_axial_frequencies_and_patch_order():
    theta = mrope.axial_inv_freq(32, 100.0)
    np.testing.assert_allclose(theta[:8], rope.inv_freq(16, 100.0))
    np.testing.assert_array_equal(theta[:8], theta[8:])
    np.testing.assert_array_equal(mrope.axial_pair_axes(32), np.repeat([0, 1], 8))
    rows_cols = mrope.patch_positions(2, 4, spatial_merge_size=2)
    assert rows_cols.tolist() == [[0, 0, 1, 1, 0, 0, 1, 1], [0, 1, 0, 1, 2, 3, 2, 3]]
    assert mrope.patch_positions(2, 3).tolist() == [[0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2]]


@pytest.mark.parametrize("call", [
    lambda: mrope.pair_axes([16, 0, 24]),
    lambda: mrope.pair_axes([16, 24, 24], "diagonal"),
    lambda: mrope.angles(np.zeros((2, 5)), rope.inv_freq(8), mrope.pair_axes((1, 1, 2))),
    lambda: mrope.angles(np.zeros((3, 5)), rope.inv_freq(8), [0, 1]),
    lambda: mrope.vision_positions((1, 5, 4), spatial_merge_size=2),
    lambda: mrope.vision_positions((1, 4), spatial_merge_size=2),
    lambda: mrope.multimodal_positions([]),
    lambda: mrope.multimodal_positions([3, "image"]),
    lambda: mrope.axial_inv_freq(30),
    lambda: mrope.patch_positions(3, 4, spatial_merge_size=2),
])
def test_bad_arguments_are_refused_by_name(call):
    with pytest.raises(ValueError, match="must"):
        call()


@pytest.mark.parametrize("sections, room", [([2, 2, 1], True), ([3, 1, 2], True), ([1, 3, 1], False),
                                            ([3, 3, 1], False), ([2, 1, 2], False)])
def test_interleaving_needs_room_for_the_strided_pairs(sections, room):
    """Height takes pairs 1, 4, ..., 3 s_1 - 2 and width 2, 5, ..., 3 s_2 - 1: both below sum(sections)."""
    if room:
        assert mrope.pair_axes(sections, "interleaved").shape == (sum(sections),)
    else:
        with pytest.raises(ValueError, match="^sections must leave room to interleave: 3 \\* height - 2 and 3 \\* width - 1"):
            mrope.pair_axes(sections, "interleaved")


def test_interleaved_owners_of_unequal_height_and_width_sections():
    """Transformers' apply_interleaved_mrope: height on pairs 1::3 below 3 s_1, width on 2::3 below 3 s_2."""
    owner = mrope.pair_axes([3, 1, 2], "interleaved")
    assert owner.dtype == np.int64
    np.testing.assert_array_equal(owner, [0, 1, 2, 0, 0, 2])


def test_one_token_s_positions_and_positions_with_batch_dimensions():
    theta = rope.inv_freq(8)
    axes = np.array([0, 1, 2, 2])
    np.testing.assert_allclose(mrope.angles(np.array([5, 6, 7]), theta, axes), np.array([5, 6, 7, 7]) * theta)
    positions = np.arange(3 * 2 * 4).reshape(3, 2, 4)
    got = mrope.angles(positions, theta, axes)
    assert got.shape == (2, 4, 4)
    for b in range(2):
        np.testing.assert_allclose(got[b], mrope.angles(positions[:, b], theta, axes), rtol=1e-15)


def test_positions_must_fit_x_and_name_the_rows_they_need():
    theta, axes = rope.inv_freq(8), np.array([0, 1, 2, 2])
    x = np.zeros((2, 4, 8))
    assert mrope.rotate(x, np.zeros((3, 4), dtype=int), theta, axes).shape == (2, 4, 8)
    with pytest.raises(ValueError, match=r"^positions of shape \(3, 5\) must be \(n_axes,\) \+ a shape that broadcasts to "
                                         r"x.shape\[:-1\] = \(2, 4\)$"):
        mrope.rotate(x, np.zeros((3, 5), dtype=int), theta, axes)
    with pytest.raises(ValueError, match=r"^positions must have one row per axis, at least 3 rows \(shape \(n_axes, "
                                         r"\.\.\.\)\), got shape \(2, 4\)$"):
        mrope.angles(np.zeros((2, 4), dtype=int), theta, axes)


def test_segments_name_what_is_wrong_with_a_text_run_or_a_grid():
    with pytest.raises(ValueError, match=r"^segments \(a text run\) must be an integer in 1\.\.4294967296"):
        mrope.multimodal_positions([2**32 + 1])
    with pytest.raises(ValueError, match=r"^segments \(a grid\) must be .*\(t, h, w\)"):
        mrope.multimodal_positions([(1, 2)])


def test_vision_positions_are_integers():
    grid = mrope.vision_positions([2, 4, 4], spatial_merge_size=2, time_interval=1.5)
    assert grid.dtype == np.int64 and grid.shape == (3, 8)


def test_time_interval_and_the_two_rules_for_the_text_after_a_video():
    segments = [3, (8, 4, 4), 2]
    release, delta = mrope.multimodal_positions(segments, 2, time_interval=4.0)
    library, library_delta = mrope.multimodal_positions(segments, 2, time_interval=4.0, advance="spatial")
    assert release[0, 3:3 + 32:4].tolist() == list(range(3, 32, 4))
    assert release[0, -2:].tolist() == [32, 33] and library[0, -2:].tolist() == [5, 6]
    assert (delta, library_delta) == (34 - 37, 32 - 37)
    # images and short videos: the rules agree
    for short in ([3, (1, 4, 6), 2], [3, (2, 4, 6), 2]):
        assert np.array_equal(mrope.multimodal_positions(short, 2)[0],
                              mrope.multimodal_positions(short, 2, advance="spatial")[0])
    # a fractional interval is floored, as the library's .long()
    floored, _ = mrope.multimodal_positions([1, (5, 2, 2), 1], 2, time_interval=1.25)
    assert floored[0, 1:6].tolist() == [1, 2, 3, 4, 6]
