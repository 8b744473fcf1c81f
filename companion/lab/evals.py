r"""Evaluations that accept any model: perplexity by length and retrieval accuracy.

A *model* here is any callable that maps an int64 tensor of tokens ``(batch, n)``
to logits ``(batch, n, vocab)``, the logits at position ``t`` predicting the token
at ``t + 1``. A :class:`companion.lab.models.TinyTransformer` is one; so is a reader's
own network, or a plain function. For example, a model that knows nothing:

.. code-block:: python

    import torch
    from companion.lab import data, evals

    def uniform(tokens):                     # (batch, n) -> (batch, n, 256)
        return torch.zeros(*tokens.shape, 256)

    corpus = data.load_corpus()
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

**Retrieval accuracy** (:func:`answer_accuracy`, :func:`accuracy_grid`): the share
of examples whose every answer token is the model's top prediction (teacher
forcing: the second answer token is predicted after the true first one), by needle
depth and total length, as in RULER (Hsieh et al. 2024) and Lost in the Middle
(Liu et al. 2024).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from . import data

__all__ = ["as_model_fn", "perplexity", "perplexity_by_length", "bootstrap_interval", "answer_correct",
           "answer_accuracy", "accuracy_grid", "attention_beyond"]


def as_model_fn(model) -> Callable[[torch.Tensor], torch.Tensor]:
    """Wrap ``model`` as a function ``tokens -> logits`` (eval mode, no gradients, its device).

    A ``torch.nn.Module`` gets ``eval()``, ``torch.no_grad()`` and its input moved to
    the device of its first parameter (CPU when it has none); any other callable is
    called as it is, under ``torch.no_grad()``. ``ValueError`` if ``model`` is not
    callable.
    """
    if not callable(model):
        raise ValueError(f"model must be callable: tokens (batch, n) -> logits (batch, n, vocab), got {type(model).__name__}")
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


def perplexity(model, windows: torch.Tensor, batch_size: int = 16) -> float:
    r"""Perplexity of ``model`` on ``windows`` ``(N, n + 1)``: read ``n`` tokens, score the next ``n``.

    Log-probabilities are taken in float64. Returns a float >= 1.
    """
    return math.exp(_mean_nll(as_model_fn(model), _windows(windows), _checks.positive_int("batch_size", batch_size)))


def perplexity_by_length(model, stream: torch.Tensor, lengths, tokens_per_length: int | None = None,
                         batch_tokens: int = 8192, past: int | None = None, n_bootstrap: int = 0,
                         seed: int = 0) -> list[dict]:
    r"""Perplexity at each length of ``lengths``, on the same text, with a bootstrap interval.

    For length ``n`` the stream is cut into consecutive non-overlapping windows of
    ``n + 1`` tokens (:func:`companion.lab.data.text_windows`): all that fit when
    ``tokens_per_length`` is ``None``, else the first ``tokens_per_length // n``
    (at least 1). Each window is scored with :func:`perplexity`'s rule, about
    ``batch_tokens`` tokens per forward pass.

    ``past=L`` also reports ``perplexity_past``: the perplexity of the predictions
    made at positions :math:`t \ge L` alone (the model has read more than ``L``
    tokens), ``None`` for ``n <= L``. These are the predictions a model trained at
    ``L`` never made in training, so an average over whole windows cannot dilute
    them with in-range positions.

    ``n_bootstrap > 0`` adds ``interval``, the 2.5 % and 97.5 % quantiles of the
    perplexity over ``n_bootstrap`` resamples of the windows with replacement (a
    block bootstrap whose blocks are the windows; Efron & Tibshirani 1993), drawn
    with ``numpy.random.default_rng(seed)``.

    Returns one dict per length: ``length``, ``perplexity`` (``None`` if not
    defined), ``perplexity_past``, ``interval``, ``defined``, ``error`` (the
    ``IndexError`` message, or ``None``), ``n_windows``, ``n_tokens`` (tokens scored).
    """
    fn = as_model_fn(model)
    lengths = _lengths(lengths)
    if tokens_per_length is not None:
        tokens_per_length = _checks.positive_int("tokens_per_length", tokens_per_length)
    batch_tokens = _checks.positive_int("batch_tokens", batch_tokens)
    past = None if past is None else _checks.positive_int("past", past)
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, int) or n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be an integer >= 0, got {n_bootstrap!r}")
    results = []
    for n in lengths:
        windows = data.text_windows(stream, n, None if tokens_per_length is None else max(1, tokens_per_length // n))
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
        if n_bootstrap:
            row["interval"] = bootstrap_interval(nll.sum(axis=1), n, n_bootstrap, seed)
        results.append(row)
    return results


def bootstrap_interval(window_nll, tokens_per_window: int, n_resamples: int = 1000, seed: int = 0,
                       level: float = 0.95) -> list[float]:
    r"""Percentile bootstrap interval of the perplexity from per-window summed log-losses.

    ``window_nll[w]`` is the summed negative log-likelihood of window ``w`` (of
    ``tokens_per_window`` scored tokens). Each resample draws as many windows as
    there are, with replacement, and takes :math:`\exp(\sum_w \ell_w / (N n))`;
    the interval is the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles.
    """
    nll = _checks.array("window_nll", window_nll)
    if nll.ndim != 1 or nll.size == 0:
        raise ValueError(f"window_nll must be a non-empty 1-D array of summed losses, got shape {nll.shape}")
    tokens_per_window = _checks.positive_int("tokens_per_window", tokens_per_window)
    n_resamples = _checks.positive_int("n_resamples", n_resamples)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    rng = np.random.default_rng(seed)
    index = rng.integers(0, nll.size, size=(n_resamples, nll.size))
    ppl = np.exp(nll[index].sum(axis=1) / (nll.size * tokens_per_window))
    low, high = np.quantile(ppl, [(1 - level) / 2, (1 + level) / 2])
    return [float(low), float(high)]


def answer_correct(model, task: data.Task, batch_size: int = 32) -> torch.Tensor:
    """Per example of ``task``: ``True`` where every answer token is the model's top prediction.

    The rule of :func:`answer_accuracy`; returns a boolean tensor ``(batch,)``.
    """
    if not isinstance(task, data.Task):
        raise ValueError(f"task must be a companion.lab.data.Task, got {type(task).__name__}")
    fn = as_model_fn(model)
    batch_size = _checks.positive_int("batch_size", batch_size)
    correct = []
    for start in range(0, task.tokens.shape[0], batch_size):
        part = slice(start, start + batch_size)
        logits = _call(fn, task.tokens[part, :-1]).cpu()
        at = (task.answer_positions[part] - 1)[..., None].expand(-1, -1, logits.shape[-1])
        guess = torch.gather(logits, 1, at).argmax(-1)
        correct.append((guess == task.answers[part]).all(-1))
    return torch.cat(correct)


def answer_accuracy(model, task: data.Task, batch_size: int = 32) -> dict:
    r"""Accuracy of ``model`` on the answers of ``task`` (a :class:`companion.lab.data.Task`).

    The model reads ``tokens[:, :-1]``; its prediction for answer position ``p`` is
    the argmax of the logits at ``p - 1`` (teacher forcing). Returns ``accuracy``
    (share of examples with every answer token right) and ``n_examples``.
    """
    right = answer_correct(model, task, batch_size)
    return {"accuracy": float(right.float().mean()), "n_examples": int(right.shape[0])}


def accuracy_grid(model, lengths, depths, n_examples: int = 100, seed: int = 0,
                  make_task: Callable = data.retrieval, batch_size: int = 32, **options) -> list[dict]:
    r"""Retrieval accuracy for every (length, depth) pair: RULER's grid in miniature.

    For each ``length`` ``n`` (the number of tokens the model reads) and each
    ``depth`` in ``[0, 1]``, ``make_task(n_examples, n + 1, depth=depth, seed=...,
    **options)`` builds the examples (default :func:`companion.lab.data.retrieval`;
    :func:`companion.lab.data.multi_key_retrieval` works the same) and
    :func:`answer_accuracy` scores them. The seed depends on ``seed`` and the length
    only, so every depth of a length shares its haystacks and keys. Returns one dict
    per pair: ``length``, ``depth``, ``accuracy`` (``None``
    when the length is not defined for the model), ``defined``, ``error``,
    ``n_examples``.
    """
    fn = as_model_fn(model)
    lengths = _lengths(lengths)
    depths = _checks.array("depths", depths)
    if depths.ndim != 1 or depths.size == 0 or np.any((depths < 0) | (depths > 1)):
        raise ValueError(f"depths must be a non-empty 1-D list of numbers in [0, 1], got {depths.tolist()}")
    n_examples = _checks.positive_int("n_examples", n_examples)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
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


def attention_beyond(model, task: data.Task, distance: int) -> list[float]:
    r"""Per layer, the mean attention weight the answer's query puts on keys ``distance`` or more back.

    The query is the position that predicts the first answer token, ``p - 1``
    for the first answer position ``p``; its weights over the keys ``j \le p - 1 -
    distance`` are summed, then averaged over heads and examples. ``model`` must
    have ``attention_weights(tokens)`` (:meth:`companion.lab.models.TinyTransformer.attention_weights`).
    """
    if not isinstance(task, data.Task):
        raise ValueError(f"task must be a companion.lab.data.Task, got {type(task).__name__}")
    if not hasattr(model, "attention_weights"):
        raise ValueError("model must have attention_weights(tokens), as companion.lab.models.TinyTransformer has")
    distance = _checks.positive_int("distance", distance)
    query = task.answer_positions[:, 0] - 1                        # (batch,)
    shares = []
    for weights in model.attention_weights(task.tokens[:, :-1]):   # (batch, heads, n, n) per layer
        rows = weights[torch.arange(weights.shape[0]), :, query]    # (batch, heads, n)
        far = torch.arange(rows.shape[-1])[None, :] <= (query - distance)[:, None]   # (batch, n)
        shares.append(float((rows * far[:, None, :]).sum(-1).mean()))
    return shares


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


def _windows(windows) -> torch.Tensor:
    if not isinstance(windows, torch.Tensor) or windows.ndim != 2 or windows.shape[1] < 2 or windows.is_floating_point():
        raise ValueError("windows must be an integer tensor (N, n + 1) with n >= 1")
    return windows.long()


def _lengths(lengths) -> list[int]:
    if isinstance(lengths, int | np.integer) and not isinstance(lengths, bool):
        lengths = [lengths]
    return _checks.positive_ints("lengths", lengths)
