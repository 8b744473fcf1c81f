r"""A small, deterministic training loop: AdamW, linear warmup, cosine decay.

:func:`train` runs ``steps`` optimiser steps of AdamW (Loshchilov & Hutter 2019) on
the mean next-token cross-entropy

.. math:: \mathcal L = -\frac{1}{|T|} \sum_{(b,t) \in T} \log p_\theta(y_{b,t} \mid x_{b,\le t}),

where :math:`T` are the target positions that are not ``-100`` (so a task can put
its loss on the answers alone). The learning rate rises linearly for ``warmup``
steps and then follows a cosine down to ``min_ratio`` of its peak
(:func:`lr_at`). Batches come from a function ``batches(step, generator)``;
:func:`text_batches` and :func:`task_batches` build the two kinds the lab uses and
:func:`mixed_batches` alternates between them. With the same seed, the same model
and the same batches, a run on the CPU repeats exactly.

The loop uses a GPU when one is present (:func:`default_device`) and shows a
progress bar (tqdm's ``tqdm.auto``: a widget in a notebook, a text line elsewhere).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .._contracts import AnyValue, Count, Flag, Label, NonNegative, NonNegativeReal, Positive, Seed, contract, rule
from . import stdlib_corpus, tasks
from .kinds import Function, Functions, Model

__all__ = ["default_device", "lr_at", "train", "text_batches", "task_batches", "mixed_batches"]

Batches = Annotated[Callable[[int, torch.Generator], tuple],
                    Function("a function batches(step, generator) -> (x, y)")]
#: A generator of :mod:`companion.lab.tasks`.
TaskMaker = Annotated[Callable, Function("a task generator such as companion.lab.tasks.retrieval")]


def _step_before_end(step, steps) -> None:
    """``step`` counts from 0 and comes before ``steps``."""
    if step >= steps:
        raise ValueError(f"step must be an integer in 0..{steps - 1}, got {step!r}")


def _callback_when_every(every, callback) -> None:
    """A learning curve (``every > 0``) needs the function that records it."""
    if every and not callable(callback):
        raise ValueError("callback must be a function callback(step, model) when every > 0")


def _stream_longer_than(stream: str, length: str):
    """A rule: the 1-D token stream ``stream`` holds a window of ``length + 1`` tokens and a place to start it."""
    def check(data, n):
        if data.numel() < n + 2:
            raise ValueError(f"{length} must be below the size of {stream} ({data.numel()} tokens), got {n}")
    return rule((stream, length), check)


def default_device() -> torch.device:
    """``cuda`` when a CUDA GPU is available, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@contract(_step_before_end)
def lr_at(step: NonNegative, steps: Count, peak: Positive, warmup: NonNegative,
          min_ratio: NonNegativeReal = 0.1) -> float:
    r"""The learning rate at ``step`` (0-based): linear warmup, then cosine decay.

    .. math::

        \eta_t = \begin{cases}
        \eta\,\frac{t + 1}{w} & t < w \\
        \eta\Bigl(r + (1 - r)\,\tfrac12\bigl(1 + \cos\pi\tfrac{t - w}{\max(1, T - w - 1)}\bigr)\Bigr) & t \ge w
        \end{cases}

    with peak :math:`\eta`, warmup :math:`w`, total :math:`T` and floor ratio
    :math:`r` (``min_ratio``): :math:`\eta` at the end of warmup, :math:`r\eta` at the
    last step.
    """
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup - 1)
    return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))


@contract(_callback_when_every)
def train(model: Model, batches: Batches, steps: Count, lr: Positive = 3e-3, warmup: NonNegative | None = None,
          weight_decay: NonNegativeReal = 0.1, min_ratio: NonNegativeReal = 0.1, grad_clip: NonNegativeReal = 1.0,
          seed: Seed = 0, device: AnyValue = None, progress: Flag = True, label: Label = "train",
          every: NonNegative = 0, callback: AnyValue = None) -> list[float]:
    r"""Train ``model`` for ``steps`` AdamW steps; return the loss of every step.

    Parameters
    ----------
    model : a module mapping tokens ``(batch, n)`` to logits ``(batch, n, vocab)``;
        it is moved to ``device``, trained in training mode and left in eval mode.
    batches : ``batches(step, generator) -> (x, y)`` with ``x`` and ``y`` int64
        ``(batch, n)``; ``y = -100`` marks positions without a loss. ``generator``
        is a CPU ``torch.Generator`` seeded with ``seed``.
    steps : int >= 1.
    lr : peak learning rate; warmup : steps of linear warmup (``steps // 10`` when
        ``None``); min_ratio : final learning rate over the peak.
    weight_decay : AdamW's decoupled decay, applied to parameters of two or more
        dimensions (weight matrices, embedding tables), not to biases or norm gains.
    grad_clip : the gradient norm is clipped to this (0 disables clipping).
    seed : seeds the batch generator (seed the model's initialisation yourself,
        with ``torch.manual_seed`` before building it).
    device : ``None`` for :func:`default_device`.
    progress : show a tqdm progress bar with the running loss (``label`` names it).
    every, callback : after every ``every``-th step (steps ``every``, ``2 every``,
        ...), ``callback(step, model)`` is called, with ``step`` the number of steps
        done (a learning curve); the model is put back in training mode afterwards.
        The callback cannot change the training: it draws nothing from the batch
        generator.

    Returns
    -------
    list of ``steps`` floats, the training loss at each step.
    """
    warmup = steps // 10 if warmup is None else warmup
    device = default_device() if device is None else torch.device(device)
    model.to(device).train()
    optimizer = _adamw(model, lr, weight_decay)
    generator = torch.Generator().manual_seed(seed)
    history = []
    bar = tqdm(range(steps), desc=label, disable=not progress, mininterval=1.0, leave=False)
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, steps, lr, warmup, min_ratio)
        x, y = batches(step, generator)
        loss = _loss(model, x.to(device), y.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        history.append(float(loss.detach()))
        if every and (step + 1) % every == 0:
            callback(step + 1, model)
            model.train()
        if progress and step % 20 == 0:
            bar.set_postfix(loss=f"{history[-1]:.3f}", refresh=False)
    bar.close()
    model.eval()
    return history


@contract(_stream_longer_than("stream", "length"))
def text_batches(stream: stdlib_corpus.TokenStream, batch_size: Count, length: Count) -> Batches:
    """Batches of random text windows: ``batches(step, g)`` is :func:`companion.lab.stdlib_corpus.text_batch`."""

    def batches(step: int, generator: torch.Generator):
        return stdlib_corpus.text_batch(stream, batch_size, length, generator)

    return batches


@contract
def task_batches(make_task: TaskMaker, batch_size: Count, length: Count, **options) -> Batches:
    r"""Batches of a synthetic task, loss on the answers only (:func:`companion.lab.tasks.task_batch`).

    ``make_task(n_examples, length + 1, seed=..., **options)`` is a generator of
    :mod:`companion.lab.tasks` (e.g. :func:`companion.lab.tasks.retrieval`); each batch draws
    its seed from the training generator, so the model reads ``length`` tokens.
    """
    make_task(1, length + 1, seed=0, **options)  # the generator's own contract checks the options now

    def batches(step: int, generator: torch.Generator):
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        return tasks.task_batch(make_task(batch_size, length + 1, seed=seed, **options))

    return batches


@contract
def mixed_batches(*sources: Annotated[tuple, Functions("batch functions batches(step, generator) -> (x, y)")]) \
        -> Batches:
    """Alternate between batch sources: step ``t`` uses ``sources[t % len(sources)]``."""

    def batches(step: int, generator: torch.Generator):
        return sources[step % len(sources)](step, generator)

    return batches


# --- private helpers -----------------------------------------------------------------


def _adamw(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    rest = [p for p in params if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def _loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1), ignore_index=-100)
