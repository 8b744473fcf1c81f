r"""Chapter 3's interactive figure: RoPE on one pair of components, drawn as plane vectors.

A query's pair ``q`` at position ``m`` is turned by ``m theta``, a key's pair ``k``
at position ``n`` by ``n theta`` (Su et al. 2021, "RoFormer"). Their dot product
is :math:`(R_{m\theta} q) \cdot (R_{n\theta} k) = q^T R_{(n-m)\theta} k`: it depends on
the positions only through ``m - n``. Python computes, with :mod:`companion.rope`,
the starting score and the whole score curve against ``m - n``; the drawing lets
the reader drag ``q``, ``k``, ``m`` and ``n``. Because the arrows are dragged
continuously, the drawing script redoes this one small computation (two plane
rotations and a dot product) itself; the widget recomputes ``score`` and ``curve``
with :mod:`companion.rope` whenever ``q``, ``k``, ``m``, ``n`` or ``theta`` change.
"""
from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import traitlets

from .. import rope
from .._contracts import Count, Integer, Kind, Real, contract
from ..plotting import PALETTE
from ._base import Figure, esm

#: Lengths a content arrow may have (the drawing keeps dragged arrows inside).
LENGTH_RANGE = (0.2, 1.5)
_SLACK = 1e-3  # values rounded by the drawing may sit this far outside LENGTH_RANGE


class PlaneVector(Kind):
    """A plane vector (2 finite numbers) whose length lies in LENGTH_RANGE, widened by ``slack``."""

    def __init__(self, slack: float = 0.0):
        self.slack = slack

    def __call__(self, name, value):
        try:
            out = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a plane vector of 2 real numbers, got {value!r}") from err
        if out.shape != (2,) or not np.all(np.isfinite(out)):
            raise ValueError(f"{name} must be a plane vector of 2 finite real numbers, got {value!r}")
        length = float(np.hypot(*out))
        low, high = LENGTH_RANGE
        if not low - self.slack <= length <= high + self.slack:
            raise ValueError(f"{name} must have length between {low} and {high}, got {length:.4g}")
        return out


_TURN = Real(gt=0)
#: A content arrow: a plane vector of length 0.2 to 1.5.
Arrow = Annotated[np.ndarray, PlaneVector()]
#: A position on the figure's axis (at most ``max_position``, a rule).
AxisPosition = Annotated[int, Integer(0)]
#: The pair's turn per position, rad.
Turn = Annotated[float, _TURN]


def _on_the_axis(m, n, max_position) -> None:
    for name, value in (("m", m), ("n", n)):
        if value > max_position:
            raise ValueError(f"{name} must be an integer in 0..{max_position}, got {value!r}")


def _round(values, digits: int = 6) -> list:
    return [round(float(v), digits) for v in np.atleast_1d(values)]


def rope_scores(q, k, m: int, n: int, theta: float, max_position: int = 15) -> tuple[float, list]:
    r"""The score ``(R_{m theta} q) . (R_{n theta} k)`` and the curve over ``m - n``.

    The score comes from :func:`companion.rope.score`; the curve (one value per
    ``m - n = -max_position .. max_position``) from :func:`companion.rope.relative_score`
    with ``distance = n - m``. One pair: ``inv_freq = [theta]``. Rounded to 6 decimals.
    """
    distances = np.arange(-max_position, max_position + 1)  # m - n
    curve = rope.relative_score(q, k, -distances, [theta])
    return round(float(rope.score(q, k, m, n, [theta])), 6), _round(curve)


@contract(_on_the_axis)
def rope_rotation_data(q: Arrow = (0.95, 0.25), k: Arrow = (0.55, 0.75), m: AxisPosition = 5, n: AxisPosition = 2,
                       theta: Turn = 0.4, max_position: Count = 15) -> dict:
    r"""Everything chapter 3's figure shows at the start.

    ``q`` and ``k``: one pair of a query and of a key (plane vectors of length 0.2 to
    1.5); ``m`` and ``n``: their positions (integers in ``0..max_position``);
    ``theta``: the pair's rotation per position (rad). Returns ``q``, ``k``, ``m``,
    ``n``, ``theta``, ``max_position``, ``distances`` (``m - n`` from
    ``-max_position`` to ``max_position``), ``curve`` (the score at each of those
    distances, :func:`companion.rope.relative_score`) and ``score`` (the current one,
    :func:`companion.rope.score`), with ``rotated_q`` and ``rotated_k``
    (:func:`companion.rope.rotate`) for the description.
    """
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    score, curve = rope_scores(q, k, m, n, theta, max_position)
    return {
        "q": _round(q),
        "k": _round(k),
        "m": m,
        "n": n,
        "theta": theta,
        "max_position": max_position,
        "distances": list(range(-max_position, max_position + 1)),
        "curve": curve,
        "score": score,
        "rotated_q": _round(rope.rotate(q, m, [theta])),
        "rotated_k": _round(rope.rotate(k, n, [theta])),
    }


#: The label of the button that moves both positions one later (``rope.js`` writes the same).
SHIFT_LABEL = "Move both one later (+1)"


def shifted(m: int, n: int, max_position: int = 15) -> tuple[int, int]:
    """Where "Move both one later (+1)" takes ``(m, n)``: both one further, or, when one
    would pass ``max_position``, both moved back so that the smaller is 0. ``m - n``
    is kept either way."""
    if max(m, n) + 1 > max_position:
        low = min(m, n)
        return m - low, n - low
    return m + 1, n + 1


class RopeRotation(Figure):
    """Widget for :func:`rope_rotation`; its drawing code is ``rope.js``.

    ``q``, ``k``, ``m``, ``n`` and ``theta`` are synced both ways; ``score`` and
    ``curve`` follow them (recomputed here with :mod:`companion.rope`).
    """

    _esm = esm("rope.js")
    q = traitlets.List(traitlets.Float(), minlen=2, maxlen=2).tag(sync=True)
    k = traitlets.List(traitlets.Float(), minlen=2, maxlen=2).tag(sync=True)
    m = traitlets.Int(0).tag(sync=True)
    n = traitlets.Int(0).tag(sync=True)
    theta = traitlets.Float(0.4).tag(sync=True)
    max_position = traitlets.Int(15).tag(sync=True)
    distances = traitlets.List(traitlets.Int()).tag(sync=True)
    curve = traitlets.List(traitlets.Float()).tag(sync=True)
    score = traitlets.Float(0.0).tag(sync=True)

    @traitlets.validate("q", "k")
    def _valid_vector(self, proposal):
        name = proposal["trait"].name
        try:
            return _round(PlaneVector(slack=_SLACK)(name, proposal["value"]))
        except ValueError as err:
            raise traitlets.TraitError(str(err)) from err

    @traitlets.validate("m", "n")
    def _valid_position(self, proposal):
        try:
            return Integer(0, self.max_position)(proposal["trait"].name, proposal["value"])
        except ValueError as err:
            raise traitlets.TraitError(str(err)) from err

    @traitlets.validate("theta")
    def _valid_theta(self, proposal):
        try:
            return _TURN("theta", proposal["value"])
        except ValueError as err:
            raise traitlets.TraitError(str(err)) from err

    @traitlets.observe("q", "k", "m", "n", "theta")
    def _recompute(self, change):
        if len(self.q) == 2 and len(self.k) == 2:
            self.score, self.curve = rope_scores(self.q, self.k, self.m, self.n, self.theta, self.max_position)

    def shift_both(self) -> None:
        """What the button "Move both one later (+1)" does (see :func:`companion.figures.rope.shifted`)."""
        m, n = shifted(self.m, self.n, self.max_position)
        with self.hold_trait_notifications():
            self.m, self.n = m, n

    def static_figure(self):
        from matplotlib.figure import Figure as MplFigure

        q, k, theta = np.array(self.q), np.array(self.k), self.theta
        q_rot, k_rot = rope.rotate(q, self.m, [theta]), rope.rotate(k, self.n, [theta])
        fig = MplFigure(figsize=(6.4, 3.2), layout="constrained")
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.25]})
        t = np.linspace(0, 2 * np.pi, 200)
        left.plot(np.cos(t), np.sin(t), color=PALETTE["grey"], lw=1)
        for v, colour, alpha, width, label in (
            (q, PALETTE["blue"], 0.4, 0.012, "q"),
            (k, PALETTE["vermillion"], 0.4, 0.012, "k"),
            (q_rot, PALETTE["blue"], 1.0, 0.02, rf"$R_{{{self.m}\theta}}q$"),
            (k_rot, PALETTE["vermillion"], 1.0, 0.02, rf"$R_{{{self.n}\theta}}k$"),
        ):
            left.quiver(0, 0, v[0], v[1], angles="xy", scale_units="xy", scale=1, color=colour,
                        alpha=alpha, width=width)
            left.annotate(label, v * 1.12, ha="center", va="center", color=colour)
        left.set_xlim(-1.6, 1.6)
        left.set_ylim(-1.6, 1.6)
        left.set_aspect("equal")
        left.set_title(f"m = {self.m}, n = {self.n}, θ = {theta:g} rad per position", fontsize=10)
        left.set_xticks([])
        left.set_yticks([])
        d = np.array(self.distances)
        right.plot(d, self.curve, "o-", color=PALETTE["grey"], ms=3, lw=1)
        right.plot([self.m - self.n], [self.score], "o", color=PALETTE["green"], ms=9, mec="black")
        right.axhline(0, color="#ccc", lw=0.8)
        right.set_xlabel("m − n (positions)")
        right.set_ylabel("score q·k after rotation")
        right.set_title(f"score {self.score:.3f} at m − n = {self.m - self.n}", fontsize=10)
        return fig


def _degrees(v) -> float:
    return math.degrees(math.atan2(v[1], v[0])) % 360


@contract(_on_the_axis)
def rope_rotation(q: Arrow = (0.95, 0.25), k: Arrow = (0.55, 0.75), m: AxisPosition = 5, n: AxisPosition = 2,
                  theta: Turn = 0.4, max_position: Count = 15) -> RopeRotation:
    """Chapter 3's figure: drag ``q``, ``k`` and the positions ``m``, ``n``; move both and the score stays."""
    data = rope_rotation_data(q=q, k=k, m=m, n=n, theta=theta, max_position=max_position)
    rotated_q, rotated_k = data.pop("rotated_q"), data.pop("rotated_k")
    curve = data["curve"]
    description = (
        f"One pair of components as plane vectors, theta = {theta:g} rad per position. "
        f"The query pair q (length {np.hypot(*data['q']):.2f}, at {_degrees(data['q']):.0f} degrees) at "
        f"position m = {m} is turned by m theta = {m * theta:.2f} rad to {_degrees(rotated_q):.0f} degrees; "
        f"the key pair k (length {np.hypot(*data['k']):.2f}, at {_degrees(data['k']):.0f} degrees) at "
        f"position n = {n} is turned by n theta = {n * theta:.2f} rad to {_degrees(rotated_k):.0f} degrees. "
        f"Their score is {data['score']:.3f}, the same for every pair of positions with m − n = {m - n}. "
        f"Against m − n from {-max_position} to {max_position} the score runs between "
        f"{min(curve):.3f} and {max(curve):.3f}."
    )
    caption = (
        "RoPE on one pair of components [Su et al., 2024]: q at position m is turned by mθ, "
        "k at position n by nθ. Moving both positions by the same amount turns both bold arrows "
        "together and leaves the score where it is; changing m − n moves it along the curve."
    )
    instructions = (f"Drag the arrows or the positions, or focus them and use the arrow keys; "
                    f"\"{SHIFT_LABEL}\" moves m and n one position later together.")
    return RopeRotation(**data, caption=caption, instructions=instructions, description=description)
