r"""Chapter 6's interactive figure: which RoPE pairs leave the trained range at length ``s L``.

A RoPE model trained on ``L`` positions has seen every angle of its fast pairs, but
its slow pairs (less than one full turn in training, ``L theta_i < 2 pi``) have only
seen angles up to ``L theta_i``. Run at length ``s L``, pair ``i`` reaches
``s L theta'_i``, with ``theta'`` the frequencies of the chosen context-extension
method; the figure shows, per pair, the ratio ``s theta'_i / theta_i`` of that
largest angle to the largest angle seen in training. Python computes every number
with :func:`companion.trained_range.extension` (and :func:`companion.scaling.scale`,
:func:`companion.scaling.training_turns`) for every method and every integer scale;
the drawing shows one method at one scale.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np
import traitlets

from .. import absolute, rope, scaling, trained_range
from .._contracts import MAX_POSITION, Count, Integer, OneOf, Positive, contract
from ..plotting import PALETTE
from ._base import Figure, esm

#: The methods the figure offers: (name in :data:`companion.scaling.METHODS`, label).
FIGURE_METHODS = (
    ("none", "no scaling"),
    ("pi", "PI"),
    ("ntk", "NTK-aware"),
    ("yarn", "YaRN"),
)
_NAMES = tuple(name for name, _ in FIGURE_METHODS)
_METHOD = OneOf(*_NAMES)
#: A method the figure offers.
FigureMethod = Annotated[str, _METHOD]
#: A head width for the figure (NTK-aware scaling needs d >= 4).
FigureWidth = Annotated[int, Integer(4, MAX_POSITION, even=True, why="NTK-aware scaling needs it")]
#: The largest scale offered.
MaxScale = Annotated[int, Integer(2)]


def _base_not_one(base) -> None:
    if base == 1.0:
        raise ValueError("base must be a finite real number > 0 and != 1, got 1.0")


@contract(_base_not_one)
def context_extension_data(d: FigureWidth = 128, L: Count = scaling.LLAMA2_CONTEXT,
                           base: Positive = absolute.BASE,
                           max_s: MaxScale = 32) -> dict:
    r"""Everything chapter 6's figure shows, for every method and every scale ``s = 1 .. max_s``.

    Per pair ``i`` (``d/2`` pairs): ``theta`` (``theta_i = base^(-2i/d)``, rad/token)
    and ``turns`` (``r_i = L theta_i / (2 pi)``, turns in training). Per method (keys
    ``"none"``, ``"pi"``, ``"ntk"``, ``"yarn"``) and per scale (index ``s - 1``):
    ``ratio`` (``s theta'_i / theta_i``), ``scaled_freq`` (``theta'_i``, rad/token),
    ``out`` (beyond the trained range), ``n_out``, ``worst`` (largest ratio among the
    slow pairs), ``kept`` (pairs whose frequency is unchanged, ``theta'_i = theta_i``)
    and ``attention_factor``. All from :func:`companion.trained_range.extension`.
    """
    theta = rope.inv_freq(d, base)
    turns = scaling.training_turns(theta, L)
    s_values = list(range(1, max_s + 1))
    ratio, scaled_freq, out, n_out, worst, kept, factor = ({m: [] for m in _NAMES} for _ in range(7))
    n_slow = None
    for method in _NAMES:
        for s in s_values:
            ext = trained_range.extension(method, d=d, s=float(s), L=L, base=base)
            freq = scaling.scale(method, d, s=float(s), L=L, base=base).inv_freq
            n_slow = ext.n_slow
            ratio[method].append([float(x) for x in np.round(ext.ratio, 9)])
            scaled_freq[method].append(_sig(freq))
            out[method].append([bool(x) for x in ext.out_of_range])
            n_out[method].append(ext.n_out)
            worst[method].append(round(ext.worst_ratio, 9) if np.isfinite(ext.worst_ratio) else None)
            kept[method].append(int(np.sum(np.abs(freq - theta) <= 1e-12 * theta)))
            factor[method].append(round(float(ext.attention_factor), 9))
    return {
        "d": d,
        "L": L,
        "base": base,
        "s_values": s_values,
        "methods": [list(m) for m in FIGURE_METHODS],
        "theta": _sig(theta),
        "turns": _sig(turns),
        "n_slow": n_slow,
        "ratio": ratio,
        "scaled_freq": scaled_freq,
        "out": out,
        "n_out": n_out,
        "worst": worst,
        "kept": kept,
        "attention_factor": factor,
    }


def _sig(values, digits: int = 7) -> list:
    """Round to ``digits`` significant digits, as plain floats."""
    return [float(f"{x:.{digits - 1}e}") for x in np.asarray(values, dtype=np.float64)]


class ContextExtension(Figure):
    """Widget for :func:`context_extension`; its drawing code is ``scaling.js``."""

    _esm = esm("scaling.js")
    d = traitlets.Int().tag(sync=True)
    L = traitlets.Int().tag(sync=True)
    base = traitlets.Float().tag(sync=True)
    s_values = traitlets.List(traitlets.Int()).tag(sync=True)
    methods = traitlets.List().tag(sync=True)
    theta = traitlets.List(traitlets.Float()).tag(sync=True)
    turns = traitlets.List(traitlets.Float()).tag(sync=True)
    n_slow = traitlets.Int().tag(sync=True)
    ratio = traitlets.Dict().tag(sync=True)
    scaled_freq = traitlets.Dict().tag(sync=True)
    out = traitlets.Dict().tag(sync=True)
    n_out = traitlets.Dict().tag(sync=True)
    worst = traitlets.Dict().tag(sync=True)
    kept = traitlets.Dict().tag(sync=True)
    attention_factor = traitlets.Dict().tag(sync=True)
    method = traitlets.Unicode("none").tag(sync=True)
    s = traitlets.Int(8).tag(sync=True)
    pair = traitlets.Int(0).tag(sync=True)

    @traitlets.validate("method")
    def _valid_method(self, proposal):
        return _METHOD("method", proposal["value"])

    @traitlets.validate("s")
    def _valid_s(self, proposal):
        if self.s_values and proposal["value"] not in self.s_values:
            raise traitlets.TraitError(f"s must be an integer in 1..{self.s_values[-1]}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("pair")
    def _valid_pair(self, proposal):
        if self.theta and not 0 <= proposal["value"] < len(self.theta):
            raise traitlets.TraitError(f"pair must be in 0..{len(self.theta) - 1}, got {proposal['value']}")
        return proposal["value"]

    def static_figure(self):
        from matplotlib.figure import Figure as MplFigure

        k = self.s_values.index(self.s)
        ratio = np.array(self.ratio[self.method][k])
        out = np.array(self.out[self.method][k])
        n_pairs = len(ratio)
        label = dict(FIGURE_METHODS)[self.method]
        fig = MplFigure(figsize=(6.4, 3.6), layout="constrained")
        ax = fig.add_subplot()
        first_slow = n_pairs - self.n_slow
        if self.n_slow:
            ax.axvspan(first_slow - 0.5, n_pairs - 0.5, color=PALETTE["grey"], alpha=0.18, lw=0,
                       label="< 1 turn in training")
        colours = [PALETTE["vermillion"] if o else PALETTE["blue"] for o in out]
        bottom = 2 ** -0.5
        ax.bar(np.arange(n_pairs), ratio - bottom, bottom=bottom, width=0.8, color=colours)
        ax.axhline(1.0, color=PALETTE["black"], ls="--", lw=1)
        ax.set_yscale("log", base=2)
        ticks = [2**k for k in range(int(np.log2(self.s_values[-1])) + 1)]
        ax.set_yticks(ticks, [str(t) for t in ticks])
        ax.set_ylim(bottom, self.s_values[-1] * 1.15)
        ax.set_xlim(-0.8, n_pairs - 0.2)
        ax.set_xlabel("pair index i (fast → slow)")
        ax.set_ylabel("largest angle at sL ÷\nlargest angle in training")
        worst = self.worst[self.method][k]
        ax.set_title(f"{label}, s = {self.s}: {self.n_out[self.method][k]} of {n_pairs} pairs beyond "
                     f"the trained range" + (f"; worst {worst:.2f}×" if worst is not None else ""), fontsize=10)
        return fig


def _scale_and_pair_shown(s, pair, d, max_s) -> None:
    if s > max_s:
        raise ValueError(f"s must be an integer in 1..{max_s}, got {s!r}")
    if pair is not None and pair >= d // 2:
        raise ValueError(f"pair must be an integer in 0..{d // 2 - 1}, got {pair!r}")


@contract(_scale_and_pair_shown, _base_not_one)
def context_extension(method: FigureMethod = "none", s: Count = 8, pair: Annotated[int, Integer(0)] | None = None,
                      d: FigureWidth = 128, L: Count = scaling.LLAMA2_CONTEXT, base: Positive = absolute.BASE,
                      max_s: MaxScale = 32) -> ContextExtension:
    """Chapter 6's figure: per RoPE pair, the largest angle at length ``s L`` over the largest in training.

    ``method`` is one of ``"none"``, ``"pi"``, ``"ntk"``, ``"yarn"``; ``s`` an integer
    scale in ``1 .. max_s``; ``pair`` the pair shown in the readout (default: the
    fastest pair that never made a full turn in training). Defaults: Llama 2 (head
    dimension 128, base 10000, ``L = 4096``) at ``s = 8``.
    """
    data = context_extension_data(d=d, L=L, base=base, max_s=max_s)
    n_pairs = d // 2
    if pair is None:
        # the fastest pair that never made a full turn in training
        pair = min(n_pairs - data["n_slow"], n_pairs - 1)
    k = s - 1
    labels = dict(FIGURE_METHODS)

    def summary(m):
        n, worst = data["n_out"][m][k], data["worst"][m][k]
        text = f"{labels[m]}: {n} of {n_pairs} pairs beyond the trained range"
        if worst is not None:
            text += f", worst ratio {worst:.2f}×"
        kept = data["kept"][m][k]
        return text + f", {kept} {'pair keeps its' if kept == 1 else 'pairs keep their'} training frequency"

    description = (
        f"Per pair of a RoPE head of dimension {d} ({n_pairs} pairs, base {base:g}) trained on {L:,} tokens, "
        f"the largest angle reached at {s} × {L:,} = {s * L:,} tokens divided by the largest angle seen in "
        f"training. {data['n_slow']} slow pairs (pairs {n_pairs - data['n_slow']} to {n_pairs - 1}) made "
        f"less than one full turn in training; a ratio above 1 for them means angles never seen. At s = {s}: "
        + "; ".join(summary(m) for m in _NAMES)
        + f". YaRN also multiplies queries and keys by {data['attention_factor']['yarn'][k]:.3f}."
    )
    caption = (
        f"Largest angle each RoPE pair reaches at length sL, relative to training (head dimension {d}, "
        f"base {base:g}, L = {L:,}). Vermillion bars: slow pairs pushed beyond the angles seen in "
        "training; the grey band marks pairs with less than one full turn in training."
    )
    instructions = "Choose a method and a scale s; hover a bar or use the arrow keys to read a pair."
    return ContextExtension(**data, method=method, s=s, pair=int(pair), caption=caption,
                            instructions=instructions, description=description)
