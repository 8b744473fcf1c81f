r"""Evaluations that accept any model: perplexity by length and retrieval accuracy.

A *model* here is any callable that maps an int64 tensor of tokens ``(batch, n)``
to logits ``(batch, n, vocab)``, the logits at position ``t`` predicting the token
at ``t + 1``. A :class:`companion.models.TinyTransformer` is one; so is a reader's
own network, or a plain function. For example, a model that knows nothing:

.. code-block:: python

    import torch
    from companion import data, evals

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

from . import _checks, data

__all__ = ["as_model_fn", "perplexity", "perplexity_by_length", "answer_accuracy", "accuracy_grid"]


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


def perplexity_by_length(model, stream: torch.Tensor, lengths, tokens_per_length: int = 32768,
                         batch_size: int = 16) -> list[dict]:
    r"""Perplexity at each length of ``lengths``, on the same text.

    For length ``n``, the first ``tokens_per_length // n`` (at least 1)
    non-overlapping windows of ``n + 1`` tokens of ``stream``
    (:func:`companion.data.text_windows`) are scored with :func:`perplexity`, so
    every length sees about the same number of predicted tokens from the start of
    the stream. Returns one dict per length: ``length``, ``perplexity`` (``None`` if
    not defined), ``defined``, ``error`` (the ``IndexError`` message, or ``None``),
    ``n_windows``, ``n_tokens`` (tokens scored).
    """
    fn = as_model_fn(model)
    lengths = _lengths(lengths)
    tokens_per_length = _checks.positive_int("tokens_per_length", tokens_per_length)
    batch_size = _checks.positive_int("batch_size", batch_size)
    results = []
    for n in lengths:
        windows = data.text_windows(stream, n, max(1, tokens_per_length // n))
        row = {"length": n, "n_windows": int(windows.shape[0]), "n_tokens": int(windows.shape[0] * n)}
        try:
            ppl = math.exp(_mean_nll(fn, windows, batch_size))
            row.update(perplexity=ppl, defined=True, error=None)
        except IndexError as err:
            row.update(perplexity=None, defined=False, error=str(err))
        results.append(row)
    return results


def answer_accuracy(model, task: data.Task, batch_size: int = 32) -> dict:
    r"""Accuracy of ``model`` on the answers of ``task`` (a :class:`companion.data.Task`).

    The model reads ``tokens[:, :-1]``; its prediction for answer position ``p`` is
    the argmax of the logits at ``p - 1``. Returns ``accuracy`` (share of examples
    with every answer token right), ``token_accuracy`` (share of answer tokens
    right) and ``n_examples``.
    """
    if not isinstance(task, data.Task):
        raise ValueError(f"task must be a companion.data.Task, got {type(task).__name__}")
    fn = as_model_fn(model)
    batch_size = _checks.positive_int("batch_size", batch_size)
    correct = []
    for start in range(0, task.tokens.shape[0], batch_size):
        part = slice(start, start + batch_size)
        logits = _call(fn, task.tokens[part, :-1]).cpu()
        at = (task.answer_positions[part] - 1)[..., None].expand(-1, -1, logits.shape[-1])
        guess = torch.gather(logits, 1, at).argmax(-1)
        correct.append(guess == task.answers[part])
    right = torch.cat(correct)
    return {"accuracy": float(right.all(-1).float().mean()), "token_accuracy": float(right.float().mean()),
            "n_examples": int(right.shape[0])}


def accuracy_grid(model, lengths, depths, n_examples: int = 100, seed: int = 0,
                  make_task: Callable = data.retrieval, batch_size: int = 32, **options) -> list[dict]:
    r"""Retrieval accuracy for every (length, depth) pair: RULER's grid in miniature.

    For each ``length`` ``n`` (the number of tokens the model reads) and each
    ``depth`` in ``[0, 1]``, ``make_task(n_examples, n + 1, depth=depth, seed=...,
    **options)`` builds the examples (default :func:`companion.data.retrieval`;
    :func:`companion.data.multi_key_retrieval` works the same) and
    :func:`answer_accuracy` scores them. The seed depends on ``seed`` and the length
    only, so every depth of a length shares its haystacks and keys. Returns one dict
    per pair: ``length``, ``depth``, ``accuracy`` and ``token_accuracy`` (``None``
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
                row.update(accuracy=None, token_accuracy=None, defined=False, error=str(err))
            rows.append(row)
    return rows


# --- private helpers -----------------------------------------------------------------


def _call(fn, tokens: torch.Tensor) -> torch.Tensor:
    logits = fn(tokens)
    if not isinstance(logits, torch.Tensor) or logits.ndim != 3 or tuple(logits.shape[:2]) != tuple(tokens.shape):
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"model must return logits of shape (batch, n, vocab) = ({tokens.shape[0]}, "
                         f"{tokens.shape[1]}, vocab) for tokens {tuple(tokens.shape)}, got {shape}")
    return logits


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
