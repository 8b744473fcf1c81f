r"""What chapters 7 and 9 claim about the lab's results, as functions of any set of seeds.

Every claim the two chapters make about the lab is a function here. It takes the
per-seed records of a run (``{seed: record}``, the schema of
``companion/lab/stored/seed<k>.json``; :attr:`companion.lab.results.LabResults.seeds`)
and returns a :class:`Verdict`: whether the claim holds on *those* seeds, the
sentence it states, and the numbers behind it. The functions never name a seed, so
they can be run on seeds nobody has looked at::

    python -m companion.lab --config full --seeds 17 23     # runs two new seeds, prints every verdict

**How a claim is stated.** "On every seed" only with a margin the spread of the
development seeds allows; otherwise as a rate ("on at least 7 of 10 seeds"), as a
mean with a Student-*t* interval over seeds, or as a paired difference between
two arms trained on the same seeds and scored on the same examples
(:mod:`companion.lab.stats`). A shape (a U, a middle-best curve) counts only when
both sides differ by more than two standard errors of the difference of the two
cells (:func:`companion.lab.stats.clearly_above`).

**Development and held-out seeds.** The claims were written from the development
seeds of the stored run, committed, and only then were the held-out seeds run.
:data:`REVISIONS` records every claim that changed after the held-out seeds were
seen, and how.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import stats

__all__ = ["Verdict", "CLAIMS", "SWEEP_CLAIMS", "REVISIONS", "HISTORY", "check_all", "check_sweep", "table", "arms_of",
           "reference_perplexity", "late_perplexity", "late_ratio", "accuracy", "bin_accuracy", "learned_needle"]


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict on a set of seeds.

    ``name``: the function's name; ``holds``: ``True``, ``False``, or ``None`` when
    the records cannot decide it (an arm or an experiment missing); ``statement``:
    the claim as the chapter states it; ``evidence``: the numbers, in one line;
    ``numbers``: the same as data; ``seeds``: the seeds it was checked on.
    """

    name: str
    holds: bool | None
    statement: str
    evidence: str
    numbers: dict = field(default_factory=dict)
    seeds: tuple = ()


# ---------------------------------------------------------------------------
# Reading one number out of a seed's record
# ---------------------------------------------------------------------------

def arms_of(record: dict) -> list[str]:
    """The arms a seed's record holds, in the book's order."""
    return list(record["extrapolation"])


def _block_perplexity(ex: dict, length_index: int, first_block: int, last_block: int | None = None) -> float | None:
    """Perplexity of the tokens in blocks ``first_block .. last_block`` (all the rest when ``None``) at a length."""
    nll, tokens = ex["nll_by_file"][length_index], ex["tokens_by_file"][length_index]
    if nll is None:
        return None
    stop = None if last_block is None else last_block + 1
    total = sum(sum(f[first_block:stop]) for f in nll)
    count = sum(sum(t[first_block:stop]) for t in tokens)
    return math.exp(total / count)


def reference_perplexity(record: dict, arm: str) -> float:
    r"""Perplexity at ``L`` of the positions ``L/2 .. L-1``: in range, with at least ``L/2`` tokens of context.

    The reference of breaking: the late positions at ``nL`` have read at least ``L``
    tokens, so comparing them with the whole window at ``L`` (whose first positions
    have almost no context) would flatter every scheme.
    """
    return _block_perplexity(record["extrapolation"][arm], 0, 1, 1)


def late_perplexity(record: dict, arm: str, length_index: int = -1) -> float | None:
    """Perplexity of the positions ``>= L`` at the ``length_index``-th length (chapter 7's late perplexity)."""
    return _block_perplexity(record["extrapolation"][arm], length_index, 2)


def late_ratio(record: dict, arm: str, length_index: int = -1) -> float | None:
    """Late perplexity at a length over the in-range reference (:func:`reference_perplexity`); ``None`` if undefined."""
    late = late_perplexity(record, arm, length_index)
    return None if late is None else late / reference_perplexity(record, arm)


def accuracy(record: dict, arm: str, task: str, length_index: int) -> float | None:
    """Pooled accuracy of ``arm`` on ``task`` at the ``length_index``-th length (``None`` where not defined)."""
    return record["retrieval"][arm][task]["by_length"][length_index]


def bin_accuracy(record: dict, arm: str, task: str, length_index: int) -> tuple[list[float], int] | None:
    """Per depth bin, the accuracy at a length, and the examples per bin."""
    t = record["retrieval"][arm][task]
    row = t["correct"][length_index]
    return None if row is None else ([c / t["n_examples"] for c in row], t["n_examples"])


def learned_needle(record: dict, arm: str, level: float = 0.9) -> bool:
    """Whether ``arm`` answers at least ``level`` of the single needles at the training length."""
    return accuracy(record, arm, "single_needle", 0) >= level


def _values(seeds: dict, fn: Callable) -> list:
    return [fn(seeds[s]) for s in sorted(seeds)]


def _fmt(values, digits: int = 2) -> str:
    return "/".join("-" if v is None else f"{v:.{digits}f}" for v in values)


def _verdict(name, holds, statement, evidence, seeds, **numbers) -> Verdict:
    return Verdict(name, None if holds is None else bool(holds), statement, evidence, numbers, tuple(sorted(seeds)))


def _has(seeds: dict, *arms) -> bool:
    return all(a in seeds[s]["extrapolation"] for s in seeds for a in arms)


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------

CLAIMS: dict[str, Callable] = {}
SWEEP_CLAIMS: dict[str, Callable] = {}


def claim(fn: Callable) -> Callable:
    """Register ``fn`` among :data:`CLAIMS` (per-seed records)."""
    CLAIMS[fn.__name__] = fn
    return fn


def sweep_claim(fn: Callable) -> Callable:
    """Register ``fn`` among :data:`SWEEP_CLAIMS` (the learning-rate sweep's cells)."""
    SWEEP_CLAIMS[fn.__name__] = fn
    return fn


NAMES = {"learned": "learned", "sinusoidal": "sinusoidal", "sinusoidal_gpt2_init": "sinusoidal (GPT-2 init)",
         "shaw": "Shaw", "t5": "T5", "rope": "RoPE", "p_rope": "p-RoPE", "alibi": "ALiBi", "nope": "NoPE",
         "irope_chunk16": "iRoPE-16", "irope_chunk64": "iRoPE-64"}


def name(arm: str) -> str:
    """The arm's name in a sentence (``"iRoPE-16"`` for ``irope_chunk16``)."""
    return NAMES.get(arm, arm)


# ---------------------------------------------------------------------------
# Experiment 1: extrapolation
# ---------------------------------------------------------------------------

@claim
def breaking_arms(seeds: dict, arms=("rope", "p_rope", "sinusoidal"), at_least: float = 1.25) -> Verdict:
    """RoPE, p-RoPE and sinusoidal break: late perplexity at 8L at least ``at_least`` times the in-range reference, on every seed."""
    ratios = {a: _values(seeds, lambda r, a=a: late_ratio(r, a)) for a in arms}
    holds = all(min(v) >= at_least for v in ratios.values())
    evidence = "; ".join(f"{name(a)} {_fmt(v)}" for a, v in ratios.items())
    return _verdict("breaking_arms", holds, f"{', '.join(name(a) for a in arms)} break: late perplexity at 8L "
                    f"is at least {at_least:g} times the in-range reference on every seed",
                    f"late@8L / reference, per seed: {evidence}", seeds, ratios=ratios)


@claim
def flat_arms(seeds: dict, arms=("alibi", "shaw", "irope_chunk16", "irope_chunk64"), at_most: float = 1.10) -> Verdict:
    """ALiBi, Shaw and both chunked iRoPE arms stay flat: late perplexity at 8L within ``at_most`` of the reference."""
    ratios = {a: _values(seeds, lambda r, a=a: late_ratio(r, a)) for a in arms}
    holds = all(max(v) <= at_most for v in ratios.values())
    evidence = "; ".join(f"{name(a)} {_fmt(v, 3)}" for a, v in ratios.items())
    return _verdict("flat_arms", holds, f"{', '.join(name(a) for a in arms)} do not break: late perplexity at 8L is "
                    f"at most {at_most:g} times the in-range reference on every seed",
                    f"late@8L / reference, per seed: {evidence}", seeds, ratios=ratios)


@claim
def between_arms(seeds: dict, arms=("nope", "t5"), low: float = 1.05, high: float = 1.40) -> Verdict:
    """NoPE and T5 rise by a moderate amount: the mean late ratio's 95 % interval lies inside [low, high]."""
    intervals = {a: stats.mean_interval(_values(seeds, lambda r, a=a: late_ratio(r, a))) for a in arms}
    holds = all(low <= iv.low and iv.high <= high for iv in intervals.values())
    evidence = "; ".join(f"{name(a)} {iv.format(3)}" for a, iv in intervals.items())
    return _verdict("between_arms", holds, f"{' and '.join(name(a) for a in arms)} rise moderately: the 95 % interval "
                    f"of the mean late ratio at 8L lies between {low:g} and {high:g}",
                    f"mean late@8L / reference [95 % interval]: {evidence}", seeds,
                    intervals={a: (iv.estimate, iv.low, iv.high) for a, iv in intervals.items()})


@claim
def worst_text_at_L(seeds: dict, worst=("nope", "sinusoidal")) -> Verdict:
    """At the training length the two worst text models are NoPE and sinusoidal: every other arm beats both, on every seed."""
    arms = arms_of(seeds[min(seeds)])
    ppl = {a: _values(seeds, lambda r, a=a: r["extrapolation"][a]["perplexity"][0]) for a in arms}
    others = [a for a in arms if a not in worst]
    gaps = [min(ppl[w][i] for w in worst) - max(ppl[o][i] for o in others) for i in range(len(seeds))]
    holds = min(gaps) > 0
    return _verdict("worst_text_at_L", holds, f"{' and '.join(name(w) for w in worst)} are the two worst text models at "
                    "L on every seed", f"perplexity at L: " + "; ".join(f"{name(a)} {_fmt(ppl[a])}" for a in arms)
                    + f"; best of the two minus worst of the rest: {_fmt(gaps)}", seeds, gaps=gaps)


@claim
def seed_noise_exceeds_file_noise(seeds: dict, arm: str = "rope") -> Verdict:
    """Between seeds, RoPE's perplexity at 8L spreads more than one seed's file-clustered bootstrap interval is wide."""
    values = _values(seeds, lambda r: r["extrapolation"][arm]["perplexity"][-1])
    widths = _values(seeds, lambda r: r["extrapolation"][arm]["interval"][-1][1] - r["extrapolation"][arm]["interval"][-1][0])
    spread = max(values) - min(values)
    holds = len(values) > 1 and spread > float(np.mean(widths))
    return _verdict("seed_noise_exceeds_file_noise", holds if len(values) > 1 else None,
                    f"the spread of {name(arm)}'s perplexity at 8L between seeds exceeds the mean width of one seed's "
                    "file-clustered 95 % interval",
                    f"range over seeds {spread:.2f} ({_fmt(values)}); mean interval width {np.mean(widths):.2f}", seeds,
                    spread=spread, widths=widths)


# ---------------------------------------------------------------------------
# Mechanism: hiding the far keys
# ---------------------------------------------------------------------------

@claim
def window_restores_rope_text(seeds: dict, arms=("rope", "p_rope"), within: float = 1.05) -> Verdict:
    """With every key L or more back hidden, RoPE's and p-RoPE's late perplexity at 8L is within ``within`` of the reference."""
    ratios = {a: _values(seeds, lambda r, a=a: r["window"][a]["perplexity_past_L"] / reference_perplexity(r, a))
              for a in arms}
    full = {a: _values(seeds, lambda r, a=a: late_ratio(r, a)) for a in arms}
    holds = all(max(v) <= within for v in ratios.values())
    return _verdict("window_restores_rope_text", holds,
                    f"hiding the keys L or more back brings the late perplexity of {' and '.join(name(a) for a in arms)} "
                    f"at 8L to within {within:g} of the in-range reference, on every seed",
                    "; ".join(f"{name(a)}: with the window {_fmt(ratios[a], 3)}, without {_fmt(full[a])}" for a in arms),
                    seeds, ratios=ratios)


@claim
def window_does_not_rescue_sinusoidal(seeds: dict, arm: str = "sinusoidal", at_least: float = 1.2) -> Verdict:
    """The same window leaves the sinusoidal arm broken: its positions past L are new, whatever it attends to."""
    ratios = _values(seeds, lambda r: r["window"][arm]["perplexity_past_L"] / reference_perplexity(r, arm))
    return _verdict("window_does_not_rescue_sinusoidal", min(ratios) >= at_least,
                    f"with the same window, {name(arm)}'s late perplexity at 8L stays at least {at_least:g} times "
                    "the reference on every seed", f"with the window, per seed: {_fmt(ratios, 3)}", seeds, ratios=ratios)


@claim
def window_restores_near_needles(seeds: dict, arm: str = "rope", level: float = 0.9) -> Verdict:
    """Among the seeds on which RoPE learned the needle, hiding the far keys lets it answer every needle within L of the query."""
    learned = [s for s in sorted(seeds) if learned_needle(seeds[s], arm)]
    window = {s: seeds[s]["window"][arm]["near_needle"]["window"] for s in learned}
    full = {s: seeds[s]["window"][arm]["near_needle"]["full"] for s in learned}
    holds = bool(learned) and all(min(v) >= level for v in window.values())
    return _verdict("window_restores_near_needles", holds if learned else None,
                    f"on the seeds where {name(arm)} learned the needle, hiding the keys L or more back lets it answer "
                    f"at least {level:g} of the needles that lie within L of the query at 2L, 4L and 8L",
                    f"{len(learned)} of {len(seeds)} seeds learned it; window " +
                    "; ".join(f"{_fmt(window[s])} (full {_fmt(full[s])})" for s in learned), seeds,
                    learned=learned)


# ---------------------------------------------------------------------------
# Experiment 2: retrieval
# ---------------------------------------------------------------------------

@claim
def needle_learned_rate(seeds: dict, level: float = 0.9, at_least: float = 0.8) -> Verdict:
    """Across all arms and seeds, the single needle is learned at L (accuracy >= 0.9) in at least ``at_least`` of the runs."""
    arms = arms_of(seeds[min(seeds)])
    runs = [(s, a) for s in sorted(seeds) for a in arms]
    learned = [learned_needle(seeds[s], a, level) for s, a in runs]
    interval = stats.wilson_interval(sum(learned), len(learned))
    failed = [f"{name(a)} (seed {s})" for (s, a), ok in zip(runs, learned) if not ok]
    return _verdict("needle_learned_rate", interval.estimate >= at_least,
                    f"at least {at_least:.0%} of the runs learn the single needle at L (accuracy >= {level:g})",
                    f"{sum(learned)} of {len(learned)} runs, {interval.format()} (Wilson); not learned: "
                    + (", ".join(failed) or "none"), seeds, failed=failed)


@claim
def rope_loses_far_needles(seeds: dict, arms=("rope",), at_most: float = 0.1) -> Verdict:
    """RoPE loses the needle at 8L: accuracy at most ``at_most`` on every seed."""
    values = {a: _values(seeds, lambda r, a=a: accuracy(r, a, "single_needle", -1)) for a in arms}
    return _verdict("rope_loses_far_needles", all(max(v) <= at_most for v in values.values()),
                    f"{', '.join(name(a) for a in arms)} answer at most {at_most:g} of the single needles at 8L on every seed",
                    "; ".join(f"{name(a)} at 8L {_fmt(v)}" for a, v in values.items()), seeds, values=values)


@claim
def chunked_irope_keeps_needles(seeds: dict, arm: str = "irope_chunk16", at_least: float = 0.9) -> Verdict:
    """iRoPE with chunks of L/4 keeps the needle at 8L: accuracy at least ``at_least`` on every seed."""
    values = _values(seeds, lambda r: accuracy(r, arm, "single_needle", -1))
    return _verdict("chunked_irope_keeps_needles", min(values) >= at_least,
                    f"{name(arm)} answers at least {at_least:g} of the single needles at 8L on every seed",
                    f"{name(arm)} at 8L: {_fmt(values)}", seeds, values=values)


@claim
def small_chunks_beat_whole_chunks(seeds: dict, a: str = "irope_chunk16", b: str = "irope_chunk64") -> Verdict:
    """iRoPE-16 retrieves more needles at 8L than iRoPE-64: paired over seeds, the interval of the mean difference is above 0."""
    diff = stats.paired_difference(_values(seeds, lambda r: accuracy(r, a, "single_needle", -1)),
                                   _values(seeds, lambda r: accuracy(r, b, "single_needle", -1)))
    return _verdict("small_chunks_beat_whole_chunks", diff.low > 0 if diff.n > 1 else None,
                    f"{name(a)} retrieves more single needles at 8L than {name(b)}: the 95 % interval of the mean "
                    "per-seed difference lies above 0", f"mean difference {diff.format()} over {diff.n} seeds", seeds,
                    difference=(diff.estimate, diff.low, diff.high))


@claim
def no_arm_matches_keys(seeds: dict, task: str = "multi_key") -> Verdict:
    """No arm matches keys: on multi-key retrieval no arm, seed or length beats the copy level by two standard errors."""
    return _below_copy(seeds, "no_arm_matches_keys", task)


@claim
def no_arm_tracks_variables(seeds: dict, task: str = "variable_tracking") -> Verdict:
    """No arm follows the chains: on variable tracking no arm, seed or length beats the copy level by two standard errors."""
    return _below_copy(seeds, "no_arm_tracks_variables", task)


def _below_copy(seeds, claim_name, task):
    """The best accuracy of any arm, seed and length on ``task``, against the copy level of its examples."""
    best, where, copy, n = -1.0, None, None, None
    for s in sorted(seeds):
        for a in arms_of(seeds[s]):
            t = seeds[s]["retrieval"][a][task]
            copy, n = t["chance"]["copy"], t["n_examples"]
            for length, v in zip(t["lengths"], t["by_length"]):
                if v is not None and v > best:
                    best, where = v, (a, s, length)
    label = {"multi_key": "multi-key retrieval", "variable_tracking": "variable tracking"}[task]
    return _verdict(claim_name, best < copy,
                    f"on {label} no arm, seed or length reaches the level of a key-blind copier ({copy:g})",
                    f"best accuracy {best:.2f} ({name(where[0])}, seed {where[1]}, n = {where[2]}, {n} examples) "
                    f"against {copy:g}", seeds, best=best, copy=copy)


@claim
def literal_key_not_needed(seeds: dict, margin: float = 0.05) -> Verdict:
    """Removing the literal key from the question changes nothing: mean paired difference within ``margin`` of 0."""
    diffs = []
    for s in sorted(seeds):
        for a in arms_of(seeds[s]):
            for i in range(len(seeds[s]["retrieval"][a]["single_needle"]["lengths"])):
                x, y = accuracy(seeds[s], a, "single_needle", i), accuracy(seeds[s], a, "no_literal_match", i)
                if x is not None:
                    diffs.append(y - x)
    iv = stats.mean_interval(diffs)
    return _verdict("literal_key_not_needed", -margin <= iv.low and iv.high <= margin,
                    f"asking with a key that is not in the input changes single-needle accuracy by less than {margin:g} "
                    "on average (95 % interval)", f"no-literal minus single needle, over every arm, seed and length: "
                    f"{iv.format(3)} ({iv.n} cells)", seeds, difference=(iv.estimate, iv.low, iv.high))


@claim
def chunk_boundary_breaks_irope64(seeds: dict, arm: str = "irope_chunk64", controls=("irope_chunk16", "nope"),
                                  gap: float = 0.3) -> Verdict:
    """A needle split by a chunk boundary is lost by iRoPE-64 (never met a boundary in training), not by iRoPE-16 or NoPE."""
    def split_gap(record, a):
        b = record["retrieval"][a]["boundary"]
        n = b["n_examples"]
        split = [c / n for c, sp in zip(b["correct"], b["split"]) if sp]
        whole = [c / n for c, sp in zip(b["correct"], b["split"]) if not sp]
        return float(np.mean(whole) - np.mean(split))

    gaps = {a: _values(seeds, lambda r, a=a: split_gap(r, a)) for a in (arm, *controls)}
    holds = stats.mean_interval(gaps[arm]).low > gap and all(
        abs(stats.mean_interval(gaps[c]).estimate) < gap / 2 for c in controls)
    return _verdict("chunk_boundary_breaks_irope64", holds,
                    f"at 4L, {name(arm)} answers a needle split by a chunk boundary at least {gap:g} less often than an "
                    f"unsplit one (95 % interval over seeds), while {' and '.join(name(c) for c in controls)} show no such gap",
                    "; ".join(f"{name(a)} unsplit minus split {_fmt(v)}" for a, v in gaps.items()), seeds, gaps=gaps)


@claim
def no_consistent_u(seeds: dict, at_most: float = 0.3) -> Verdict:
    """No arm is U-shaped (both end bins beat the middle bin by 2 SE) at 8L on more than ``at_most`` of the seeds."""
    counts = {}
    for a in arms_of(seeds[min(seeds)]):
        shapes = [_shape(seeds[s], a, -1) for s in sorted(seeds)]
        counts[a] = sum(sh == "U" for sh in shapes)
    worst = max(counts.values())
    return _verdict("no_consistent_u", worst <= at_most * len(seeds),
                    f"no arm's single-needle accuracy at 8L is U-shaped (both end bins above the middle one by two "
                    f"standard errors) on more than {at_most:.0%} of the seeds",
                    "U-shaped seeds per arm: " + ", ".join(f"{name(a)} {c}" for a, c in counts.items() if a != "learned"),
                    seeds, counts=counts)


def _shape(record, arm, i) -> str:
    cells = bin_accuracy(record, arm, "single_needle", i)
    if cells is None:
        return ""
    acc, n = cells
    first, middle, last = acc[0], acc[len(acc) // 2], acc[-1]
    if stats.clearly_above(first, n, middle, n) and stats.clearly_above(last, n, middle, n):
        return "U"
    if stats.clearly_above(middle, n, first, n) and stats.clearly_above(middle, n, last, n):
        return "middle"
    if stats.clearly_above(last, n, first, n):
        return "recency"
    if stats.clearly_above(first, n, last, n):
        return "primacy"
    return ""


@claim
def alibi_recency(seeds: dict, arm: str = "alibi", at_least: float = 0.6) -> Verdict:
    """ALiBi's depth curve at 8L rises toward the query (last bin above the first by 2 SE) on at least ``at_least`` of the seeds."""
    shapes = _values(seeds, lambda r: _shape(r, arm, -1))
    k = sum(sh in ("recency",) for sh in shapes)
    return _verdict("alibi_recency", k >= at_least * len(seeds),
                    f"{name(arm)}'s single-needle accuracy at 8L rises toward the query on at least {at_least:.0%} of the seeds",
                    f"{k} of {len(seeds)} seeds; shapes " + ", ".join(sh or "flat" for sh in shapes), seeds, shapes=shapes)


# ---------------------------------------------------------------------------
# p-RoPE and the pairs RoPE uses
# ---------------------------------------------------------------------------

@claim
def p_rope_breaks_less(seeds: dict) -> Verdict:
    """p-RoPE's late ratio at 8L is below RoPE's: paired over seeds, the interval of the difference is above 0."""
    diff = stats.paired_difference(_values(seeds, lambda r: late_ratio(r, "rope")),
                                   _values(seeds, lambda r: late_ratio(r, "p_rope")))
    return _verdict("p_rope_breaks_less", diff.low > 0 if diff.n > 1 else None,
                    "p-RoPE breaks less than RoPE: the 95 % interval of the per-seed difference of late ratios at 8L "
                    "lies above 0", f"RoPE minus p-RoPE {diff.format(3)} over {diff.n} seeds", seeds,
                    difference=(diff.estimate, diff.low, diff.high))


@claim
def p_rope_costs_text_at_L(seeds: dict) -> Verdict:
    """At L, p-RoPE's perplexity is above RoPE's (paired interval above 0): the tiny model disagrees with Barbero et al."""
    diff = stats.paired_difference(_values(seeds, lambda r: r["extrapolation"]["p_rope"]["perplexity"][0]),
                                   _values(seeds, lambda r: r["extrapolation"]["rope"]["perplexity"][0]))
    return _verdict("p_rope_costs_text_at_L", diff.low > 0 if diff.n > 1 else None,
                    "at the training length p-RoPE's perplexity is higher than RoPE's (95 % interval of the per-seed "
                    "difference above 0)", f"p-RoPE minus RoPE {diff.format(3)} over {diff.n} seeds", seeds,
                    difference=(diff.estimate, diff.low, diff.high))


def pair_usage(record: dict, arm: str) -> np.ndarray:
    r"""Per RoPE pair, :math:`\lVert q^{(i)}\rVert\,\lVert k^{(i)}\rVert` averaged over layers and heads."""
    norms = record["pair_norms"][arm]
    return (np.array(norms["query"]) * np.array(norms["key"])).mean(axis=(0, 1))


@claim
def rope_uses_fast_pairs(seeds: dict, arm: str = "rope", at_least: float = 2.0) -> Verdict:
    """RoPE's fastest half of the pairs carries at least ``at_least`` times the slowest half's q-k norm, on every seed."""
    ratios = _values(seeds, lambda r: float(pair_usage(r, arm)[:4].sum() / pair_usage(r, arm)[4:].sum()))
    return _verdict("rope_uses_fast_pairs", min(ratios) >= at_least,
                    f"{name(arm)}'s four fastest pairs carry at least {at_least:g} times the query-key norm of its four "
                    "slowest, on every seed (the opposite of what Barbero et al. found in Gemma)",
                    f"fast over slow, per seed: {_fmt(ratios)}", seeds, ratios=ratios)


# ---------------------------------------------------------------------------
# Experiment 3: extension
# ---------------------------------------------------------------------------

def _ext(record, method, part, key):
    return record["extension"]["methods"][method][part][key]


@claim
def ntk_protects_text(seeds: dict, at_most: float = 0.8) -> Verdict:
    """Zero-shot at 4L, NTK-aware scaling keeps perplexity below ``at_most`` times no scaling, on every seed."""
    ratios = _values(seeds, lambda r: _ext(r, "ntk", "zero_shot", "perplexity_at_target")
                     / _ext(r, "none", "zero_shot", "perplexity_at_target"))
    return _verdict("ntk_protects_text", max(ratios) <= at_most,
                    f"zero-shot at 4L, NTK-aware scaling has at most {at_most:g} times the perplexity of no scaling "
                    "on every seed", f"NTK over none at 4L, per seed: {_fmt(ratios, 3)}", seeds, ratios=ratios)


@claim
def interpolation_costs_at_L(seeds: dict, methods=("pi", "yarn"), at_least: float = 1.3) -> Verdict:
    """PI and the paper's YaRN raise perplexity at L by at least ``at_least`` times, on every seed."""
    ratios = {m: _values(seeds, lambda r, m=m: _ext(r, m, "zero_shot", "perplexity_at_L")
                         / _ext(r, "none", "zero_shot", "perplexity_at_L")) for m in methods}
    return _verdict("interpolation_costs_at_L", all(min(v) >= at_least for v in ratios.values()),
                    f"Position Interpolation and the paper's YaRN raise perplexity at L by at least {at_least:g} times "
                    "on every seed", "; ".join(f"{m} {_fmt(v, 3)}" for m, v in ratios.items()), seeds, ratios=ratios)


@claim
def yarn_code_best_zero_shot_needle(seeds: dict, at_least: float = 0.9) -> Verdict:
    """Zero-shot at 4L, YaRN with the shipped ramp retrieves at least ``at_least`` of the needles on every seed."""
    values = _values(seeds, lambda r: _ext(r, "yarn_code", "zero_shot", "retrieval_at_target"))
    return _verdict("yarn_code_best_zero_shot_needle", min(values) >= at_least,
                    f"zero-shot at 4L, YaRN with the shipped ramp answers at least {at_least:g} of the single needles "
                    "on every seed", f"per seed: {_fmt(values)}", seeds, values=values)


@claim
def fine_tuning_recovers_text(seeds: dict) -> Verdict:
    """After the short fine-tune, every method's perplexity at 4L is below the best zero-shot perplexity at 4L, on every seed."""
    def gap(r):
        methods = list(r["extension"]["methods"])
        return min(_ext(r, m, "zero_shot", "perplexity_at_target") for m in methods) - max(
            _ext(r, m, "finetuned", "perplexity_at_target") for m in methods)
    gaps = _values(seeds, gap)
    return _verdict("fine_tuning_recovers_text", min(gaps) > 0,
                    "after 100 fine-tuning steps every method, no scaling included, reads 4L better than any method "
                    "zero-shot, on every seed", f"best zero-shot minus worst fine-tuned, per seed: {_fmt(gaps)}",
                    seeds, gaps=gaps)


@claim
def no_scaling_fine_tunes_as_well_as_pi(seeds: dict) -> Verdict:
    """After fine-tuning, no scaling reaches a perplexity at 4L no worse than PI's: the tiny model departs from Chen et al."""
    diff = stats.paired_difference(_values(seeds, lambda r: _ext(r, "pi", "finetuned", "perplexity_at_target")),
                                   _values(seeds, lambda r: _ext(r, "none", "finetuned", "perplexity_at_target")))
    return _verdict("no_scaling_fine_tunes_as_well_as_pi", diff.low > 0 if diff.n > 1 else None,
                    "after fine-tuning, plain RoPE reads 4L better than Position Interpolation (95 % interval of the "
                    "per-seed difference above 0)", f"PI minus none {diff.format(3)} over {diff.n} seeds", seeds,
                    difference=(diff.estimate, diff.low, diff.high))


# ---------------------------------------------------------------------------
# Learning curves and the learning rate
# ---------------------------------------------------------------------------

@claim
def budget_ends_after_the_needle_forms(seeds: dict, by_step: int = 800) -> Verdict:
    """Every run that learns the needle has learned it (0.9 on the curve) by step ``by_step`` of 1,000."""
    late = []
    for s in sorted(seeds):
        for a, info in seeds[s]["train"].items():
            curve = info["curve"]
            reached = [st for st, v in zip(curve["steps"], curve["needle_at_L"]) if v >= 0.9]
            if learned_needle(seeds[s], a) and (not reached or reached[0] > by_step):
                late.append(f"{name(a)} (seed {s}, step {reached[0] if reached else 'never'})")
    return _verdict("budget_ends_after_the_needle_forms", not late,
                    f"every run that learns the needle has reached 0.9 on its learning curve by step {by_step}",
                    "late learners: " + (", ".join(late) or "none"), seeds, late=late)


@sweep_claim
def shared_rate_is_near_best(cells: list, within: float = 0.05) -> Verdict:
    """On the tuning text, every arm's shared learning rate is within ``within`` of its best rate's perplexity (mean over sweep seeds)."""
    arms = sorted({c["arm"] for c in cells}, key=lambda a: list(NAMES).index(a) if a in NAMES else 99)
    shared = _shared_rate(cells)
    gaps = {}
    for a in arms:
        by_lr = {}
        for c in cells:
            if c["arm"] == a:
                by_lr.setdefault(c["lr"], []).append(c["perplexity_at_L"])
        mean = {lr: float(np.mean(v)) for lr, v in by_lr.items()}
        gaps[a] = mean[shared] / min(mean.values()) - 1
    return _verdict("shared_rate_is_near_best", max(gaps.values()) <= within,
                    f"the shared peak learning rate {shared:g} is within {within:.0%} of every arm's best rate on the "
                    "tuning text", "cost of the shared rate: " + ", ".join(f"{name(a)} {g:.1%}" for a, g in gaps.items()),
                    sorted({c["seed"] for c in cells}), gaps=gaps)


def _shared_rate(cells):
    from .config import get_config
    return get_config("full").train.lr


@sweep_claim
def init_not_rate_decides_sinusoidal(cells: list) -> Verdict:
    """With GPT-2's initialisation the sinusoidal arm learns the needle at L only at the highest rate; with d^-1/2 at every one."""
    def learned(arm, lr):
        return [c["needle_at_L"] for c in cells if c["arm"] == arm and c["lr"] == lr]

    rates = sorted({c["lr"] for c in cells})
    paper = {lr: learned("sinusoidal", lr) for lr in rates}
    gpt2 = {lr: learned("sinusoidal_gpt2_init", lr) for lr in rates}
    return _verdict("init_not_rate_decides_sinusoidal", None, "(written from the development sweep)",
                    "needle at L, Vaswani init: " + "; ".join(f"{lr:g} {_fmt(v)}" for lr, v in paper.items())
                    + " | GPT-2 init: " + "; ".join(f"{lr:g} {_fmt(v)}" for lr, v in gpt2.items()),
                    sorted({c["seed"] for c in cells}))


#: Claims whose statement changed after the held-out seeds were run: name -> what changed and why.
REVISIONS: dict[str, str] = {}

#: The record of the held-out run: the commit at which the claims were frozen, each frozen
#: claim's verdict on the held-out seeds (before any revision), and :data:`REVISIONS`.
HISTORY: dict = {"frozen_commit": None, "held_out_seeds": [], "held_out_at_freeze": {}, "revisions": REVISIONS}


def check_all(seeds: dict, sweep: dict | None = None) -> list[Verdict]:
    """Every claim on the per-seed records ``seeds``, and the sweep's claims when ``sweep`` is given.

    A claim whose arm or experiment the records lack is reported with ``holds=None``.
    """
    verdicts = [_safely(name_, fn, seeds) for name_, fn in CLAIMS.items()]
    return verdicts + (check_sweep(sweep) if sweep is not None else [])


def check_sweep(sweep: dict) -> list[Verdict]:
    """The claims about the learning-rate sweep (``lr_sweep.json``'s record)."""
    return [_safely(name_, fn, sweep["cells"]) for name_, fn in SWEEP_CLAIMS.items()]


def _safely(claim_name, fn, data) -> Verdict:
    try:
        return fn(data)
    except (KeyError, TypeError) as missing:
        return Verdict(claim_name, None, fn.__doc__.split("\n")[0], f"cannot be checked on these records ({missing!r})")


def table(verdicts, width: int = 88) -> str:
    """A plain-text table of verdicts: the claim's name, holds / FAILS / n/a, and its evidence, wrapped to ``width``."""
    import textwrap

    lines = []
    for v in verdicts:
        mark = "n/a" if v.holds is None else "holds" if v.holds else "FAILS"
        head = f"{v.name:<30} {mark:<6} "
        body = textwrap.wrap(v.evidence, width - len(head)) or [""]
        lines.append(head + body[0])
        lines += [" " * len(head) + rest for rest in body[1:]]
    return "\n".join([f"{'claim':<30} {'':<6} evidence", *lines])
