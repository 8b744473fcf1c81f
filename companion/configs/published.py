r"""The position settings of published models, with the sources of their values.

One JSON file per model in the package data ``companion/data/published/``, read in
the order of their file names (a new model is a new file there): the keys of the
model's ``config.json`` that positions depend on, as published, its advertised
context and trained length, and where each value comes from, as text (nothing is
fetched). Chapter 10 runs each through :func:`companion.configs.config_extension`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Annotated

from .._contracts import OneOf, contract

__all__ = ["PublishedConfig", "PUBLISHED", "published"]


@dataclass(frozen=True)
class PublishedConfig:
    """One model's RoPE settings as published, with where each value comes from.

    ``config`` holds the keys of the model's ``config.json`` that position
    encoding depends on, spelled as published (version 4 or 5); ``context`` is the
    advertised context length and ``trained_length`` the length the position
    scheme was trained on (the reference of the ratios in chapter 6's context-extension
    figure); ``layer_type`` picks
    one entry of a nested dictionary; ``sources`` lists addresses, as text.
    """


    name: str
    config: dict
    context: int
    trained_length: int
    sources: tuple
    note: str = ""
    layer_type: str | None = None


def _published() -> tuple[PublishedConfig, ...]:
    """Every ``companion/data/published/*.json``, in the order of the file names."""
    folder = resources.files("companion") / "data" / "published"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    records = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    return tuple(PublishedConfig(**{**r, "sources": tuple(r["sources"])}) for r in records)


#: Real configurations, in the order of the chapter's table.
PUBLISHED = _published()


@contract
def published(name: Annotated[str, OneOf(*(p.name for p in PUBLISHED))]) -> PublishedConfig:
    """The entry of :data:`PUBLISHED` called ``name``."""
    return next(p for p in PUBLISHED if p.name == name)
