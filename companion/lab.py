r"""The lab: three small experiments on position schemes, run end to end on a CPU.

1. **Extrapolation** (:func:`extrapolation`, after Press, Smith & Lewis 2022): one
   :class:`companion.models.TinyTransformer` per scheme, all trained at the same
   length ``L`` with the same data, steps and seed; perplexity on held-out text at
   ``1, 2, 4, 8 x L``. The learned table has no row past ``L``: those lengths are
   recorded as not defined, with the ``IndexError`` message.
2. **Extending a RoPE model** (:func:`rope_extension`): the RoPE model of experiment
   1 read at ``4L`` with no change, Position Interpolation (Chen et al. 2023),
   NTK-aware scaling (bloc97 2023), dynamic NTK (emozilla 2023) and YaRN (Peng et al.
   2024), zero-shot and after a short fine-tune at ``4L`` with each method in place.
3. **Lost in the middle, RULER in miniature** (:func:`lost_in_the_middle`; Liu et
   al. 2024, Hsieh et al. 2024): accuracy of the same models on needle retrieval
   (:func:`companion.data.retrieval`) by needle depth and by total length.

**Training data, and why.** Every model is trained on batches that alternate
between text (the standard-library corpus of :mod:`companion.data`, loss on every
byte) and single-needle retrieval (loss on the answer only), so one model per scheme
serves experiments 1 and 3. Trial runs with the full configuration's RoPE model and
1,000 steps decided it: trained on text alone, the model answered none of the
retrieval examples (0 % at the training length, at every depth), which says nothing
about positions; trained on two-needle multi-key retrieval alone, it reached only
10-53 % at the training length, depending on depth, so the harder task does not fit
the budget; with the mixture, every scheme learns single-needle retrieval at the
training length, and what changes with depth and length then comes from the
position scheme. The generators for the harder tasks (multi-key retrieval, variable
tracking, copying) are in :mod:`companion.data` for longer runs.

``python -m companion.lab --config full|reduced --out DIR`` runs all three and
writes ``extrapolation.json``, ``rope_extension.json``, ``lost_in_the_middle.json``
and ``summary.json``. Each file holds the configuration, the companion version, a
fingerprint of the code (SHA-256 of ``companion/*.py``), the corpus hash, the
wall-clock seconds and the peak memory (``resource.getrusage``: the peak resident
size of the process so far, so it only grows from file to file). The numbers are
what the runs measure; nothing is tuned toward an expected outcome.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

from . import __version__, _checks, data, evals, train
from .models import SCHEMES, TinyTransformer, count_parameters

__all__ = [
    "CONFIGS",
    "get_config",
    "code_fingerprint",
    "peak_memory_mib",
    "train_scheme",
    "extrapolation",
    "rope_extension",
    "lost_in_the_middle",
    "run_all",
    "format_table",
    "main",
]

_DEPTHS = [0.0, 0.25, 0.5, 0.75, 1.0]

#: The two configurations: ``full`` (the book's numbers, under 30 minutes on 2 CPU cores)
#: and ``reduced`` (the same pipeline in about a minute, for continuous integration).
CONFIGS = {
    "full": {
        "seed": 0,
        "schemes": list(SCHEMES),
        "model": {"d_model": 64, "n_heads": 4, "n_layers": 2, "tie_embeddings": True},
        "context_length": 64,
        "train": {"steps": 1000, "batch_size": 32, "lr": 3e-3, "warmup": 100, "weight_decay": 0.1},
        "task": {"n_needles": 1},
        "eval": {"multiples": [1, 2, 4, 8], "tokens_per_length": 16384, "depths": _DEPTHS, "n_examples": 100},
        "extension": {"factor": 4, "methods": ["none", "pi", "ntk", "dynamic_ntk", "yarn"],
                      "finetune_steps": 150, "finetune_lr": 1e-3, "finetune_examples": 100},
    },
    "reduced": {
        "seed": 0,
        "schemes": list(SCHEMES),
        "model": {"d_model": 32, "n_heads": 2, "n_layers": 2, "tie_embeddings": True},
        "context_length": 32,
        "train": {"steps": 400, "batch_size": 16, "lr": 3e-3, "warmup": 40, "weight_decay": 0.1},
        "task": {"n_needles": 1},
        "eval": {"multiples": [1, 2, 4, 8], "tokens_per_length": 2048, "depths": [0.0, 0.5, 1.0], "n_examples": 20},
        "extension": {"factor": 4, "methods": ["none", "pi", "ntk", "dynamic_ntk", "yarn"],
                      "finetune_steps": 40, "finetune_lr": 1e-3, "finetune_examples": 20},
    },
}

_TRAINED: dict = {}  # (scheme, training settings) -> (model, info), so experiments 1-3 share models


def get_config(config="reduced") -> dict:
    """A deep copy of ``CONFIGS[config]`` for a name, or of ``config`` itself for a dict."""
    if isinstance(config, dict):
        missing = {"seed", "schemes", "model", "context_length", "train", "task", "eval", "extension"} - set(config)
        if missing:
            raise ValueError(f"config must have the keys of CONFIGS['full']; missing {sorted(missing)}")
        return copy.deepcopy(config)
    return copy.deepcopy(CONFIGS[_checks.one_of("config", config, tuple(CONFIGS))])


def code_fingerprint(package_dir=None) -> str:
    """SHA-256 over the names and bytes of ``companion/*.py`` (sorted by name)."""
    folder = Path(__file__).resolve().parent if package_dir is None else Path(package_dir)
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def peak_memory_mib() -> float:
    """Peak resident memory of this process so far, in MiB (``resource.getrusage``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


# ---------------------------------------------------------------------------
# Training (shared by the three experiments)
# ---------------------------------------------------------------------------

def train_scheme(scheme: str, config="reduced", corpus: data.Corpus | None = None, progress: bool = True):
    r"""Train (or fetch the already trained) model of ``scheme`` under ``config``.

    ``torch.manual_seed(seed)`` before the model is built; batches alternate text
    windows of ``L`` bytes and retrieval examples the model reads at ``L`` tokens
    (:func:`companion.train.mixed_batches`). Returns ``(model, info)`` with ``info``
    a dict: ``parameters``, ``seconds``, ``text_loss`` and ``task_loss`` (mean of the
    last tenth of each), and ``loss`` (every ``steps // 50``-th step's loss).
    """
    cfg = get_config(config)
    scheme = _checks.one_of("scheme", scheme, SCHEMES)
    corpus = data.load_corpus() if corpus is None else corpus
    key = (scheme, json.dumps({k: cfg[k] for k in ("seed", "model", "context_length", "train", "task")},
                              sort_keys=True), corpus.sha256)
    if key not in _TRAINED:
        _TRAINED[key] = _train_new(scheme, cfg, corpus, progress)
    return _TRAINED[key]


def _train_new(scheme, cfg, corpus, progress):
    L, t = cfg["context_length"], cfg["train"]
    torch.manual_seed(cfg["seed"])
    model = TinyTransformer(scheme, context_length=L, **cfg["model"])
    batches = _mixture(corpus, t["batch_size"], L, cfg["task"])
    start = time.perf_counter()
    history = train.train(model, batches, t["steps"], lr=t["lr"], warmup=t["warmup"],
                          weight_decay=t["weight_decay"], seed=cfg["seed"], progress=progress, label=f"{scheme:>10}")
    last = max(1, len(history) // 20)  # the last tenth of the steps, half of them of each kind
    info = {
        "parameters": count_parameters(model), "seconds": round(time.perf_counter() - start, 2),
        "text_loss": round(float(np.mean(history[0::2][-last:])), 4),  # even steps are text
        "task_loss": round(float(np.mean(history[1::2][-last:])), 4),  # odd steps are retrieval
        "loss": [round(v, 4) for v in history[:: max(1, len(history) // 50)]],
    }
    return model, info


def _mixture(corpus, batch_size, length, task):
    return train.mixed_batches(train.text_batches(corpus.train, batch_size, length),
                               train.task_batches(data.retrieval, batch_size, length, **task))


# ---------------------------------------------------------------------------
# Experiment 1: extrapolation
# ---------------------------------------------------------------------------

def extrapolation(config="reduced", corpus: data.Corpus | None = None, progress: bool = True) -> dict:
    r"""Perplexity on held-out text at ``1, 2, 4, 8 x L`` for every scheme (Press et al. 2022).

    Returns ``{"training_length", "lengths", "tokens_per_length", "schemes": {scheme:
    {"perplexity": [...], "defined": [...], "status": [...], "errors": [...], "train": info}}}``;
    where the scheme cannot read a length its perplexity is ``None``, its status
    ``"not defined"`` and its error the ``IndexError`` message.
    """
    cfg = get_config(config)
    corpus = data.load_corpus() if corpus is None else corpus
    L, ev = cfg["context_length"], cfg["eval"]
    lengths = [m * L for m in ev["multiples"]]
    schemes = {}
    for scheme in cfg["schemes"]:
        model, info = train_scheme(scheme, cfg, corpus, progress)
        rows = evals.perplexity_by_length(model, corpus.validation, lengths, ev["tokens_per_length"])
        schemes[scheme] = {
            "perplexity": [_round(r["perplexity"]) for r in rows], "defined": [r["defined"] for r in rows],
            "status": [_status(r["defined"]) for r in rows], "errors": [r["error"] for r in rows], "train": info,
        }
    return {"training_length": L, "lengths": lengths, "tokens_per_length": ev["tokens_per_length"], "schemes": schemes}


# ---------------------------------------------------------------------------
# Experiment 2: extending a RoPE model
# ---------------------------------------------------------------------------

def rope_extension(config="reduced", corpus: data.Corpus | None = None, progress: bool = True) -> dict:
    r"""The RoPE model trained at ``L``, read at ``s L`` with each scaling method.

    For each method of ``config["extension"]["methods"]`` (names of
    :data:`companion.scaling.METHODS`) with factor ``s``: perplexity at ``L`` and at
    ``s L`` and retrieval accuracy at ``s L`` (mean over depths), first zero-shot,
    then after ``finetune_steps`` steps at ``s L`` on the same text-and-retrieval
    mixture (same tokens per step as in training) with the method in place. Dynamic
    NTK follows the input length, so at ``L`` it is the unscaled model.
    """
    cfg = get_config(config)
    corpus = data.load_corpus() if corpus is None else corpus
    L, ext, ev = cfg["context_length"], cfg["extension"], cfg["eval"]
    s = ext["factor"]
    target = int(round(s * L))
    base_model, _ = train_scheme("rope", cfg, corpus, progress)
    methods = {}
    for method in ext["methods"]:
        model = copy.deepcopy(base_model)
        model.set_rope_scaling(method, s=s)
        freqs = model.rope_frequencies(target)
        entry = {"inv_freq_at_target": [float(v) for v in freqs.inv_freq],
                 "attention_factor_at_target": float(freqs.attention_factor),
                 "zero_shot": _extension_scores(model, corpus, L, target, cfg)}
        batch = max(1, cfg["train"]["batch_size"] * L // target)
        start = time.perf_counter()
        history = train.train(model, _mixture(corpus, batch, target, cfg["task"]), ext["finetune_steps"],
                              lr=ext["finetune_lr"], warmup=max(1, ext["finetune_steps"] // 10),
                              weight_decay=cfg["train"]["weight_decay"], seed=cfg["seed"] + 1,
                              progress=progress, label=f"{method:>11}")
        entry["finetune_seconds"] = round(time.perf_counter() - start, 2)
        entry["finetune_final_loss"] = round(float(np.mean(history[-max(2, len(history) // 10):])), 4)
        entry["finetuned"] = _extension_scores(model, corpus, L, target, cfg)
        methods[method] = entry
    return {"training_length": L, "target_length": target, "factor": s, "finetune_steps": ext["finetune_steps"],
            "methods": methods}


def _extension_scores(model, corpus, L, target, cfg) -> dict:
    ev = cfg["eval"]
    ppl = evals.perplexity_by_length(model, corpus.validation, [L, target], ev["tokens_per_length"])
    grid = evals.accuracy_grid(model, [target], ev["depths"], cfg["extension"]["finetune_examples"],
                               seed=cfg["seed"] + 7, **cfg["task"])
    return {"perplexity_at_L": _round(ppl[0]["perplexity"]), "perplexity_at_target": _round(ppl[1]["perplexity"]),
            "retrieval_at_target": _round(float(np.mean([r["accuracy"] for r in grid])))}


# ---------------------------------------------------------------------------
# Experiment 3: lost in the middle / RULER in miniature
# ---------------------------------------------------------------------------

def lost_in_the_middle(config="reduced", corpus: data.Corpus | None = None, progress: bool = True) -> dict:
    r"""Needle-retrieval accuracy by depth and by length for every scheme.

    Returns ``{"task", "depths", "lengths", "n_examples", "schemes": {scheme:
    {"status": [per length], "accuracy": [[per depth] per length], "by_length": [...],
    "by_depth": [...]}}}``; ``accuracy`` is ``None`` (status ``"not defined"``) where the
    scheme cannot read the length, ``by_length``
    averages over depths, ``by_depth`` over the lengths the scheme can read.
    """
    cfg = get_config(config)
    corpus = data.load_corpus() if corpus is None else corpus
    L, ev = cfg["context_length"], cfg["eval"]
    lengths = [m * L for m in ev["multiples"]]
    schemes = {}
    for scheme in cfg["schemes"]:
        model, _ = train_scheme(scheme, cfg, corpus, progress)
        rows = evals.accuracy_grid(model, lengths, ev["depths"], ev["n_examples"], seed=cfg["seed"] + 11, **cfg["task"])
        acc = np.array([np.nan if r["accuracy"] is None else r["accuracy"] for r in rows])
        acc = acc.reshape(len(lengths), len(ev["depths"]))  # rows come length by length, depths inside
        schemes[scheme] = {
            "status": [_status(r["defined"]) for r in rows[::len(ev["depths"])]],
            "accuracy": [[_round(v) for v in row] for row in acc.tolist()],
            "by_length": [_round(v) for v in _nanmean(acc, axis=1)],
            "by_depth": [_round(v) for v in _nanmean(acc, axis=0)],
        }
    return {"task": {"generator": "retrieval", **cfg["task"]}, "depths": ev["depths"], "lengths": lengths,
            "n_examples": ev["n_examples"], "schemes": schemes}


# ---------------------------------------------------------------------------
# Running everything
# ---------------------------------------------------------------------------

EXPERIMENTS = {"extrapolation": extrapolation, "rope_extension": rope_extension,
               "lost_in_the_middle": lost_in_the_middle}


def run_all(config="reduced", out_dir="lab_results", progress: bool = True, stream=sys.stdout) -> dict:
    """Run the three experiments and write one JSON file each plus ``summary.json`` into ``out_dir``.

    Returns ``{name: path}`` of the files written. ``stream=None`` prints nothing
    (tables otherwise go to ``stream`` as each experiment ends).
    """
    name = config if isinstance(config, str) else "custom"
    cfg = get_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    corpus = data.load_corpus()
    meta = _meta(name, cfg, corpus)
    paths = {}
    for exp, fn in EXPERIMENTS.items():
        t0 = time.perf_counter()
        results = fn(cfg, corpus, progress)
        record = {"experiment": exp, **meta, "seconds": round(time.perf_counter() - t0, 2),
                  "peak_memory_mib": round(peak_memory_mib(), 1), **_cuda_peak(), "results": results}
        paths[exp] = _write(out / f"{exp}.json", record)
        if stream is not None:
            stream.write(format_table(exp, results) + "\n\n")
            stream.flush()
    summary = {"experiment": "summary", **meta, "seconds": round(time.perf_counter() - start, 2),
               "peak_memory_mib": round(peak_memory_mib(), 1), **_cuda_peak(),
               "files": {k: Path(v).name for k, v in paths.items()}}
    paths["summary"] = _write(out / "summary.json", summary)
    return paths


def format_table(experiment: str, results: dict) -> str:
    """A plain-text table of one experiment's results (for the console and the book)."""
    experiment = _checks.one_of("experiment", experiment, tuple(EXPERIMENTS))
    if experiment == "extrapolation":
        head = ["scheme"] + [f"ppl@{n}" for n in results["lengths"]]
        rows = [[s] + [_cell(v) for v in r["perplexity"]] for s, r in results["schemes"].items()]
    elif experiment == "rope_extension":
        head = ["method", "ppl@L 0-shot", f"ppl@{results['target_length']} 0-shot", "retr 0-shot",
                "ppl@L tuned", f"ppl@{results['target_length']} tuned", "retr tuned"]
        rows = [[m] + [_cell(r[part][k]) for part in ("zero_shot", "finetuned")
                       for k in ("perplexity_at_L", "perplexity_at_target", "retrieval_at_target")]
                for m, r in results["methods"].items()]
    else:
        head = ["scheme"] + [f"len {n}" for n in results["lengths"]] + [f"depth {d:g}" for d in results["depths"]]
        rows = [[s] + [_cell(v) for v in r["by_length"] + r["by_depth"]] for s, r in results["schemes"].items()]
    width = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(cells, width)) for cells in [head, *rows]]
    return "\n".join([experiment, *lines])


def main(argv=None) -> int:
    """``python -m companion.lab --config full|reduced --out DIR [--threads N] [--quiet]``."""
    parser = argparse.ArgumentParser(prog="python -m companion.lab", description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=tuple(CONFIGS), default="reduced")
    parser.add_argument("--out", default="lab_results", help="folder for the JSON files")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads for torch (default 1: these tiny models gain little from more, "
                             "and lose much when the cores are shared)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    torch.set_num_threads(_checks.positive_int("threads", args.threads))
    paths = run_all(args.config, args.out, progress=not args.quiet)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


# --- private helpers -----------------------------------------------------------------


def _meta(name, cfg, corpus) -> dict:
    return {
        "config_name": name, "config": cfg, "companion_version": __version__,
        "code_fingerprint": code_fingerprint(), "corpus": corpus.info(),
        "python": platform.python_version(), "torch": torch.__version__,
        "device": str(train.default_device()), "threads": torch.get_num_threads(),
        "platform": platform.platform(),
    }


def _cuda_peak() -> dict:
    if not torch.cuda.is_available():
        return {}
    return {"peak_cuda_memory_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)}


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


def _cell(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:.2f}" if abs(v) < 1000 else f"{v:.3g}"


if __name__ == "__main__":
    raise SystemExit(main())
