"""companion.lab.usage: pair usage read from lab records, and the single-pair facts of Barbero et al. (2025)."""
import numpy as np
import pytest

from companion import pair_usage, rope
from companion.lab import claims, usage
from companion.lab.schemes import p_rope_frequencies


def _record(query, key, arm="rope"):
    return {"pair_norms": {arm: {"query": np.asarray(query).tolist(), "key": np.asarray(key).tolist()},
                           "nope": {"query": np.ones((1, 1, 4)).tolist(), "key": np.ones((1, 1, 4)).tolist()}}}


def test_usage_by_head_is_the_product_of_the_stored_norms():
    rng = np.random.default_rng(3)
    q, k = rng.uniform(0.1, 2.0, size=(2, 2, 3, 8))
    record = _record(q, k)
    assert np.allclose(usage.usage_by_head(record, "rope"), q * k)
    # its mean over layers and heads is the lab's own pair_usage
    assert np.allclose(usage.usage_by_head(record, "rope").mean(axis=(0, 1)), claims.pair_usage(record, "rope"))


def test_usage_shares_sum_to_one_and_follow_the_records():
    records = {}
    for seed in (2, 0, 1):                       # out of order on purpose: rows come in seed order
        q = np.ones((2, 2, 4))
        q[..., 3] = 10.0 * (seed + 1)            # pair 3 dominates, more so for later seeds
        records[seed] = _record(q, np.ones_like(q))
    shares = usage.usage_shares(records, "rope")
    assert shares.shape == (3, 4) and np.allclose(shares.sum(axis=1), 1)
    assert np.all(np.argmax(shares, axis=1) == 3) and np.all(np.diff(shares[:, 3]) > 0)
    assert np.allclose(shares[:, 3], [10 / 13, 20 / 23, 30 / 33])
    per_head = usage.usage_shares(records, "rope", by_head=True)
    assert per_head.shape == (3, 2, 2, 4) and np.allclose(per_head.sum(axis=-1), 1)


def test_usage_rejects_unknown_arms_and_bad_records():
    record = _record(np.ones((1, 1, 4)), np.ones((1, 1, 4)))
    with pytest.raises(ValueError, match=r"^arm must be one of 'nope', 'rope' \(the arms whose pair norms record holds\); "
                                         r"got 'alibi'$"):
        usage.usage_by_head(record, "alibi")
    with pytest.raises(ValueError, match=r"^record must be a lab record with 'pair_norms' .*got keys \['train'\]$"):
        usage.usage_by_head({"train": {}}, "rope")
    with pytest.raises(ValueError, match="^record must be a lab record .*got list$"):
        usage.usage_by_head([record], "rope")
    with pytest.raises(ValueError, match=r"^record\['pair_norms'\]\['rope'\] must hold 'query' and 'key' norms of one shape"):
        usage.usage_by_head(_record(np.ones((1, 1, 4)), np.ones((2, 1, 4))), "rope")
    with pytest.raises(ValueError, match=r"^records must be a non-empty dict \{seed: record\}"):
        usage.usage_shares({}, "rope")
    with pytest.raises(ValueError, match=r"^arm must be one of 'nope', 'p_rope' \(the arms whose pair norms records\[1\] holds\); "
                                         r"got 'rope'$"):
        usage.usage_shares({0: record, 1: _record(np.ones((1, 1, 4)), np.ones((1, 1, 4)), arm="p_rope")}, "rope")
    with pytest.raises(ValueError, match="^records must hold pair norms of one shape"):
        usage.usage_shares({0: record, 1: _record(np.ones((2, 1, 4)), np.ones((2, 1, 4)))}, "rope")
    with pytest.raises(ValueError, match="^by_head must be True or False"):
        usage.usage_shares({0: record}, "rope", by_head="yes")


@pytest.mark.parametrize("offset", [0, 1, 5])
def test_aimed_scores_are_the_shifted_cosines(offset):
    theta = rope.inv_freq(16)
    distances = np.arange(0, 80)
    pairs = [0, 2, 5]
    amplitude = 3.0
    scores = pair_usage.aimed_scores(theta, pairs, offset, distances, amplitude)
    # closed form, written independently: A sum_i cos((Delta - offset) theta_i)
    expected = amplitude * np.cos(np.multiply.outer(distances - offset, theta[pairs])).sum(axis=1)
    assert np.allclose(scores, expected, atol=1e-12)
    assert np.argmax(scores) == offset and np.isclose(scores[offset], amplitude * len(pairs))


def test_fast_pairs_aim_sharply_and_a_slow_pair_cannot():
    theta = rope.inv_freq(16)
    fast = pair_usage.attention_on_offset(theta, [0, 1, 2], 1, 64, 10.0)
    one_fast = pair_usage.attention_on_offset(theta, [0], 1, 64, 10.0)
    slow = pair_usage.attention_on_offset(theta, [7], 1, 64, 1000.0)
    assert fast > 0.95 and one_fast < 0.5          # one fast pair alone aliases at its wavelengths
    assert abs(slow - 1 / 64) < 1e-3               # a slow pair is flat over 64 positions
    weights = [pair_usage.attention_on_offset(theta, [0, 1, 2], 1, 64, a) for a in (1.0, 3.0, 10.0, 30.0)]
    assert np.all(np.diff(weights) > 0)            # a larger norm sharpens the head


def test_attention_on_offset_rejects_an_offset_outside_the_context():
    theta = rope.inv_freq(16)
    with pytest.raises(ValueError, match=r"^offset must be in 0..63 \(inside the context\), got 64$"):
        pair_usage.attention_on_offset(theta, [0], 64, 64, 1.0)
    with pytest.raises(ValueError, match=r"^offset must be an integer in 0..4294967296 \(places back from the query\)"):
        pair_usage.aimed_scores(theta, [0], -1, np.arange(4))
    for pairs in ([8], [0, 0], [], [[0, 1]]):
        with pytest.raises(ValueError, match=r"^pairs must be distinct pair indices in 0..7 \(one per frequency"):
            pair_usage.aimed_scores(theta, pairs, 1, np.arange(4))
    with pytest.raises(ValueError, match="^pairs must be non-negative integers"):
        pair_usage.aimed_scores(theta, [-1], 1, np.arange(4))
    with pytest.raises(ValueError, match=r"^distances must contain whole numbers \(places the key lies behind the query\)"):
        pair_usage.aimed_scores(theta, [0], 1, np.linspace(0, 1, 4))
    with pytest.raises(ValueError, match="^amplitude must be a finite real number > 0"):
        pair_usage.attention_on_offset(theta, [0], 1, 64, 0.0)
    with pytest.raises(ValueError, match=r"^distances.size \* len\(inv_freq\) must stay within 2\*\*28"):
        pair_usage.aimed_scores(rope.inv_freq(2**12), [0], 1, np.arange(2**18))   # 2**29 angles


def test_random_scores_do_not_decay_but_tied_ones_do():
    distances = np.array([0, 3, 30, 300, 3000])
    d, n = 32, 6000
    free = pair_usage.random_scores(d, distances, n, seed=11)
    se = free.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(free.mean(axis=0)) < 4 * se)                     # mean 0 at every distance
    assert np.allclose(free.var(axis=0, ddof=1), d, rtol=0.08)            # variance d at every distance
    tied = pair_usage.random_scores(d, distances, n, seed=11, tied=True)
    expected = 2 * np.cos(np.multiply.outer(distances, rope.inv_freq(d))).sum(axis=1)
    tied_se = tied.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(tied.mean(axis=0) - expected) < 4 * tied_se)
    assert expected[0] == d and expected[-1] < d / 2                      # this one decays


def test_random_scores_are_reproducible_and_checked():
    a = pair_usage.random_scores(8, np.arange(3), 10, seed=5)
    assert np.array_equal(a, pair_usage.random_scores(8, np.arange(3), 10, seed=5))
    with pytest.raises(ValueError, match=r"^d must be an even integer in 2..4294967296 \(components come in pairs\), got 7$"):
        pair_usage.random_scores(7, np.arange(3), 10, seed=0)
    with pytest.raises(ValueError, match="^samples must be an integer >= 1, got 0$"):
        pair_usage.random_scores(8, np.arange(3), 0, seed=0)
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0 \(a seed of numpy.random.default_rng\), got -1$"):
        pair_usage.random_scores(8, np.arange(3), 10, seed=-1)
    with pytest.raises(ValueError, match=r"^distances must be a 1-D array of whole numbers, got shape \(2, 2\)$"):
        pair_usage.random_scores(8, [[0, 1], [2, 3]], 10, seed=0)
    with pytest.raises(ValueError, match=r"^samples \* len\(distances\) \* d must stay within 2\*\*28"):
        pair_usage.random_scores(128, np.arange(1000), 10**4, seed=0)


def test_drift_bound_bounds_every_contribution():
    rng = np.random.default_rng(8)
    theta = rope.inv_freq(16)
    length = 64
    bound = pair_usage.drift_bound(theta, length)
    alpha = rng.uniform(-np.pi, np.pi, size=(200, 1))
    r = rng.integers(0, length + 1, size=(200, 1))
    moved = np.abs(np.cos(r * theta + alpha) - np.cos(alpha))            # (200, pairs)
    assert np.all(moved <= bound + 1e-12)


def test_stable_length_is_infinite_for_unrotated_pairs():
    theta = p_rope_frequencies(rope.inv_freq(16), 0.25)
    lengths = pair_usage.stable_length(theta, 0.1)
    assert np.all(np.isinf(lengths[2:])) and lengths[1] == np.floor(0.1 / theta[1])
    assert np.all(pair_usage.drift_bound(theta, 10**6)[2:] == 0)
    with pytest.raises(ValueError, match="^tolerance must be a finite real number > 0, got 0.0$"):
        pair_usage.stable_length(theta, 0.0)
    with pytest.raises(ValueError, match=r"^length must be an integer in 1..4294967296, got 0$"):
        pair_usage.drift_bound(theta, 0)
    for function, value in ((pair_usage.stable_length, 0.1), (pair_usage.drift_bound, 10)):
        with pytest.raises(ValueError, match=r"^inv_freq must contain only numbers >= 0 \(frequencies, 0 for a pair"):
            function(-theta, value)
        with pytest.raises(ValueError, match=r"^inv_freq must be a 1-D array, got shape \(2, 8\)$"):
            function(np.stack([theta, theta]), value)
