"""companion.mrope against the multimodal rotary modules of Hugging Face Transformers.

Every module is built from a configuration in code, with random weights; nothing is
downloaded. Checked, in float32 (the library's) against float64 (companion's):

* Qwen2-VL's sectioned M-RoPE (``Qwen2VLRotaryEmbedding``, ``mrope_section`` [16, 24, 24],
  and a partial GLM-4.5V-style section [8, 12, 12] in the adjacent layout) and Qwen3-VL's
  interleaved M-RoPE (``Qwen3VLTextRotaryEmbedding``, [24, 20, 20]): the cos and sin tables on
  a mixed text / image / video position grid equal companion's to
  ``4 * 2^-23 * (1 + largest angle)`` (float32 rounding of the angle and of cos/sin);
  q and k rotated by ``apply_rotary_pos_emb`` equal ``mrope.rotate`` to the same bound times
  the largest entry;
* the position grids: ``get_rope_index`` of Qwen2-VL, Qwen2.5-VL and Qwen3-VL equals
  ``mrope.multimodal_positions`` exactly (integers) on sequences of text, images and short
  videos; for a video whose temporal positions run past ``max(h', w')`` the library (5.24)
  starts the next text at ``start + max(h', w')`` instead of one past the largest position:
  ``advance="spatial"`` reproduces the library, ``advance="largest"`` the rule of the
  release, and the tests record where they part;
* video time: Qwen2.5-VL's temporal positions spaced by ``tokens_per_second`` times
  ``second_per_grid_ts`` (``time_interval``, including a fractional step that the library
  floors), with the released 7B file's ``tokens_per_second`` of 2; Qwen3-VL's videos as
  timestamped frames (``video_time.timestamped_segments``: every temporal grid a
  ``t = 1`` grid between its timestamp text and vision tokens, as the library splits
  ``video_grid_thw``), and the processor's timestamps (``video_time.frame_timestamps``);
* the vision tower's axial 2-D RoPE (``Qwen2VLVisionRotaryEmbedding`` with
  ``get_vision_position_ids``): the same tables and patch order.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from transformers import Qwen2VLConfig  # noqa: E402
from transformers.models.glm4v import modeling_glm4v  # noqa: E402
from transformers.models.glm4v.configuration_glm4v import Glm4vTextConfig  # noqa: E402
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl  # noqa: E402
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLConfig  # noqa: E402
from transformers.models.qwen2_vl import modeling_qwen2_vl  # noqa: E402
from transformers.models.qwen3_vl import modeling_qwen3_vl  # noqa: E402
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLConfig, Qwen3VLTextConfig  # noqa: E402
from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor  # noqa: E402
from transformers.vision_utils import get_vision_position_ids  # noqa: E402

from companion import mrope, rope, video_time  # noqa: E402

EPS32 = 2.0 ** -23
TEXT = dict(hidden_size=256, num_attention_heads=2, num_key_value_heads=2, num_hidden_layers=1, head_dim=128)
VISION = dict(depth=1, embed_dim=64, num_heads=2, hidden_size=256, spatial_merge_size=2)
# a prompt: text, an image of 4 x 6 merged patches, text, a two-frame video, text
SEGMENTS = [5, (1, 8, 12), 3, (2, 4, 4), 4]
IMAGE_TOKEN, VIDEO_TOKEN, TEXT_TOKEN = 151655, 151656, 7


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def qwen2_vl_config(sections=(16, 24, 24), base=1e6):
    text = dict(TEXT, rope_parameters={"rope_type": "default", "rope_theta": base, "mrope_section": list(sections)})
    return quiet(lambda: Qwen2VLConfig(text_config=text, vision_config=VISION, image_token_id=IMAGE_TOKEN,
                                       video_token_id=VIDEO_TOKEN))


def qwen3_vl_text_config(sections=(24, 20, 20), base=5e6):
    return quiet(lambda: Qwen3VLTextConfig(**TEXT, rope_parameters={
        "rope_type": "default", "rope_theta": base, "mrope_section": list(sections), "mrope_interleaved": True}))


def tokens(segments, merge=2):
    """input_ids and mm_token_type_ids (0 text, 1 image, 2 video) of a segment list."""
    ids, kinds = [], []
    for segment in segments:
        if isinstance(segment, tuple):
            t, h, w = segment
            n = t * h * w // merge**2
            kind = 1 if t == 1 else 2
            ids += [IMAGE_TOKEN if kind == 1 else VIDEO_TOKEN] * n
            kinds += [kind] * n
        else:
            ids += [TEXT_TOKEN] * segment
            kinds += [0] * segment
    return torch.tensor([ids]), torch.tensor([kinds])


def grids(segments, kind):
    rows = [s for s in segments if isinstance(s, tuple) and (s[0] == 1) == (kind == "image")]
    return torch.tensor(rows) if rows else None


def table_tolerance(phi):
    return 4 * EPS32 * (1.0 + float(np.abs(phi).max()))


def assert_tables(cos, sin, phi, layout="split"):
    """cos and sin of the library (batch 1) against cos/sin of companion's angles, laid out per pair layout."""
    if layout == "split":
        full = np.concatenate([phi, phi], axis=-1)
    else:
        full = np.repeat(phi, 2, axis=-1)
    tol = table_tolerance(phi)
    np.testing.assert_allclose(cos[0].double().numpy(), np.cos(full), atol=tol, rtol=0)
    np.testing.assert_allclose(sin[0].double().numpy(), np.sin(full), atol=tol, rtol=0)


@pytest.mark.parametrize("segments", [SEGMENTS, [3, (1, 4, 4)], [(1, 6, 2), 7, (1, 2, 2), 1, (1, 4, 8), 1]])
def test_qwen2_vl_position_grid_equals_get_rope_index(segments):
    config = qwen2_vl_config()
    model = quiet(lambda: modeling_qwen2_vl.Qwen2VLModel(config))
    ids, kinds = tokens(segments)
    theirs, delta = model.get_rope_index(ids, kinds, image_grid_thw=grids(segments, "image"),
                                         video_grid_thw=grids(segments, "video"))
    ours, our_delta = mrope.multimodal_positions(segments, spatial_merge_size=2)
    np.testing.assert_array_equal(theirs[:, 0].numpy(), ours)
    assert int(delta) == our_delta


def test_qwen2_5_vl_and_qwen3_vl_grids_equal_the_same_positions_for_images():
    segments = [4, (1, 6, 8), 2, (1, 4, 4), 3]
    ids, kinds = tokens(segments)
    ours, delta = mrope.multimodal_positions(segments, spatial_merge_size=2)
    q25 = quiet(lambda: Qwen2_5_VLConfig(text_config=dict(TEXT), vision_config=dict(
        depth=1, hidden_size=64, num_heads=2, out_hidden_size=256, spatial_merge_size=2),
        image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN))
    q3 = quiet(lambda: Qwen3VLConfig(text_config=dict(TEXT), vision_config=dict(
        depth=1, hidden_size=64, num_heads=2, out_hidden_size=256, spatial_merge_size=2),
        image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN))
    for model in (quiet(lambda: modeling_qwen2_5_vl.Qwen2_5_VLModel(q25)),
                  quiet(lambda: modeling_qwen3_vl.Qwen3VLModel(q3))):
        theirs, their_delta = model.get_rope_index(ids, kinds, image_grid_thw=grids(segments, "image"))
        np.testing.assert_array_equal(theirs[:, 0].numpy(), ours)
        assert int(their_delta) == delta


def test_a_long_video_is_where_the_library_and_the_paper_rule_part():
    """Five frames of 2 x 2 merged patches: the library restarts the text at start + 2, inside the
    video's temporal range; one past the largest position (the rule of Qwen2-VL's release) is
    start + 5."""
    segments = [3, (5, 4, 4), 2]
    model = quiet(lambda: modeling_qwen2_vl.Qwen2VLModel(qwen2_vl_config()))
    ids, kinds = tokens(segments)
    theirs, their_delta = model.get_rope_index(ids, kinds, video_grid_thw=grids(segments, "video"))
    ours, _ = mrope.multimodal_positions(segments, spatial_merge_size=2)
    video = slice(3, 3 + 20)
    np.testing.assert_array_equal(theirs[:, 0, video].numpy(), ours[:, video])
    assert theirs[0, 0, -2].item() == 3 + 2 and ours[0, -2] == 3 + 5
    assert theirs[0, 0, video].max().item() == 3 + 4  # its next text (5, 6) reuses the video's times 3..7
    library_rule, delta = mrope.multimodal_positions(segments, spatial_merge_size=2, advance="spatial")
    np.testing.assert_array_equal(theirs[:, 0].numpy(), library_rule)
    assert int(their_delta) == delta


def test_qwen2_5_vl_released_tokens_per_second():
    released = json.loads((Path(__file__).resolve().parent / "data" / "published_configs" /
                           "qwen2.5-vl-7b-instruct.json").read_text())
    assert released["vision_config"]["tokens_per_second"] == 2
    assert released["rope_scaling"]["mrope_section"] == list(mrope.QWEN2_VL_SECTIONS)


def qwen2_5_vl_model(tokens_per_second=2):
    config = quiet(lambda: Qwen2_5_VLConfig(text_config=dict(TEXT), vision_config=dict(
        depth=1, hidden_size=64, num_heads=2, out_hidden_size=256, spatial_merge_size=2,
        tokens_per_second=tokens_per_second), image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN))
    return quiet(lambda: modeling_qwen2_5_vl.Qwen2_5_VLModel(config))


@pytest.mark.parametrize("segments,tokens_per_second,second_per_grid", [
    ([4, (3, 4, 4), 2], 2, 1.0),                    # the released 7B file's tokens_per_second, fps 2
    ([2, (1, 4, 6), 3, (6, 4, 4), 5], 2, 1.0),      # an image, then a video
    ([3, (5, 6, 4), 1], 5, 0.25),                   # a step of 1.25 positions, floored
    ([3, (4, 8, 8), 2], 2, 0.5),                    # a step of 1: the Qwen2-VL numbering
])
def test_qwen2_5_vl_video_time_is_tokens_per_second_times_seconds(segments, tokens_per_second, second_per_grid):
    model = qwen2_5_vl_model(tokens_per_second)
    ids, kinds = tokens(segments)
    videos = grids(segments, "video")
    theirs, their_delta = model.get_rope_index(ids, kinds, image_grid_thw=grids(segments, "image"),
                                               video_grid_thw=videos,
                                               second_per_grid_ts=torch.full((len(videos),), second_per_grid))
    tau = tokens_per_second * second_per_grid
    library_rule, delta = mrope.multimodal_positions(segments, 2, time_interval=tau, advance="spatial")
    np.testing.assert_array_equal(theirs[:, 0].numpy(), library_rule)
    assert int(their_delta) == delta
    release_rule, _ = mrope.multimodal_positions(segments, 2, time_interval=tau)
    # the two rules share every vision token and part only where a video's time outruns its side
    vision = kinds[0].numpy() > 0
    np.testing.assert_array_equal(release_rule[:, vision], library_rule[:, vision])
    t, h, w = videos[-1].tolist()
    assert np.array_equal(release_rule, library_rule) == ((t - 1) * tau < max(h, w) // 2)


def test_qwen2_5_vl_text_after_almost_any_video_reuses_its_times():
    """With the released tokens_per_second of 2 at 2 frames per second (one second per grid), the
    text after a video of t >= 2 grids of 2 x 2 tokens starts inside the video's temporal range."""
    model = qwen2_5_vl_model(2)
    for t in range(2, 9):
        segments = [3, (t, 4, 4), 2]
        ids, kinds = tokens(segments)
        theirs, _ = model.get_rope_index(ids, kinds, video_grid_thw=grids(segments, "video"))
        last_time = 3 + 2 * (t - 1)
        assert theirs[0, 0, -2].item() == 3 + 2 <= last_time
        ours, _ = mrope.multimodal_positions(segments, 2, time_interval=2.0)
        assert ours[0, -2] == last_time + 1


def qwen3_vl_video_tokens(timestamps, grid_hw, before, after):
    """input_ids and mm_token_type_ids of Qwen3-VL's prompt for one video: per temporal grid its
    timestamp text, a vision-start token, the frame's tokens and a vision-end token."""
    h, w = grid_hw
    ids, kinds = [TEXT_TOKEN] * before, [0] * before
    for stamp in timestamps:
        ids += [TEXT_TOKEN] * stamp + [151652] + [VIDEO_TOKEN] * (h * w // 4) + [151653]
        kinds += [0] * (stamp + 1) + [2] * (h * w // 4) + [0]
    ids += [TEXT_TOKEN] * after
    kinds += [0] * after
    return torch.tensor([ids]), torch.tensor([kinds])


@pytest.mark.parametrize("timestamps,grid_hw", [([4, 4, 5], (4, 6)), ([3, 3, 3, 3, 3, 4], (8, 4))])
def test_qwen3_vl_video_is_a_row_of_timestamped_frames(timestamps, grid_hw):
    q3 = quiet(lambda: Qwen3VLConfig(text_config=dict(TEXT), vision_config=dict(
        depth=1, hidden_size=64, num_heads=2, out_hidden_size=256, spatial_merge_size=2),
        image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN))
    model = quiet(lambda: modeling_qwen3_vl.Qwen3VLModel(q3))
    ids, kinds = qwen3_vl_video_tokens(timestamps, grid_hw, before=5, after=3)
    video = torch.tensor([[len(timestamps), *grid_hw]])
    theirs, their_delta = model.get_rope_index(ids, kinds, video_grid_thw=video)
    segments = video_time.timestamped_segments(timestamps, grid_hw, 2, before=5, after=3)
    ours, delta = mrope.multimodal_positions(segments, 2)
    np.testing.assert_array_equal(theirs[:, 0].numpy(), ours)
    assert int(their_delta) == delta
    # every frame is placed like an image: one temporal position for all its tokens
    frames = kinds[0].numpy() == 2
    temporal = ours[0, frames].reshape(len(timestamps), -1)
    assert (temporal == temporal[:, :1]).all() and (np.diff(temporal[:, 0]) > 1).all()


def test_qwen3_vl_timestamps_are_the_processors():
    for indices, fps in ((np.arange(0, 32, 4), 24.0), (np.arange(7), 2.0), (np.array([0, 3, 9, 12, 20]), 30.0)):
        theirs = Qwen3VLProcessor._calculate_timestamps(None, indices.copy(), fps, 2)
        np.testing.assert_allclose(video_time.frame_timestamps(indices, fps, 2), theirs, rtol=1e-15)


@pytest.mark.parametrize("sections", [(16, 24, 24), (8, 28, 28)])
def test_qwen2_vl_sectioned_tables_and_rotation(sections):
    config = qwen2_vl_config(sections)
    module = modeling_qwen2_vl.Qwen2VLRotaryEmbedding(config.text_config)
    positions, _ = mrope.multimodal_positions(SEGMENTS, spatial_merge_size=2)
    n = positions.shape[1]
    cos, sin = module(torch.zeros(1, n, 128), torch.tensor(positions)[:, None, :])
    theta = rope.inv_freq(128, 1e6)
    axes = mrope.pair_axes(sections)
    assert_tables(cos, sin, mrope.angles(positions, theta, axes))
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(1, 2, n, 128, generator=generator)
    k = torch.randn(1, 2, n, 128, generator=generator)
    q_hf, k_hf = modeling_qwen2_vl.apply_rotary_pos_emb(q, k, cos, sin)
    tol = table_tolerance(mrope.angles(positions, theta, axes)) * 2 * float(q.abs().max())
    for x, x_hf in ((q, q_hf), (k, k_hf)):
        ours = mrope.rotate(x.double().numpy(), positions, theta, axes, "split")
        np.testing.assert_allclose(ours, x_hf.double().numpy(), atol=tol, rtol=0)


def test_qwen3_vl_interleaved_tables_and_rotation():
    module = modeling_qwen3_vl.Qwen3VLTextRotaryEmbedding(qwen3_vl_text_config())
    positions, _ = mrope.multimodal_positions(SEGMENTS, spatial_merge_size=2)
    n = positions.shape[1]
    cos, sin = module(torch.zeros(1, n, 128), torch.tensor(positions)[:, None, :])
    theta = rope.inv_freq(128, 5e6)
    axes = mrope.pair_axes(mrope.QWEN3_VL_SECTIONS, "interleaved")
    phi = mrope.angles(positions, theta, axes)
    assert_tables(cos, sin, phi)
    # read as sections instead, the same tables are wrong
    sectioned = mrope.angles(positions, theta, mrope.pair_axes(mrope.QWEN3_VL_SECTIONS))
    assert np.abs(np.cos(np.concatenate([sectioned] * 2, -1)) - cos[0].double().numpy()).max() > 0.1
    generator = torch.Generator().manual_seed(5)
    q = torch.randn(1, 2, n, 128, generator=generator)
    k = torch.randn(1, 2, n, 128, generator=generator)
    q_hf, k_hf = modeling_qwen3_vl.apply_rotary_pos_emb(q, k, cos, sin)
    tol = table_tolerance(phi) * 2 * float(q.abs().max())
    for x, x_hf in ((q, q_hf), (k, k_hf)):
        np.testing.assert_allclose(mrope.rotate(x.double().numpy(), positions, theta, axes), x_hf.double().numpy(),
                                   atol=tol, rtol=0)


def test_glm4v_partial_sectioned_tables_and_rotation_in_the_adjacent_layout():
    """GLM-4.5V's text rotary: half of a 128-wide head rotated, sections [8, 12, 12], pairs adjacent."""
    config = quiet(lambda: Glm4vTextConfig(**TEXT, rope_parameters={
        "rope_type": "default", "rope_theta": 1e4, "mrope_section": [8, 12, 12], "partial_rotary_factor": 0.5}))
    module = modeling_glm4v.Glm4vTextRotaryEmbedding(config)
    positions, _ = mrope.multimodal_positions(SEGMENTS, spatial_merge_size=2)
    n = positions.shape[1]
    cos, sin = module(torch.zeros(1, n, 128), torch.tensor(positions)[:, None, :])
    theta, axes = rope.inv_freq(64, 1e4), mrope.pair_axes((8, 12, 12))
    phi = mrope.angles(positions, theta, axes)
    assert_tables(cos, sin, phi, layout="adjacent")
    generator = torch.Generator().manual_seed(9)
    q = torch.randn(1, 2, n, 128, generator=generator)
    k = torch.randn(1, 2, n, 128, generator=generator)
    q_hf, k_hf = modeling_glm4v.apply_rotary_pos_emb(q, k, cos, sin)
    tol = table_tolerance(phi) * 2 * float(q.abs().max())
    def ours(x, layout="adjacent"):
        return np.concatenate([mrope.rotate(x[..., :64], positions, theta, axes, layout), x[..., 64:]], axis=-1)

    for x, x_hf in ((q.double().numpy(), q_hf), (k.double().numpy(), k_hf)):
        np.testing.assert_allclose(ours(x), x_hf.double().numpy(), atol=tol, rtol=0)
        assert np.abs(ours(x, "split") - x_hf.double().numpy()).max() > 0.1


def test_vision_tower_axial_rope_and_patch_order():
    config = qwen2_vl_config()
    module = modeling_qwen2_vl.Qwen2VLVisionRotaryEmbedding(config.vision_config)
    head = VISION["embed_dim"] // VISION["num_heads"]
    for grid in ((1, 4, 6), (2, 6, 4)):
        hw = get_vision_position_ids(torch.tensor([grid]), 2)
        ours = np.tile(mrope.patch_positions(grid[1], grid[2], spatial_merge_size=2), (1, grid[0]))
        np.testing.assert_array_equal(hw.T.numpy(), ours)
        cos, sin = module(torch.zeros(1), hw)
        phi = mrope.angles(ours, mrope.axial_inv_freq(head, 10000.0), mrope.axial_pair_axes(head))
        assert_tables(cos[None], sin[None], phi)


def test_qwen3_vl_released_base_is_not_the_class_default():
    """The released Qwen3-VL-8B file sets rope_theta 5,000,000; Qwen3VLTextConfig defaults to 500,000."""
    released = json.loads((Path(__file__).resolve().parent / "data" / "published_configs" /
                           "qwen3-vl-8b-instruct.json").read_text())["text_config"]
    assert released["rope_theta"] == 5_000_000
    assert released["rope_scaling"]["mrope_section"] == list(mrope.QWEN3_VL_SECTIONS)
    assert released["rope_scaling"]["mrope_interleaved"] is True
    assert quiet(lambda: Qwen3VLTextConfig()).rope_parameters["rope_theta"] == 500_000
