r"""Chapter 0's interactive figure: reorder the tokens and watch the attention outputs follow.

For the three tokens ``A, B, C`` and each of the six orders, Python computes the
self-attention weights and outputs (:func:`companion.attention.self_attention`),
with and without a causal mask, and whether each token's output row is the same as
in the order ``A, B, C``. The drawing shows the selected order; without the mask every
token keeps its output row (permutation equivariance), with the mask most do not.
"""
from __future__ import annotations

from itertools import permutations
from typing import Annotated

import numpy as np
import traitlets

from .._contracts import Count, Flag, Integer, Seed, contract
from ..attention import causal_mask, self_attention
from ._base import Figure, esm

TOKENS = ("A", "B", "C")


@contract
def permutation_results(seed: Seed = 0, d: Count = 4) -> dict:
    r"""Everything the figure shows, for all 3! orders and both mask settings.

    Returns a dict with ``tokens``, ``orders`` (lists of token labels), ``d``, and
    ``results[mask_name][order_index]`` holding ``weights`` (3 x 3), ``outputs``
    (3 x d, rows in the order's token order) and ``same_as_original`` (per row:
    does this token's output equal its output in the order A, B, C, to 1e-12?).
    """
    rng = np.random.default_rng(seed)
    embeddings = rng.normal(size=(len(TOKENS), d))
    w_q, w_k, w_v = (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))
    orders = list(permutations(range(len(TOKENS))))
    results = {}
    for mask_name, mask in (("none", None), ("causal", causal_mask(len(TOKENS)))):
        reference, _ = self_attention(embeddings, w_q, w_k, w_v, mask=mask)
        rows = []
        for order in orders:
            out, weights = self_attention(embeddings[list(order)], w_q, w_k, w_v, mask=mask)
            same = np.all(np.abs(out - reference[list(order)]) < 1e-12, axis=1)
            rows.append(
                {
                    "weights": np.round(weights, 6).tolist(),
                    "outputs": np.round(out, 6).tolist(),
                    "same_as_original": same.tolist(),
                }
            )
        results[mask_name] = rows
    return {
        "tokens": list(TOKENS),
        "orders": [[TOKENS[i] for i in order] for order in orders],
        "d": d,
        "results": results,
    }


class PermutationExplorer(Figure):
    """Widget for :func:`permutation_explorer`; its drawing code is ``permutation.js``."""

    _esm = esm("permutation.js")
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    orders = traitlets.List().tag(sync=True)
    d = traitlets.Int().tag(sync=True)
    results = traitlets.Dict().tag(sync=True)
    order_index = traitlets.Int(0).tag(sync=True)
    causal = traitlets.Bool(False).tag(sync=True)

    def static_figure(self):
        from matplotlib.figure import Figure as MplFigure

        order = self.orders[self.order_index]
        result = self.results["causal" if self.causal else "none"][self.order_index]
        fig = MplFigure(figsize=(7.5, 2.8), layout="constrained")
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, self.d + 1]})
        left.imshow(result["weights"], cmap="Blues", vmin=0, vmax=1)
        outputs = np.array(result["outputs"])
        limit = np.abs(outputs).max()
        right.imshow(outputs, cmap="PuOr", vmin=-limit, vmax=limit)
        for ax, title in ((left, "attention weights"), (right, "output rows")):
            ax.set_yticks(range(3), order)
            ax.set_title(title)
        left.set_xticks(range(3), order)
        right.set_xticks(range(self.d))
        right.set_xlabel("dimension of the output row")
        for i, same in enumerate(result["same_as_original"]):
            right.text(self.d - 0.4, i, "same" if same else "differs", va="center")
        fig.suptitle(f"order {' '.join(order)}, {'with' if self.causal else 'without'} the causal mask")
        return fig


@contract
def permutation_explorer(seed: Seed = 0, d: Count = 4,
                         order_index: Annotated[int, Integer(0, 5, why="one of the 3! orders")] = 4,
                         causal: Flag = False) -> PermutationExplorer:
    """Chapter 0's interactive figure (``order_index=4`` starts at the order C, A, B)."""
    data = permutation_results(seed=seed, d=d)
    description = (
        "Self-attention outputs for the tokens A, B, C in each of their six orders. Without a mask, "
        "every token's output row is the same in every order; with the causal mask a token keeps its "
        "row only when the same set of tokens stands in front of it as in the order A, B, C."
    )
    caption = (
        "Self-attention over three tokens in a chosen order: without the causal mask each token keeps "
        "its output row whatever the order (permutation equivariance); with the mask, rows change."
    )
    instructions = "Choose an order of the tokens and switch the causal mask on and off."
    return PermutationExplorer(**data, order_index=order_index, causal=bool(causal), caption=caption,
                               instructions=instructions, description=description)
