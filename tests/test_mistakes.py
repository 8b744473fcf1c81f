"""companion.mistakes: the right variant is the reference; each mistake differs from it and is named."""
from __future__ import annotations

import numpy as np
import pytest

from companion import alibi, mistakes, relative
from companion.checks import CheckFailed


@pytest.mark.parametrize("options", [{}, {"bidirectional": False}, {"num_buckets": 64, "max_distance": 256},
                                     {"bidirectional": False, "num_buckets": 8, "max_distance": 40}])
def test_t5_variant_without_mistakes_is_the_rule(options):
    rel = np.arange(-1000, 1001)
    assert np.array_equal(mistakes.t5_bucket_variant(rel, **options), relative.t5_bucket(rel, **options))


@pytest.mark.parametrize("mistake", [{"past_upper": True}, {"cap": False}, {"rounding": np.round},
                                     {"other_size": True}])
def test_t5_mistakes_differ_from_the_rule(mistake):
    rel = np.arange(-1000, 1001)
    assert not np.array_equal(mistakes.t5_bucket_variant(rel, **mistake), relative.t5_bucket(rel))


def test_t5_check_passes_the_rule_and_names_a_mistake():
    rel = np.arange(-50, 51)
    right = lambda r, **o: int(relative.t5_bucket(np.array([r]), **o)[0])  # noqa: E731
    mistakes.check_t5_bucket_index(right, rel, {}, {})
    flipped = lambda r, **o: int(mistakes.t5_bucket_variant(np.array([r]), past_upper=True)[0])  # noqa: E731
    with pytest.raises(CheckFailed, match="upper half"):
        mistakes.check_t5_bucket_index(flipped, rel, {}, {"upper half": mistakes.t5_bucket_variant(rel, past_upper=True)})
    with pytest.raises(CheckFailed, match=r"should be bucket \d+, got \d+ \(\d+ of the 101 relative positions"):
        mistakes.check_t5_bucket_index(flipped, rel, {}, {})


@pytest.mark.parametrize("n_heads", [1, 3, 8, 12, 20, 64, 96])
def test_alibi_variant_without_mistakes_is_the_rule(n_heads):
    np.testing.assert_allclose(mistakes.alibi_slopes_variant(n_heads), alibi.slopes(n_heads), rtol=1e-15)


def test_alibi_mistakes_are_distinct_from_the_rule():
    for n_heads in (8, 12):
        right = alibi.slopes(n_heads)
        found = mistakes.alibi_slope_mistakes(n_heads)
        if n_heads == 8:  # one head late: every slope is the next head's, half the right one
            late = next(v for k, v in found.items() if "one head late" in k)
            np.testing.assert_allclose(late, right / 2)
        for diagnosis, slopes in found.items():
            if n_heads == 8 and ("not a power of two" in diagnosis or "extra slopes" in diagnosis
                                 or "sorted" in diagnosis or "2^(-h)" in diagnosis):
                continue  # these mistakes coincide with the rule for eight heads
            assert not np.allclose(slopes, right), diagnosis
