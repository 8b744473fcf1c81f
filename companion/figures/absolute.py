r"""Chapter 1's interactive figure: the position-position term of an attention score.

With :math:`x = e + PE` and :math:`M = W_Q^{\mathsf T} W_K`, the score contains the term
:math:`PE(m)^{\mathsf T} M\, PE(m + k)`. Python computes it with
:func:`companion.absolute.position_score` (sinusoids of Vaswani et al. 2017,
``d = 64``, base 10000), divided by :math:`d/2`, for positions :math:`m = 0..200` at a
few distances :math:`k`, and for two matrices: :math:`M = I`, where the term is
:math:`\operatorname{mean}_i \cos(\omega_i k)` whatever :math:`m` (a flat line), and
:math:`M = I + R` with :math:`R` a fixed random matrix (entries
:math:`\mathcal N(0, \sigma^2)`, ``sigma = 0.3``, seed 0), where the same distance gives
a different value at every :math:`m`.
"""
from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import traitlets

from .. import absolute
from .._contracts import Count, EvenSize, Integer, NonNegativeReal, Positive, PositiveCounts, Seed, contract
from ..absolute import dot_product_at_distance, position_score
from ..plotting import PALETTE
from ._base import Figure, esm

DISTANCES = (1, 2, 4, 8, 16, 32)


@contract
def random_mix(d: EvenSize = 64, sigma: NonNegativeReal = 0.3, seed: Seed = 0) -> np.ndarray:
    r"""The fixed random matrix :math:`R` (``d x d``, entries :math:`\mathcal N(0, \sigma^2)`).

    Drawn with ``numpy.random.default_rng(seed).normal(scale=sigma, size=(d, d))``. For
    unit-scale sinusoids the term :math:`PE(m)^{\mathsf T} R\, PE(m+k) / (d/2)` then has a
    standard deviation of about ``sigma`` over random pairs of positions.
    """
    return np.random.default_rng(seed).normal(scale=sigma, size=(d, d))


@contract
def position_term_data(d: EvenSize = 64, base: Positive = absolute.BASE, m_max: Count = 200,
                       distances: Annotated[list, PositiveCounts(distinct=True)] = DISTANCES,
                       sigma: NonNegativeReal = 0.3, seed: Seed = 0) -> dict:
    r"""Everything chapter 1's figure shows.

    For each distance ``k`` in ``distances`` and every ``m = 0..m_max``, the values
    :math:`PE(m)^{\mathsf T} M\, PE(m + k) / (d/2)` from
    :func:`companion.absolute.position_score`, for :math:`M = I` (``identity``) and
    :math:`M = I + R` (``mixed``, :math:`R` from :func:`random_mix`). Per distance:
    ``flat`` (the closed form :func:`companion.absolute.dot_product_at_distance`
    divided by :math:`d/2`, i.e. :math:`\operatorname{mean}_i \cos(\omega_i k)`, the
    value of the whole ``identity`` curve), ``mixed_min`` / ``mixed_max`` (the range of
    the ``mixed`` curve over ``m``, and the positions ``mixed_argmin`` /
    ``mixed_argmax`` where it is reached). ``y_range`` is a common vertical range for
    every distance. Values are rounded to 6 decimals.
    """
    distances = tuple(distances)
    m = np.arange(m_max + 1)
    identity = np.eye(d)
    mixed_matrix = identity + random_mix(d, sigma, seed)
    half = d / 2
    ident = np.array([position_score(m, k, identity, base) for k in distances]) / half
    mixed = np.array([position_score(m, k, mixed_matrix, base) for k in distances]) / half
    flat = dot_product_at_distance(np.array(distances), d, base) / half
    low = min(ident.min(), mixed.min(), 0.0)
    high = max(ident.max(), mixed.max(), 1.0)
    return {
        "d": d,
        "base": base,
        "sigma": sigma,
        "seed": int(seed),
        "m_max": m_max,
        "distances": list(distances),
        "identity": np.round(ident, 6).tolist(),
        "mixed": np.round(mixed, 6).tolist(),
        "flat": np.round(flat, 6).tolist(),
        "mixed_min": np.round(mixed.min(axis=1), 6).tolist(),
        "mixed_max": np.round(mixed.max(axis=1), 6).tolist(),
        "mixed_argmin": mixed.argmin(axis=1).tolist(),
        "mixed_argmax": mixed.argmax(axis=1).tolist(),
        "y_range": [math.floor(low * 4) / 4, math.ceil(high * 4) / 4],
    }


class PositionTerm(Figure):
    """Widget for :func:`position_term`; its drawing code is ``absolute.js``."""

    _esm = esm("absolute.js")
    d = traitlets.Int().tag(sync=True)
    base = traitlets.Float().tag(sync=True)
    sigma = traitlets.Float().tag(sync=True)
    seed = traitlets.Int().tag(sync=True)
    m_max = traitlets.Int().tag(sync=True)
    distances = traitlets.List(traitlets.Int()).tag(sync=True)
    identity = traitlets.List().tag(sync=True)
    mixed = traitlets.List().tag(sync=True)
    flat = traitlets.List(traitlets.Float()).tag(sync=True)
    mixed_min = traitlets.List(traitlets.Float()).tag(sync=True)
    mixed_max = traitlets.List(traitlets.Float()).tag(sync=True)
    mixed_argmin = traitlets.List(traitlets.Int()).tag(sync=True)
    mixed_argmax = traitlets.List(traitlets.Int()).tag(sync=True)
    y_range = traitlets.List(traitlets.Float()).tag(sync=True)
    #: the distance shown (one of ``distances``)
    k = traitlets.Int(4).tag(sync=True)
    #: the position of the point on the M = I + R curve
    m = traitlets.Int(0).tag(sync=True)

    @traitlets.validate("k")
    def _valid_k(self, proposal):
        if self.distances and proposal["value"] not in self.distances:
            raise traitlets.TraitError(f"k must be one of {self.distances}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("m")
    def _valid_m(self, proposal):
        if not 0 <= proposal["value"] <= self.m_max:
            raise traitlets.TraitError(f"m must be in 0..{self.m_max}, got {proposal['value']}")
        return proposal["value"]

    def static_figure(self):
        from matplotlib.figure import Figure as MplFigure

        i = self.distances.index(self.k)
        m = np.arange(self.m_max + 1)
        fig = MplFigure(figsize=(6.0, 3.6), layout="constrained")
        ax = fig.add_subplot()
        ax.plot(m, self.identity[i], color=PALETTE["blue"], linestyle="--", linewidth=2, label="M = I")
        ax.plot(m, self.mixed[i], color=PALETTE["orange"], linewidth=1.6,
                label=f"M = I + R (R ~ N(0, {self.sigma:g}²))")
        ax.plot([self.m], [self.mixed[i][self.m]], "o", color=PALETTE["orange"], markeredgecolor="black")
        ax.set_ylim(*self.y_range)
        ax.set_xlim(0, self.m_max)
        ax.set_xlabel("position m (tokens)")
        ax.set_ylabel("PE(m)ᵀ M PE(m+k) / (d/2)")
        ax.set_title(f"distance k = {self.k}, d = {self.d}")
        fig.legend(loc="outside lower center", ncol=2)
        return fig


def _shown_point(k, m, m_max, distances) -> None:
    if k not in distances:
        raise ValueError(f"k must be one of {tuple(distances)}, got {k!r}")
    if m > m_max:
        raise ValueError(f"m must be an integer in 0..{m_max}, got {m!r}")


@contract(_shown_point)
def position_term(k: Count = 4, m: Annotated[int, Integer(0)] = 50, d: EvenSize = 64, base: Positive = absolute.BASE,
                  m_max: Count = 200, distances: Annotated[list, PositiveCounts(distinct=True)] = DISTANCES,
                  sigma: NonNegativeReal = 0.3, seed: Seed = 0) -> PositionTerm:
    r"""Chapter 1's figure: :math:`PE(m)^{\mathsf T} M\, PE(m+k) / (d/2)` over ``m = 0..m_max`` at distance ``k``.

    Two curves: :math:`M = I` (flat: it depends on ``k`` only) and :math:`M = I + R`
    with :math:`R` random (entries :math:`\mathcal N(0, \sigma^2)`, ``seed``), which
    changes with ``m`` at the same distance. ``k`` must be one of ``distances``; ``m``
    (in ``0..m_max``) places the draggable point on the second curve.
    """
    data = position_term_data(d=d, base=base, m_max=m_max, distances=distances, sigma=sigma, seed=seed)
    flats = ", ".join(f"{f:.2f} at k = {kk}" for kk, f in zip(data["distances"], data["flat"]))
    ranges = ", ".join(f"{lo:.2f} to {hi:.2f} at k = {kk}"
                       for kk, lo, hi in zip(data["distances"], data["mixed_min"], data["mixed_max"]))
    description = (
        f"Position-position term PE(m)ᵀ M PE(m+k) / (d/2) of sinusoidal positions (d = {d}) for "
        f"m = 0..{m_max}. With M = I it depends on the distance only, a flat line at {flats}. "
        f"With M = I + R (R random, entries of standard deviation {sigma:g}) the same distance "
        f"gives values that change with m, from {ranges}."
    )
    caption = (
        f"The position-position part of the attention score, PE(m)ᵀ M PE(m+k) / (d/2), at a fixed "
        f"distance k for positions m = 0..{m_max} (sinusoids, d = {d}). With M = I (blue, dashed) it "
        f"is the same at every m; with M = I + R, R a fixed random matrix (entries N(0, {sigma:g}²), "
        f"seed {seed}; orange), it wobbles with m."
    )
    instructions = "Choose k; drag the orange point or use the arrow keys."
    return PositionTerm(**data, k=int(k), m=int(m), caption=caption, instructions=instructions,
                        description=description)
