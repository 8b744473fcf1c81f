"""companion.lab.stats against reference values: textbook tables, closed forms and exact arithmetic.

The quantile, the interval and the test come from SciPy; these tests hold what the lab
asks of them to values computed without SciPy: Student's *t* by solving its tail
(a regularised incomplete beta function) with mpmath at 40 digits, Wilson's interval
by its formula and Newcombe's published table, the sign test by exact integer sums.
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy.stats import chi2

from companion.lab import stats

LEVELS = (0.5, 0.6, 0.683, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 1 - 1e-6, 1 - 1e-9, 1 - 1e-12, 1 - 1e-15)
DEGREES = (1, 2, 3, 4, 5, 6, 7, 9, 10, 19, 30, 100, 1000, 10**6, 10**9, 10**12)


def t_reference(level: float, df: int) -> mpmath.mpf:
    r"""The ``t`` with :math:`P(|T_{df}| > t) = I_{df/(df + t^2)}(df/2, 1/2) = 1 - \text{level}`, at 40 digits."""
    with mpmath.workdps(40):
        tail = 1 - mpmath.mpf(level)                       # the float level, exactly
        a, b = mpmath.mpf(df) / 2, mpmath.mpf(1) / 2

        def excess(t):
            return mpmath.betainc(a, b, 0, df / (df + t * t), regularized=True) - tail

        guess = mpmath.mpf(stats.t_quantile(level, df))
        return mpmath.findroot(excess, (guess * (1 - mpmath.mpf(10) ** -6), guess * (1 + mpmath.mpf(10) ** -6)),
                               solver="anderson")


@pytest.mark.parametrize("level", LEVELS)
def test_t_quantile_is_students_at_every_level_and_degree_of_freedom(level):
    for df in DEGREES:
        assert stats.t_quantile(level, df) == pytest.approx(float(t_reference(level, df)), rel=1e-13), df


def test_t_quantile_matches_the_tables_and_the_closed_forms():
    # the two-sided 95 % column of every t table, and the normal limit
    for df, t in ((1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)):
        assert round(stats.t_quantile(0.95, df), 3) == t
    assert stats.t_quantile(0.95, 10**12) == pytest.approx(1.959963984540054, rel=1e-11)
    for level in np.linspace(0.5, 0.999, 25):
        # df = 1 is Cauchy: t = tan(pi level / 2); df = 2: t = level sqrt(2 / (1 - level^2))
        assert stats.t_quantile(level, 1) == pytest.approx(math.tan(math.pi * level / 2), rel=1e-13)
        assert stats.t_quantile(level, 2) == pytest.approx(level * math.sqrt(2 / (1 - level**2)), rel=1e-13)


def test_t_quantile_takes_confidence_levels_only():
    for level in (0.0, 0.3, 1.0, float("nan")):
        with pytest.raises(ValueError, match=r"^level must be a finite real number in \[0.5, 1.0\) "
                                             r"\(a two-sided confidence level\)"):
            stats.t_quantile(level, 4)
    with pytest.raises(ValueError, match="^df must be an integer >= 1"):
        stats.t_quantile(0.95, 0)
    with pytest.raises(ValueError, match="level must be"):
        stats.mean_interval([1.0, 2.0], level=0.2)


def test_mean_interval_and_paired_difference():
    interval = stats.mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)     # t(0.95, 4) s / sqrt(n)
    assert (interval.estimate, interval.n) == (3.0, 5)
    assert interval.low == pytest.approx(3.0 - half, rel=1e-14)
    assert interval.high == pytest.approx(3.0 + half, rel=1e-14)
    assert stats.mean_interval([2.5]).format() == "2.50 [2.50, 2.50]"
    diff = stats.paired_difference([3.0, 5.0, 4.0], [1.0, 2.0, 2.0])
    assert diff.estimate == pytest.approx(7 / 3) and diff.low < 7 / 3 < diff.high


def wilson_formula(k: int, n: int, level: float) -> tuple[float, float]:
    """Wilson (1927), written out, with the normal quantile from mpmath."""
    with mpmath.workdps(40):
        z = mpmath.sqrt(2) * mpmath.erfinv(mpmath.mpf(level))
        p = mpmath.mpf(k) / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * mpmath.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return float(max(0, centre - half)), float(min(1, centre + half))


def test_wilson_interval_is_newcombes_table():
    """Newcombe (1998), "Two-sided confidence intervals for the single proportion", method 3 (score, no correction)."""
    for (k, n), (low, high) in {(81, 263): (0.2553, 0.3662), (15, 148): (0.0624, 0.1605), (0, 20): (0.0, 0.1611),
                                (1, 29): (0.0061, 0.1718)}.items():
        interval = stats.wilson_interval(k, n)
        assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


@pytest.mark.parametrize("level", (1e-6, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 1 - 1e-6, 1 - 1e-9))
def test_wilson_interval_is_the_formula_at_every_count(level):
    # SciPy takes z at 0.5 + level / 2, which keeps 1 - level to about 1e-16 only
    rel = 1e-13 + 1e-15 / (1 - level)
    for n in (1, 2, 3, 10, 40, 100, 1000, 10**6):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            interval = stats.wilson_interval(k, n, level)
            low, high = wilson_formula(k, n, level)
            assert 0.0 <= interval.low <= k / n <= interval.high <= 1.0
            assert interval.low == pytest.approx(low, rel=rel, abs=1e-15), (k, n)
            assert interval.high == pytest.approx(high, rel=rel, abs=1e-15), (k, n)


def test_wilson_interval_refuses_more_successes_than_trials():
    with pytest.raises(ValueError, match="k and n must satisfy 0 <= k <= n"):
        stats.wilson_interval(5, 4)


def test_sign_test_is_the_exact_binomial_sum():
    for m in range(1, 61):
        for k in range(m + 1):
            tail = Fraction(sum(math.comb(m, i) for i in range(min(k, m - k) + 1)), 2**m)
            exact = float(min(Fraction(1), 2 * tail))
            assert stats.sign_test([1.0] * k + [-1.0] * (m - k)) == pytest.approx(exact, rel=1e-12), (k, m)
    assert stats.sign_test([1.0] * 10) == 2 / 1024 and stats.sign_test([1.0] * 9 + [-2.0]) == 22 / 1024
    assert stats.sign_test([0.0, 0.0, 3.0]) == 1.0 and stats.sign_test([0.0, 0.0]) == 1.0   # zeros are dropped


def test_standard_errors_and_the_two_standard_error_rule():
    assert stats.binomial_se(0.5, 100) == 0.05 and stats.binomial_se(0.0, 10) == 0.0
    assert stats.difference_se(0.5, 100, 0.5, 100) == pytest.approx(math.sqrt(0.005), rel=1e-15)
    assert stats.clearly_above(0.9, 40, 0.5, 40) and not stats.clearly_above(0.6, 40, 0.5, 40)
    # the floor of 1/n: two cells at 1 and 0 differ, two cells at 0 do not
    assert stats.clearly_above(1.0, 40, 0.0, 40) and not stats.clearly_above(0.0, 40, 0.0, 40)
    assert stats.clearly_above(0.6, 40, 0.5, 40, k=0.5) and not stats.clearly_above(0.5, 40, 0.6, 40, k=0.5)


def test_every_public_function_declares_its_parameters():
    for name in stats.__all__:
        obj = getattr(stats, name)
        if callable(obj) and not isinstance(obj, type):
            assert hasattr(obj, "__contract__"), name
    for call, parameter in ((lambda: stats.difference_se(0.5, 0, 0.5, 10), "n1"),
                            (lambda: stats.difference_se(float("nan"), 10, 0.5, 10), "p1"),
                            (lambda: stats.clearly_above(0.5, 10, 0.5, 2.5), "n2"),
                            (lambda: stats.clearly_above(0.5, 10, 0.5, 10, k=-1.0), "k")):
        with pytest.raises(ValueError, match=f"^{parameter} must be"):
            call()


# --- where new seeds fall, and how many seeds decide a claim ---------------------------------


def test_t_power_is_the_noncentral_t_tail_and_matches_a_simulation():
    # one-sample t, d = 0.5, n = 34 at the two-sided 5 % level: power 0.808 (Cohen 1988, table 2.3.2; G*Power)
    assert stats.t_power(0.5, 1.0, 34) == pytest.approx(0.8078, abs=5e-4)
    # the t interval's lower end above the margin, counted on simulated samples
    rng = np.random.default_rng(0)
    for effect, sd, n, margin in ((0.527, 0.435, 8, 0.0), (0.3, 0.2, 5, 0.1), (-0.1, 0.1, 6, 0.0)):
        x = rng.normal(effect, sd, size=(200_000, n))
        low = x.mean(axis=1) - stats.t_quantile(0.95, n - 1) * x.std(axis=1, ddof=1) / math.sqrt(n)
        assert stats.t_power(effect, sd, n, margin) == pytest.approx(float((low > margin).mean()), abs=4e-3)
    # more seeds, more power; the margin moves the effect
    assert stats.t_power(0.5, 1.0, 10) < stats.t_power(0.5, 1.0, 20)
    assert stats.t_power(0.6, 1.0, 10, margin=0.1) == pytest.approx(stats.t_power(0.5, 1.0, 10), rel=1e-12)


def test_seeds_for_power_is_the_first_number_that_reaches_the_power():
    n = stats.seeds_for_power(0.527, 0.435)
    assert n == 8 and stats.t_power(0.527, 0.435, 7) < 0.8 <= stats.t_power(0.527, 0.435, 8)
    assert stats.seeds_for_power(0.5, 1.0) == 34
    assert stats.seeds_for_power(0.1, 1.0, margin=0.2) is None and stats.seeds_for_power(0.0, 1.0) is None
    assert stats.seeds_for_power(0.01, 1.0, most=10) is None


def test_prediction_interval_is_students_for_a_new_value_and_bonferroni_for_several():
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    one = stats.prediction_interval(values)
    half = 2.7764451051977987 * math.sqrt(2.5) * math.sqrt(1 + 1 / 5)     # t(0.95, 4) s sqrt(1 + 1/m)
    assert (one.low, one.high) == (pytest.approx(3 - half), pytest.approx(3 + half))
    five = stats.prediction_interval(values, new=5)
    assert five.low < one.low and five.high > one.high
    assert five.high - 3 == pytest.approx(stats.t_quantile(0.99, 4) * math.sqrt(2.5) * math.sqrt(1.2))
    # a new normal value falls inside the one-value interval 95 % of the time
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(100_000, 6))
    inside = []
    for row in draws[:20_000]:
        iv = stats.prediction_interval(row[:5])
        inside.append(iv.low <= row[5] <= iv.high)
    assert np.mean(inside) == pytest.approx(0.95, abs=0.005)
    with pytest.raises(ValueError, match="at least two"):
        stats.prediction_interval([1.0])


def test_sd_interval_and_sd_power_are_the_chi_squared_ones():
    iv = stats.sd_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    # chi-squared quantiles with 4 degrees of freedom: 0.4844 and 11.1433
    assert iv.estimate == pytest.approx(math.sqrt(2.5))
    assert iv.low == pytest.approx(math.sqrt(2.5 * 4 / 11.143287), rel=1e-6)
    assert iv.high == pytest.approx(math.sqrt(2.5 * 4 / 0.484419), rel=1e-6)
    rng = np.random.default_rng(2)
    x = rng.normal(0, 2.0, size=(100_000, 4))
    s = x.std(axis=1, ddof=1)
    low = s * np.sqrt(3 / chi2.isf(0.025, 3))
    assert stats.sd_power(2.0, 1.0, 4) == pytest.approx(float((low > 1.0).mean()), abs=4e-3)
    assert stats.sd_power(2.0, 1.0, 4) < stats.sd_power(2.0, 1.0, 8)


def test_wilson_power_sums_the_binomial_over_the_counts_that_clear():
    runs, p, at_least = 30, 0.9, 0.75
    clears = [k for k in range(runs + 1) if stats.wilson_interval(k, runs).low >= at_least]
    exact = sum(Fraction(math.comb(runs, k)) * Fraction(9, 10) ** k * Fraction(1, 10) ** (runs - k) for k in clears)
    assert stats.wilson_power(p, runs, at_least) == pytest.approx(float(exact), rel=1e-12)
    assert stats.wilson_power(0.5, 100, 0.8) < 1e-6 and stats.wilson_power(1.0, 100, 0.8) == pytest.approx(1.0)
