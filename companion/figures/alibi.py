r"""Chapter 4's interactive figure: ALiBi's causal heatmap, one head at a time.

Each head :math:`h` adds :math:`-m_h (i - j)` to the score of query :math:`i` and key
:math:`j` (Press, Smith & Lewis 2022). Python computes, for every head, the scores
(random content plus the bias, causally masked) and the softmax weights with
:func:`companion.attention.scaled_dot_product_attention` and
:func:`companion.alibi.bias`; the drawing shows one head, as scores or as weights.
Steep heads keep their weight beside the diagonal; gentle heads spread it along the
row.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np
import traitlets

from .._contracts import Count, Integer, NonNegativeReal, OneOf, Seed, contract
from ..alibi import bias, slopes
from ..attention import scaled_dot_product_attention
from ._base import Figure, esm

_VIEWS = OneOf("scores", "weights")
#: What the heatmap shows: attention scores or weights.
View = Annotated[str, _VIEWS]


@contract
def alibi_heatmap_data(n_heads: Count = 8, n: Count = 24, content_scale: NonNegativeReal = 0.5, seed: Seed = 0) -> dict:
    r"""Everything chapter 4's figure shows.

    Scores :math:`s_{h,ij} = q_i \cdot k_j/\sqrt{d} - m_h (i - j)` for random unit-scale
    content (16-dimensional queries and keys with entries of standard deviation
    ``content_scale``, shared by all heads) and weights :math:`\operatorname{softmax}_j`.
    Returns lists for the widget: ``slopes`` (H), ``scores`` and ``weights``
    (H x n x n, ``None`` above the diagonal), ``near_share`` (per head, the mean over
    queries of the weight on keys at distance 0, 1 or 2) and ``span90`` (per head, the
    smallest distance holding 90% of the last query's weight).
    """
    rng = np.random.default_rng(seed)
    d = 16
    q = rng.normal(scale=content_scale, size=(n, d)) * d**0.25
    k = rng.normal(scale=content_scale, size=(n, d)) * d**0.25
    b = bias(n_heads, n)  # (H, n, n), -inf above the diagonal
    _, weights = scaled_dot_product_attention(q, k, np.zeros((n, 1)), bias=b)
    scores = q @ k.T / np.sqrt(d) + b
    i, j = np.indices((n, n))
    near = np.where((i - j >= 0) & (i - j <= 2), weights, 0.0).sum(axis=-1).mean(axis=-1)
    last = weights[:, -1, ::-1].cumsum(axis=-1)  # weight within distance 0, 1, 2, ...
    span90 = (last < 0.9).sum(axis=-1)
    upper = j > i
    return {
        "n": n,
        "slopes": slopes(n_heads).tolist(),
        "scores": _masked(scores, upper),
        "weights": _masked(weights, upper),
        "near_share": near.round(6).tolist(),
        "span90": span90.tolist(),
    }


def _masked(values: np.ndarray, upper: np.ndarray) -> list:
    rounded = np.round(values, 5).astype(object)
    rounded[..., upper] = None
    return rounded.tolist()


class AlibiHeatmap(Figure):
    """Widget for :func:`alibi_heatmap`; its drawing code is ``alibi.js``."""

    _esm = esm("alibi.js")
    n = traitlets.Int().tag(sync=True)
    slopes = traitlets.List(traitlets.Float()).tag(sync=True)
    scores = traitlets.List().tag(sync=True)
    weights = traitlets.List().tag(sync=True)
    near_share = traitlets.List(traitlets.Float()).tag(sync=True)
    span90 = traitlets.List(traitlets.Int()).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    view = traitlets.Unicode("weights").tag(sync=True)

    @traitlets.validate("head")
    def _valid_head(self, proposal):
        if not 0 <= proposal["value"] < len(self.slopes):
            raise traitlets.TraitError(f"head must be in 0..{len(self.slopes) - 1}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("view")
    def _valid_view(self, proposal):
        return _VIEWS("view", proposal["value"])

    def static_figure(self):
        from matplotlib.figure import Figure as MplFigure

        data = np.array(self.weights[self.head] if self.view == "weights" else self.scores[self.head], dtype=float)
        fig = MplFigure(figsize=(4.2, 3.6), layout="constrained")
        ax = fig.add_subplot()
        image = ax.imshow(np.ma.masked_invalid(data), cmap="viridis")
        ax.set_xlabel("key position j")
        ax.set_ylabel("query position i")
        ax.set_title(f"head {self.head + 1}, slope m = {self.slopes[self.head]:.4g}: {self.view}")
        fig.colorbar(image, ax=ax, label="weight" if self.view == "weights" else "score")
        return fig


def _head_exists(n_heads, head) -> None:
    if head >= n_heads:
        raise ValueError(f"head must be an integer in 0..{n_heads - 1}, got {head!r}")


@contract(_head_exists)
def alibi_heatmap(n_heads: Count = 8, n: Count = 24, head: Annotated[int, Integer(0)] = 0, view: View = "weights",
                  content_scale: NonNegativeReal = 0.5, seed: Seed = 0) -> AlibiHeatmap:
    """Chapter 4's figure: ALiBi's causal heatmap for ``n_heads`` heads; choose a head and a view."""
    data = alibi_heatmap_data(n_heads=n_heads, n=n, content_scale=content_scale, seed=seed)
    steep, gentle = 0, n_heads - 1
    description = (
        f"ALiBi heatmap of {n} causal positions for {n_heads} heads. Head 1 (slope "
        f"{data['slopes'][steep]:.3g}) puts on average {100 * data['near_share'][steep]:.0f}% of each "
        f"query's weight on keys at most 2 positions back; head {n_heads} (slope "
        f"{data['slopes'][gentle]:.3g}) puts {100 * data['near_share'][gentle]:.0f}% there and spreads "
        f"the rest along the row (90% of the last query's weight lies within distance "
        f"{data['span90'][gentle]} for head {n_heads}, {data['span90'][steep]} for head 1)."
    )
    caption = (
        "ALiBi adds -m(i - j) to each score under the causal mask, one slope per head: steep heads "
        "keep the softmax weights beside the diagonal, gentle heads spread them along the row."
    )
    instructions = ("Choose a head and switch between scores and softmax weights; click a cell or "
                    "use the arrow keys to read it.")
    return AlibiHeatmap(**data, head=head, view=view, caption=caption, instructions=instructions,
                        description=description)
