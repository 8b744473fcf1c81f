r"""The statistics the lab's claims are stated with: intervals over seeds, files and examples.

The lab has three sources of noise, and each gets its own instrument:

- **seeds** (the training run): a number measured on each of ``s`` seeds is
  summarised by its mean and a Student-*t* interval (:func:`mean_interval`); two
  arms trained on the same seeds are compared by the per-seed differences
  (:func:`paired_difference`), with a sign test for the direction
  (:func:`sign_test`);
- **files** (the held-out text): the perplexity of one model is resampled by whole
  files, not by windows, because windows of one file are alike
  (:func:`cluster_bootstrap`; Efron & Tibshirani 1993, section 8.4, for resampling
  the independent units);
- **examples** (a retrieval cell of ``n`` examples): a share :math:`p` has standard
  error :math:`\sqrt{p(1-p)/n}` (:func:`binomial_se`), and two cells differ beyond
  noise when the gap exceeds twice the standard error of the difference
  (:func:`clearly_above`); :func:`wilson_interval` gives an interval that stays
  inside ``[0, 1]``.

**How many seeds.** A claim about the mean over seeds can be undecided on a few seeds
and decided on more. :func:`t_power` is the probability that a *t* interval from
``n`` new seeds clears a margin when the development seeds' mean and standard
deviation are the truth (the noncentral *t* distribution), and
:func:`seeds_for_power` the smallest ``n`` that reaches a given power: the lab sizes
its confirmation run with them. :func:`sd_interval` and :func:`sd_power` do the same
for a standard deviation between seeds (the chi-squared distribution),
:func:`wilson_power` for a share of runs, and :func:`prediction_interval` says where
the next few seeds should fall, the range a threshold "on every seed" must leave.

The distributions come from SciPy: the Student-*t* quantile (``scipy.stats.t``), the
noncentral *t* (``scipy.stats.nct``), the chi-squared distribution (``scipy.stats.chi2``),
the exact binomial test and Wilson's interval (``scipy.stats.binomtest``).
``tests/test_lab_stats.py`` holds them to textbook values and to the formulas in the
docstrings, computed exactly or with mpmath at 40 digits: the *t* quantile agrees to
within about 1e-14 (relative) at every confidence level from 0.5 to ``1 - 1e-15`` and
every number of degrees of freedom from 1 to ``10**12``. Below a level of 0.5 SciPy
1.17's inverse *t* is wrong for some degrees of freedom (0 instead of ``1.3e-9`` at a
level of ``1e-9`` with 4), so the intervals take confidence levels of at least 0.5,
which every interval in the book is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from scipy import stats as scipy_stats

from .._contracts import Count, Integer, Level, NonNegative, Positive, Real, contract
from .kinds import Sample

#: Numbers, one per seed (or per cluster): a non-empty 1-D float64 array of finite values.
Values = Annotated[np.ndarray, Sample()]
#: A share (an accuracy, a copier's level): a finite number.
Share = Annotated[float, Real()]
#: The confidence level of a two-sided interval.
ConfidenceLevel = Annotated[float, Real(ge=0.5, lt=1.0, why="a two-sided confidence level")]


# --- rules between arguments ------------------------------------------------------------


def _one_per_seed(a, b) -> None:
    """``a`` and ``b`` hold one value per seed each, the same seeds."""
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold one value per seed each, got {a.size} and {b.size}")


def _successes_of_trials(k, n) -> None:
    """At most ``n`` successes in ``n`` trials."""
    if k > n:
        raise ValueError(f"k and n must satisfy 0 <= k <= n, n >= 1, got k={k!r}, n={n!r}")


def _counts_per_cluster(nll_by_cluster, tokens_by_cluster) -> None:
    """One token count per cluster, none negative, some tokens in all."""
    if nll_by_cluster.shape != tokens_by_cluster.shape or np.any(tokens_by_cluster < 0) or \
            tokens_by_cluster.sum() <= 0:
        raise ValueError("nll_by_cluster and tokens_by_cluster must be equal-length arrays with positive token counts")

__all__ = ["Interval", "t_quantile", "mean_interval", "paired_difference", "sign_test", "binomial_se",
           "difference_se", "clearly_above", "wilson_interval", "cluster_bootstrap", "prediction_interval",
           "sd_interval", "t_power", "seeds_for_power", "sd_power", "wilson_power"]

#: A number of values from which a standard deviation can be estimated: at least two.
SampleSize = Annotated[int, Integer(2, why="a standard deviation needs two values")]
#: A probability of deciding a claim, strictly between 0 and 1.
Power = Annotated[float, Real(gt=0.0, lt=1.0, why="a probability of deciding")]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval at ``level``, from ``n`` values."""

    estimate: float
    low: float
    high: float
    n: int
    level: float = 0.95

    def format(self, digits: int = 2) -> str:
        """``"estimate [low, high]"`` with ``digits`` decimals."""
        return f"{self.estimate:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"

    def __str__(self) -> str:
        return self.format()


@contract
def t_quantile(level: ConfidenceLevel, df: Count) -> float:
    r"""The two-sided Student-*t* critical value :math:`t`: :math:`P(|T_{df}| \le t) = \text{level}`.

    The point above which Student's *t* with ``df`` degrees of freedom leaves
    :math:`(1 - \text{level})/2` (``scipy.stats.t.isf``; the upper tail is exact to
    the last digit where ``(1 + level) / 2`` would round): 2.776 for ``level = 0.95``
    and ``df = 4``.
    """
    return float(scipy_stats.t.isf((1 - level) / 2, df))


@contract
def mean_interval(values: Values, level: ConfidenceLevel = 0.95) -> Interval:
    r"""Mean of ``values`` (one per seed) with the Student-*t* interval :math:`\bar x \pm t\, s/\sqrt n`."""
    a = values
    if a.size == 1:
        return Interval(float(a[0]), float(a[0]), float(a[0]), 1, level)
    half = t_quantile(level, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size)
    return Interval(float(a.mean()), float(a.mean() - half), float(a.mean() + half), int(a.size), level)


@contract(_one_per_seed)
def paired_difference(a: Values, b: Values, level: ConfidenceLevel = 0.95) -> Interval:
    """The mean of the per-seed differences ``a - b`` with its *t* interval (the same seeds, in order)."""
    return mean_interval(a - b, level)


@contract
def sign_test(differences: Values) -> float:
    r"""Two-sided exact sign test: the probability of a split at least this uneven if each sign were a fair coin.

    Zeros are dropped. :math:`p = \min(1, 2 \sum_{i \le \min(k, m - k)} \binom{m}{i} 2^{-m})` for
    ``k`` positive among ``m`` non-zero differences: the exact binomial test of
    :math:`k` successes in :math:`m` trials at :math:`1/2` (``scipy.stats.binomtest``).
    """
    d = differences[differences != 0]
    if d.size == 0:
        return 1.0
    return float(scipy_stats.binomtest(int((d > 0).sum()), int(d.size), 0.5).pvalue)


@contract
def binomial_se(p: Share, n: Count) -> float:
    r"""Standard error :math:`\sqrt{p(1-p)/n}` of a share ``p`` of ``n`` independent examples."""
    return math.sqrt(max(p * (1 - p), 0.0) / n)


@contract
def difference_se(p1: Share, n1: Count, p2: Share, n2: Count) -> float:
    r"""Standard error of :math:`p_1 - p_2` for two independent cells,
    :math:`\sqrt{p_1(1-p_1)/n_1 + p_2(1-p_2)/n_2}`."""
    return math.sqrt(binomial_se(p1, n1) ** 2 + binomial_se(p2, n2) ** 2)


@contract
def clearly_above(p1: Share, n1: Count, p2: Share, n2: Count, k: Positive = 2.0) -> bool:
    r"""Whether cell 1 beats cell 2 by more than ``k`` standard errors of their difference.

    A floor of :math:`1/n` per cell keeps two cells at exactly 0 and 1 from having a
    zero standard error: the difference must exceed
    :math:`k\sqrt{\tilde p_1(1-\tilde p_1)/n_1 + \tilde p_2(1-\tilde p_2)/n_2}` with
    :math:`\tilde p` clipped to :math:`[1/n, 1 - 1/n]`.
    """
    q1 = min(max(p1, 1 / n1), 1 - 1 / n1)
    q2 = min(max(p2, 1 / n2), 1 - 1 / n2)
    return p1 - p2 > k * difference_se(q1, n1, q2, n2)


@contract(_successes_of_trials)
def wilson_interval(k: NonNegative, n: Count, level: Level = 0.95) -> Interval:
    r"""Wilson's score interval for ``k`` successes in ``n`` trials (Wilson 1927).

    With :math:`\hat p = k/n` and :math:`z` the :math:`(1 + \text{level})/2` normal quantile,
    :math:`\bigl(\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}\bigr) / (1 + z^2/n)`
    (``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``).
    """
    ci = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return Interval(k / n, max(0.0, float(ci.low)), min(1.0, float(ci.high)), n, level)


@contract(_counts_per_cluster)
def cluster_bootstrap(nll_by_cluster: Values, tokens_by_cluster: Values, n_resamples: Count = 1000,
                      seed: Annotated[int, Integer(0)] = 0, level: Level = 0.95) -> list[float]:
    r"""Percentile interval of a perplexity, resampling whole clusters (files) with replacement.

    ``nll_by_cluster[c]`` is the summed negative log-likelihood of the tokens of
    cluster ``c`` and ``tokens_by_cluster[c]`` their number; a resample draws as many
    clusters as there are and takes :math:`\exp(\sum \ell_c / \sum t_c)`. With few
    clusters the interval is coarse, and honest about it: it measures how much the
    perplexity depends on which files were held out.
    """
    nll, count = nll_by_cluster, tokens_by_cluster
    rng = np.random.default_rng(seed)
    index = rng.integers(0, nll.size, size=(n_resamples, nll.size))
    ppl = np.exp(nll[index].sum(axis=1) / np.maximum(count[index].sum(axis=1), 1))
    low, high = np.quantile(ppl, [(1 - level) / 2, (1 + level) / 2])
    return [float(low), float(high)]


# --- where the next seeds fall, and how many seeds decide a claim ---------------------------


def _two_values_at_least(values) -> None:
    """A standard deviation needs two values."""
    if values.size < 2:
        raise ValueError(f"values must hold at least two numbers (one per seed), got {values.size}")


@contract(_two_values_at_least)
def prediction_interval(values: Values, level: ConfidenceLevel = 0.95, new: Count = 1) -> Interval:
    r"""Where each of ``new`` further seeds should fall, all of them with probability ``level``.

    For ``m`` values from a normal population with mean :math:`\bar x` and standard
    deviation :math:`s`, one new value lies in
    :math:`\bar x \pm t_{m-1}\, s \sqrt{1 + 1/m}` with probability ``level``; for
    ``new`` values at once the level of each is raised to :math:`1 - (1 - \text{level})/\text{new}`
    (Bonferroni). A claim "on every one of ``new`` seeds" whose threshold lies inside this
    interval has a margin the development spread does not protect.
    """
    m = values.size
    half = t_quantile(1 - (1 - level) / new, m - 1) * values.std(ddof=1) * math.sqrt(1 + 1 / m)
    return Interval(float(values.mean()), float(values.mean() - half), float(values.mean() + half), int(m), level)


@contract(_two_values_at_least)
def sd_interval(values: Values, level: ConfidenceLevel = 0.95) -> Interval:
    r"""The sample standard deviation :math:`s` of ``values`` with its chi-squared interval.

    :math:`\bigl[s\sqrt{(m-1)/\chi^2_{(1+\text{level})/2}},\; s\sqrt{(m-1)/\chi^2_{(1-\text{level})/2}}\bigr]`
    with :math:`m - 1` degrees of freedom, for values from a normal population.
    """
    m = values.size
    sd = float(values.std(ddof=1))
    upper_q, lower_q = scipy_stats.chi2.isf([(1 - level) / 2, (1 + level) / 2], m - 1)
    return Interval(sd, sd * math.sqrt((m - 1) / upper_q), sd * math.sqrt((m - 1) / lower_q), int(m), level)


@contract
def t_power(effect: Share, sd: Positive, n: SampleSize, margin: Share = 0.0, level: ConfidenceLevel = 0.95) -> float:
    r"""The probability that the ``level`` *t* interval of the mean of ``n`` values lies above ``margin``.

    For values drawn from :math:`\mathcal N(\text{effect}, \text{sd}^2)`, the interval's
    lower end :math:`\bar x - t_{n-1}\, s/\sqrt n` exceeds the margin when
    :math:`T = (\bar x - \text{margin})\sqrt n / s > t_{n-1}`, and :math:`T` follows the
    noncentral *t* distribution with :math:`n - 1` degrees of freedom and noncentrality
    :math:`\delta = (\text{effect} - \text{margin})\sqrt n / \text{sd}` (``scipy.stats.nct``):
    the power is :math:`P(T_{n-1,\delta} > t_{n-1})`. A claim that an interval lies *below*
    a margin is the same with effect and margin negated.
    """
    noncentrality = (effect - margin) * math.sqrt(n) / sd
    return float(scipy_stats.nct.sf(t_quantile(level, n - 1), n - 1, noncentrality))


@contract
def seeds_for_power(effect: Share, sd: Positive, power: Power = 0.8, margin: Share = 0.0,
                    level: ConfidenceLevel = 0.95, most: SampleSize = 1000) -> int | None:
    """The fewest seeds, from 2, whose *t* interval clears ``margin`` with probability ``power`` (:func:`t_power`).

    ``None`` when no number up to ``most`` does (an effect at or below the margin never will).
    """
    if effect <= margin:
        return None
    for n in range(2, most + 1):
        if t_power(effect, sd, n, margin, level) >= power:
            return n
    return None


@contract
def sd_power(sd: Positive, reference: Positive, n: SampleSize, level: ConfidenceLevel = 0.95) -> float:
    r"""The probability that the lower end of :func:`sd_interval` from ``n`` values exceeds ``reference``.

    With :math:`(n-1)s^2/\sigma^2 \sim \chi^2_{n-1}` for a true standard deviation
    :math:`\sigma = \text{sd}`, the lower end :math:`s\sqrt{(n-1)/\chi^2_{(1+\text{level})/2}}`
    exceeds the reference when :math:`\chi^2_{n-1} > \chi^2_{(1+\text{level})/2}\,
    \text{reference}^2/\sigma^2`.
    """
    threshold = scipy_stats.chi2.isf((1 - level) / 2, n - 1) * (reference / sd) ** 2
    return float(scipy_stats.chi2.sf(threshold, n - 1))


@contract
def wilson_power(p: Share, runs: Count, at_least: Share, level: Level = 0.95) -> float:
    r"""The probability that :func:`wilson_interval`'s lower end reaches ``at_least`` for ``runs`` runs
    that each succeed with probability ``p``: :math:`\sum_k \binom{N}{k} p^k (1-p)^{N-k}` over the
    counts ``k`` whose interval's lower end is at least ``at_least`` (the runs independent)."""
    counts = np.arange(runs + 1)
    clears = np.array([wilson_interval(int(k), runs, level).low >= at_least for k in counts])
    return float(scipy_stats.binom.pmf(counts[clears], runs, p).sum())
