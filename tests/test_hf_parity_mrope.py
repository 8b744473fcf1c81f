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
  videos; for a video with more frames than rows and columns the library (5.24) starts the
  next text at ``start + max(h', w')`` instead of one past the largest position, and the test
  records that difference;
* the vision tower's axial 2-D RoPE (``Qwen2VLVisionRotaryEmbedding`` with
  ``get_vision_position_ids``): the same tables and patch order.
"""
from __future__ import annotations

import warnings

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
from transformers.vision_utils import get_vision_position_ids  # noqa: E402

from companion import mrope, rope  # noqa: E402

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
    theirs, _ = model.get_rope_index(ids, kinds, video_grid_thw=grids(segments, "video"))
    ours, _ = mrope.multimodal_positions(segments, spatial_merge_size=2)
    video = slice(3, 3 + 20)
    np.testing.assert_array_equal(theirs[:, 0, video].numpy(), ours[:, video])
    assert theirs[0, 0, -2].item() == 3 + 2 and ours[0, -2] == 3 + 5
    assert theirs[0, 0, video].max().item() == 3 + 4  # its next text (5, 6) reuses the video's times 3..7


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


def test_glm4v_partial_sectioned_tables_in_the_adjacent_layout():
    """GLM-4.5V's text rotary: half of a 128-wide head rotated, sections [8, 12, 12], pairs adjacent."""
    config = quiet(lambda: Glm4vTextConfig(**TEXT, rope_parameters={
        "rope_type": "default", "rope_theta": 1e4, "mrope_section": [8, 12, 12], "partial_rotary_factor": 0.5}))
    module = modeling_glm4v.Glm4vTextRotaryEmbedding(config)
    positions, _ = mrope.multimodal_positions(SEGMENTS, spatial_merge_size=2)
    cos, sin = module(torch.zeros(1, positions.shape[1], 128), torch.tensor(positions)[:, None, :])
    phi = mrope.angles(positions, rope.inv_freq(64, 1e4), mrope.pair_axes((8, 12, 12)))
    assert_tables(cos, sin, phi, layout="adjacent")


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
