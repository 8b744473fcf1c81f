r"""The stored results of the lab, and the one loader the chapters use.

The full run writes its files into the ``stored`` folder of this package
(``companion/lab/stored/``, package data), so an installed ``companion`` carries
them and a chapter needs no checkout and no network: ``seed<k>.json`` for each
seed (every arm's training record with its learning curve, the tuning scores,
extrapolation, retrieval, the RoPE pair norms, the masking intervention and the
RoPE extension), ``lr_sweep.json`` and ``summary.json`` (time, CPU time, memory,
machine load and CPU of the run, and which seeds were development and which held
out). A run at other seeds (``python -m companion.lab --config full --seeds 17
23``) writes the same files, without the sweep, into a folder of its own.

:func:`load_results` reads them; :func:`per_seed` and :func:`spread` pull one
number out of every seed and summarise it, and :mod:`companion.lab.claims` states
what the chapters claim as functions of these records.

**The code behind the numbers.** Every file records the fingerprint of the code
that computed it (:mod:`companion.lab.fingerprint`), and a test fails when today's
code differs. A change that computes the same numbers (a module renamed, a
configuration passed as one object instead of many arguments) need not cost a new
run: it is recorded in ``summary.json`` under ``code_changes``, each entry naming
the fingerprint it replaces, the new code's hashes, what changed and how it was
checked that the numbers did not (:func:`companion.lab.runs.record_code_change`;
:func:`differences` compares two runs' files). :attr:`LabResults.code_sources` is
the code that computes the stored numbers today: the run's own, or that of its last
recorded change.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np

from .._contracts import AnyValue, contract
from .kinds import Sample


def _seeds_of_the_run(self, seeds) -> None:
    """A subset keeps seeds of this run only."""
    missing = sorted(set(seeds) - set(self.seeds))
    if missing:
        raise ValueError(f"seeds must be seeds of this run ({self.seed_list()}), got {missing}")

__all__ = ["STORED", "CONFIRMATION", "CONTROLS", "LabResults", "load_results", "load_confirmation", "per_seed",
           "spread", "Spread", "differences", "NOT_COMPUTED"]

#: The folder of the stored results inside the installed package.
STORED = Path(__file__).resolve().parent / "stored"
#: The folder of the confirmation run: the full model at fresh seeds, for the claims frozen after the
#: held-out run (:data:`companion.lab.claims.SECOND_FREEZE`).
CONFIRMATION = STORED / "confirmation"
#: The folder of the distance-limit control run on the RoPE arms at the development seeds 0-4, from which the
#: distance-limit claims were written (:data:`companion.lab.claims.SECOND_FREEZE`).
CONTROLS = STORED / "controls"


@dataclass(frozen=True)
class LabResults:
    """The stored run: ``seeds`` (seed -> record), ``lr_sweep``, ``summary`` and the ``folder`` read."""

    seeds: dict
    lr_sweep: dict | None
    summary: dict
    folder: Path

    @property
    def config(self) -> dict:
        """The configuration of the run (the same in every file)."""
        return self.summary["config"]

    @property
    def arms(self) -> list[str]:
        """The arms of the run, in the book's order."""
        return list(self.config["arms"])

    def seed_list(self) -> list[int]:
        """The seeds, in order."""
        return sorted(self.seeds)

    @property
    def development_seeds(self) -> list[int]:
        """The seeds of this run that the claims were written from."""
        return [s for s in self.seed_list() if s in self.summary["development_seeds"]]

    @property
    def held_out_seeds(self) -> list[int]:
        """The seeds of this run that were trained only after the claims were frozen."""
        return [s for s in self.seed_list() if s in self.summary["held_out_seeds"]]

    @property
    def code_sources(self) -> dict:
        """The hashes of the code that computes these numbers today (:func:`companion.lab.fingerprint.source_hashes`):
        those of the last recorded change in ``summary["code_changes"]``, or the run's own."""
        changes = self.summary.get("code_changes", [])
        return changes[-1]["code_sources"] if changes else self.summary["code_sources"]

    @contract(_seeds_of_the_run)
    def subset(self, seeds: AnyValue) -> LabResults:
        """The same run restricted to ``seeds``."""
        return LabResults({s: self.seeds[s] for s in seeds}, self.lr_sweep, self.summary, self.folder)


def load_results(folder=None) -> LabResults:
    """Read the results of a run from ``folder`` (default ``STORED``, the package's own).

    ``ValueError`` if ``summary.json`` or a seed file of the run is missing, or if
    the files disagree about the configuration or the code fingerprint.
    ``lr_sweep`` is ``None`` for a run without the sweep (a run at new seeds).
    """
    folder = STORED if folder is None else Path(folder)
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        raise ValueError(f"folder must hold the lab's summary.json; none in {folder}")
    summary = json.loads(summary_path.read_text())
    seeds = {}
    for seed in summary["seeds"]:
        path = folder / f"seed{seed}.json"
        if not path.is_file():
            raise ValueError(f"folder must hold seed{seed}.json for every seed of the run; missing in {folder}")
        seeds[seed] = json.loads(path.read_text())
    sweep_path = folder / "lr_sweep.json"
    lr_sweep = json.loads(sweep_path.read_text()) if sweep_path.is_file() else None
    records = [*((f"seed{s}", r) for s, r in seeds.items())] + ([("lr_sweep", lr_sweep)] if lr_sweep else [])
    for name, record in records:
        if record["config"] != summary["config"] or record["code_fingerprint"] != summary["code_fingerprint"]:
            raise ValueError(f"{name}.json comes from another run than summary.json in {folder}")
    return LabResults(seeds=seeds, lr_sweep=lr_sweep, summary=summary, folder=folder)


def load_confirmation() -> LabResults:
    """Read the confirmation run (:data:`CONFIRMATION`, package data like the stored run)."""
    return load_results(CONFIRMATION)


def per_seed(results: LabResults, *path) -> list:
    """The value at ``path`` (keys and indices into a seed's record) for every seed, in seed order.

    ``per_seed(r, "extrapolation", "rope", "perplexity", -1)`` is RoPE's perplexity
    at the longest length, one number per seed.
    """
    values = []
    for seed in results.seed_list():
        value = results.seeds[seed]
        for key in path:
            value = value[key]
        values.append(value)
    return values


@dataclass(frozen=True)
class Spread:
    """Mean, smallest and largest value, and sample standard deviation over seeds."""

    mean: float
    low: float
    high: float
    sd: float
    values: tuple

    def __str__(self) -> str:
        return self.format()

    def format(self, digits: int = 2) -> str:
        """``"mean [low-high]"`` with ``digits`` decimals."""
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}-{self.high:.{digits}f}]"


#: What a file records about how it was computed, not what: the code, the libraries, the machine and the
#: time it took. :func:`differences` leaves these keys out, at every level.
NOT_COMPUTED = frozenset({"companion_version", "code_fingerprint", "code_sources", "python", "torch", "numpy", "device",
                          "threads_per_process", "machine", "jobs", "seconds", "finetune_seconds"})


def differences(a, b) -> list[str]:
    """Where the seed and sweep files of two runs (folders ``a`` and ``b``) disagree: an empty list when every
    number is the same.

    Each difference is a path, ``"seed0.json: extrapolation.rope.perplexity[2]"``;
    the keys of :data:`NOT_COMPUTED` are left out. Two runs of the same jobs by the
    same code on the same machine give none; so does a change to the code that
    computes the same numbers.
    """
    a, b = Path(a), Path(b)
    names = sorted({p.name for folder in (a, b) for p in [*folder.glob("seed*.json"), *folder.glob("lr_sweep.json")]})
    found = []
    for name in names:
        if not (a / name).is_file() or not (b / name).is_file():
            found.append(f"{name}: in one run only")
            continue
        found += _differences(json.loads((a / name).read_text()), json.loads((b / name).read_text()), f"{name}:")
    return found


def _differences(x, y, where: str) -> list[str]:
    if isinstance(x, dict) and isinstance(y, dict):
        return [d for k in sorted(set(x) | set(y)) if k not in NOT_COMPUTED
                for d in _differences(x.get(k), y.get(k), f"{where} {k}" if where.endswith(":") else f"{where}.{k}")]
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [d for i, (u, v) in enumerate(zip(x, y)) for d in _differences(u, v, f"{where}[{i}]")]
    return [] if x == y and type(x) is type(y) else [where]


@contract
def spread(values: Annotated[np.ndarray, Sample(finite=False)]) -> Spread:
    """The :class:`Spread` of numbers (``ValueError`` on an empty list or a missing value)."""
    a = values
    sd = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return Spread(float(a.mean()), float(a.min()), float(a.max()), sd, tuple(float(v) for v in a))
