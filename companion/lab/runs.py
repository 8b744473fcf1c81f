r"""Running the lab: jobs, worker processes, checkpoints and resuming, and the stored files.

:func:`run_all` recomputes the book's stored results (the command ``python -m
companion.lab --config full``, in ``companion/lab/__main__.py``); at other seeds it
runs them into a folder of their own, where the claims of :mod:`companion.lab.claims`
are checked on them. The work is cut into *jobs* (:func:`jobs`): one per (seed, arm),
which trains the arm and runs every experiment on it, and one per cell of the
learning-rate sweep. Jobs run in a pool of worker processes (``--workers``, one torch
thread each), or in ``--parts P`` processes started by hand (``--part i`` in each,
then ``--merge``). Every finished job is written at once to ``<out>/jobs/`` with the
run's fingerprint (:func:`job_fingerprint`: the configuration and the code the jobs
execute), so a run that is stopped resumes where it was: a job whose file holds the
same fingerprint is not run again, and one computed by other code or another
configuration is moved to ``<out>/stale-jobs/`` and run again. :func:`assemble` then
writes the files the book reads:

- ``seed<k>.json``: every arm's record at seed ``k``, keyed by experiment
  (``train``, ``tuning``, ``extrapolation``, ``retrieval``, ``pair_norms``,
  ``window``, ``distance_limit``, ``extension``), with :func:`run_metadata` (the machine and the
  libraries, :mod:`companion.lab.provenance`);
- ``lr_sweep.json``: the cells of the sweep;
- ``summary.json``: the cost (wall time as the union of the jobs' running times,
  so that a stopped and resumed run counts once; CPU time, peak memory, load
  average before and after each session), the machine, which seeds were
  development and which held out, and the claims' history
  (:data:`companion.lab.claims.HISTORY`).

A job's numbers depend only on its seed and arm (and learning rate), never on the
order, the process or the other jobs: on the same machine a re-run repeats them
exactly (a test checks it on the reduced configuration). A change to the code that
repeats them too is recorded in the stored run instead of a new run
(:func:`record_code_change`); unfinished jobs in ``<out>/jobs/`` keep the fingerprint
of the code that computed them, so after such a change they are set aside and run
again, as after any other.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated

import numpy as np
import torch

from .._contracts import AnyValue, Count, OneOf, contract
from . import claims, experiments, fingerprint, provenance, results, stdlib_corpus
from .settings import LabConfig, get_config

__all__ = ["jobs", "run_job", "job_fingerprint", "finished_jobs", "stage_results", "run_all", "assemble",
           "record_claims_history", "record_code_change", "run_metadata", "code_hashes", "trace_config",
           "STORED_RUNS"]

#: The configurations whose runs the package stores, and where: ``full`` in ``stored/``, ``confirmation``
#: in ``stored/confirmation/``.
STORED_RUNS = {"full": results.STORED, "confirmation": results.CONFIRMATION}
#: Which sweep cells a run adds to its arm jobs.
Sweep = Annotated[str, OneOf("rest", "all", "none")]
#: A configuration as :func:`companion.lab.settings.get_config` reads it (which checks it): a name, a
#: :class:`companion.lab.settings.LabConfig` or a dict.
ConfigLike = AnyValue


def _out_dir_given(config, out_dir, seeds) -> None:
    """Only the full and the confirmation configurations at their own seeds write to the package's stored results."""
    name = config if isinstance(config, str) else "custom"
    if out_dir is None and (name not in STORED_RUNS or seeds is not None):
        raise ValueError("out_dir must be given for a configuration other than 'full' and 'confirmation' or for "
                         "other seeds")


def _arms_of_the_configuration(config, arms) -> None:
    """``arms`` (when given) names arms of the configuration, at least one."""
    if arms is None:
        return
    known = list(get_config(config).arms)
    unknown = [a for a in arms if a not in known]
    if not list(arms) or unknown:
        raise ValueError(f"arms must name arms of the configuration ({known}), got {list(arms)}")


def _part_of_parts(part, parts) -> None:
    """``part`` numbers one of the ``parts`` parts, from 0."""
    if parts is not None:
        OneOf(*range(parts))("part", part)


# ---------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------

@contract
def jobs(config: ConfigLike = "reduced", seeds: AnyValue = None, sweep: Sweep = "rest") -> list[tuple]:
    """Every job of a run, the slowest first: ``("arm", seed, arm)`` and ``("sweep", seed, arm, lr)``.

    ``seeds``: the seeds of the arm jobs (default: the configuration's). ``sweep``:
    ``"rest"`` adds the sweep cells that the arm jobs do not already give (an arm
    job at a sweep seed is the sweep's cell at the arm's own learning rate);
    ``"all"`` every cell; ``"none"`` no sweep.
    """
    cfg = get_config(config)
    seeds = list(cfg.seeds) if seeds is None else list(seeds)
    arm_jobs = [("arm", seed, arm) for arm in cfg.main_arms for seed in seeds]
    arm_jobs.sort(key=lambda j: j[2] not in ("rope", "shaw"))   # rope also extends; shaw is the slowest to score
    cells = [] if sweep == "none" else [
        ("sweep", seed, arm, lr) for seed in cfg.sweep.seeds for arm in cfg.arms for lr in cfg.sweep.lrs
        if sweep == "all" or cfg.arms[arm].sweep_only or not (seed in seeds and lr == cfg.lr_of(arm))]
    return arm_jobs + cells


def run_job(job: tuple, config="reduced", progress: bool = False) -> dict:
    """Run one job of :func:`jobs` in this process (one torch thread); return its record."""
    torch.set_num_threads(1)
    cfg = get_config(config)
    start, started, cpu = time.perf_counter(), time.time(), provenance.cpu_seconds()
    corpus = stdlib_corpus.load_corpus()
    if job[0] == "sweep":
        _, seed, arm, lr = job
        result = experiments.sweep_cell(arm, lr, seed, cfg, corpus)
    else:
        _, seed, arm = job
        result = experiments.arm_record(arm, seed, cfg, corpus, progress)
    return {"job": list(job), "result": result, "seconds": round(time.perf_counter() - start, 2),
            "cpu_seconds": round(provenance.cpu_seconds() - cpu, 2),
            "peak_memory_mib": round(provenance.peak_memory_mib(), 1),
            "started": round(started, 2), "ended": round(time.time(), 2), "pid": os.getpid()}


def _job_name(job) -> str:
    return "-".join(map(str, job))


def job_fingerprint(config="reduced") -> str:
    """SHA-256 of the configuration and of :func:`code_hashes`: two job files with the same value were
    computed alike."""
    cfg = get_config(config)
    identity = {"config": cfg.to_dict(), "code_fingerprint": fingerprint.fingerprint(code_hashes_of_this_process())}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def finished_jobs(folder, fingerprint_: str) -> dict:
    """``{job name: record}`` of the job files in ``folder`` computed with ``fingerprint_``.

    A file with another fingerprint (or none) is moved to ``<folder>/../stale-jobs/``
    so that its job runs again; nothing is deleted.
    """
    folder = Path(folder)
    done = {}
    for path in sorted(folder.glob("arm-*.json")) + sorted(folder.glob("sweep-*.json")):
        record = json.loads(path.read_text())
        if record.get("fingerprint") == fingerprint_:
            done[path.stem] = record
        else:
            stale = folder.parent / "stale-jobs"
            stale.mkdir(exist_ok=True)
            path.rename(stale / path.name)
    return done


def stage_results(out_dir, seeds):
    """The finished arm jobs of ``seeds`` in ``out_dir`` as :class:`companion.lab.results.LabResults`, in memory.

    For reading a stage of a run before the whole run is done (the development
    seeds, from which the claims are written): the records have the schema of the
    stored ``seed<k>.json``; ``lr_sweep`` holds the sweep cells finished so far.
    ``ValueError`` if an arm job of those seeds is missing.
    """
    folder = Path(out_dir) / "jobs"
    run = json.loads((folder / "run.json").read_text())
    cfg = get_config(run["config"])
    paths = [*folder.glob("arm-*.json"), *folder.glob("sweep-*.json")]
    records = {tuple(r["job"]): r for r in (json.loads(p.read_text()) for p in paths)}
    missing = [_job_name(("arm", s, a)) for s in seeds for a in cfg.main_arms if ("arm", s, a) not in records]
    if missing:
        raise ValueError(f"seeds must have every arm job finished in {folder}; missing {missing}")
    meta = {"config_name": run["config_name"], "config": cfg.to_dict(), "code_fingerprint": None,
            "development_seeds": list(cfg.development_seeds), "held_out_seeds": list(cfg.held_out_seeds)}
    seed_records = {s: _seed_record(s, cfg, records, meta) for s in seeds}
    cells = _sweep_cells(cfg, records, run["sweep"])
    sweep = {"experiment": "lr_sweep", **meta, "cells": cells} if cells else None
    return results.LabResults(seeds=seed_records, lr_sweep=sweep, summary={**meta, "seeds": list(seeds)},
                              folder=Path(out_dir))


def _seed_record(seed, cfg, records, meta) -> dict:
    """One seed's record (the stored ``seed<k>.json``) from its arm jobs."""
    arms = {a: records[("arm", seed, a)] for a in cfg.main_arms}
    record = {"experiment": "lab", "seed": seed, **meta}
    for key in ("train", "tuning", "extrapolation", "retrieval", "pair_norms", "window", "distance_limit"):
        record[key] = {a: r["result"][key] for a, r in arms.items() if key in r["result"]}
    record["extension"] = arms["rope"]["result"]["extension"] if "rope" in arms else None
    record["jobs"] = {a: {k: r[k] for k in ("seconds", "cpu_seconds", "peak_memory_mib")} for a, r in arms.items()}
    return record


def _sweep_cells(cfg, records, sweep) -> list:
    """The sweep's cells: its own jobs, and the arm jobs at a sweep seed (the cell at the arm's own rate)."""
    cells = [r["result"] for j, r in records.items() if j[0] == "sweep"]
    cells += [{"arm": j[2], "lr": r["result"]["tuning"]["lr"], "seed": j[1],
               **{k: v for k, v in r["result"]["tuning"].items() if k != "lr"},
               "text_loss": r["result"]["train"]["text_loss"], "task_loss": r["result"]["train"]["task_loss"]}
              for j, r in records.items() if j[0] == "arm" and j[1] in cfg.sweep.seeds and sweep != "none"]
    cells.sort(key=lambda c: (list(cfg.arms).index(c["arm"]), c["lr"], c["seed"]))
    return cells


# ---------------------------------------------------------------------------
# A whole run
# ---------------------------------------------------------------------------

@contract(_out_dir_given, _part_of_parts, _arms_of_the_configuration)
def run_all(config: ConfigLike = "reduced", out_dir: AnyValue = None, workers: Count = 2, stream: AnyValue = sys.stdout,
            part: AnyValue = None, parts: Count | None = None, seeds: AnyValue = None, sweep: Sweep = "rest",
            only_seeds: AnyValue = None, arms: AnyValue = None) -> dict:
    """Run the jobs not yet done in ``out_dir``, then, once every job is done, :func:`assemble` the files.

    ``out_dir=None`` means the package's stored results (:data:`STORED_RUNS`: the full run in
    :data:`companion.lab.results.STORED`, the confirmation run in
    :data:`companion.lab.results.CONFIRMATION`) and is allowed only for those configurations
    at their own seeds. ``arms`` trains only those arms of the configuration. ``part=i`` of
    ``parts=P`` runs every ``P``-th job from the ``i``-th in this process and
    leaves the assembling to :func:`assemble` (``--merge``). ``only_seeds`` runs
    only the jobs of those seeds now, the run staying the whole run: the stored run
    was made in two stages, the development seeds (with the sweep) first and the
    held-out seeds after the claims were frozen. Returns ``{name: path}`` of the
    files written (the job folder while jobs remain).
    """
    cfg = get_config(config)
    name = config if isinstance(config, str) else "custom"
    if arms is not None:
        cfg = cfg.with_changes(arms={a: cfg.arms[a] for a in cfg.arms if a in arms})
    if out_dir is None:
        out_dir = STORED_RUNS[name]
    out = Path(out_dir)
    folder = out / "jobs"
    folder.mkdir(parents=True, exist_ok=True)
    todo = jobs(cfg, seeds, sweep)
    if only_seeds is not None:
        todo = [j for j in todo if j[1] in set(only_seeds)]
    if parts is not None:
        todo = todo[part::parts]
        workers = 1
    definition = {"config_name": name, "config": cfg.to_dict(), "seeds": list(cfg.seeds if seeds is None else seeds),
                  "sweep": sweep}
    if (folder / "run.json").is_file() and json.loads((folder / "run.json").read_text()) != definition:
        raise ValueError(f"out_dir holds the unfinished jobs of another run in {folder}; finish or remove them")
    _write(folder / "run.json", definition)
    stamp = job_fingerprint(cfg)
    done = finished_jobs(folder, stamp)
    todo = [j for j in todo if _job_name(j) not in done]
    session = {"started": time.time(), "load_average_before": [round(v, 2) for v in os.getloadavg()],
               "workers": workers, "jobs": len(todo), "skipped": len(done), "fingerprint": stamp}
    begin = time.perf_counter()
    if stream is not None:
        stream.write(f"{len(done)} jobs already done with this fingerprint, {len(todo)} to run\n")
        stream.flush()

    def finished(record):
        record["fingerprint"] = stamp
        _write(folder / f"{_job_name(record['job'])}.json", record)   # a checkpoint
        if stream is not None:
            stream.write(f"[{time.perf_counter() - begin:7.1f} s] {' '.join(map(str, record['job']))}: "
                         f"{record['seconds']:.1f} s, {record['cpu_seconds']:.1f} CPU s\n")
            stream.flush()

    if workers == 1:
        for job in todo:
            finished(run_job(job, cfg))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for done in as_completed([pool.submit(run_job, job, cfg) for job in todo]):
                finished(done.result())
    session.update(ended=time.time(), load_average_after=[round(v, 2) for v in os.getloadavg()])
    _write(folder / f"session-{os.getpid()}-{int(session['started'])}.json", session)
    done = finished_jobs(folder, stamp)
    missing = [j for j in jobs(cfg, definition["seeds"], sweep) if _job_name(j) not in done]
    if parts is not None or missing:
        return {"jobs": str(folder)}
    return assemble(out)


def assemble(out_dir=None) -> dict:
    """Write ``seed<k>.json``, ``lr_sweep.json`` and ``summary.json`` from the job files in ``<out_dir>/jobs``.

    Refuses while a job of the run is missing. Removes the job files afterwards.
    """
    out = results.STORED if out_dir is None else Path(out_dir)
    folder = out / "jobs"
    if not (folder / "run.json").is_file():
        raise ValueError(f"out_dir must hold the jobs/ folder of a run; none in {out}")
    run = json.loads((folder / "run.json").read_text())
    cfg = get_config(run["config"])
    wanted = jobs(cfg, run["seeds"], run["sweep"])
    records = {}
    for job in wanted:
        path = folder / f"{_job_name(job)}.json"
        if not path.is_file():
            raise ValueError(f"out_dir is missing job {_job_name(job)}: run the remaining jobs before assembling")
        records[tuple(job)] = json.loads(path.read_text())
    stamp = job_fingerprint(cfg)
    stale = [n for n, r in ((_job_name(j), records[tuple(j)]) for j in wanted) if r.get("fingerprint") != stamp]
    if stale:
        raise ValueError(f"out_dir holds jobs computed by other code or another configuration: {stale[:3]}; "
                         "run the run again to recompute them")
    meta = run_metadata(run["config_name"], cfg)
    paths = {}
    for seed in run["seeds"]:
        paths[f"seed{seed}"] = _write(out / f"seed{seed}.json", _seed_record(seed, cfg, records, meta))
    cells = _sweep_cells(cfg, records, run["sweep"])
    if cells:
        paths["lr_sweep"] = _write(out / "lr_sweep.json", {"experiment": "lr_sweep", **meta, "cells": cells})
    sessions = [json.loads(p.read_text()) for p in sorted(folder.glob("session-*.json"))]
    all_records = list(records.values())
    summary = {"experiment": "summary", **meta, "seeds": run["seeds"], "claims_history": claims.HISTORY,
               # the time some job was running: stages that were stopped and resumed count too
               "wall_seconds": round(_union_seconds([(r["started"], r["ended"]) for r in all_records]), 1),
               "started": round(min(r["started"] for r in all_records), 1),
               "ended": round(max(r["ended"] for r in all_records), 1),
               "sessions": sessions,
               "cpu_seconds": round(sum(r["cpu_seconds"] for r in all_records), 1),
               "cpu_seconds_by_kind": {kind: round(sum(r["cpu_seconds"] for j, r in records.items() if j[0] == kind), 1)
                                       for kind in ("arm", "sweep")},
               "peak_memory_mib_per_process": round(max(r["peak_memory_mib"] for r in all_records), 1),
               "load_average_before": max((s["load_average_before"] for s in sessions), key=lambda v: v[0]),
               "load_average_after": max((s["load_average_after"] for s in sessions), key=lambda v: v[0]),
               "n_jobs": len(all_records)}
    paths["summary"] = _write(out / "summary.json", summary)
    for path in folder.glob("*.json"):
        path.unlink()
    folder.rmdir()
    return paths


def record_claims_history(out_dir=None) -> str:
    """Write :data:`companion.lab.claims.HISTORY` into a run's ``summary.json`` (after the held-out run is judged)."""
    path = (results.STORED if out_dir is None else Path(out_dir)) / "summary.json"
    if not path.is_file():
        raise ValueError(f"out_dir must hold the summary.json of a finished run; none at {path}")
    summary = json.loads(path.read_text())
    summary["claims_history"] = claims.HISTORY
    return _write(path, summary)


def record_code_change(change: str, check: str, out_dir=None) -> str:
    """Record in a run's ``summary.json`` that today's code computes its numbers as the code that ran did.

    For a change to the code the jobs execute that cannot change a number (a module
    renamed, arguments gathered into one configuration object): instead of a new run,
    ``summary["code_changes"]`` gains an entry with the fingerprint it replaces
    (``from``), today's (``to``) and today's :func:`companion.lab.fingerprint.source_hashes`
    (``code_sources``), ``change`` (what changed) and ``check`` (how it was shown that
    the numbers did not: the same jobs run by the old and the new code on one machine,
    :func:`companion.lab.results.differences` finding none). The files' own
    ``code_fingerprint`` and ``code_sources`` stay those of the code that ran.
    ``ValueError`` if the code is the one already recorded.
    """
    path = (results.STORED if out_dir is None else Path(out_dir)) / "summary.json"
    if not path.is_file():
        raise ValueError(f"out_dir must hold the summary.json of a finished run; none at {path}")
    summary = json.loads(path.read_text())
    changes = summary.setdefault("code_changes", [])
    before = changes[-1]["to"] if changes else summary["code_fingerprint"]
    hashes = dict(code_hashes_of_this_process())
    after = fingerprint.fingerprint(hashes)
    if after == before:
        raise ValueError(f"out_dir's run already records today's code ({after[:12]}): there is no change to record")
    changes.append({"from": before, "to": after, "change": change, "check": check, "code_sources": hashes})
    return _write(path, summary)


def _union_seconds(intervals) -> float:
    """Length of the union of ``(start, end)`` intervals: wall time when processes overlap."""
    total, reach = 0.0, -np.inf
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


# ---------------------------------------------------------------------------
# The code a run executes
# ---------------------------------------------------------------------------

def trace_config() -> LabConfig:
    """The configuration the fingerprint's trace runs: the reduced one at a few steps, every kind of job."""
    return get_config("reduced").with_changes(
        seeds=(0,), development_seeds=(0,), held_out_seeds=(),
        train={"steps": 2, "warmup": 1, "curve_every": 1},
        eval={"n_examples": 2, "bootstrap": 10, "tokens_per_length": 256, "attention_examples": 1,
              "boundary_examples": 1, "window_examples": 1, "norm_windows": 1},
        probes={"multi_key_examples": 2, "variable_tracking_examples": 2, "no_literal_examples": 1},
        extension={"finetune_steps": 2, "curve_steps": (1, 2), "tokens_per_length": 256, "examples": 1},
        sweep={"lrs": (1e-3,), "seeds": (0,), "examples": 2})


def code_hashes() -> dict:
    """:func:`companion.lab.fingerprint.source_hashes` of the code every kind of job executes (traced)."""
    cfg = trace_config()

    def run():
        for job in jobs(cfg, sweep="all"):
            run_job(job, cfg)

    return fingerprint.source_hashes(fingerprint.executed_functions(run))


@functools.cache
def code_hashes_of_this_process() -> dict:
    """:func:`code_hashes`, traced once per process: the code a process runs is the code
    it imported, so a run's parts, its assembly and its fingerprints share one trace
    (each takes seconds) instead of tracing the jobs again for every file they stamp."""
    return code_hashes()


def run_metadata(name: str, cfg: LabConfig) -> dict:
    """:func:`companion.lab.provenance.run_metadata` with the code this process runs."""
    return provenance.run_metadata(name, cfg, code_hashes_of_this_process())


def _write(path: Path, record: dict) -> str:
    path.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    return str(path)
