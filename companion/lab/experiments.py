r"""The lab's experiments: every position scheme in one tiny model, at several seeds.

One model per *arm* (a position scheme with its options, the ``arms`` of a configuration) and per seed,
all trained at the same length ``L`` on the same data with the same budget, then:

1. **Extrapolation** (after Press, Smith & Lewis 2022): perplexity on all the
   held-out text at ``1, 2, 4, 8 x L``, with a bootstrap interval over windows and
   the perplexity of the predictions at positions ``>= L`` alone
   (:func:`companion.lab.evals.perplexity_by_length`). The learned table has no
   row past ``L``: those lengths are recorded as not defined.
2. **Retrieval, RULER-style** (Hsieh et al. 2024; Liu et al. 2024): accuracy by
   needle depth and total length on three tasks of :mod:`companion.lab.data`: the
   single needle the models are trained on, multi-key retrieval with distractor
   needles that share the ``@`` marker, and variable tracking with a distractor
   chain; each with its chance level. For every arm, also the share of the
   answer's attention that falls on keys ``L`` or more tokens back, by depth at
   ``2L`` (:func:`companion.lab.evals.attention_beyond`).
3. **Extending the RoPE model** to ``4L``: no change, Position Interpolation (Chen
   et al. 2023), NTK-aware (bloc97 2023), dynamic NTK (emozilla 2023), YaRN with
   the paper's ramp and YaRN with the ramp its code ships
   (:func:`companion.scaling.yarn`, :func:`companion.scaling.yarn_code`), zero-shot
   and after a short fine-tune with the method in place (dynamic NTK over mixed
   lengths, the others at ``4L``).
4. **Learning-rate sweep** at the reduced size: every arm at three peak learning
   rates, to check that the shared value does not favour some schemes.

**Training data, and why.** The batches alternate between text (the
standard-library corpus of :mod:`companion.lab.data`, loss on every byte) and
single-needle retrieval (loss on the answer only), so one model per arm serves
experiments 1 and 2. Trial runs with the RoPE model decided it: trained on text
alone, the model answered none of the retrieval examples, which says nothing about
positions; trained on two-needle multi-key retrieval alone, it reached only 10-53 %
at the training length in 1,000 steps. The single needle follows the only ``@`` of
its input, so a model can answer it by copying the two digits after the marker,
without matching the key: the multi-key and variable-tracking probes, never
trained, show how much of the key matching the models learned.

**Running.** ``python -m companion.lab --config full|reduced`` runs every (seed,
arm) pair as one job in a pool of worker processes (``--workers``, default 2, one
torch thread each). ``--part i`` runs only the ``i``-th seed's jobs (and a share of
the sweep) in one process, so that one process per seed can run at once, and
``--merge`` joins what the parts wrote. The files are ``seed<k>.json`` per seed,
``lr_sweep.json`` and ``summary.json``, in ``--out`` (default: the package's
``stored`` folder for ``full``). Every file records the configuration and
:func:`companion.lab.fingerprint.fingerprint` of the code the experiments execute.
A job's numbers depend only on its seed and arm, never on the order or the process
it ran in: on the same machine a re-run repeats them exactly.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import torch

from .. import __version__, _checks
from . import data, evals, fingerprint, train
from .models import SCHEMES, TinyTransformer, count_parameters

__all__ = [
    "CONFIGS", "TASKS", "get_config", "arm_names", "peak_memory_mib", "train_arm", "extrapolation",
    "retrieval", "extension", "lr_sweep", "run_job", "jobs", "run_all", "merge_parts", "main",
]

_DEPTHS = [0.0, 0.25, 0.5, 0.75, 1.0]


def _arms(L: int) -> dict:
    """The arms at training length ``L``: every scheme, and iRoPE with chunks of ``L/4`` and of ``L``."""
    arms = {s: {"scheme": s} for s in SCHEMES if s != "irope"}
    arms[f"irope_chunk{L // 4}"] = {"scheme": "irope", "irope_chunk": L // 4}
    arms[f"irope_chunk{L}"] = {"scheme": "irope", "irope_chunk": L}
    return arms


#: The two configurations: ``full`` (the book's numbers) and ``reduced`` (the same
#: pipeline at a smaller size in about a minute, for continuous integration).
CONFIGS = {
    "full": {
        "seeds": [0, 1, 2],
        "arms": _arms(64),
        "model": {"d_model": 32, "n_heads": 2, "n_layers": 2, "tie_embeddings": True},
        "context_length": 64,
        "train": {"steps": 1000, "batch_size": 32, "lr": 3e-3, "warmup": 100, "weight_decay": 0.1},
        "task": {"n_needles": 1},
        "eval": {"multiples": [1, 2, 4, 8], "depths": _DEPTHS, "n_examples": 100, "probe_examples": 50,
                 "bootstrap": 1000, "tokens_per_length": None, "attention_examples": 10},
        "probes": {"multi_key": {"n_needles": 4}, "variable_tracking": {"hops": 2, "n_chains": 2},
                   "variable_tracking_examples": 100},
        "extension": {"factor": 4, "methods": ["none", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code"],
                      "finetune_steps": 100, "finetune_lr": 1e-3, "finetune_examples": 100,
                      "dynamic_lengths": [64, 128, 256]},
        "lr_sweep": {"size": "reduced", "lrs": [1e-3, 3e-3, 1e-2], "seeds": [0]},
    },
    "reduced": {
        "seeds": [0, 1],
        "arms": _arms(32),
        "model": {"d_model": 32, "n_heads": 2, "n_layers": 2, "tie_embeddings": True},
        "context_length": 32,
        "train": {"steps": 150, "batch_size": 16, "lr": 3e-3, "warmup": 15, "weight_decay": 0.1},
        "task": {"n_needles": 1},
        "eval": {"multiples": [1, 2, 4, 8], "depths": [0.0, 0.5, 1.0], "n_examples": 10, "probe_examples": 6,
                 "bootstrap": 100, "tokens_per_length": 4096, "attention_examples": 4},
        "probes": {"multi_key": {"n_needles": 2}, "variable_tracking": {"hops": 1, "n_chains": 2},
                   "variable_tracking_examples": 20},
        "extension": {"factor": 4, "methods": ["none", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code"],
                      "finetune_steps": 10, "finetune_lr": 1e-3, "finetune_examples": 10,
                      "dynamic_lengths": [32, 64, 128]},
        "lr_sweep": {"size": "tiny", "lrs": [1e-3, 1e-2], "seeds": [0]},
    },
}

#: The reduced sizes the learning-rate sweep trains at (``lr_sweep.size``).
SWEEP_SIZES = {
    "reduced": {"model": {"d_model": 32, "n_heads": 2, "n_layers": 2, "tie_embeddings": True},
                "context_length": 32,
                "train": {"steps": 200, "batch_size": 16, "warmup": 20, "weight_decay": 0.1},
                "tokens_per_length": 32768, "n_examples": 50},
    "tiny": {"model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "tie_embeddings": True},
             "context_length": 16,
             "train": {"steps": 20, "batch_size": 8, "warmup": 2, "weight_decay": 0.1},
             "tokens_per_length": 2048, "n_examples": 10},
}

#: The retrieval tasks of experiment 2: generator and the chance level of a guess.
TASKS = ("single_needle", "multi_key", "variable_tracking")

_KEYS = {"seeds", "arms", "model", "context_length", "train", "task", "eval", "probes", "extension", "lr_sweep"}


def get_config(config="reduced") -> dict:
    """A deep copy of ``CONFIGS[config]`` for a name, or of ``config`` itself for a dict."""
    if isinstance(config, dict):
        missing = _KEYS - set(config)
        if missing:
            raise ValueError(f"config must have the keys of CONFIGS['full']; missing {sorted(missing)}")
        return copy.deepcopy(config)
    return copy.deepcopy(CONFIGS[_checks.one_of("config", config, tuple(CONFIGS))])


def arm_names(config="full") -> list[str]:
    """The arms of a configuration, in the book's order."""
    return list(get_config(config)["arms"])


def peak_memory_mib(who: str = "self") -> float:
    """Peak resident memory in MiB of this process (``"self"``) or its largest finished child (``"children"``)."""
    which = {"self": resource.RUSAGE_SELF, "children": resource.RUSAGE_CHILDREN}[_checks.one_of("who", who, ("self", "children"))]
    peak = resource.getrusage(which).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


def cpu_seconds(who: str = "self") -> float:
    """User plus system CPU time of this process (``"self"``) or of its finished children."""
    which = {"self": resource.RUSAGE_SELF, "children": resource.RUSAGE_CHILDREN}[_checks.one_of("who", who, ("self", "children"))]
    usage = resource.getrusage(which)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------

def train_arm(arm: str, seed: int, config="reduced", corpus: data.Corpus | None = None, progress: bool = False,
              lr: float | None = None):
    r"""Train the model of ``arm`` at ``seed`` under ``config``; return ``(model, info)``.

    ``torch.manual_seed(seed)`` before the model is built, and the batches (text
    windows of ``L`` bytes alternating with single-needle examples read at ``L``
    tokens, :func:`companion.lab.train.mixed_batches`) are drawn from a generator
    seeded with ``seed``, so every arm of a seed sees the same data in the same
    order. ``lr`` overrides the configuration's peak learning rate (for the sweep).
    ``info``: ``parameters``, ``seconds``, ``text_loss`` and ``task_loss`` (means
    over the last tenth of the steps of each kind) and ``loss`` (every
    ``steps // 50``-th step).
    """
    cfg = get_config(config)
    arm = _checks.one_of("arm", arm, tuple(cfg["arms"]))
    corpus = data.load_corpus() if corpus is None else corpus
    L, t = cfg["context_length"], cfg["train"]
    torch.manual_seed(seed)
    model = TinyTransformer(context_length=L, **cfg["model"], **cfg["arms"][arm])
    start = time.perf_counter()
    history = train.train(model, _mixture(corpus, t["batch_size"], L, cfg["task"]), t["steps"],
                          lr=t["lr"] if lr is None else lr, warmup=t["warmup"], weight_decay=t["weight_decay"],
                          seed=seed, progress=progress, label=f"{arm} seed {seed}")
    last = max(1, len(history) // 20)  # the last tenth of the steps, half of them of each kind
    info = {
        "parameters": count_parameters(model), "seconds": round(time.perf_counter() - start, 2),
        "text_loss": round(float(np.mean(history[0::2][-last:])), 4),   # even steps are text
        "task_loss": round(float(np.mean(history[1::2][-last:])), 4),   # odd steps are retrieval
        "loss": [round(v, 4) for v in history[:: max(1, len(history) // 50)]],
    }
    return model, info


def _mixture(corpus, batch_size, length, task):
    return train.mixed_batches(train.text_batches(corpus.train, batch_size, length),
                               train.task_batches(data.retrieval, batch_size, length, **task))


# ---------------------------------------------------------------------------
# Experiment 1: extrapolation
# ---------------------------------------------------------------------------

def extrapolation(model, corpus: data.Corpus, config="reduced", seed: int = 0) -> dict:
    r"""Perplexity of ``model`` on the held-out text at ``1, 2, 4, 8 x L``.

    Returns ``{"lengths", "perplexity", "interval", "perplexity_past_L", "status",
    "errors", "n_tokens"}``, one entry per length (``None`` where not defined).
    """
    cfg = get_config(config)
    L, ev = cfg["context_length"], cfg["eval"]
    lengths = [m * L for m in ev["multiples"]]
    rows = evals.perplexity_by_length(model, corpus.validation, lengths, ev["tokens_per_length"], past=L,
                                      n_bootstrap=ev["bootstrap"], seed=seed)
    return {
        "lengths": lengths,
        "perplexity": [_round(r["perplexity"]) for r in rows],
        "interval": [None if r["interval"] is None else [_round(v) for v in r["interval"]] for r in rows],
        "perplexity_past_L": [_round(r["perplexity_past"]) for r in rows],
        "status": [_status(r["defined"]) for r in rows], "errors": [r["error"] for r in rows],
        "n_tokens": [r["n_tokens"] for r in rows],
    }


# ---------------------------------------------------------------------------
# Experiment 2: retrieval by depth and length
# ---------------------------------------------------------------------------

def chance_levels(config="reduced") -> dict:
    r"""Per task, the accuracy of guessing: a random two-digit answer, and copying one needle's value.

    ``random``: :math:`1/100` for two digits. ``copy``: the accuracy of copying the
    value after one ``@`` chosen at random among those followed by digits,
    :math:`1/k` for ``k`` needles (multi-key) or ``k`` chains (variable tracking),
    1 for the single needle (ignoring the rare agreement of two values).
    """
    cfg = get_config(config)
    return {"single_needle": {"random": 0.01, "copy": 1.0},
            "multi_key": {"random": 0.01, "copy": 1.0 / cfg["probes"]["multi_key"]["n_needles"]},
            "variable_tracking": {"random": 0.01, "copy": 1.0 / cfg["probes"]["variable_tracking"]["n_chains"]}}


def retrieval(model, config="reduced", seed: int = 0) -> dict:
    r"""Accuracy of ``model`` on the three tasks of :data:`TASKS`, by depth and by length.

    The single needle and multi-key retrieval are placed at each depth of
    ``eval.depths`` (:func:`companion.lab.evals.accuracy_grid`, ``n_examples``
    per cell; ``probe_examples`` for multi-key). Variable tracking places its
    chains at random, so its examples are binned by the depth of the queried chain's first statement into as many equal
    bins as there are depths. Returns ``{task: {"lengths", "depths", "accuracy"
    [per length][per depth], "by_length", "by_depth", "status", "n_examples",
    "chance"}}`` plus ``"attention_beyond_L"`` (see ``attention_shares``).
    """
    cfg = get_config(config)
    L, ev, probes = cfg["context_length"], cfg["eval"], cfg["probes"]
    lengths = [m * L for m in ev["multiples"]]
    chance = chance_levels(cfg)
    out = {}
    for task, make, options, n_examples in (
            ("single_needle", data.retrieval, cfg["task"], ev["n_examples"]),
            ("multi_key", data.multi_key_retrieval, probes["multi_key"], ev["probe_examples"])):
        rows = evals.accuracy_grid(model, lengths, ev["depths"], n_examples, seed=seed * 1000 + 11,
                                   make_task=make, **options)
        acc = np.array([np.nan if r["accuracy"] is None else r["accuracy"] for r in rows])
        out[task] = _grid_record(acc.reshape(len(lengths), len(ev["depths"])), lengths, ev["depths"],
                                 [r["defined"] for r in rows[::len(ev["depths"])]], n_examples, chance[task])
    out["variable_tracking"] = _variable_tracking(model, lengths, ev["depths"], probes, seed, chance)
    out["attention_beyond_L"] = attention_shares(model, config, seed)
    return out


def _variable_tracking(model, lengths, depths, probes, seed, chance):
    n_examples, bins = probes["variable_tracking_examples"], len(depths)
    acc, defined, counts = [], [], []
    for n in lengths:
        task = data.variable_tracking(n_examples, n + 1, seed=seed * 1000 + 13 + n, **probes["variable_tracking"])
        try:
            right = evals.answer_correct(model, task).numpy()
        except IndexError:           # the learned table cannot read this length
            right = None
        which = np.minimum((task.depth.numpy() * bins).astype(int), bins - 1)   # the depth bin of each example
        counts.append([int(np.sum(which == b)) for b in range(bins)])
        acc.append([np.nan if right is None or not np.any(which == b) else float(right[which == b].mean())
                     for b in range(bins)])
        defined.append(right is not None)
    record = _grid_record(np.array(acc), lengths, depths, defined, n_examples, chance["variable_tracking"])
    record["depth_bins"] = [[b / bins, (b + 1) / bins] for b in range(bins)]
    record["examples_per_bin"] = counts
    return record


def attention_shares(model, config="reduced", seed: int = 0) -> dict | None:
    r"""At ``2L``, per depth and layer: the answer's attention on keys ``L`` or more tokens back.

    Single-needle examples (``eval.attention_examples`` per depth), scored with
    :func:`companion.lab.evals.attention_beyond` at distance ``L``: the keys the
    query could never have attended to in training. ``None`` where the model
    cannot read ``2L`` (the learned table).
    """
    cfg = get_config(config)
    L, ev = cfg["context_length"], cfg["eval"]
    shares = []
    for depth in ev["depths"]:
        task = data.retrieval(ev["attention_examples"], 2 * L + 1, depth=depth, seed=seed * 1000 + 17, **cfg["task"])
        try:
            shares.append([_round(v) for v in evals.attention_beyond(model, task, L)])
        except IndexError:
            return None
    return {"length": 2 * L, "distance": L, "depths": ev["depths"], "share": shares}


def _grid_record(acc, lengths, depths, defined, n_examples, chance) -> dict:
    return {
        "lengths": lengths, "depths": depths, "status": [_status(d) for d in defined],
        "accuracy": [[_round(v) for v in row] for row in acc.tolist()],
        "by_length": [_round(v) for v in _nanmean(acc, axis=1)],
        "by_depth": [_round(v) for v in _nanmean(acc, axis=0)],
        "n_examples": n_examples, "chance": chance,
    }


# ---------------------------------------------------------------------------
# Experiment 3: extending the RoPE model
# ---------------------------------------------------------------------------

def extension(base_model, corpus: data.Corpus, config="reduced", seed: int = 0, progress: bool = False) -> dict:
    r"""The RoPE model trained at ``L``, read at ``s L`` with each method, zero-shot and fine-tuned.

    For each method of ``extension.methods`` (names of
    :data:`companion.scaling.METHODS`): the frequencies at ``s L``, then
    perplexity at ``L`` and at ``s L`` and single-needle accuracy at ``s L`` (mean
    over depths), zero-shot and after ``finetune_steps`` steps of the training
    mixture with the method in place and the same tokens per step as in training.
    Every method fine-tunes at ``s L``, except dynamic NTK, whose scale follows the
    input length: it fine-tunes on batches that cycle through
    ``extension.dynamic_lengths`` (fine-tuned at ``s L`` alone it would be the same
    model as NTK-aware, whose frequencies it then equals).
    """
    cfg = get_config(config)
    L, ext = cfg["context_length"], cfg["extension"]
    s = ext["factor"]
    target = int(round(s * L))
    methods = {}
    for method in ext["methods"]:
        model = copy.deepcopy(base_model)
        model.set_rope_scaling(method, s=s)
        freqs = model.rope_frequencies(target)
        entry = {"inv_freq_at_target": [float(v) for v in freqs.inv_freq],
                 "attention_factor_at_target": float(freqs.attention_factor),
                 "zero_shot": _extension_scores(model, corpus, L, target, cfg, seed)}
        lengths = ext["dynamic_lengths"] if method == "dynamic_ntk" else [target]
        start = time.perf_counter()
        history = train.train(model, _length_cycle(corpus, cfg, lengths), ext["finetune_steps"],
                              lr=ext["finetune_lr"], warmup=max(1, ext["finetune_steps"] // 10),
                              weight_decay=cfg["train"]["weight_decay"], seed=seed + 1,
                              progress=progress, label=f"{method} seed {seed}")
        entry["finetune_lengths"] = lengths
        entry["finetune_seconds"] = round(time.perf_counter() - start, 2)
        entry["finetune_final_loss"] = round(float(np.mean(history[-max(2, len(history) // 10):])), 4)
        entry["finetuned"] = _extension_scores(model, corpus, L, target, cfg, seed)
        methods[method] = entry
    return {"training_length": L, "target_length": target, "factor": s, "finetune_steps": ext["finetune_steps"],
            "methods": methods}


def _length_cycle(corpus, cfg, lengths):
    """Mixture batches that cycle through ``lengths`` (text then task at each), same tokens per step."""
    L, batch = cfg["context_length"], cfg["train"]["batch_size"]
    sources = [_mixture(corpus, max(1, batch * L // n), n, cfg["task"]) for n in lengths]

    def batches(step, generator):
        return sources[(step // 2) % len(sources)](step, generator)

    return batches


def _extension_scores(model, corpus, L, target, cfg, seed) -> dict:
    ev = cfg["eval"]
    ppl = evals.perplexity_by_length(model, corpus.validation, [L, target], ev["tokens_per_length"], past=L,
                                     n_bootstrap=ev["bootstrap"], seed=seed)
    grid = evals.accuracy_grid(model, [target], ev["depths"], cfg["extension"]["finetune_examples"],
                               seed=seed * 1000 + 7, **cfg["task"])
    return {"perplexity_at_L": _round(ppl[0]["perplexity"]), "perplexity_at_target": _round(ppl[1]["perplexity"]),
            "interval_at_target": [_round(v) for v in ppl[1]["interval"]],
            "perplexity_past_L_at_target": _round(ppl[1]["perplexity_past"]),
            "retrieval_at_target": _round(float(np.mean([r["accuracy"] for r in grid]))),
            "retrieval_by_depth": [_round(r["accuracy"]) for r in grid]}


# ---------------------------------------------------------------------------
# Experiment 4: the learning rate
# ---------------------------------------------------------------------------

def lr_sweep(arm: str, lr: float, seed: int, config="reduced", corpus: data.Corpus | None = None) -> dict:
    r"""One cell of the sweep: ``arm`` trained at the sweep size with peak learning rate ``lr``.

    Returns the perplexity on the held-out text at the sweep's training length and
    the single-needle accuracy there (mean over the configuration's depths).
    """
    cfg = get_config(config)
    size = SWEEP_SIZES[cfg["lr_sweep"]["size"]]
    small = get_config(cfg)
    small.update(model=size["model"], context_length=size["context_length"],
                 train={**size["train"], "lr": lr}, arms=_arms(size["context_length"]))
    sweep_arm = _sweep_arm_name(arm, cfg["context_length"], size["context_length"])
    corpus = data.load_corpus() if corpus is None else corpus
    model, info = train_arm(sweep_arm, seed, small, corpus)
    n = size["context_length"]
    ppl = evals.perplexity_by_length(model, corpus.validation, [n], size["tokens_per_length"])[0]["perplexity"]
    grid = evals.accuracy_grid(model, [n], cfg["eval"]["depths"], size["n_examples"], seed=seed * 1000 + 19,
                               **cfg["task"])
    return {"arm": arm, "lr": lr, "seed": seed, "perplexity": _round(ppl), "text_loss": info["text_loss"],
            "retrieval": _round(float(np.mean([r["accuracy"] for r in grid])))}


def _sweep_arm_name(arm: str, L: int, small_L: int) -> str:
    """The same arm at the sweep's length: the iRoPE chunks scale with ``L``."""
    if arm == f"irope_chunk{L // 4}":
        return f"irope_chunk{small_L // 4}"
    if arm == f"irope_chunk{L}":
        return f"irope_chunk{small_L}"
    return arm


# ---------------------------------------------------------------------------
# Jobs and the whole run
# ---------------------------------------------------------------------------

def jobs(config="reduced") -> list[tuple]:
    """Every job of a run, the slowest first: ``("arm", seed, arm)`` and ``("sweep", seed, arm, lr)``."""
    cfg = get_config(config)
    arm_jobs = [("arm", seed, arm) for arm in cfg["arms"] for seed in cfg["seeds"]]
    arm_jobs.sort(key=lambda j: j[2] not in ("rope", "shaw"))   # rope also extends; shaw is the slowest to score
    sweep = [("sweep", seed, arm, lr) for seed in cfg["lr_sweep"]["seeds"] for arm in cfg["arms"]
             for lr in cfg["lr_sweep"]["lrs"]]
    return arm_jobs + sweep


def run_job(job: tuple, config="reduced", progress: bool = False) -> dict:
    """Run one job of :func:`jobs` in this process (one torch thread); return its record."""
    torch.set_num_threads(1)
    start, cpu = time.perf_counter(), cpu_seconds()
    corpus = data.load_corpus()
    if job[0] == "sweep":
        _, seed, arm, lr = job
        result = lr_sweep(arm, lr, seed, config, corpus)
    else:
        _, seed, arm = job
        model, info = train_arm(arm, seed, config, corpus, progress)
        result = {"train": info, "extrapolation": extrapolation(model, corpus, config, seed),
                  "retrieval": retrieval(model, config, seed)}
        if arm == "rope":
            result["extension"] = extension(model, corpus, config, seed, progress)
    return {"job": list(job), "result": result, "seconds": round(time.perf_counter() - start, 2),
            "cpu_seconds": round(cpu_seconds() - cpu, 2), "peak_memory_mib": round(peak_memory_mib(), 1),
            "pid": os.getpid()}


def run_all(config="reduced", out_dir=None, workers: int = 2, stream=sys.stdout, part: int | None = None) -> dict:
    """Run the jobs in ``workers`` processes and write the result files into ``out_dir``.

    ``out_dir=None`` means the package's stored results for ``full`` (the files
    the book reads, :data:`companion.lab.results.STORED`) and is refused for other
    configurations. ``part=i`` runs only seed ``seeds[i]``'s jobs and every
    ``len(seeds)``-th sweep job from the ``i``-th, so that one process per seed can
    run the whole experiment (``python -m companion.lab --part i`` for each ``i``,
    then ``--merge``); the parts write ``seed<k>.json`` and a partial sweep and
    summary, and :func:`merge_parts` joins them. Returns ``{name: path}`` of the
    files written.
    """
    from . import results as stored_results

    name = config if isinstance(config, str) else "custom"
    cfg = get_config(config)
    if out_dir is None:
        if name != "full":
            raise ValueError("out_dir must be given for a configuration other than 'full'")
        out_dir = stored_results.STORED
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    workers = _checks.positive_int("workers", workers)
    todo = jobs(cfg)
    seeds = cfg["seeds"]
    if part is not None:
        part = _checks.one_of("part", part, tuple(range(len(seeds))))
        sweep = [j for j in todo if j[0] == "sweep"]
        todo = [j for j in todo if j[0] == "arm" and j[1] == seeds[part]] + sweep[part::len(seeds)]
        seeds = [seeds[part]]
    start, started, load_before = time.perf_counter(), time.time(), os.getloadavg()
    records, done_folder = [], out / f"jobs{'' if part is None else part}"
    done_folder.mkdir(exist_ok=True)

    def finished(record):
        records.append(record)
        _write(done_folder / ("-".join(map(str, record["job"])) + ".json"), record)   # a checkpoint
        if stream is not None:
            stream.write(f"[{time.perf_counter() - start:7.1f} s] {' '.join(map(str, record['job']))}: "
                         f"{record['seconds']:.1f} s, {record['cpu_seconds']:.1f} CPU s\n")
            stream.flush()

    if workers == 1:
        for job in todo:
            finished(run_job(job, cfg))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(run_job, job, cfg) for job in todo]
            for done in as_completed(futures):
                finished(done.result())
    meta = _meta(name, cfg)
    paths = {}
    for seed in seeds:
        arms = {r["job"][2]: r for r in records if r["job"][0] == "arm" and r["job"][1] == seed}
        record = {"experiment": "lab", "seed": seed, **meta,
                  "train": {a: arms[a]["result"]["train"] for a in cfg["arms"]},
                  "extrapolation": {a: arms[a]["result"]["extrapolation"] for a in cfg["arms"]},
                  "retrieval": {a: arms[a]["result"]["retrieval"] for a in cfg["arms"]},
                  "extension": arms["rope"]["result"]["extension"],
                  "jobs": {a: {k: arms[a][k] for k in ("seconds", "cpu_seconds", "peak_memory_mib")}
                           for a in cfg["arms"]}}
        paths[f"seed{seed}"] = _write(out / f"seed{seed}.json", record)
    suffix = "" if part is None else f"_part{part}"
    sweep = sorted((r for r in records if r["job"][0] == "sweep"), key=lambda r: tuple(map(str, r["job"])))
    paths["lr_sweep" + suffix] = _write(out / f"lr_sweep{suffix}.json", {
        "experiment": "lr_sweep", **meta, "size": SWEEP_SIZES[cfg["lr_sweep"]["size"]],
        "cells": [r["result"] for r in sweep]})
    summary = {"experiment": "summary", **meta, "wall_seconds": round(time.perf_counter() - start, 1),
               "started": round(started, 1), "ended": round(time.time(), 1), "workers": workers,
               "processes": workers if part is None else 1,
               "cpu_seconds": round(sum(r["cpu_seconds"] for r in records), 1),
               "peak_memory_mib_per_process": round(max(r["peak_memory_mib"] for r in records), 1),
               "load_average_before": [round(v, 2) for v in load_before],
               "load_average_after": [round(v, 2) for v in os.getloadavg()],
               "cpu_count": os.cpu_count(), "n_jobs": len(records)}
    paths["summary" + suffix] = _write(out / f"summary{suffix}.json", summary)
    for path in done_folder.glob("*.json"):   # every job is now in the files above
        path.unlink()
    done_folder.rmdir()
    return paths


def merge_parts(out_dir=None) -> dict:
    """Join the files of the parts of a run (``run_all(..., part=i)``) into ``lr_sweep.json`` and ``summary.json``.

    The wall time of the whole is from the first part's start to the last part's
    end (the parts run at the same time, one process each); CPU time and jobs add up;
    the peak memory is the largest of any process. Removes the partial files.
    """
    from . import results as stored_results

    out = stored_results.STORED if out_dir is None else Path(out_dir)
    parts = sorted(out.glob("summary_part*.json"))
    if not parts:
        raise ValueError(f"out_dir must hold the summary_part*.json files of a run's parts; none in {out}")
    summaries = [json.loads(p.read_text()) for p in parts]
    sweeps = [json.loads(p.read_text()) for p in sorted(out.glob("lr_sweep_part*.json"))]
    first = summaries[0]
    if any(s["config"] != first["config"] or s["code_fingerprint"] != first["code_fingerprint"] for s in summaries):
        raise ValueError(f"the parts in {out} come from different configurations or code")
    cells = sorted((c for s in sweeps for c in s["cells"]), key=lambda c: (c["arm"], c["lr"], c["seed"]))
    paths = {"lr_sweep": _write(out / "lr_sweep.json", {**sweeps[0], "cells": cells})}
    started, ended = min(s["started"] for s in summaries), max(s["ended"] for s in summaries)
    summary = {**first, "wall_seconds": round(ended - started, 1), "started": started, "ended": ended,
               "workers": len(summaries), "processes": len(summaries),
               "cpu_seconds": round(sum(s["cpu_seconds"] for s in summaries), 1),
               "peak_memory_mib_per_process": max(s["peak_memory_mib_per_process"] for s in summaries),
               "load_average_before": max((s["load_average_before"] for s in summaries), key=lambda v: v[0]),
               "load_average_after": max((s["load_average_after"] for s in summaries), key=lambda v: v[0]),
               "part_wall_seconds": [s["wall_seconds"] for s in summaries],
               "n_jobs": sum(s["n_jobs"] for s in summaries)}
    paths["summary"] = _write(out / "summary.json", summary)
    for path in [*parts, *out.glob("lr_sweep_part*.json")]:
        path.unlink()
    return paths


def main(argv=None) -> int:
    """``python -m companion.lab --config full|reduced [--out DIR] [--workers N | --part I | --merge] [--quiet]``."""
    parser = argparse.ArgumentParser(prog="python -m companion.lab", description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=tuple(CONFIGS), default="reduced")
    parser.add_argument("--out", default=None,
                        help="folder for the JSON files (default for 'full': the package's stored results)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, one torch thread each")
    parser.add_argument("--part", type=int, default=None,
                        help="run only the i-th seed's jobs (and a share of the sweep) in this process")
    parser.add_argument("--merge", action="store_true", help="join the files the parts wrote")
    parser.add_argument("--quiet", action="store_true", help="no line per finished job")
    args = parser.parse_args(argv)
    out = args.out
    if out is None and args.config != "full":
        parser.error("--out is required for a configuration other than 'full'")
    if args.merge:
        paths = merge_parts(out)
    else:
        paths = run_all(args.config, out, workers=1 if args.part is not None else args.workers,
                        stream=None if args.quiet else sys.stdout, part=args.part)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


# --- private helpers -----------------------------------------------------------------


def _meta(name, cfg) -> dict:
    corpus = data.load_corpus()
    return {
        "config_name": name, "config": cfg, "companion_version": __version__,
        "code_fingerprint": fingerprint.fingerprint(), "code_sources": fingerprint.source_hashes(),
        "corpus": corpus.info(), "python": platform.python_version(), "torch": torch.__version__,
        "numpy": np.__version__, "device": "cpu", "threads_per_process": 1, "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }


def _write(path: Path, record: dict) -> str:
    path.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    return str(path)


def _status(defined: bool) -> str:
    return "ok" if defined else "not defined"


def _round(v, digits: int = 4):
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else round(float(v), digits)


def _nanmean(a: np.ndarray, axis: int) -> list:
    count = np.sum(~np.isnan(a), axis=axis)
    total = np.nansum(a, axis=axis)
    return [float(t / c) if c else None for t, c in zip(total, count)]


if __name__ == "__main__":
    raise SystemExit(main())
