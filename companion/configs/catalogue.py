r"""The position settings of published models, with the sources of their values.

One JSON file per model in the package data ``companion/data/published/``, read in
the order of their file names (a new model is a new file there): the keys of the
model's ``config.json`` that positions depend on, as published, its advertised
context and trained length, and where each value comes from, as text (nothing is
fetched). Chapter 10 runs each through :func:`companion.configs.applied.config_extension`,
and prints the sources as short links (:func:`source_links`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Annotated

from .._contracts import OneOf, Text, Texts, contract

__all__ = ["PublishedConfig", "PUBLISHED", "published", "source_link", "source_links"]


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


ARXIV = re.compile(r"arXiv:(\d{4}\.\d{4,5})(v\d+)?")


HUGGING_FACE_FILE = re.compile(r"https://huggingface\.co/([^/\s]+/[^/\s]+)/blob/[^/\s]+/(\S+)")


GITHUB_FILE = re.compile(r"https://github\.com/([^/\s]+/[^/\s]+)/blob/[^/\s]+/(\S+)")


ADDRESS = re.compile(r"https?://(\S+)")


@contract
def source_link(source: Annotated[str, Text(nonempty=True)]) -> str:
    """One source, given as text, as short Markdown: each address a link named for what it is.

    ``https://huggingface.co/<org>/<model>/blob/main/config.json`` becomes a link named
    ``<org>/<model>: config.json``, a file on GitHub one named ``<owner>/<repo>: <path>``,
    any other address one named for its host and path, and ``arXiv:NNNN.NNNNN`` a link to
    the paper's abstract page; the rest of the text stays as it is.

    Parameters
    ----------
    source : str
        A source as ``PublishedConfig.sources`` holds them.
    """
    def address(match: re.Match) -> str:
        url = match.group(0).rstrip(".,;)")
        rest = match.group(0)[len(url):]
        for pattern in (HUGGING_FACE_FILE, GITHUB_FILE):
            named = pattern.fullmatch(url)
            if named:
                return f"[{named.group(1)}: {named.group(2)}]({url}){rest}"
        return f"[{ADDRESS.fullmatch(url).group(1)}]({url}){rest}"

    text = ADDRESS.sub(address, source)
    return ARXIV.sub(lambda m: f"[arXiv:{m.group(1)}{m.group(2) or ''}](https://arxiv.org/abs/{m.group(1)})", text)


@contract
def source_links(sources: Annotated[tuple, Texts()]) -> str:
    """Several sources, each as :func:`source_link` gives it, separated by semicolons."""
    return "; ".join(source_link(source) for source in sources)
