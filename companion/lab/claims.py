r"""What chapters 7 and 9 claim about the lab's results, as functions of any set of seeds.

(Being written.)
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Verdict", "CLAIMS", "check_all", "table"]


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict on a set of seeds: ``holds``, the sentence it states, and the numbers behind it."""

    name: str
    holds: bool
    statement: str
    evidence: str
    numbers: dict = field(default_factory=dict)


CLAIMS: dict = {}


def check_all(seeds: dict, config=None) -> list[Verdict]:
    """Every claim of :data:`CLAIMS` on the per-seed records ``seeds`` (``{seed: record}``)."""
    return [claim(seeds) for claim in CLAIMS.values()]


def table(verdicts) -> str:
    """A plain-text table of verdicts: name, holds or fails, the evidence."""
    lines = [f"{'claim':<34} {'verdict':<7} evidence"]
    for v in verdicts:
        lines.append(f"{v.name:<34} {'holds' if v.holds else 'FAILS':<7} {v.evidence}")
    return "\n".join(lines)
