r"""The rope types the library computes: one ``RopeType`` each, in the registry ``ROPE_PARAMETERS``.

Each entry says which keys a rope type's dictionary needs and may carry, how the
library fills in its defaults (``resolve``), which values it checks together
(``rule``), the length it scales from, and how it computes the frequencies and the
attention factor at a sequence length (``compute``), the way Transformers keeps
``ROPE_INIT_FUNCTIONS`` beside its validation functions. Every formula is a function
of :mod:`companion.scaling`; an entry only maps the library's keys to its arguments.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import scaling
from .._contracts import Integer, Real, ordered

if TYPE_CHECKING:  # for the annotation of RopeType.compute only: reading imports this module
    from .reading import RopeSettings

__all__ = ["RopeType", "ROPE_PARAMETERS", "ROPE_TYPES", "REQUIRED_KEYS", "OPTIONAL_KEYS"]

# What the values of a configuration must be (the kinds of its keys)
_LENGTH = Integer(1)
_FACTOR = Real(ge=1.0)
_POSITIVE = Real(gt=0.0)


@dataclass
class _Entry:
    """What reading one dictionary has found so far: the dictionary, the top level, the sizes, the keys filled in."""

    entry: dict
    top: dict
    max_len: int | None
    rotary_dim: int
    head_dim: int
    partial_rotary_factor: float
    filled: list = field(default_factory=list)

    def max_len_for(self, use: str) -> int:
        """``max_position_embeddings``, which the library uses as ``use``; ``ValueError`` when it is missing."""
        if self.max_len is None:
            raise ValueError(f"max_position_embeddings is missing: the library uses it as {use}")
        return self.max_len


@dataclass(frozen=True)
class RopeType:
    """One rope type as the library reads and computes it.

    ``required`` and ``optional`` are the keys of its dictionary; ``resolve`` turns the
    dictionary into the method's parameters with the library's defaults filled in;
    every value is then held to its key's kind (``kinds`` for this type, else the
    common ones), and ``rule`` checks the parameters together;
    ``compute(settings, seq_len)`` returns the frequencies and the attention factor;
    ``scales_from`` names the length the method scales from (or ``None``).
    """

    required: tuple
    optional: tuple
    resolve: Callable[[_Entry], dict]
    compute: Callable[[RopeSettings, int], tuple]
    rule: Callable[[dict], None] = lambda p: None
    scales_from: str | None = None
    kinds: dict = field(default_factory=dict)


def _original_length(c: _Entry) -> dict:
    """``original_max_position_embeddings``: the top level's (Phi-3), the dictionary's, or
    ``max_position_embeddings``."""
    if c.top.get("original_max_position_embeddings") is not None:
        if c.entry.get("original_max_position_embeddings", c.top["original_max_position_embeddings"]) \
                != c.top["original_max_position_embeddings"]:
            c.filled.append("original_max_position_embeddings (top level over the dictionary's)")
        return {"original_max_position_embeddings": c.top["original_max_position_embeddings"]}
    if c.entry.get("original_max_position_embeddings") is not None:
        return {"original_max_position_embeddings": c.entry["original_max_position_embeddings"]}
    c.filled.append("original_max_position_embeddings = max_position_embeddings")
    return {"original_max_position_embeddings": c.max_len_for("original_max_position_embeddings, missing too")}


def _factor_from_lengths(c: _Entry, original: int):
    """The dictionary's ``factor``, or the library's ``max_position_embeddings / original`` when it is null."""
    if c.entry.get("factor") is not None:
        return c.entry["factor"]
    c.filled.append("factor = max_position_embeddings / original_max_position_embeddings")
    return c.max_len_for("the length a missing factor is computed from") / original


# default: RoPE as trained
def _default(settings, n):
    # theta_i = base^(-2i/d)
    return scaling.unscaled(settings.rotary_dim, base=settings.base).inv_freq, 1.0


# linear: Position Interpolation by factor (it reads no length)
def _linear(settings, n):
    # theta_i / factor
    return scaling.position_interpolation(settings.rotary_dim, settings.parameters["factor"],
                                                      base=settings.base).inv_freq, 1.0


# dynamic: NTK-aware with the library's scale at length n
def _dynamic(settings, n):
    return scaling.dynamic_ntk(settings.rotary_dim, L=settings.max_position_embeddings, base=settings.base,
                               current_length=n, hf_factor=settings.parameters["factor"]).inv_freq, 1.0


def _dynamic_parameters(c: _Entry) -> dict:
    c.max_len_for("the length rope_type 'dynamic' scales from")
    return {"factor": c.entry["factor"]}


# yarn: the shipped ramp, and its attention factor
def _yarn_parameters(c: _Entry) -> dict:
    p = _original_length(c)
    p["factor"] = _factor_from_lengths(c, p["original_max_position_embeddings"])
    # the library writes `entry.get(key) or default`: 0 and null both mean the default
    p["beta_fast"] = c.entry.get("beta_fast") or 32.0
    p["beta_slow"] = c.entry.get("beta_slow") or 1.0
    p["truncate"] = c.entry.get("truncate", True)
    p.update({k: c.entry[k] for k in ("mscale", "mscale_all_dim", "attention_factor") if c.entry.get(k) is not None})
    return p


# equal betas are a step (Kimi K2): the ramp's ends, rounded outward, one pair apart; the library
# only warns when beta_fast < beta_slow and turns its ramp upside down
_BETAS = ordered("beta_slow", "beta_fast", strict=False, why=": the library turns its ramp upside down below it")


def _yarn(settings, n):
    p = settings.parameters
    inv = scaling.yarn_code(settings.rotary_dim, p["factor"], p["original_max_position_embeddings"], settings.base,
                            p["beta_fast"], p["beta_slow"], p["truncate"]).inv_freq
    return inv, _yarn_attention_factor(p)


def _yarn_attention_factor(p) -> float:
    """``attention_factor``, else the ``mscale`` ratio when both are set (and non-zero), else ``0.1 ln s + 1``."""
    if "attention_factor" in p:
        return p["attention_factor"]
    s = p["factor"]
    if s <= 1.0:
        return 1.0
    if p.get("mscale") and p.get("mscale_all_dim"):
        # (0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1)
        return scaling.yarn_mscale(s, p["mscale"]) / scaling.yarn_mscale(s, p["mscale_all_dim"])
    return scaling.yarn_attention_factor(s)


# longrope: short or long factors by length, Phi-3's attention factor
def _longrope_parameters(c: _Entry) -> dict:
    p = _original_length(c)
    for key in ("short_factor", "long_factor"):
        values = c.entry[key]
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise ValueError(f"{key} must be a list of {c.rotary_dim // 2} numbers, got {values!r}")
        if len(values) != c.rotary_dim // 2:
            raise ValueError(f"{key} must have rotary_dim/2 = {c.rotary_dim // 2} entries (one per pair), "
                             f"got {len(values)}")
        p[key] = values
    p["factor"] = _factor_from_lengths(c, p["original_max_position_embeddings"])
    if c.entry.get("attention_factor") is not None:
        p["attention_factor"] = c.entry["attention_factor"]
    return p


def _longrope(settings, n):
    p, L = settings.parameters, settings.parameters["original_max_position_embeddings"]
    inv = scaling.longrope(settings.rotary_dim, 1.0, L, settings.base, short_factors=p["short_factor"],
                           long_factors=p["long_factor"], current_length=n).inv_freq
    # sqrt(1 + ln s / ln L), 1 when the factor is at most 1
    factor = p.get("attention_factor", 1.0 if p["factor"] <= 1.0 else scaling.longrope_attention_factor(p["factor"], L))
    return inv, factor


# llama3: Llama 3.1's bands; with equal band factors the blended band is empty (Llama 4)
def _llama3_parameters(c: _Entry) -> dict:
    return {**_original_length(c), **{k: c.entry[k] for k in ("factor", "low_freq_factor", "high_freq_factor")}}


_BANDS = ordered("low_freq_factor", "high_freq_factor", strict=False)


def _llama3(settings, n):
    p = settings.parameters
    return scaling.llama3(settings.rotary_dim, p["factor"], p["original_max_position_embeddings"], settings.base,
                          p["low_freq_factor"], p["high_freq_factor"]).inv_freq, 1.0


# proportional: the exponent over the whole head, on the first pairs only (Gemma 4)
def _proportional_parameters(c: _Entry) -> dict:
    pairs = int(c.partial_rotary_factor * c.head_dim // 2)
    if pairs < 1:
        raise ValueError(f"partial_rotary_factor ({c.partial_rotary_factor}) rotates no pair of a "
                         f"{c.head_dim}-wide head")
    return {"factor": c.entry.get("factor", 1.0), "rotated_pairs": pairs}


def _proportional(settings, n):
    # theta_i = base^(-2i/head_dim) / factor for the first k pairs, 0 for the rest
    return scaling.proportional(settings.head_dim, settings.parameters["rotated_pairs"],
                                settings.parameters["factor"], settings.base), 1.0


# ntk_alpha: Hunyuan's static NTK-aware base, the same at every length
def _ntk_alpha(settings, n):
    # theta_i = (base alpha^(d/(d-2)))^(-2i/d)
    return scaling.ntk_aware(settings.rotary_dim, settings.parameters["alpha"], base=settings.base).inv_freq, 1.0


# none: layers that rotate nothing (a model without a rotary module, a layer without attention)
def _none(settings, n):
    return np.zeros(0), 1.0


#: The rope types the library (Transformers 5) computes, plus ``default``, and ``none`` (nothing rotates): one entry
#: each.
ROPE_PARAMETERS: dict[str, RopeType] = {
    "default": RopeType((), (), lambda c: {}, _default),
    "linear": RopeType(("factor",), (), lambda c: {"factor": c.entry["factor"]}, _linear,
                       scales_from="max_position_embeddings"),
    "dynamic": RopeType(("factor",), (), _dynamic_parameters, _dynamic, scales_from="max_position_embeddings"),
    "yarn": RopeType(("factor",), ("original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
                                   "mscale", "mscale_all_dim", "truncate"),
                     _yarn_parameters, _yarn, lambda p: _BETAS(p["beta_slow"], p["beta_fast"]),
                     scales_from="original_max_position_embeddings"),
    "longrope": RopeType(("short_factor", "long_factor"), ("original_max_position_embeddings", "attention_factor",
                                                           "factor"),
                         _longrope_parameters, _longrope, scales_from="original_max_position_embeddings",
                         kinds={"factor": _POSITIVE}),
    "llama3": RopeType(("factor", "low_freq_factor", "high_freq_factor"), ("original_max_position_embeddings",),
                       _llama3_parameters, _llama3, lambda p: _BANDS(p["low_freq_factor"], p["high_freq_factor"]),
                       scales_from="original_max_position_embeddings"),
    "proportional": RopeType((), ("factor",), _proportional_parameters, _proportional),
    "ntk_alpha": RopeType(("alpha",), ("factor",), lambda c: {"alpha": c.entry["alpha"]}, _ntk_alpha),
    "none": RopeType((), (), lambda c: {}, _none),
}


#: The rope types, in the order of :data:`ROPE_PARAMETERS`.
ROPE_TYPES = tuple(ROPE_PARAMETERS)


#: Keys each rope type needs in its dictionary (``rope_theta`` may sit at the top level).
REQUIRED_KEYS = {name: t.required for name, t in ROPE_PARAMETERS.items()}


#: Keys each rope type may carry besides the required ones.
OPTIONAL_KEYS = {name: t.optional for name, t in ROPE_PARAMETERS.items()}


# The types a file may spell: ntk_alpha is what one class makes of 'dynamic' with alpha, none is the reader's answer
# for layers that rotate nothing.
_SPELLED_TYPES = tuple(t for t in ROPE_TYPES if t not in ("ntk_alpha", "none"))
