r"""The lab's synthetic tasks: RULER-style retrieval in byte tokens, readable when decoded.

RULER-style tasks (Hsieh et al. 2024, "RULER: What's the Real Context Size of Your
Long-Context Language Models?") written in the byte tokens of
:mod:`companion.lab.stdlib_corpus`:

* :func:`retrieval`: a needle ``@KQ=37`` hidden at a chosen relative depth in a
  haystack of random lowercase letters and spaces, and a query ``?KQ=`` at the end;
  the answer ``37`` follows the query. Varying the depth is the "lost in the middle"
  probe of Liu et al. (2024).
* :func:`multi_key_retrieval`: ``k`` needles with distinct keys in ``k`` fixed,
  evenly spaced slots, and the queried slot drawn uniformly (RULER's multi-key
  needle-in-a-haystack): a rule that picks a needle without reading the keys is
  right with probability exactly ``1/k``.
* :func:`no_literal_match_retrieval`: one needle, and a query whose key occurs
  nowhere in the input, so that question and needle share no literal string but
  the ``=`` (after NoLiMa, Modarressi et al. 2025).
* :func:`variable_tracking`: chains of assignments ``@KQ=37 ... @PL=KQ ... @XY=PL``
  and the query ``?XY=``; the answer is the value at the root of the chain (RULER's
  variable tracking).
* :func:`copying`: random letters, a bar, and the same letters again.

Every generator is deterministic under its ``seed`` and returns a :class:`Task`:
the tokens ``(batch, n)`` and, for each example, the positions of the answer tokens,
the answer tokens themselves, and where the queried needle starts. A model reads ``tokens[:, :-1]`` and its logits at
position ``p - 1`` predict the token at answer position ``p``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
import torch

from .._contracts import Count, InstanceOf, Integer, Reals, contract
from .stdlib_corpus import decode

__all__ = [
    "FILLER",
    "KEY_ALPHABET",
    "VALUE_ALPHABET",
    "Task",
    "retrieval",
    "multi_key_retrieval",
    "no_literal_match_retrieval",
    "variable_tracking",
    "copying",
    "task_batch",
]

#: Haystack alphabet of the tasks: lowercase letters and the space.
FILLER = b"abcdefghijklmnopqrstuvwxyz "
#: Alphabet of keys (and variable names): uppercase letters.
KEY_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: Alphabet of values: digits.
VALUE_ALPHABET = b"0123456789"
_NEEDLE, _QUERY, _EQUALS, _BAR, _START = (ord(c) for c in "@?=|^")

#: A needle's key or value width in tokens.
Width = Annotated[int, Integer(1)]
#: A task's seed (numpy's ``default_rng``).
TaskSeed = Annotated[int, Integer(0)]


def _distinct_keys(n_needles, key_len) -> None:
    """``key_len`` letters give the ``n_needles`` distinct keys: ``n_needles <= 26 ** key_len``."""
    if n_needles > len(KEY_ALPHABET) ** key_len:
        raise ValueError(f"n_needles must be at most {len(KEY_ALPHABET) ** key_len} (distinct keys), got {n_needles}")


def _distinct_names(hops, n_chains, key_len) -> None:
    """``key_len`` letters give the ``n_chains * (hops + 1)`` distinct variable names."""
    n_names = n_chains * (hops + 1)
    if n_names > len(KEY_ALPHABET) ** key_len:
        raise ValueError(f"n_chains * (hops + 1) must be at most {len(KEY_ALPHABET) ** key_len} names, got {n_names}")


def _fits(name: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum} to hold every needle and the query, got {value}")


def _retrieval_fits(length, n_needles, key_len, value_len) -> None:
    """The needles, one needle's length of slack per extra needle (to place the distractors around any depth),
    and the query fit in ``length``."""
    m = 2 + key_len + value_len
    _fits("length", length, (n_needles + (n_needles > 1)) * m + 2 + key_len + value_len)


def _slots_fit(length, n_needles, key_len, value_len) -> None:
    """One needle per slot and the query fit in ``length``."""
    m = 2 + key_len + value_len
    _fits("length", length, n_needles * m + m)


def _needle_and_query_fit(length, key_len, value_len) -> None:
    """The needle and the query fit in ``length``."""
    _fits("length", length, 2 * (2 + key_len + value_len))


def _chains_fit(length, hops, n_chains, key_len, value_len) -> None:
    """Every statement of every chain and the query fit in ``length``."""
    width = 2 + key_len + max(key_len, value_len)
    _fits("length", length, n_chains * (hops + 1) * width + 2 + key_len + value_len)


def _copy_fits(length) -> None:
    """At least one letter, the bar and its copy."""
    _fits("length", length, 3)


def _depth_per_example(depth, n_examples) -> None:
    """``depth`` is ``None``, one number in [0, 1], or one per example."""
    if depth is None:
        return
    if not (depth.ndim == 0 or depth.shape == (n_examples,)) or np.any((depth < 0) | (depth > 1)):
        raise ValueError(f"depth must be one number in [0, 1] or {n_examples} of them (one per example), "
                         f"got {depth.tolist()!r}")


# ---------------------------------------------------------------------------
# Synthetic tasks
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """A batch of a synthetic task.

    ``tokens``: ``(batch, n)`` int64 byte tokens; ``answer_positions`` and
    ``answers``: ``(batch, a)`` int64, with ``tokens[b, answer_positions[b]] ==
    answers[b]``; ``depth``: ``(batch,)`` float64 relative depth of the queried
    needle (``nan`` where it does not apply); ``name``: the generator's name;
    ``needle_start``: ``(batch,)`` int64 position of the queried needle's first
    token (``-1`` where it does not apply); ``slot``: ``(batch,)`` int64, the
    queried slot of :func:`multi_key_retrieval` (``-1`` elsewhere);
    ``needle_length``: the queried needle's number of tokens (0 where it does not apply).
    """

    tokens: torch.Tensor
    answer_positions: torch.Tensor
    answers: torch.Tensor
    depth: torch.Tensor
    name: str
    needle_start: torch.Tensor | None = None
    slot: torch.Tensor | None = None
    needle_length: int = 0

    def text(self, row: int = 0) -> str:
        """Example ``row`` decoded to a string (for reading)."""
        return decode(self.tokens[row])


@contract(_depth_per_example, _distinct_keys, _retrieval_fits)
def retrieval(n_examples: Count, length: Count, depth: Reals | None = None, seed: TaskSeed = 0,
              n_needles: Count = 1, key_len: Width = 2, value_len: Width = 2) -> Task:
    r"""Needle-in-a-haystack key-value retrieval (Hsieh et al. 2024; Liu et al. 2024).

    Each example is ``length`` tokens: a haystack of random :data:`FILLER` bytes
    holding ``n_needles`` needles ``@<key>=<value>`` with distinct keys, then the
    query ``?<key>=`` for one of them and its value (the answer, the last
    ``value_len`` tokens). Keys are ``key_len`` uppercase letters, values
    ``value_len`` digits.

    ``depth`` in ``[0, 1]`` places the queried needle: its first token is at
    position :math:`\operatorname{round}(\text{depth}\,(C - m))`, where :math:`C`
    is the length before the query and :math:`m` the needle's length, so depth 0 is
    the very start and depth 1 ends right before the query. ``depth`` is one number,
    one per example, or ``None`` for a uniform draw per example. The other needles
    go at random places that do not overlap it: with the queried needle's depth
    fixed, which needle is nearest the query then depends on the depth, so a rule
    that ignores the keys does better at some depths than others (chapter 7's
    starred exercise); :func:`multi_key_retrieval` removes that dependence.
    """
    rng = np.random.default_rng(seed)
    m = 2 + key_len + value_len
    context = length - (2 + key_len + value_len)
    depths = _depths(depth, n_examples, rng)
    tokens = rng.choice(np.frombuffer(FILLER, np.uint8), size=(n_examples, length)).astype(np.int64)
    keys = _distinct_words(rng, n_examples, n_needles, key_len, KEY_ALPHABET)
    values = _words(rng, (n_examples, n_needles), value_len, VALUE_ALPHABET)
    needles = np.concatenate([_col(_NEEDLE, keys), keys, _col(_EQUALS, keys), values], axis=-1)  # (B, k, m)
    target = np.rint(depths * (context - m)).astype(np.int64)
    for b in range(n_examples):
        starts = _place_around(rng, context, m, n_needles - 1, target[b])
        _write(tokens[b], np.concatenate([[target[b]], starts]), needles[b])
    tokens[:, context:] = _query(keys[:, 0], values[:, 0])
    return _task(tokens, value_len, values[:, 0], depths, "multi_key_retrieval" if n_needles > 1 else "retrieval",
                 target, m)


@contract(_distinct_keys, _slots_fit)
def multi_key_retrieval(n_examples: Count, length: Count, seed: TaskSeed = 0,
                        n_needles: Annotated[int, Integer(2, why="multi-key retrieval needs two needles")] = 4,
                        key_len: Width = 2, value_len: Width = 2) -> Task:
    r"""RULER's multi-key needle-in-a-haystack (Hsieh et al. 2024), with fixed slots.

    The context before the query is cut into ``n_needles`` equal slots; slot ``j``
    holds one needle ``@<key_j>=<value_j>`` at a uniformly drawn place inside it,
    the keys distinct. The queried slot is drawn uniformly and independently of
    everything else, so the model must match the query's key to find its needle.

    A *copier*, a rule that answers with the value of one needle chosen without
    reading the keys (the first, the nearest to the query, a random one), is right
    exactly when its choice is the queried slot: with probability ``1/k`` over the
    queried slot, whatever the rule (chapter 7's starred exercise, part 3). Given
    the queried slot, of course, a positional rule is right on one slot and wrong
    on the others, which is why the lab reports the copiers' accuracy slot by slot
    too (:func:`companion.lab.evals.copier_accuracy`). ``depth`` of the task is the
    queried needle's depth, ``slot`` its slot.
    """
    m = 2 + key_len + value_len
    context = length - m
    rng = np.random.default_rng(seed)
    tokens = rng.choice(np.frombuffer(FILLER, np.uint8), size=(n_examples, length)).astype(np.int64)
    keys = _distinct_words(rng, n_examples, n_needles, key_len, KEY_ALPHABET)            # (B, k, key_len)
    values = _words(rng, (n_examples, n_needles), value_len, VALUE_ALPHABET)             # (B, k, value_len)
    needles = np.concatenate([_col(_NEEDLE, keys), keys, _col(_EQUALS, keys), values], axis=-1)  # (B, k, m)
    # slot j: [edges[j], edges[j+1])
    edges = (np.arange(n_needles + 1) * context) // n_needles
    starts = edges[:-1] + rng.integers(0, edges[1:] - edges[:-1] - m + 1, size=(n_examples, n_needles))
    for b in range(n_examples):
        _write(tokens[b], starts[b], needles[b])
    slot = rng.integers(0, n_needles, size=n_examples)
    rows = np.arange(n_examples)
    tokens[:, context:] = _query(keys[rows, slot], values[rows, slot])
    start = starts[rows, slot]
    task = _task(tokens, value_len, values[rows, slot], start / max(context - m, 1), "multi_key_retrieval", start, m)
    return Task(**{**task.__dict__, "slot": torch.from_numpy(slot.astype(np.int64))})


@contract(_depth_per_example, _needle_and_query_fit)
def no_literal_match_retrieval(n_examples: Count, length: Count, depth: Reals | None = None, seed: TaskSeed = 0,
                               key_len: Width = 2, value_len: Width = 2) -> Task:
    r"""One needle, and a query whose key occurs nowhere in the input (after NoLiMa).

    :func:`retrieval` with one needle ``@<key>=<value>``, except that the query is
    ``?<other key>=`` with a key none of whose letters is in the needle's key: the
    question and the needle share no letter, only the separator ``=``. In NoLiMa (Modarressi et al.
    2025) a question reaches its needle through a latent association instead of a
    repeated word; here there is no association to learn, so the probe asks the
    narrower question whether a model's lookup *needs* the literal key. The answer
    is the needle's value: a model that copies what follows the only ``@`` is right
    every time (copy level 1), a model that looks for the query's key finds nothing.
    """
    rng = np.random.default_rng(seed)
    m = 2 + key_len + value_len
    context = length - m
    depths = _depths(depth, n_examples, rng)
    tokens = rng.choice(np.frombuffer(FILLER, np.uint8), size=(n_examples, length)).astype(np.int64)
    key = _words(rng, (n_examples,), key_len, KEY_ALPHABET)                                # (B, key_len)
    values = _words(rng, (n_examples,), value_len, VALUE_ALPHABET)                         # (B, value_len)
    alphabet = np.frombuffer(KEY_ALPHABET, np.uint8).astype(np.int64)
    # the query's key: letters none of which is in the needle's key
    other = np.stack([rng.choice(np.setdiff1d(alphabet, row), size=key_len) for row in key])
    start = np.rint(depths * (context - m)).astype(np.int64)
    needle = np.concatenate([_col(_NEEDLE, key), key, _col(_EQUALS, key), values], axis=-1)   # (B, m)
    for b in range(n_examples):
        _write(tokens[b], start[b:b + 1], needle[b:b + 1])
    tokens[:, context:] = _query(other, values)
    return _task(tokens, value_len, values, depths, "no_literal_match_retrieval", start, m)


@contract(_distinct_names, _chains_fit)
def variable_tracking(n_examples: Count, length: Count, hops: Count = 2, n_chains: Count = 1, seed: TaskSeed = 0,
                      key_len: Width = 2, value_len: Width = 2) -> Task:
    r"""Variable tracking (Hsieh et al. 2024): follow a chain of assignments.

    Each chain is ``@X0=<value>``, then ``@X1=X0``, ..., ``@Xh=X(h-1)`` (``hops``
    copies), placed in this order at random places in a :data:`FILLER` haystack;
    ``n_chains`` chains with distinct names are interleaved. The query ``?Xh=`` asks
    for the last variable of chain 0, and the answer is chain 0's value. ``depth``
    and ``needle_start`` of the returned :class:`Task` are those of chain 0's first
    statement. Names are ``key_len`` uppercase letters, values ``value_len`` digits.
    """
    n_names = n_chains * (hops + 1)
    rng = np.random.default_rng(seed)
    width = 2 + key_len + max(key_len, value_len)
    context = length - (2 + key_len + value_len)
    tokens = rng.choice(np.frombuffer(FILLER, np.uint8), size=(n_examples, length)).astype(np.int64)
    names = _distinct_words(rng, n_examples, n_names, key_len, KEY_ALPHABET)
    names = names.reshape(n_examples, n_chains, hops + 1, key_len)
    values = _words(rng, (n_examples, n_chains), value_len, VALUE_ALPHABET)
    first = np.empty(n_examples, np.int64)
    for b in range(n_examples):
        order = rng.permutation(np.repeat(np.arange(n_chains), hops + 1))  # chain of each slot
        step = np.zeros(order.size, np.int64)
        step[np.argsort(order, kind="stable")] = np.tile(np.arange(hops + 1), n_chains)
        starts = _place_sequence(rng, context, width, order.size)
        for c, t, s in zip(order, step, starts):
            rhs = values[b, c] if t == 0 else names[b, c, t - 1]
            tokens[b, s:s + 2 + key_len + rhs.size] = np.concatenate([[_NEEDLE], names[b, c, t], [_EQUALS], rhs])
        first[b] = starts[(order == 0) & (step == 0)][0]
    tokens[:, context:] = _query(names[:, 0, hops], values[:, 0])
    return _task(tokens, value_len, values[:, 0], first / max(context - width, 1), "variable_tracking", first)


@contract(_copy_fits)
def copying(n_examples: Count, length: Count, seed: TaskSeed = 0) -> Task:
    r"""Copying: ``c`` random lowercase letters, a bar ``|``, the same ``c`` letters again.

    ``c = (length - 1) // 2``; when ``length`` is even the example starts with one
    ``^``. The answers are the second copy (the last ``c`` positions); the first
    copy sits at a distance of ``c + 1`` from each answer.
    """
    rng = np.random.default_rng(seed)
    c = (length - 1) // 2
    content = rng.choice(np.frombuffer(FILLER[:-1], np.uint8), size=(n_examples, c)).astype(np.int64)
    lead = np.full((n_examples, length - 2 * c - 1), _START, np.int64)
    tokens = np.concatenate([lead, content, np.full((n_examples, 1), _BAR), content], axis=1)
    return _task(tokens, c, content, np.full(n_examples, np.nan), "copying")


@contract
def task_batch(task: Annotated[Task, InstanceOf(Task, "a companion.lab.tasks.Task", error=ValueError)]):
    r"""Training pair ``(x, y)`` for a task: ``x = tokens[:, :-1]`` and targets only at the answers.

    ``y`` is ``(batch, n - 1)`` int64, ``-100`` (ignored by
    ``torch.nn.functional.cross_entropy``) everywhere except ``y[b, p - 1] =
    tokens[b, p]`` for each answer position ``p``: the loss is on the answers alone.
    """
    x = task.tokens[:, :-1]
    y = torch.full_like(x, -100)
    y.scatter_(1, task.answer_positions - 1, task.answers)
    return x, y


# ---------------------------------------------------------------------------
# Private helpers
# ---------------------------------------------------------------------------

def _depths(depth, n: int, rng) -> np.ndarray:
    """One depth per example: uniform draws for ``None``, else ``depth`` broadcast to ``(n,)``."""
    if depth is None:
        return rng.random(n)
    return np.broadcast_to(depth, (n,)).astype(np.float64).copy()


def _query(key: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``?<key>=<value>`` for each row: ``(n, key_len)``, ``(n, value_len)`` -> ``(n, 2 + key_len + value_len)``."""
    return np.concatenate([_col(_QUERY, key), key, _col(_EQUALS, key), value], axis=1)


def _words(rng, shape, width: int, alphabet: bytes) -> np.ndarray:
    return rng.choice(np.frombuffer(alphabet, np.uint8), size=tuple(shape) + (width,)).astype(np.int64)


def _distinct_words(rng, n: int, k: int, width: int, alphabet: bytes) -> np.ndarray:
    """``(n, k, width)``: ``k`` distinct words per row, drawn without replacement."""
    size = len(alphabet) ** width
    index = np.argsort(rng.random((n, size)), axis=1)[:, :k] if size <= 4096 else _sample_distinct(rng, n, k, size)
    digits = (index[..., None] // (len(alphabet) ** np.arange(width - 1, -1, -1))) % len(alphabet)
    return np.frombuffer(alphabet, np.uint8).astype(np.int64)[digits]


def _sample_distinct(rng, n, k, size):
    return np.stack([rng.choice(size, size=k, replace=False) for _ in range(n)])


def _col(value: int, like: np.ndarray) -> np.ndarray:
    return np.full(like.shape[:-1] + (1,), value, np.int64)


def _write(row: np.ndarray, starts: np.ndarray, segments: np.ndarray) -> None:
    """Write ``segments`` (``(k, m)``) into ``row`` at ``starts`` (``(k,)``), vectorised."""
    row[starts[:, None] + np.arange(segments.shape[1])] = segments


def _place_sequence(rng, context: int, m: int, k: int) -> np.ndarray:
    """``k`` sorted, non-overlapping starts of length-``m`` segments in ``0..context-1``."""
    free = context - k * m
    cuts = np.sort(rng.integers(0, free + 1, size=k))
    return cuts + m * np.arange(k)


def _place_around(rng, context: int, m: int, k: int, fixed: int) -> np.ndarray:
    """``k`` starts of length-``m`` segments that overlap neither each other nor ``[fixed, fixed + m)``."""
    if k == 0:
        return np.zeros(0, np.int64)
    before_room, after_room = fixed, context - fixed - m
    lo, hi = max(0, k - after_room // m), min(k, before_room // m)
    n_before = rng.integers(lo, hi + 1)
    before = _place_sequence(rng, before_room, m, n_before) if n_before else np.zeros(0, np.int64)
    n_after = k - n_before
    after = fixed + m + _place_sequence(rng, after_room, m, n_after) if n_after else np.zeros(0, np.int64)
    return np.concatenate([before, after]).astype(np.int64)


def _task(tokens: np.ndarray, n_answer: int, answers: np.ndarray, depths: np.ndarray, name: str,
          needle_start=None, needle_length: int = 0) -> Task:
    n, length = tokens.shape
    positions = np.broadcast_to(np.arange(length - n_answer, length), (n, n_answer))
    start = np.full(n, -1, np.int64) if needle_start is None else np.asarray(needle_start, np.int64)
    return Task(
        tokens=torch.from_numpy(np.ascontiguousarray(tokens)),
        answer_positions=torch.from_numpy(positions.copy()),
        answers=torch.from_numpy(np.ascontiguousarray(answers)),
        depth=torch.from_numpy(np.asarray(depths, np.float64)),
        name=name,
        needle_start=torch.from_numpy(start.copy()),
        slot=torch.full((n,), -1, dtype=torch.int64),
        needle_length=needle_length,
    )
