r"""Which RoPE pairs the lab's trained heads use, read from its records.

Barbero et al. (2025), "Round and Round We Go! What makes Rotary Positional
Encodings useful?" (ICLR 2025), measure the *usage* of pair :math:`i` by the size of
its chunks, :math:`\lVert q^{(i)}\rVert\,\lVert k^{(i)}\rVert`; chapter 9's lab stores these
norms per layer, head and pair (:func:`companion.lab.evals.pair_norms`), and the
functions here read them across seeds. What a single fast or slow pair can do is
:mod:`companion.pair_usage`.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from .._contracts import (
    Flag,
    InstanceOf,
    Label,
    contract,
)

__all__ = ["usage_by_head", "usage_shares"]

#: One seed's record of the lab (the schema of ``companion/lab/stored/seed<k>.json``).
Record = Annotated[dict, InstanceOf(dict, "a lab record (companion/lab/stored/seed<k>.json)", error=ValueError)]
#: ``{seed: record}``: the ``seeds`` of :class:`companion.lab.results.LabResults`.
Records = Annotated[dict, InstanceOf(dict, "a dict {seed: record} of lab records", error=ValueError)]


# ---------------------------------------------------------------------------
# Rules between parameters
# ---------------------------------------------------------------------------

def _stored(name: str, record, arm) -> None:
    """``record`` holds pair norms for ``arm``: ``query`` and ``key``, of one shape (layers, heads, pairs)."""
    if not isinstance(record, dict) or not isinstance(record.get("pair_norms"), dict):
        got = f"keys {sorted(record)}" if isinstance(record, dict) else type(record).__name__
        raise ValueError(f"{name} must be a lab record with 'pair_norms' (companion/lab/stored/seed<k>.json), "
                         f"got {got}")
    norms = record["pair_norms"]
    if arm not in norms:
        listed = ", ".join(repr(a) for a in sorted(norms))
        raise ValueError(f"arm must be one of {listed} (the arms whose pair norms {name} holds); got {arm!r}")
    stored = norms[arm]
    if not isinstance(stored, dict) or not {"query", "key"} <= set(stored) or \
            np.shape(stored["query"]) != np.shape(stored["key"]) or np.ndim(stored["query"]) != 3:
        raise ValueError(f"{name}['pair_norms'][{arm!r}] must hold 'query' and 'key' norms of one shape "
                         "(layers, heads, pairs), as companion.lab.evals.pair_norms stores them")


def _arm_stored(record, arm) -> None:
    """The record holds the pair norms of ``arm``."""
    _stored("record", record, arm)


def _arm_stored_in_every_record(records, arm) -> None:
    """``records`` is not empty, and every record holds the pair norms of ``arm``."""
    if not records:
        raise ValueError("records must be a non-empty dict {seed: record} (the seeds of a lab run), got {}")
    for seed in sorted(records):
        _stored(f"records[{seed!r}]", records[seed], arm)
    shapes = {seed: np.shape(records[seed]["pair_norms"][arm]["query"]) for seed in sorted(records)}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"records must hold pair norms of one shape (layers, heads, pairs) for arm {arm!r}: "
                         f"the seeds of one run, got {shapes}")


# ---------------------------------------------------------------------------
# Usage read from the lab's records
# ---------------------------------------------------------------------------

@contract(_arm_stored)
def usage_by_head(record: Record, arm: Label) -> np.ndarray:
    r"""Usage of every pair in every head: :math:`\lVert q^{(i)}\rVert\,\lVert k^{(i)}\rVert`.

    ``record``: one seed's record of the lab; ``arm``: one of its arms (for a RoPE
    arm pair 0 is the fastest). Returns ``(layers, heads, pairs)``, the product of
    the mean query and key chunk norms that :func:`companion.lab.evals.pair_norms`
    stored. Its mean over layers and heads is
    ``companion.lab.claims.pair_usage``.
    """
    norms = record["pair_norms"][arm]
    # ||q^(i)|| ||k^(i)|| per layer, head and pair
    return np.array(norms["query"], dtype=np.float64) * np.array(norms["key"], dtype=np.float64)


@contract(_arm_stored_in_every_record)
def usage_shares(records: Records, arm: Label, by_head: Flag = False) -> np.ndarray:
    r"""Each pair's share of a head's usage, one row per seed.

    ``records``: ``{seed: record}`` (the ``seeds`` of
    :class:`companion.lab.results.LabResults`), in seed order. The share of pair
    :math:`i` is :math:`u_i / \sum_j u_j` with :math:`u` from :func:`usage_by_head`:
    averaged over layers and heads first (shape ``(seeds, pairs)``), or per head
    when ``by_head`` (shape ``(seeds, layers, heads, pairs)``). A scheme that gives
    the pairs no frequency (NoPE, a learned table) has no reason to prefer one pair,
    so its shares are the control: :math:`1/(d/2)` each, up to seed noise.
    """
    usage = np.array([usage_by_head(records[s], arm) for s in sorted(records)])   # (seeds, L, H, P)
    if not by_head:
        usage = usage.mean(axis=(1, 2))                                             # (seeds, P)
    # u_i / sum_j u_j
    return usage / usage.sum(axis=-1, keepdims=True)
