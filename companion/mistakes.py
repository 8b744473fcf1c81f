"""Typical wrong answers to the chapters' exercises, for their checks.

A check that knows what a typical mistake produces can name it ("your slopes start one
head late") instead of reporting a mismatch. The mistakes below are shared by a
question's public and hidden checks, which otter-grader runs as separate,
self-contained functions; keeping them here writes each one once.
"""
from __future__ import annotations

import numpy as np

from . import alibi, checks, relative

# --- chapter 2: T5 buckets ---------------------------------------------------------------

def t5_bucket_variant(relative_position, bidirectional: bool = True, num_buckets: int = 32,
                      max_distance: int = 128, *, past_upper: bool = False, cap: bool = True,
                      rounding=np.floor, other_size: bool = False, future_zero: bool = True,
                      eps: float = 0.0) -> np.ndarray:
    """T5's bucket rule (:func:`companion.relative.t5_bucket`), or one of its typical mistakes.

    The first four parameters are those of the rule; with the defaults of the others
    the result is the rule's. ``past_upper`` gives keys *before* the query the upper
    half of the encoder's buckets. ``cap`` keeps far distances in the last bucket
    (``min(B' - 1, ...)``). ``rounding`` is how ``y(n)`` becomes a bucket offset (the
    rule uses ``floor``). ``other_size`` swaps the encoder's and the decoder's number
    of buckets per direction. ``future_zero``, in the decoder, sends every key after
    the query to bucket 0. ``eps`` is added to ``y(n)``; a tiny negative value models a
    rounding error.

    Shapes: ``relative_position`` any shape; returns its shape, integers.
    """
    rp = np.asarray(relative_position)
    if bidirectional:
        size = num_buckets if other_size else num_buckets // 2
        offset = np.where(rp < 0 if past_upper else rp > 0, size, 0)
        n = np.abs(rp)
    else:
        size, offset = (num_buckets // 2 if other_size else num_buckets), 0
        n = np.maximum(-rp, 0) if future_zero else np.abs(rp)
    exact = size // 2
    y = np.log(np.maximum(n, exact) / exact) / np.log(max_distance / exact) * (size - exact) + eps
    far = exact + rounding(y).astype(int)
    if cap:
        far = np.minimum(far, size - 1)
    return offset + np.where(n < exact, n, far)


def check_t5_bucket_index(t5_bucket_index, relative_positions, options: dict, wrong: dict) -> None:
    """Check a student's ``t5_bucket_index(r, **options)`` for every ``r`` in ``relative_positions``.

    Where ``y(n)`` is a whole number, a bucket one below (a rounding error of the
    logarithms) is accepted. ``wrong`` maps a diagnosis to the buckets of a mistake.
    """
    rel = np.asarray(relative_positions)
    call = "t5_bucket_index(r" + "".join(f", {k}={v}" for k, v in options.items()) + ")"
    got = np.array([int(checks.result(call.replace("(r", f"({r}", 1), t5_bucket_index(int(r), **options)))
                    for r in rel])
    expected = relative.t5_bucket(rel, **options)
    got = np.where(got == t5_bucket_variant(rel, **options, eps=-1e-9), expected, got)
    for diagnosis, mistaken in wrong.items():
        checks.holds(not np.array_equal(got, mistaken), call, diagnosis)
    bad = np.flatnonzero(got != expected)
    if bad.size:
        r = int(rel[bad[0]])
        checks.holds(False, call.replace("(r", f"({r}", 1),
                     f"should be bucket {expected[bad[0]]}, got {got[bad[0]]} ({bad.size} of the "
                     f"{rel.size} relative positions from {rel[0]} to {rel[-1]} get a wrong bucket).")


# --- chapter 4: ALiBi slopes -------------------------------------------------------------

def alibi_slopes_variant(n_heads: int, *, shift: int = 0, places: int = 1,
                         power_rule: bool = False) -> np.ndarray:
    """The authors' slopes (:func:`companion.alibi.slopes`), or one of their typical mistakes.

    With the defaults the result is the authors' slopes for ``n_heads`` heads.
    ``shift`` starts the first ``P`` slopes ``shift`` heads late (negative: early).
    ``places`` takes the extra slopes from places ``places, places + 2, ...`` of the
    list for ``2P`` heads (the rule uses 1, the odd places). ``power_rule`` uses
    ``2^(-8h/H)`` for every ``H``, as if it were a power of two.

    Shapes: returns ``(n_heads,)``, float64.
    """
    if power_rule:
        return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)
    p = alibi.largest_power_of_two(n_heads)
    first = 2.0 ** (-8.0 * (np.arange(1, p + 1) + shift) / p)
    extra = 2.0 ** (-8.0 * np.arange(places, 2 * p + 1, 2) / (2 * p))
    return np.concatenate([first, extra[: n_heads - p]])


def alibi_slope_mistakes(n_heads: int) -> dict[str, np.ndarray]:
    """Diagnosis -> the slopes that mistake gives for ``n_heads`` heads.

    Shapes: each set of slopes ``(n_heads,)``.
    """
    p = alibi.largest_power_of_two(n_heads)
    right = alibi.slopes(n_heads)
    return {
        "your slopes start one head late: head 1's slope is 2^(-8/H), the sequence m_h = 2^(-8h/H) "
        "starts at h = 1, not h = 2": alibi_slopes_variant(n_heads, shift=1),
        "your slopes start one head early: head 1's slope is 2^(-8/H), not 2^0 = 1, and the last "
        "is 2^(-8)": alibi_slopes_variant(n_heads, shift=-1),
        "the slopes are in reverse order: head 1 is the steepest, 2^(-8/H)": right[::-1],
        "the exponent must scale with the number of heads: m_h = 2^(-8h/H); 2^(-h) is right only for "
        "H = 8 (16 heads go from 2^(-1/2) to 2^(-8))": 2.0 ** -np.arange(1.0, n_heads + 1),
        f"{n_heads} is not a power of two: the authors' rule keeps the {p} slopes for {p} heads and appends "
        f"slopes from the list for {2 * p} heads, instead of 2^(-8h/H)": alibi_slopes_variant(n_heads, power_rule=True),
        f"the extra slopes repeat slopes of the first {p} heads: take the odd places (1st, 3rd, 5th, ...) "
        f"of the list for {2 * p} heads": alibi_slopes_variant(n_heads, places=2),
        f"the slopes are sorted; the authors' code appends the extra slopes after the first {p}, "
        "so the list is not sorted": np.sort(right)[::-1]}
