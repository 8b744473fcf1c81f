r"""The kinds of parameter only the lab has: models, token tensors, functions, seeds, samples and edges.

A kind is a :class:`companion._contracts.Kind`: ``kind(name, value)`` returns the
value (converted where it says so) or raises ``ValueError`` naming the parameter,
what it accepts and what it got. The math modules share theirs in
``companion/_contracts.py``; these are the lab's, declared in its signatures the
same way (``model: Model``, ``seeds: SeedList``).
"""
from __future__ import annotations

import numbers
from typing import Annotated

import numpy as np
import torch

from .._contracts import Kind

__all__ = ["Function", "Functions", "TorchModule", "TokenTensor", "Sample", "Edges", "Seeds", "Model", "SeedList"]


class Function(Kind):
    """A callable (a function, a class, an object with ``__call__``), unchanged; ``what`` says how it is called
    and what it returns: ``batches must be a function batches(step, generator) -> (x, y), got int``."""

    def __init__(self, what: str):
        self.what = what

    def __call__(self, name, value):
        if not callable(value):
            raise ValueError(f"{name} must be {self.what}, got {type(value).__name__}")
        return value


class Functions(Kind):
    """One or more callables (the ``*sources`` of a function), returned as a tuple; ``what`` says how each is
    called."""

    def __init__(self, what: str):
        self.what = what

    def __call__(self, name, value):
        if not value or not all(callable(v) for v in value):
            raise ValueError(f"{name} must be one or more {self.what}, got {list(value)!r}")
        return tuple(value)


class TorchModule(Kind):
    """A ``torch.nn.Module`` (a model), unchanged; with ``needs``, one that has that method (``what`` says which
    and whose): ``model must have attention_weights(tokens), as ... has, got Linear``."""

    def __init__(self, needs: str = "", what: str = ""):
        self.needs, self.what = needs, what

    def __call__(self, name, value):
        if self.needs:
            if not callable(getattr(value, self.needs, None)):
                raise ValueError(f"{name} must have {self.what}, got {type(value).__name__}")
        elif not isinstance(value, torch.nn.Module):
            raise ValueError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
        return value


class TokenTensor(Kind):
    """An integer ``torch.Tensor`` of tokens (not copied): ``ndim`` dimensions, read as ``shape`` in messages
    (``"(N, n)"``), each at least ``min_size`` long, the last at least ``min_last`` (``why`` says why)."""

    def __init__(self, ndim: int, shape: str, min_size: int = 0, min_last: int = 0, why: str = ""):
        self.ndim, self.shape, self.min_size, self.min_last, self.why = ndim, shape, min_size, min_last, why

    def __call__(self, name, value):
        if not isinstance(value, torch.Tensor) or value.is_floating_point() or value.is_complex() or \
                value.dtype == torch.bool:
            got = f"dtype {value.dtype}" if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(f"{name} must be an integer torch.Tensor of tokens, shape {self.shape}, got {got}")
        if value.ndim != self.ndim or any(size < self.min_size for size in value.shape) or \
                (self.ndim and value.shape[-1] < self.min_last):
            least = f" with every size >= {self.min_size}" if self.min_size else ""
            least += f" and the last >= {self.min_last}" if self.min_last else ""
            raise ValueError(f"{name} must have shape {self.shape}{least}{f' ({self.why})' if self.why else ''}, "
                             f"got {tuple(value.shape)}")
        return value


class Sample(Kind):
    """A non-empty sequence of finite numbers (one per seed, one per cluster; booleans count as 0 and 1),
    flattened to a 1-D float64 array; with ``finite=False``, ``nan`` and infinities pass but a missing value
    (``None``) does not."""

    def __init__(self, finite: bool = True):
        self.finite = finite

    def __call__(self, name, value):
        what = "finite numbers" if self.finite else "numbers (one per seed)"
        try:
            a = np.asarray(value, dtype=np.float64).ravel()
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a non-empty list of {what}, got {value!r}") from err
        if a.size == 0 or (self.finite and not np.all(np.isfinite(a))) or \
                (not self.finite and any(v is None for v in np.ravel(np.asarray(value, dtype=object)))):
            raise ValueError(f"{name} must be a non-empty list of {what}, got {value!r}")
        return a


class Edges(Kind):
    """A 1-D int64 array of strictly increasing integers starting at 0, at least ``least`` of them (file
    offsets, block edges); ``what`` names them."""

    def __init__(self, what: str, least: int = 1):
        self.what, self.least = what, least

    def __call__(self, name, value):
        try:
            edges = np.asarray(value, dtype=np.int64)
        except (TypeError, ValueError, OverflowError) as err:
            raise ValueError(f"{name} must be increasing {self.what} starting at 0, got {value!r}") from err
        if edges.ndim != 1 or edges.size < self.least or edges[0] != 0 or np.any(np.diff(edges) <= 0):
            raise ValueError(f"{name} must be increasing {self.what} starting at 0, got {list(np.atleast_1d(value))}")
        return edges


class Seeds(Kind):
    """A list or tuple of distinct integers >= 0 (random seeds), unchanged: a tuple stays a tuple."""

    def __call__(self, name, value):
        items = list(value) if isinstance(value, (list, tuple)) else None
        if items is None or any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0 for s in items) or \
                len(set(items)) != len(items):
            raise ValueError(f"{name} must be a list of distinct integers >= 0 (seeds), got {value!r}")
        return value


#: A ``torch.nn.Module`` (a model).
Model = Annotated[object, TorchModule()]
#: A list or tuple of distinct random seeds >= 0.
SeedList = Annotated[tuple, Seeds()]
