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
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .. import _checks
from . import data

__all__ = ["default_device", "lr_at", "train", "text_batches", "task_batches", "mixed_batches"]

Batches = Callable[[int, torch.Generator], tuple]


def default_device() -> torch.device:
    """``cuda`` when a CUDA GPU is available, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def lr_at(step: int, steps: int, peak: float, warmup: int, min_ratio: float = 0.1) -> float:
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
    steps = _checks.positive_int("steps", steps)
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < steps:
        raise ValueError(f"step must be an integer in 0..{steps - 1}, got {step!r}")
    peak = _checks.positive_float("peak", peak)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    min_ratio = _checks.at_least("min_ratio", min_ratio, 0.0)
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup - 1)
    return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))


def train(model: nn.Module, batches: Batches, steps: int, lr: float = 3e-3, warmup: int | None = None,
          weight_decay: float = 0.1, min_ratio: float = 0.1, grad_clip: float = 1.0, seed: int = 0,
          device=None, progress: bool = True, label: str = "train", every: int = 0,
          callback: Callable | None = None) -> list[float]:
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
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(batches):
        raise ValueError("batches must be a function batches(step, generator) -> (x, y)")
    steps = _checks.positive_int("steps", steps)
    lr = _checks.positive_float("lr", lr)
    warmup = steps // 10 if warmup is None else warmup
    lr_at(0, steps, lr, warmup, min_ratio)  # validates warmup and min_ratio
    weight_decay = _checks.at_least("weight_decay", weight_decay, 0.0)
    grad_clip = _checks.at_least("grad_clip", grad_clip, 0.0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(every, bool) or not isinstance(every, int) or every < 0:
        raise ValueError(f"every must be an integer >= 0, got {every!r}")
    if every and not callable(callback):
        raise ValueError("callback must be a function callback(step, model) when every > 0")
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


def text_batches(stream: torch.Tensor, batch_size: int, length: int) -> Batches:
    """Batches of random text windows: ``batches(step, g)`` is :func:`companion.lab.data.text_batch`."""
    batch_size = _checks.positive_int("batch_size", batch_size)
    length = _checks.positive_int("length", length)
    data.text_batch(stream, 1, length, torch.Generator())  # validates stream and length now

    def batches(step: int, generator: torch.Generator):
        return data.text_batch(stream, batch_size, length, generator)

    return batches


def task_batches(make_task: Callable, batch_size: int, length: int, **options) -> Batches:
    r"""Batches of a synthetic task, loss on the answers only (:func:`companion.lab.data.task_batch`).

    ``make_task(n_examples, length + 1, seed=..., **options)`` is a generator of
    :mod:`companion.lab.data` (e.g. :func:`companion.lab.data.retrieval`); each batch draws
    its seed from the training generator, so the model reads ``length`` tokens.
    """
    if not callable(make_task):
        raise ValueError("make_task must be a task generator such as companion.lab.data.retrieval")
    batch_size = _checks.positive_int("batch_size", batch_size)
    length = _checks.positive_int("length", length)
    make_task(1, length + 1, seed=0, **options)  # validates the options now

    def batches(step: int, generator: torch.Generator):
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        return data.task_batch(make_task(batch_size, length + 1, seed=seed, **options))

    return batches


def mixed_batches(*sources: Batches) -> Batches:
    """Alternate between batch sources: step ``t`` uses ``sources[t % len(sources)]``."""
    if not sources or not all(callable(s) for s in sources):
        raise ValueError("sources must be one or more batch functions batches(step, generator) -> (x, y)")

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
