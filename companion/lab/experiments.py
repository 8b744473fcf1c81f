r"""The lab's experiments: every position scheme in one tiny model, at many seeds.

One model per *arm* (a position scheme with its options, :func:`companion.lab.settings.arms_at`)
and per seed, all trained at the same length ``L`` on the same data with the same
budget (:func:`train_arm`), then:

1. **Extrapolation** (after Press, Smith & Lewis 2022; :func:`extrapolation`):
   perplexity on all the held-out text at ``1, 2, 4, 8 x L``, summed by file and
   by block of positions, so that the perplexity of the late positions (``>= L``),
   of an in-range reference (positions ``L/2 .. L-1``) and a bootstrap over files
   can all be read from the record.
2. **Retrieval, RULER-style** (Hsieh et al. 2024; Liu et al. 2024;
   :func:`retrieval`): the single needle the models are trained on, by length and
   depth bin (the needle jittered inside its bin, with the needles that straddle an
   iRoPE chunk boundary counted apart, and a needle moved token by token across a
   chunk boundary); multi-key retrieval with fixed slots;
   variable tracking; retrieval with no literal match between question and needle;
   beside each, the key-blind copiers measured on the same examples. Also the share
   of the answer's attention on keys ``L`` or more back at ``2L``.
3. **Mechanism** (:func:`window_intervention`, :func:`distance_limit_intervention`,
   :func:`frequency_usage`): the same models with every key ``L`` or more positions
   back hidden, on needles that lie within ``L`` of the query and on late text; the
   RoPE models with every key kept and every distance of ``L`` or more read as
   ``L - 1`` (ReRoPE's rule), which removes the new distances but not the extra keys;
   and the norms of the queries' and keys' pairs (Barbero et al. 2025).
4. **Extending the RoPE model** to ``4L`` (:func:`extension`): no change, Position
   Interpolation (Chen et al. 2023), NTK-aware (bloc97 2023), dynamic NTK (emozilla
   2023), YaRN with the paper's ramp and with the ramp its code ships, zero-shot and
   along a short fine-tune with the method in place.
5. **The learning rate** (:func:`sweep_cell`): every arm at full size at three peak
   learning rates on two development seeds, scored on the tuning files (never on the
   text the results are reported on) and on the single needle at ``L``; each job of
   the main run also records the same two numbers (:func:`tuning_scores`), so the
   learning curves and the sweep share one definition.

**Training data, and why.** The batches alternate between text (the
standard-library corpus of :mod:`companion.lab.stdlib_corpus`, loss on every byte) and
single-needle retrieval (loss on the answer only), so one model per arm serves
every experiment. Trained on text alone, the RoPE model answered none of the
retrieval examples, which says nothing about positions; trained on two-needle
multi-key retrieval alone, it reached only 10-53 % at the training length in 1,000
steps. The single needle follows the only ``@`` of its input, so a model can answer
it by copying the two digits after the marker: the multi-key, variable-tracking and
no-literal-match probes, never trained, show what the models learned instead.

The jobs and the process pool are in :mod:`companion.lab.runs`; the command ``python -m
companion.lab`` runs them.
"""
from __future__ import annotations

import copy
import math
import time

import numpy as np
import torch

from .._contracts import AnyValue, Flag, OneOf, Positive, Seed, contract
from . import evals, tasks, train
from .models import TinyTransformer, count_parameters
from .settings import LabConfig, get_config
from .stdlib_corpus import Corpus, load_corpus, text_windows

__all__ = ["TASKS", "chance_levels", "train_arm", "tuning_scores", "extrapolation", "retrieval",
           "attention_shares", "window_intervention", "distance_limit_intervention", "frequency_usage", "extension",
           "sweep_cell", "arm_record"]

#: The retrieval tasks of experiment 2.
TASKS = ("single_needle", "multi_key", "variable_tracking", "no_literal_match")

_SEEDS = {"single_needle": 11, "multi_key": 12, "variable_tracking": 13, "no_literal_match": 14, "attention": 17,
          "boundary": 18, "window": 19, "curve": 23, "tuning": 29, "extension": 7}


def _task_seed(seed: int, what: str) -> int:
    """The seed of the examples of ``what`` for a model trained at ``seed`` (one stream per use)."""
    return seed * 1000 + _SEEDS[what]


def chance_levels(config="reduced") -> dict:
    r"""Per task, the accuracy of guessing: a random two-digit answer, and copying one value without reading keys.

    ``random``: :math:`1/100` for two digits. ``copy``: the accuracy of answering
    with the value of one needle chosen without reading the keys: 1 for the single
    needle and for the no-literal-match needle (there is one needle), exactly
    :math:`1/k` for multi-key retrieval with ``k`` fixed slots and a uniform queried
    slot, and :math:`1/c` for ``c`` chains of variable tracking when the copier picks
    one of the ``c`` values uniformly (other copiers are measured on the examples,
    :func:`companion.lab.evals.copier_accuracy`).
    """
    cfg = get_config(config)
    return {"single_needle": {"random": 0.01, "copy": 1.0},
            "multi_key": {"random": 0.01, "copy": 1.0 / cfg.probes.multi_key_needles},
            "variable_tracking": {"random": 0.01, "copy": 1.0 / cfg.probes.variable_tracking_chains},
            "no_literal_match": {"random": 0.01, "copy": 1.0}}


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------

def _an_arm_of(arm, config) -> None:
    """``arm`` is an arm of the configuration."""
    OneOf(*get_config(config).arms)("arm", arm)


@contract(_an_arm_of)
def train_arm(arm: AnyValue, seed: Seed, config: AnyValue = "reduced", corpus: AnyValue = None,
              progress: Flag = False, lr: Positive | None = None, curve: Flag = False):
    r"""Train the model of ``arm`` at ``seed`` under ``config``; return ``(model, info)``.

    ``torch.manual_seed(seed)`` before the model is built, and the batches (text
    windows of ``L`` bytes alternating with single-needle examples read at ``L``
    tokens, :func:`companion.lab.train.mixed_batches`) are drawn from a generator
    seeded with ``seed``, so every arm of a seed sees the same data in the same
    order. ``lr`` overrides the arm's peak learning rate (for the sweep).
    ``info``: ``parameters``, ``lr``, ``seconds``, ``text_loss`` and ``task_loss``
    (means over the last tenth of the steps of each kind), ``loss`` (every
    ``steps // 50``-th step) and, with ``curve``, ``curve``: every
    ``train.curve_every`` steps the loss on the tuning text and single-needle
    accuracy at ``L`` (:func:`tuning_scores` at a smaller size).
    """
    cfg = get_config(config)
    corpus = load_corpus() if corpus is None else corpus
    L, t = cfg.context_length, cfg.train
    lr = cfg.lr_of(arm) if lr is None else lr
    torch.manual_seed(seed)
    model = TinyTransformer(cfg.model_config(arm))
    points: dict = {"steps": [], "tuning_loss": [], "needle_at_L": []}

    def record(step, m):
        scores = tuning_scores(m, corpus, cfg, seed, t.curve_windows, t.curve_examples)
        points["steps"].append(step)
        points["tuning_loss"].append(_round(math.log(scores["perplexity_at_L"])))
        points["needle_at_L"].append(_round(scores["needle_at_L"]))

    start = time.perf_counter()
    history = train.train(model, _mixture(corpus, t.batch_size, L, cfg.task_needles), t.steps, lr=lr,
                          warmup=t.warmup, weight_decay=t.weight_decay, seed=seed, progress=progress,
                          label=f"{arm} seed {seed}", every=t.curve_every if curve else 0,
                          callback=record if curve else None)
    last = max(1, len(history) // 20)  # the last tenth of the steps, half of them of each kind
    info = {
        "parameters": count_parameters(model), "lr": lr, "seconds": round(time.perf_counter() - start, 2),
        "text_loss": round(float(np.mean(history[0::2][-last:])), 4),   # even steps are text
        "task_loss": round(float(np.mean(history[1::2][-last:])), 4),   # odd steps are retrieval
        "loss": [round(v, 4) for v in history[:: max(1, len(history) // 50)]],
    }
    if curve:
        info["curve"] = points
    return model, info


def _mixture(corpus, batch_size, length, n_needles):
    return train.mixed_batches(train.text_batches(corpus.train, batch_size, length),
                               train.task_batches(tasks.retrieval, batch_size, length, n_needles=n_needles))


def tuning_scores(model, corpus: Corpus, config="reduced", seed: int = 0, windows: int | None = None,
                  examples: int | None = None) -> dict:
    r"""The two numbers the learning rate is chosen on: tuning-text perplexity and single-needle accuracy at ``L``.

    Perplexity on the tuning files (:data:`companion.lab.stdlib_corpus.TUNING_FILES`, never
    the held-out text of the results), all of it or the first ``windows`` windows
    of ``L``; accuracy on ``examples`` (default ``sweep.examples``) single-needle
    examples at uniform depths, with their own seed.
    """
    cfg = get_config(config)
    L = cfg.context_length
    tokens = None if windows is None else windows * L
    ppl = evals.perplexity_by_length(model, corpus.tuning, [L], tokens)[0]["perplexity"]
    n = cfg.sweep.examples if examples is None else examples
    task = tasks.retrieval(n, L + 1, seed=_task_seed(seed, "tuning" if windows is None else "curve"),
                          n_needles=cfg.task_needles)
    return {"perplexity_at_L": _round(ppl), "needle_at_L": _round(evals.answer_accuracy(model, task)["accuracy"])}


# ---------------------------------------------------------------------------
# Experiment 1: extrapolation
# ---------------------------------------------------------------------------

def extrapolation(model, corpus: Corpus, config="reduced", seed: int = 0) -> dict:
    r"""Perplexity of ``model`` on the held-out text at ``1, 2, 4, 8 x L``, by file and block of positions.

    Returns ``lengths``, ``perplexity``, ``interval`` (file-clustered bootstrap),
    ``perplexity_past_L``, ``status``, ``errors``, ``n_tokens``, one entry per
    length (``None`` where not defined), and ``blocks`` (the position edges ``0,
    L/2, L, 2L, ...``), ``files``, ``nll_by_file`` and ``tokens_by_file`` ``[length][file][block]``.
    """
    cfg = get_config(config)
    L, ev = cfg.context_length, cfg.eval
    lengths = cfg.lengths
    blocks = [0, L // 2] + [m * L for m in ev.multiples]
    rows = evals.perplexity_by_length(model, corpus.validation, lengths, ev.tokens_per_length, past=L,
                                      n_bootstrap=ev.bootstrap, seed=seed, file_starts=corpus.validation_starts,
                                      blocks=blocks)
    return {
        "lengths": lengths,
        "perplexity": [_round(r["perplexity"]) for r in rows],
        "interval": [None if r["interval"] is None else [_round(v) for v in r["interval"]] for r in rows],
        "perplexity_past_L": [_round(r["perplexity_past"]) for r in rows],
        "status": [_status(r["defined"]) for r in rows], "errors": [r["error"] for r in rows],
        "n_tokens": [r["n_tokens"] for r in rows],
        "blocks": blocks, "files": corpus.info()["validation_files"],
        "nll_by_file": [None if not r["defined"] else [[round(v, 3) for v in f] for f in r["nll_by_file"]]
                        for r in rows],
        "tokens_by_file": [None if not r["defined"] else r["tokens_by_file"] for r in rows],
    }


# ---------------------------------------------------------------------------
# Experiment 2: retrieval by depth and length
# ---------------------------------------------------------------------------

def retrieval(model, config="reduced", seed: int = 0) -> dict:
    r"""Accuracy of ``model`` on the four tasks of :data:`TASKS`, and the attention shares at ``2L``.

    ``single_needle`` and ``no_literal_match``: ``eval.n_examples`` (resp.
    ``probes.no_literal_examples``) examples per (length, depth bin), the needle
    jittered inside its bin (:func:`companion.lab.evals.depth_bin_grid`), with the
    split into needles that straddle a multiple of ``L/4`` or ``L`` and those that
    do not. ``multi_key``: ``probes.multi_key_examples`` per length, counted by the
    queried slot, with the copiers on the same examples. ``variable_tracking``:
    pooled accuracy per length, with the copiers. Every task records its chance
    levels (:func:`chance_levels`).
    """
    cfg = get_config(config)
    L, ev, probes = cfg.context_length, cfg.eval, cfg.probes
    chance = chance_levels(cfg)
    out = {}
    for task, make, n_examples, options in (
            ("single_needle", tasks.retrieval, ev.n_examples, {"n_needles": cfg.task_needles}),
            ("no_literal_match", tasks.no_literal_match_retrieval, probes.no_literal_examples, {})):
        rows = evals.depth_bin_grid(model, cfg.lengths, ev.depth_bins, n_examples, seed=_task_seed(seed, task),
                                    make_task=make, chunks=(L // 4, L), **options)
        out[task] = _bin_record(rows, cfg.lengths, ev.depth_bins, n_examples, chance[task], (L // 4, L))
    out["boundary"] = chunk_boundary(model, cfg, seed)
    out["multi_key"] = _multi_key(model, cfg, seed, chance["multi_key"])
    out["variable_tracking"] = _variable_tracking(model, cfg, seed, chance["variable_tracking"])
    out["attention_beyond_L"] = attention_shares(model, cfg, seed)
    return out


def chunk_boundary(model, config="reduced", seed: int = 0) -> dict | None:
    r"""Single-needle accuracy at ``4L`` with the needle moved one token at a time across position ``2L``.

    ``2L`` is a multiple of both iRoPE chunk sizes (``L/4`` and ``L``). The needle
    (``m = 6`` tokens) starts at ``2L - 8, ..., 2L + 2``; it is split by the boundary
    for the starts ``2L - 5 .. 2L - 1``. A RoPE layer confined to chunks sees the
    split needle in two pieces, and a model that never met a chunk boundary in
    training (chunks of ``L``) may not join them; every other arm is the control.
    ``eval.boundary_examples`` examples per start. ``None`` for a model that cannot
    read ``4L``.
    """
    cfg = get_config(config)
    L, n = cfg.context_length, 4 * cfg.context_length
    boundary = 2 * L
    starts = list(range(boundary - 8, boundary + 3))
    correct = []
    for offset, start in enumerate(starts):
        count = cfg.eval.boundary_examples
        task = tasks.retrieval(count, n + 1, depth=start / (n - 11), seed=_task_seed(seed, "boundary") * 1009 + offset,
                              n_needles=cfg.task_needles)
        try:
            correct.append(int(evals.answer_correct(model, task).sum()))
        except IndexError:
            return None
    return {"length": n, "boundary": boundary, "starts": starts, "split": [boundary - 6 < s < boundary for s in starts],
            "correct": correct, "n_examples": cfg.eval.boundary_examples}


def _bin_record(rows, lengths, n_bins, n_examples, chance, chunks) -> dict:
    def grid(key):
        return [[r[key] for r in rows[i * n_bins:(i + 1) * n_bins]] for i in range(len(lengths))]

    defined = [rows[i * n_bins]["defined"] for i in range(len(lengths))]
    correct = grid("correct")
    record = {
        "lengths": lengths, "bins": [r["bin"] for r in rows[:n_bins]], "n_examples": n_examples,
        "status": [_status(d) for d in defined], "correct": correct,
        "accuracy": [[None if c is None else round(c / n_examples, 4) for c in row] for row in correct],
        "by_length": [None if not d else round(sum(row) / (n_examples * n_bins), 4)
                      for d, row in zip(defined, correct)],
        "chance": chance, "straddle": {},
    }
    for c in chunks:
        # per length: [correct straddling, straddling, correct clear, clear], summed over the bins
        record["straddle"][str(c)] = [
            None if not d else np.sum([r["straddle"][c] for r in rows[i * n_bins:(i + 1) * n_bins]],
                                      axis=0).astype(int).tolist()
            for i, d in enumerate(defined)]
    return record


def _multi_key(model, cfg: LabConfig, seed: int, chance) -> dict:
    k, n = cfg.probes.multi_key_needles, cfg.probes.multi_key_examples
    record = {"lengths": cfg.lengths, "slots": k, "n_examples": n, "status": [], "correct": [], "count": [],
              "by_length": [], "copiers": {rule: [] for rule in evals.COPIERS}, "chance": chance}
    for length in cfg.lengths:
        task = tasks.multi_key_retrieval(n, length + 1, seed=_task_seed(seed, "multi_key") * 1009 + length,
                                        n_needles=k)
        slot = task.slot.numpy()
        count = [int((slot == j).sum()) for j in range(k)]
        for rule in evals.COPIERS:
            right = evals.copier_accuracy(task, rule, seed=length)
            record["copiers"][rule].append([int(right[slot == j].sum()) for j in range(k)])
        try:
            right = evals.answer_correct(model, task).numpy()
        except IndexError:           # the learned table cannot read this length
            right = None
        record["status"].append(_status(right is not None))
        record["count"].append(count)
        record["correct"].append(None if right is None else [int(right[slot == j].sum()) for j in range(k)])
        record["by_length"].append(None if right is None else round(float(right.mean()), 4))
    return record


def _variable_tracking(model, cfg: LabConfig, seed: int, chance) -> dict:
    p, n = cfg.probes, cfg.probes.variable_tracking_examples
    record = {"lengths": cfg.lengths, "n_examples": n, "hops": p.variable_tracking_hops,
              "chains": p.variable_tracking_chains, "status": [], "correct": [], "by_length": [],
              "copiers": {rule: [] for rule in evals.COPIERS}, "chance": chance}
    for length in cfg.lengths:
        task = tasks.variable_tracking(n, length + 1, hops=p.variable_tracking_hops,
                                      n_chains=p.variable_tracking_chains,
                                      seed=_task_seed(seed, "variable_tracking") * 1009 + length)
        for rule in evals.COPIERS:
            record["copiers"][rule].append(int(evals.copier_accuracy(task, rule, seed=length).sum()))
        try:
            right = evals.answer_correct(model, task).numpy()
        except IndexError:
            right = None
        record["status"].append(_status(right is not None))
        record["correct"].append(None if right is None else int(right.sum()))
        record["by_length"].append(None if right is None else round(float(right.mean()), 4))
    return record


def attention_shares(model, config="reduced", seed: int = 0) -> dict | None:
    r"""At ``2L``, per depth bin and layer: the answer's attention on keys ``L`` or more tokens back.

    Single-needle examples (``eval.attention_examples`` per bin, depths uniform in
    the bin), scored with :func:`companion.lab.evals.attention_beyond` at distance
    ``L``: the keys the query could never have attended to in training. ``None``
    where the model cannot read ``2L`` (the learned table).
    """
    cfg = get_config(config)
    L, ev = cfg.context_length, cfg.eval
    shares = []
    for j in range(ev.depth_bins):
        rng = np.random.default_rng([seed, j])
        depth = (j + rng.random(ev.attention_examples)) / ev.depth_bins
        task = tasks.retrieval(ev.attention_examples, 2 * L + 1, depth=depth, seed=_task_seed(seed, "attention") + j,
                              n_needles=cfg.task_needles)
        try:
            shares.append([_round(v) for v in evals.attention_beyond(model, task, L)])
        except IndexError:
            return None
    return {"length": 2 * L, "distance": L, "bins": ev.depth_bins, "share": shares}


# ---------------------------------------------------------------------------
# Mechanism: hide the far keys; which RoPE pairs are used
# ---------------------------------------------------------------------------

def _near_needle_task(cfg: LabConfig, n: int, seed: int):
    """Single needles within ``L`` of the query in inputs of ``n`` tokens: the examples both
    interventions score the near needles on."""
    L, examples = cfg.context_length, cfg.eval.window_examples
    # the needle starts at round(depth (n - 11)); from depth (n - L + 2)/(n - 11) on it lies within
    # the last L - 2 tokens before the position that predicts the first answer digit
    lowest = (n - L + 2) / (n - 11)
    rng = np.random.default_rng([seed, n])
    depth = lowest + (1 - lowest) * rng.random(examples)
    return tasks.retrieval(examples, n + 1, depth=depth, seed=_task_seed(seed, "window") * 1009 + n,
                           n_needles=cfg.task_needles)


def window_intervention(model, corpus: Corpus, config="reduced", seed: int = 0) -> dict | None:
    r"""The model with and without every key ``L`` or more positions back hidden, in every layer.

    **Near needles**: at each length ``n > L``, ``eval.window_examples`` needles
    placed so that the whole needle lies within the last ``L`` tokens before the
    query (the answer is in the window; only the far keys change). **Late text**:
    the perplexity of the positions ``>= L`` at ``8L``, and of whole windows, with the
    window (the same text without it is :func:`extrapolation`'s). If the
    keys at distances never met in training are what break a model, hiding them
    brings both back to the level at ``L``; if the positions themselves are the
    problem (absolute schemes), it does not. ``None`` for a model that cannot read
    past ``L``.
    """
    cfg = get_config(config)
    L, ev = cfg.context_length, cfg.eval
    lengths = cfg.lengths[1:]
    record = {"window": L, "lengths": lengths, "n_examples": ev.window_examples,
              "near_needle": {"full": [], "window": []}}
    for n in lengths:
        task = _near_needle_task(cfg, n, seed)
        for name, w in (("full", None), ("window", L)):
            model.set_key_window(w)
            try:
                record["near_needle"][name].append(_round(evals.answer_accuracy(model, task)["accuracy"]))
            except IndexError:
                model.set_key_window(None)
                return None
    model.set_key_window(L)
    row = evals.perplexity_by_length(model, corpus.validation, [lengths[-1]], ev.tokens_per_length, past=L)[0]
    model.set_key_window(None)
    record["perplexity_past_L"], record["perplexity"] = _round(row["perplexity_past"]), _round(row["perplexity"])
    return record


def distance_limit_intervention(model, corpus: Corpus, config="reduced", seed: int = 0) -> dict:
    r"""A RoPE model with every key kept and every distance of ``L`` or more read as ``L - 1``.

    The control of :func:`window_intervention` that changes the distances only: a
    query at ``8L`` still weighs all of its ``8L`` keys, as many as without the
    control, but none at a distance it never met in training
    (:meth:`companion.lab.models.TinyTransformer.set_distance_limit`; ReRoPE's rule,
    Su 2023). If new distances break the model, this repairs it as the window
    does; if the number of keys does, it does not. Recorded with the limit in place:
    the late text at ``8L`` (``perplexity_past_L``, ``perplexity``), the near needles
    of :func:`window_intervention` (the same examples), and the single needle at
    every length and depth bin (the same examples as :func:`retrieval`), whose far
    needles the window could not show.
    """
    cfg = get_config(config)
    L, ev = cfg.context_length, cfg.eval
    lengths = cfg.lengths[1:]
    record = {"limit": L, "lengths": lengths, "n_examples": ev.window_examples, "near_needle": []}
    model.set_distance_limit(L)
    try:
        for n in lengths:
            task = _near_needle_task(cfg, n, seed)        # the examples of window_intervention
            record["near_needle"].append(_round(evals.answer_accuracy(model, task)["accuracy"]))
        rows = evals.depth_bin_grid(model, lengths, ev.depth_bins, ev.n_examples,
                                    seed=_task_seed(seed, "single_needle"), n_needles=cfg.task_needles)
        record["single_needle"] = _bin_record(rows, lengths, ev.depth_bins, ev.n_examples,
                                              chance_levels(cfg)["single_needle"], ())
        row = evals.perplexity_by_length(model, corpus.validation, [lengths[-1]], ev.tokens_per_length, past=L)[0]
    finally:
        model.set_distance_limit(None)
    record["perplexity_past_L"], record["perplexity"] = _round(row["perplexity_past"]), _round(row["perplexity"])
    return record


def frequency_usage(model, corpus: Corpus, config="reduced") -> dict:
    r"""Mean norms of the queries' and keys' 2-D pairs, per layer and head (:func:`companion.lab.evals.pair_norms`).

    On the first ``eval.norm_windows`` windows of ``L`` bytes of held-out text. For a
    RoPE model, pair ``i`` rotates at frequency :math:`\theta_i` (pair 0 the
    fastest); for the other schemes the same pairing of dimensions is a control with
    no frequency attached.
    """
    cfg = get_config(config)
    windows = text_windows(corpus.validation, cfg.context_length, cfg.eval.norm_windows)[:, :-1]
    norms = evals.pair_norms(model, windows)
    return {name: [[[round(v, 4) for v in head] for head in layer] for layer in values]
            for name, values in norms.items()}


# ---------------------------------------------------------------------------
# Experiment 4: extending the RoPE model
# ---------------------------------------------------------------------------

def extension(base_model, corpus: Corpus, config="reduced", seed: int = 0, progress: bool = False) -> dict:
    r"""The RoPE model trained at ``L``, read at ``s L`` with each method, zero-shot and along a fine-tune.

    For each method of ``extension.methods`` (names of
    :data:`companion.scaling.METHODS`): the frequencies at ``s L``, then
    perplexity at ``L`` and at ``s L`` (the first ``extension.tokens_per_length``
    held-out tokens) and single-needle accuracy at ``s L`` (``extension.examples``
    per depth bin), zero-shot and after ``finetune_steps`` steps of the training
    mixture with the method in place and the same tokens per step as in training;
    at each of ``curve_steps`` the perplexity at ``s L`` and the accuracy are also
    taken (on half as many examples). Every method fine-tunes at ``s L``, except
    dynamic NTK, whose scale follows the input length: it fine-tunes on batches
    that cycle through ``extension.dynamic_lengths`` (fine-tuned at ``s L`` alone it
    would be the same model as NTK-aware, whose frequencies it then equals).
    Dynamic NTK is scored with one scale per input, the scale of its whole length:
    there is no cache of keys computed at shorter lengths, which is why, zero-shot
    at ``s L``, it equals NTK-aware.
    """
    cfg = get_config(config)
    L, ext = cfg.context_length, cfg.extension
    s = ext.factor
    target = int(round(s * L))
    methods = {}
    for method in ext.methods:
        model = copy.deepcopy(base_model)
        model.set_rope_scaling(method, s=s)
        freqs = model.rope_frequencies(target)
        entry = {"inv_freq_at_target": [float(v) for v in freqs.inv_freq],
                 "attention_factor_at_target": float(freqs.attention_factor),
                 "zero_shot": _extension_scores(model, corpus, L, target, cfg, seed)}
        lengths = list(ext.dynamic_lengths) if method == "dynamic_ntk" else [target]
        curve = {"steps": [], "perplexity_at_target": [], "retrieval_at_target": []}

        def record(step, m, curve=curve):
            if step in ext.curve_steps and step != ext.finetune_steps:
                scores = _extension_scores(m, corpus, L, target, cfg, seed, light=True)
                curve["steps"].append(step)
                curve["perplexity_at_target"].append(scores["perplexity_at_target"])
                curve["retrieval_at_target"].append(scores["retrieval_at_target"])

        start = time.perf_counter()
        history = train.train(model, _length_cycle(corpus, cfg, lengths), ext.finetune_steps,
                              lr=ext.finetune_lr, warmup=max(1, ext.finetune_steps // 10),
                              weight_decay=cfg.train.weight_decay, seed=seed + 1, progress=progress,
                              label=f"{method} seed {seed}", every=1, callback=record)
        entry["finetune_lengths"] = lengths
        entry["finetune_seconds"] = round(time.perf_counter() - start, 2)
        entry["finetune_final_loss"] = round(float(np.mean(history[-max(2, len(history) // 10):])), 4)
        entry["finetuned"] = _extension_scores(model, corpus, L, target, cfg, seed)
        entry["curve"] = curve
        methods[method] = entry
    return {"training_length": L, "target_length": target, "factor": s, "finetune_steps": ext.finetune_steps,
            "methods": methods}


def _length_cycle(corpus, cfg: LabConfig, lengths):
    """Mixture batches that cycle through ``lengths`` (text then task at each), same tokens per step."""
    L, batch = cfg.context_length, cfg.train.batch_size
    sources = [_mixture(corpus, max(1, batch * L // n), n, cfg.task_needles) for n in lengths]

    def batches(step, generator):
        return sources[(step // 2) % len(sources)](step, generator)

    return batches


def _extension_scores(model, corpus, L, target, cfg: LabConfig, seed, light: bool = False) -> dict:
    ext = cfg.extension
    tokens = ext.tokens_per_length if ext.tokens_per_length is None or not light \
        else max(target, ext.tokens_per_length // 4)
    examples = ext.examples if not light else max(1, ext.examples // 2)
    lengths = [target] if light else [L, target]
    ppl = evals.perplexity_by_length(model, corpus.validation, lengths, tokens, past=L)
    rows = evals.depth_bin_grid(model, [target], cfg.eval.depth_bins, examples, seed=_task_seed(seed, "extension"),
                                n_needles=cfg.task_needles)
    accuracy = _round(sum(r["correct"] for r in rows) / (examples * len(rows)))
    if light:
        return {"perplexity_at_target": _round(ppl[0]["perplexity"]), "retrieval_at_target": accuracy}
    return {"perplexity_at_L": _round(ppl[0]["perplexity"]), "perplexity_at_target": _round(ppl[1]["perplexity"]),
            "perplexity_past_L_at_target": _round(ppl[1]["perplexity_past"]),
            "retrieval_at_target": accuracy, "retrieval_by_bin": [_round(r["accuracy"]) for r in rows]}


# ---------------------------------------------------------------------------
# Experiment 5: the learning rate
# ---------------------------------------------------------------------------

def sweep_cell(arm: str, lr: float, seed: int, config="reduced", corpus: Corpus | None = None) -> dict:
    r"""One cell of the sweep: ``arm`` trained at full size with peak learning rate ``lr``, scored on tuning data."""
    cfg = get_config(config)
    corpus = load_corpus() if corpus is None else corpus
    model, info = train_arm(arm, seed, cfg, corpus, lr=lr)
    return {"arm": arm, "lr": lr, "seed": seed, **tuning_scores(model, corpus, cfg, seed),
            "text_loss": info["text_loss"], "task_loss": info["task_loss"]}


# ---------------------------------------------------------------------------
# One arm at one seed: everything
# ---------------------------------------------------------------------------

def arm_record(arm: str, seed: int, config="reduced", corpus: Corpus | None = None,
               progress: bool = False) -> dict:
    """Train ``arm`` at ``seed`` and run every experiment on it; the record a seed file keeps for the arm."""
    cfg = get_config(config)
    corpus = load_corpus() if corpus is None else corpus
    model, info = train_arm(arm, seed, cfg, corpus, progress, curve=True)
    record = {"train": info, "tuning": {"lr": info["lr"], **tuning_scores(model, corpus, cfg, seed)},
              "extrapolation": extrapolation(model, corpus, cfg, seed),
              "retrieval": retrieval(model, cfg, seed),
              "pair_norms": frequency_usage(model, corpus, cfg)}
    if arm in cfg.eval.window_arms:
        record["window"] = window_intervention(model, corpus, cfg, seed)
    if arm in cfg.eval.limit_arms:
        record["distance_limit"] = distance_limit_intervention(model, corpus, cfg, seed)
    if arm == "rope":
        record["extension"] = extension(model, corpus, cfg, seed, progress)
    return record


# --- private helpers -----------------------------------------------------------------


def _status(defined: bool) -> str:
    return "ok" if defined else "not defined"


def _round(v, digits: int = 4):
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else round(float(v), digits)
