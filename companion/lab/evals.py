r"""Evaluations that accept any model: perplexity by length and retrieval accuracy.

A *model* here is any callable that maps an int64 tensor of tokens ``(batch, n)``
to logits ``(batch, n, vocab)``, the logits at position ``t`` predicting the token
at ``t + 1``. A :class:`companion.lab.models.TinyTransformer` is one; so is a reader's
own network, or a plain function. For example, a model that knows nothing:

.. code-block:: python

    import torch
    from companion.lab import evals, stdlib_corpus

    def uniform(tokens):                     # (batch, n) -> (batch, n, 256)
        return torch.zeros(*tokens.shape, 256)

    corpus = stdlib_corpus.load_corpus()
    evals.perplexity_by_length(uniform, corpus.validation, [64, 128])
    # [{'length': 64, 'perplexity': 256.0, ...}, {'length': 128, 'perplexity': 256.0, ...}]

A ``torch.nn.Module`` is put in eval mode and called under ``torch.no_grad()``, on
the device of its parameters. A model that cannot read a length (a learned
position table past its last row) raises ``IndexError``; the length is then
recorded as not defined (``"defined": False`` and the error message) instead of
stopping the evaluation.

**Perplexity** (:func:`perplexity`): for windows of ``n + 1`` tokens the model reads
the first ``n`` and is scored on the next token at every position,

.. math:: \operatorname{PPL} = \exp\Bigl(-\frac{1}{N n}\sum_{w=1}^{N}\sum_{t=1}^{n}
          \log p(x_{w,t} \mid x_{w,<t})\Bigr),

non-overlapping windows, every position counted, as in the "nonoverlapping"
evaluation of Press, Smith & Lewis (2022). 1 for a model that is always sure and
right, ``vocab`` for the uniform guess.

Each scored token belongs to the file it comes from, and each window position to a
block of positions (``blocks``), so the results can be summed by file (the clusters
of :func:`companion.lab.stats.cluster_bootstrap`) and by position (the late
positions of chapter 7's definition of breaking, or positions ``L/2 .. L-1`` as an
in-range reference with comparable context).

**Retrieval accuracy** (:func:`answer_accuracy`, :func:`accuracy_grid`,
:func:`depth_bin_grid`): the share of examples whose every answer token is the
model's top prediction (teacher forcing: the second answer token is predicted after
the true first one), by needle depth and total length, as in RULER (Hsieh et al.
2024) and Lost in the Middle (Liu et al. 2024). :func:`copier_accuracy` scores the
rules that answer without reading the keys on the same examples: the level a model
must beat to show that it matches keys.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._contracts import Array, Count, InstanceOf, Integer, Level, NonNegative, OneOf, PositiveCounts, contract
from . import stdlib_corpus, tasks
from .kinds import Edges, Function, TokenTensor, TorchModule

__all__ = ["as_model_fn", "perplexity", "perplexity_by_length", "bootstrap_interval", "answer_correct",
           "answer_accuracy", "accuracy_grid", "depth_bin_grid", "straddles", "copier_accuracy", "COPIERS",
           "attention_beyond", "pair_norms"]

#: A model, or any function ``tokens (batch, n) -> logits (batch, n, vocab)``.
ModelFn = Annotated[Callable, Function("callable: tokens (batch, n) -> logits (batch, n, vocab)")]
#: Windows of ``n + 1`` tokens: read ``n``, score the next ``n``.
Windows = Annotated[torch.Tensor, TokenTensor(2, "(N, n + 1)", min_last=2, why="n >= 1")]
#: The lengths to evaluate at: one integer >= 1, or a list of them.
Lengths = Annotated[list, PositiveCounts(single=True)]
#: A task of :mod:`companion.lab.tasks`.
Task = Annotated[tasks.Task, InstanceOf(tasks.Task, "a companion.lab.tasks.Task", error=ValueError)]
#: A seed of ``numpy.random.default_rng``.
Seed = Annotated[int, Integer(0)]
#: A task generator of :mod:`companion.lab.tasks`.
TaskMaker = Annotated[Callable, Function("a task generator such as companion.lab.tasks.retrieval")]
#: The rules that answer a retrieval question without reading any key.
COPIERS = ("first", "last", "random")


@contract
def as_model_fn(model: ModelFn) -> Callable[[torch.Tensor], torch.Tensor]:
    """Wrap ``model`` as a function ``tokens -> logits`` (eval mode, no gradients, its device).

    A ``torch.nn.Module`` gets ``eval()``, ``torch.no_grad()`` and its input moved to
    the device of its first parameter (CPU when it has none); any other callable is
    called as it is, under ``torch.no_grad()``. ``ValueError`` if ``model`` is not
    callable.
    """
    if isinstance(model, nn.Module):
        model.eval()
        param = next(model.parameters(), None)
        device = param.device if param is not None else torch.device("cpu")
    else:
        device = None

    def fn(tokens: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(tokens if device is None else tokens.to(device))

    return fn


@contract
def perplexity(model: ModelFn, windows: Windows, batch_size: Count = 16) -> float:
    r"""Perplexity of ``model`` on ``windows`` ``(N, n + 1)``: read ``n`` tokens, score the next ``n``.

    Log-probabilities are taken in float64. Returns a float >= 1.
    """
    return math.exp(_mean_nll(as_model_fn(model), windows.long(), batch_size))


@contract
def perplexity_by_length(model: ModelFn, stream: stdlib_corpus.TokenStream, lengths: Lengths,
                         tokens_per_length: Count | None = None, batch_tokens: Count = 8192, past: Count | None = None,
                         n_bootstrap: NonNegative = 0, seed: Seed = 0,
                         file_starts: Annotated[np.ndarray, Edges("offsets")] | None = None,
                         blocks: Annotated[np.ndarray, Edges("position edges", least=2)] | None = None) -> list[dict]:
    r"""Perplexity at each length of ``lengths``, on the same text, with a bootstrap interval.

    For length ``n`` the stream is cut into consecutive non-overlapping windows of
    ``n + 1`` tokens (:func:`companion.lab.stdlib_corpus.text_windows`): all that fit when
    ``tokens_per_length`` is ``None``, else the first ``tokens_per_length // n``
    (at least 1). Each window is scored with :func:`perplexity`'s rule, about
    ``batch_tokens`` tokens per forward pass.

    ``past=L`` also reports ``perplexity_past``: the perplexity of the predictions
    made at positions :math:`t \ge L` alone (the model has read more than ``L``
    tokens), ``None`` for ``n <= L``. These are the predictions a model trained at
    ``L`` never made in training, so an average over whole windows cannot dilute
    them with in-range positions.

    ``file_starts`` (the offsets at which the files of ``stream`` start, e.g.
    ``Corpus.validation_starts``) and ``blocks`` (increasing
    position edges, e.g. ``[0, 32, 64, 128]``) add ``nll_by_file`` and
    ``tokens_by_file``: for each file (the file of the predicted token) and each block
    of window positions ``[blocks[j], blocks[j + 1])``, the summed negative
    log-likelihood and the number of tokens. With ``file_starts``, the interval
    resamples files (a cluster bootstrap, :func:`companion.lab.stats.cluster_bootstrap`).

    ``n_bootstrap > 0`` adds ``interval``, the 2.5 % and 97.5 % quantiles of the
    perplexity over ``n_bootstrap`` resamples, drawn with
    ``numpy.random.default_rng(seed)``: of the files when ``file_starts`` is given,
    else of the windows (Efron & Tibshirani 1993).

    Returns one dict per length: ``length``, ``perplexity`` (``None`` if not
    defined), ``perplexity_past``, ``interval``, ``defined``, ``error`` (the
    ``IndexError`` message, or ``None``), ``n_windows``, ``n_tokens`` (tokens scored),
    and ``nll_by_file``, ``tokens_by_file`` when asked.
    """
    from . import stats

    fn = as_model_fn(model)
    starts, edges = file_starts, blocks
    results = []
    for n in lengths:
        per_window = None if tokens_per_length is None else max(1, tokens_per_length // n)
        windows = stdlib_corpus.text_windows(stream, n, per_window)
        row = {"length": n, "n_windows": int(windows.shape[0]), "n_tokens": int(windows.shape[0] * n),
               "perplexity_past": None, "interval": None}
        try:
            nll = _position_nll(fn, windows, max(1, batch_tokens // n))   # (N, n), float64
        except IndexError as err:
            row.update(perplexity=None, defined=False, error=str(err))
            results.append(row)
            continue
        row.update(perplexity=math.exp(float(nll.mean())), defined=True, error=None)
        if past is not None and n > past:
            row["perplexity_past"] = math.exp(float(nll[:, past:].mean()))
        if starts is not None:
            by_file, count = _sums_by_file_and_block(nll, starts, edges)      # (files, blocks) each
            row["nll_by_file"], row["tokens_by_file"] = by_file.tolist(), count.tolist()
            if n_bootstrap:
                row["interval"] = stats.cluster_bootstrap(by_file.sum(axis=1), count.sum(axis=1), n_bootstrap, seed)
        elif n_bootstrap:
            row["interval"] = bootstrap_interval(nll.sum(axis=1), n, n_bootstrap, seed)
        results.append(row)
    return results


@contract
def bootstrap_interval(window_nll: Annotated[np.ndarray, Array(ndim=1, nonempty=True)], tokens_per_window: Count,
                       n_resamples: Count = 1000, seed: Seed = 0, level: Level = 0.95) -> list[float]:
    r"""Percentile bootstrap interval of the perplexity from per-window summed log-losses.

    ``window_nll[w]`` is the summed negative log-likelihood of window ``w`` (of
    ``tokens_per_window`` scored tokens). Each resample draws as many windows as
    there are, with replacement, and takes :math:`\exp(\sum_w \ell_w / (N n))`;
    the interval is the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles.
    """
    nll = window_nll
    rng = np.random.default_rng(seed)
    index = rng.integers(0, nll.size, size=(n_resamples, nll.size))
    ppl = np.exp(nll[index].sum(axis=1) / (nll.size * tokens_per_window))
    low, high = np.quantile(ppl, [(1 - level) / 2, (1 + level) / 2])
    return [float(low), float(high)]


@contract
def answer_correct(model: ModelFn, task: Task, batch_size: Count = 32) -> torch.Tensor:
    """Per example of ``task``: ``True`` where every answer token is the model's top prediction.

    The rule of :func:`answer_accuracy`; returns a boolean tensor ``(batch,)``.
    """
    fn = as_model_fn(model)
    correct = []
    for start in range(0, task.tokens.shape[0], batch_size):
        part = slice(start, start + batch_size)
        logits = _call(fn, task.tokens[part, :-1]).cpu()
        at = (task.answer_positions[part] - 1)[..., None].expand(-1, -1, logits.shape[-1])
        guess = torch.gather(logits, 1, at).argmax(-1)
        correct.append((guess == task.answers[part]).all(-1))
    return torch.cat(correct)


def answer_accuracy(model, task: tasks.Task, batch_size: int = 32) -> dict:
    r"""Accuracy of ``model`` on the answers of ``task`` (a :class:`companion.lab.tasks.Task`).

    The model reads ``tokens[:, :-1]``; its prediction for answer position ``p`` is
    the argmax of the logits at ``p - 1`` (teacher forcing). Returns ``accuracy``
    (share of examples with every answer token right) and ``n_examples``.
    """
    right = answer_correct(model, task, batch_size)
    return {"accuracy": float(right.float().mean()), "n_examples": int(right.shape[0])}


@contract
def accuracy_grid(model: ModelFn, lengths: Lengths,
                  depths: Annotated[np.ndarray, Array(ndim=1, nonempty=True, nonnegative=True, at_most=1.0,
                                                      why="relative depths")],
                  n_examples: Count = 100, seed: Seed = 0, make_task: TaskMaker = tasks.retrieval,
                  batch_size: Count = 32, **options) -> list[dict]:
    r"""Retrieval accuracy for every (length, depth) pair: RULER's grid in miniature.

    For each ``length`` ``n`` (the number of tokens the model reads) and each
    ``depth`` in ``[0, 1]``, ``make_task(n_examples, n + 1, depth=depth, seed=...,
    **options)`` builds the examples (default :func:`companion.lab.tasks.retrieval`,
    whose ``n_needles`` adds distractors) and :func:`answer_accuracy` scores them. The seed depends on ``seed``
    and the length
    only, so every depth of a length shares its haystacks and keys. Returns one dict
    per pair: ``length``, ``depth``, ``accuracy`` (``None``
    when the length is not defined for the model), ``defined``, ``error``,
    ``n_examples``.
    """
    fn = as_model_fn(model)
    rows = []
    for n in lengths:
        for depth in depths.tolist():
            task = make_task(n_examples, n + 1, depth=depth, seed=seed * 100_003 + n, **options)
            row = {"length": n, "depth": depth, "n_examples": n_examples}
            try:
                row.update(answer_accuracy(fn, task, batch_size), defined=True, error=None)
            except IndexError as err:
                row.update(accuracy=None, defined=False, error=str(err))
            rows.append(row)
    return rows


@contract
def depth_bin_grid(model: ModelFn, lengths: Lengths, n_bins: Count, n_examples: Count, seed: Seed = 0,
                   make_task: TaskMaker = tasks.retrieval, chunks: Annotated[list, PositiveCounts(empty=True)] = (),
                   batch_size: Count = 32, **options) -> list[dict]:
    r"""Retrieval accuracy by length and depth *bin*, the needle jittered inside each bin.

    For each ``length`` ``n`` and each of ``n_bins`` equal bins :math:`[j/B, (j+1)/B)`
    of depth, ``make_task(n_examples, n + 1, depth=d, seed=...)`` builds examples
    whose depths ``d`` are drawn uniformly inside the bin, so the needle's start
    moves token by token instead of sitting on a few fixed positions (a fixed grid
    can put every needle of a depth across the same chunk boundary). Every cell
    has its own seed, so cells share no haystack.

    ``chunks``: chunk sizes ``C`` for which the examples are split into needles
    that straddle a multiple of ``C`` and needles that do not (:func:`straddles`).
    Returns one dict per (length, bin): ``length``, ``bin`` (its edges),
    ``correct``, ``n_examples``, ``accuracy`` (``None`` when the length is not
    defined for the model), ``defined``, ``error``, and ``straddle``:
    ``{C: [correct straddling, straddling, correct clear, clear]}``.
    """
    fn = as_model_fn(model)
    rows = []
    for n in lengths:
        for j in range(n_bins):
            rng = np.random.default_rng([seed, n, j])
            depth = (j + rng.random(n_examples)) / n_bins
            task = make_task(n_examples, n + 1, depth=depth, seed=seed * 100_003 + n * 101 + j, **options)
            row = {"length": n, "bin": [j / n_bins, (j + 1) / n_bins], "n_examples": n_examples}
            try:
                right = answer_correct(fn, task, batch_size).numpy()
            except IndexError as err:
                row.update(correct=None, accuracy=None, defined=False, error=str(err), straddle=None)
                rows.append(row)
                continue
            split = {}
            for c in chunks:
                across = straddles(task.needle_start.numpy(), task.needle_length, c)
                split[c] = [int(right[across].sum()), int(across.sum()),
                            int(right[~across].sum()), int((~across).sum())]
            row.update(correct=int(right.sum()), accuracy=float(right.mean()), defined=True, error=None, straddle=split)
            rows.append(row)
    return rows


def straddles(starts, m: int, chunk: int) -> np.ndarray:
    r"""Whether a needle of ``m`` tokens starting at ``starts`` crosses a multiple of ``chunk``.

    True when :math:`\lfloor s / C\rfloor \ne \lfloor (s + m - 1)/C \rfloor`: the
    needle's first and last tokens fall in different chunks, so a layer that
    attends only within chunks (iRoPE's RoPE layers) never sees it whole.
    """
    s = np.asarray(starts, dtype=np.int64)
    return (s // chunk) != ((s + m - 1) // chunk)



@contract
def copier_accuracy(task: Task, rule: Annotated[str, OneOf(*COPIERS)], seed: Seed = 0) -> np.ndarray:
    r"""Per example, whether a key-blind *copier* answers ``task`` correctly (boolean ``(batch,)``).

    The copier finds every ``@`` whose statement ends in a value (``@XY=37``, not
    ``@XY=AB``) before the query, and answers with the value of one of them chosen by
    ``rule``: ``"first"`` (the earliest), ``"last"`` (the nearest to the query) or
    ``"random"`` (uniform, drawn with ``numpy.random.default_rng(seed)``). None of
    them reads a key, so on :func:`companion.lab.tasks.multi_key_retrieval` each is
    right with probability exactly ``1/k`` over the queried slot.
    """
    rng = np.random.default_rng(seed)
    tokens, answers = task.tokens.numpy(), task.answers.numpy()
    width = answers.shape[1]
    digits = np.frombuffer(tasks.VALUE_ALPHABET, np.uint8)
    right = np.zeros(tokens.shape[0], dtype=bool)
    for b, row in enumerate(tokens):
        query = int(np.flatnonzero(row == ord("?"))[-1])
        values = []
        for p in np.flatnonzero(row[:query] == ord("@")):
            equals = p + 1 + np.flatnonzero(row[p + 1:query] == ord("="))[0]
            value = row[equals + 1:equals + 1 + width]
            if value.size == width and np.isin(value, digits).all():
                values.append(value)
        if not values:
            continue
        pick = {"first": 0, "last": len(values) - 1, "random": int(rng.integers(len(values)))}[rule]
        right[b] = np.array_equal(values[pick], answers[b])
    return right


@contract
def attention_beyond(model: Annotated[object, TorchModule("attention_weights", "attention_weights(tokens), as "
                                                          "companion.lab.models.TinyTransformer has")],
                     task: Task, distance: Count) -> list[float]:
    r"""Per layer, the mean attention weight the answer's query puts on keys ``distance`` or more back.

    The query is the position that predicts the first answer token, ``p - 1``
    for the first answer position ``p``; its weights over the keys ``j \le p - 1 -
    distance`` are summed, then averaged over heads and examples. ``model`` must
    have ``attention_weights(tokens)`` (:meth:`companion.lab.models.TinyTransformer.attention_weights`).
    """
    query = task.answer_positions[:, 0] - 1                        # (batch,)
    shares = []
    for weights in model.attention_weights(task.tokens[:, :-1]):   # (batch, heads, n, n) per layer
        rows = weights[torch.arange(weights.shape[0]), :, query]    # (batch, heads, n)
        far = torch.arange(rows.shape[-1])[None, :] <= (query - distance)[:, None]   # (batch, n)
        shares.append(float((rows * far[:, None, :]).sum(-1).mean()))
    return shares


@contract
def pair_norms(model: Annotated[object, TorchModule("queries_and_keys", "queries_and_keys(tokens), as "
                                                    "companion.lab.models.TinyTransformer has")],
               windows: Annotated[torch.Tensor, TokenTensor(2, "(N, n)")]) -> dict:
    r"""Per layer, head and RoPE pair, the mean norm of the queries' and keys' 2-D chunks.

    The frequency-usage view of Barbero et al. (2025): a pair :math:`i` whose chunks
    :math:`(q_{2i}, q_{2i+1})` and :math:`(k_{2i}, k_{2i+1})` are large contributes
    much to the scores :math:`q \cdot k = \sum_i q^{(i)} \cdot k^{(i)}`, and one whose
    chunks are near zero is unused. The norms are taken before the rotation, which
    does not change them, over every position of ``windows`` ``(N, n)``. ``model``
    must have ``queries_and_keys`` (:meth:`companion.lab.models.TinyTransformer.queries_and_keys`).
    Returns ``{"query": q, "key": k}``, each a nested list ``[layer][head][pair]``.
    """
    out = {"query": [], "key": []}
    for q, k in model.queries_and_keys(windows):                                  # (N, heads, n, d_head) each
        for name, x in (("query", q), ("key", k)):
            chunks = x.unflatten(-1, (x.shape[-1] // 2, 2))                        # (N, heads, n, pairs, 2)
            # || x^{(i)} || averaged over windows and positions
            out[name].append(chunks.norm(dim=-1).mean(dim=(0, 2)).tolist())        # (heads, pairs)
    return out


# --- private helpers -----------------------------------------------------------------


def _call(fn, tokens: torch.Tensor) -> torch.Tensor:
    logits = fn(tokens)
    if not isinstance(logits, torch.Tensor) or logits.ndim != 3 or tuple(logits.shape[:2]) != tuple(tokens.shape):
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"model must return logits of shape (batch, n, vocab) = ({tokens.shape[0]}, "
                         f"{tokens.shape[1]}, vocab) for tokens {tuple(tokens.shape)}, got {shape}")
    return logits


def _position_nll(fn, windows: torch.Tensor, batch_size: int) -> np.ndarray:
    """Negative log-likelihood of every scored token, ``(N, n)`` float64, in batches of windows."""
    rows = []
    for start in range(0, windows.shape[0], batch_size):
        w = windows[start:start + batch_size]
        logits = _call(fn, w[:, :-1]).cpu().double()
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="none")
        rows.append(nll.reshape(w.shape[0], -1).numpy())
    return np.concatenate(rows)


def _mean_nll(fn, windows: torch.Tensor, batch_size: int) -> float:
    total, count = 0.0, 0
    for start in range(0, windows.shape[0], batch_size):
        w = windows[start:start + batch_size]
        logits = _call(fn, w[:, :-1]).cpu().double()
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum")
        total, count = total + float(nll), count + w[:, 1:].numel()
    return total / count


def _sums_by_file_and_block(nll: np.ndarray, starts: np.ndarray, edges) -> tuple[np.ndarray, np.ndarray]:
    """Summed loss and token counts ``(files, blocks)``: file of the predicted token, block of its position."""
    N, n = nll.shape
    edges = np.array([0, n]) if edges is None else edges
    offset = (np.arange(N)[:, None] * n + np.arange(n)[None, :] + 1)                # stream offset of each target
    file = np.searchsorted(starts, offset, side="right") - 1                        # (N, n)
    block = np.searchsorted(edges, np.arange(n), side="right") - 1                  # (n,)
    keep = block < len(edges) - 1
    sums = np.zeros((starts.size, len(edges) - 1))
    count = np.zeros((starts.size, len(edges) - 1), dtype=np.int64)
    np.add.at(sums, (file[:, keep], np.broadcast_to(block[keep], (N, int(keep.sum())))), nll[:, keep])
    np.add.at(count, (file[:, keep], np.broadcast_to(block[keep], (N, int(keep.sum())))), 1)
    return sums, count
