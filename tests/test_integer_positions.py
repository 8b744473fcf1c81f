"""Tests for companion.integer_positions: aliasing at integer positions, reading distances, nearest returns."""
from __future__ import annotations

import numpy as np
import pytest

from companion import rope, integer_positions

# ---------------------------------------------------------------------------
# Aliasing
# ---------------------------------------------------------------------------

def test_fast_pair_is_indistinguishable_from_its_alias_at_integer_positions():
    phi = 4.0  # more than pi per step
    alias = integer_positions.aliased_step(phi)
    assert alias == pytest.approx(phi - 2 * np.pi)
    m = np.arange(200)
    np.testing.assert_allclose(integer_positions.pair_readings(phi, m), integer_positions.pair_readings(alias, m), atol=1e-12)
    halves = m + 0.5
    assert np.abs(integer_positions.pair_readings(phi, halves) - integer_positions.pair_readings(alias, halves)).max() > 1.0


def test_aliased_step_range():
    assert integer_positions.aliased_step(1.0) == 1.0  # RoPE's fastest pair is inside the limit
    assert integer_positions.aliased_step(np.pi) == pytest.approx(np.pi)
    phis = np.linspace(-20, 20, 1001)
    wrapped = integer_positions.aliased_step(phis)
    assert np.all((wrapped > -np.pi) & (wrapped <= np.pi + 1e-12))
    np.testing.assert_allclose(np.exp(1j * wrapped), np.exp(1j * phis), atol=1e-12)


# ---------------------------------------------------------------------------
# Clock hands: reading distances and nearest returns
# ---------------------------------------------------------------------------

def test_reading_distance_is_the_distance_between_explicit_reading_vectors():
    theta = rope.inv_freq(16)
    m = np.arange(0, 300, 7)
    readings = np.exp(1j * np.multiply.outer(m.astype(float), theta))   # independent: the vectors
    direct = np.linalg.norm(readings[:, None, :] - readings[None, :, :], axis=-1)
    via_offset = integer_positions.reading_distance(m[None, :] - m[:, None], theta)
    np.testing.assert_allclose(via_offset, direct, atol=1e-12)
    # the same distance between sinusoidal position vectors (chapter 1's PE)
    from companion import absolute
    pe = absolute.sinusoidal(m, 16)
    np.testing.assert_allclose(np.linalg.norm(pe[3] - pe[10]), integer_positions.reading_distance(m[10] - m[3], theta), atol=1e-12)


def test_reading_distance_shape_zero_and_full_turns():
    theta = np.array([1.0, 0.25])
    assert integer_positions.reading_distance(0.0, theta) == 0.0
    assert integer_positions.reading_distance(np.zeros((2, 3)), theta).shape == (2, 3)
    # one hand is back after 2 pi / theta, whatever non-integer offset that is
    assert integer_positions.reading_distance(2 * np.pi, [1.0]) == pytest.approx(0.0, abs=1e-15)
    assert integer_positions.reading_distance(8 * np.pi, theta) == pytest.approx(0.0, abs=1e-14)
    # half a turn is the largest distance for one hand: the diameter 2
    assert integer_positions.reading_distance(np.pi, [1.0]) == pytest.approx(2.0)
    # accurate for tiny offsets (no cancellation): ~ |k| * ||theta||
    np.testing.assert_allclose(integer_positions.reading_distance(1e-9, theta), 1e-9 * np.linalg.norm(theta), rtol=1e-9)


def test_nearest_return_against_brute_force_over_all_pairs():
    theta = rope.inv_freq(8)
    n_max = 400
    m = np.arange(n_max + 1, dtype=float)
    readings = np.exp(1j * np.multiply.outer(m, theta))
    gram = np.linalg.norm(readings[:, None, :] - readings[None, :, :], axis=-1)
    gram[np.arange(n_max + 1), np.arange(n_max + 1)] = np.inf
    k, dist = integer_positions.nearest_return(n_max, theta)
    assert dist == pytest.approx(gram.min(), abs=1e-12)
    i, j = np.unravel_index(np.argmin(gram), gram.shape)
    assert k == abs(int(i) - int(j))


def test_nearest_return_of_one_hand_finds_the_convergents_of_two_pi():
    # 2 pi = [6; 3, 1, 1, 7, 2, 146, ...]: convergents 6, 19/3, 25/4, 44/7, 333/53, 710/113, 103993/16551
    assert integer_positions.nearest_return(50, [1.0])[0] == 44
    assert integer_positions.nearest_return(1000, [1.0])[0] == 710
    k, dist = integer_positions.nearest_return(200_000, [1.0])
    assert k == 103993 and dist == pytest.approx(2 * abs(np.sin(103993 / 2)), rel=1e-9)
    # the search spans block boundaries: the same answer with the range split differently
    assert integer_positions.nearest_return(200_000, [1.0], k_min=20_000)[0] == 103993
    assert integer_positions.nearest_return(700, [1.0], k_min=45)[0] == 333


def test_nearest_return_of_a_full_head_is_the_neighbour():
    theta = rope.inv_freq(128)
    k, dist = integer_positions.nearest_return(20_000, theta)
    assert k == 1 and dist == pytest.approx(integer_positions.reading_distance(1, theta))
    assert dist > 1.9



@pytest.mark.parametrize("call, match", [
    (lambda: integer_positions.pair_readings([1.0, 2.0], [0, 1]), "phi"),
    (lambda: integer_positions.reading_distance([np.nan], rope.inv_freq(4)), "k"),
    (lambda: integer_positions.reading_distance([1.0], [[1.0]]), "inv_freq"),
    (lambda: integer_positions.nearest_return(0, rope.inv_freq(4)), "n_max"),
    (lambda: integer_positions.nearest_return(10.5, rope.inv_freq(4)), "n_max"),
    (lambda: integer_positions.nearest_return(10, rope.inv_freq(4), k_min=0), "k_min"),
    (lambda: integer_positions.nearest_return(10, rope.inv_freq(4), k_min=11), "k_min"),
    (lambda: integer_positions.nearest_return(10, []), "inv_freq"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("n_max,k_min", [(16_384, 1), (32_768, 1), (16_390, 7)])
def test_nearest_return_at_a_whole_number_of_blocks(n_max, k_min):
    # n_max + 1 - k_min is a multiple of the block size (16,384): the last block ends exactly at n_max.
    theta = rope.inv_freq(8)[:2]
    ks = np.arange(k_min, n_max + 1, dtype=np.float64)
    dist = integer_positions.reading_distance(ks, theta)
    j = int(np.argmin(dist))
    assert integer_positions.nearest_return(n_max, theta, k_min) == (int(ks[j]), float(dist[j]))


def test_nearest_return_edges_of_its_range():
    theta = rope.inv_freq(8)[:2]
    assert integer_positions.nearest_return(1, theta) == (1, float(integer_positions.reading_distance(1.0, theta)))
    assert integer_positions.nearest_return(5, theta, k_min=5) == (5, float(integer_positions.reading_distance(5.0, theta)))
    # one hand that comes back exactly after 10 steps: the search must stop at n_max = 9
    k, _ = integer_positions.nearest_return(9, [2 * np.pi / 10])
    assert k <= 9
    # a hand that never moves ties everywhere: the smallest k wins, also across blocks
    assert integer_positions.nearest_return(20_000, [0.0], k_min=3) == (3, 0.0)


def test_nearest_return_refuses_more_than_its_work_limit(monkeypatch):
    monkeypatch.setattr(integer_positions, "_NEAREST_RETURN_WORK", 100)
    assert integer_positions.nearest_return(100, [1.0])[0] >= 1            # 100 offsets x 1 pair: allowed
    assert integer_positions.nearest_return(101, [1.0], k_min=2)[0] >= 2   # still 100 offsets
    assert integer_positions.nearest_return(50, [1.0, 0.5])[0] >= 1        # 50 offsets x 2 pairs
    for n_max, theta in ((101, [1.0]), (51, [1.0, 0.5])):
        with pytest.raises(ValueError, match="n_max and inv_freq must ask for at most"):
            integer_positions.nearest_return(n_max, theta)
