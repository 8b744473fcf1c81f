"""Synthetic per-seed records of the lab in the stored JSON schema, for testing the claims without a run.

:func:`records` builds ``{seed: record}`` in which every claim of
:mod:`companion.lab.claims` holds with room to spare, each number jittered a little
per seed; :data:`BREAKS` holds, per claim, an edit of one record that makes that claim
false when applied to every seed. The records are plain JSON data, like
``companion/lab/stored/seed<k>.json``.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from companion.lab import settings

FULL = settings.get_config("full")
ARMS = FULL.main_arms
METHODS = list(FULL.extension.methods)
COUNT = 100          # tokens per block per file
N = 40               # single-needle examples per cell

TEXT_AT_L = {"learned": 9.2, "sinusoidal": 10.0, "shaw": 7.5, "t5": 8.2, "rope": 7.8, "p_rope": 8.4,
             "alibi": 10.3, "nope": 11.0, "irope_chunk16": 8.0, "irope_chunk64": 7.9}
LATE_AT_8L = {"sinusoidal": 2.0, "shaw": 1.05, "t5": 1.4, "rope": 3.0, "p_rope": 2.5, "alibi": 1.03,
              "nope": 1.2, "irope_chunk16": 1.04, "irope_chunk64": 1.06}
LATE_AT_2L = {"rope": 1.2, "p_rope": 1.9}
NEEDLE = {"rope": [1.0, 0.3, 0.1, 0.02], "irope_chunk16": [1.0, 1.0, 0.98, 0.97],
          "irope_chunk64": [1.0, 0.9, 0.7, 0.6], "alibi": [1.0, 0.9, 0.6, 0.4], "learned": [1.0, None, None, None]}
WINDOW_LEFT = {"rope": 0.02, "p_rope": 0.05, "t5": 0.08, "sinusoidal": 0.9, "nope": 0.9}
LIMIT_LEFT = {"rope": 0.1, "p_rope": 0.9}      # the share of the late excess left with distances capped at L - 1
LIMIT_NEEDLE = {"rope": 0.6, "p_rope": 0.7}    # single-needle accuracy at 8L with distances capped
EXTENSION = {  # zero-shot (ppl at L, ppl at 4L, needle at 4L), fine-tuned ppl at 4L
    "none": (7.5, 15.0, 0.1, 8.5), "pi": (15.0, 16.0, 0.9, 9.0), "ntk": (7.8, 9.0, 0.2, 7.4),
    "dynamic_ntk": (7.5, 9.0, 0.2, 7.5), "yarn": (13.5, 14.0, 0.95, 7.9), "yarn_code": (8.6, 9.2, 1.0, 7.3)}


def _text(arm, rng):
    """extrapolation[arm]: per length, per file, the summed loss and the tokens of each block."""
    ref = TEXT_AT_L[arm] * (1 + 0.01 * rng.normal())
    ratios = [None] + [LATE_AT_2L.get(arm, 1 + (LATE_AT_8L.get(arm, 1) - 1) / 2),
                       1 + (LATE_AT_8L.get(arm, 1) - 1) * 0.8, LATE_AT_8L.get(arm)]
    nll, tokens, ppl, past = [], [], [], []
    for i in range(4):
        if arm == "learned" and i > 0:
            nll.append(None), tokens.append(None), ppl.append(None), past.append(None)
            continue
        late = ref * ratios[i] * (1 + 0.005 * rng.normal()) if i else None
        row = [math.log(3 * ref) * COUNT, math.log(ref) * COUNT] + [
            (math.log(late) * COUNT if b < 2 + i else 0.0) if i else 0.0 for b in range(2, 5)]
        count = [COUNT, COUNT] + [COUNT if i and b < 2 + i else 0 for b in range(2, 5)]
        nll.append([row, row]), tokens.append([count, count])
        ppl.append(ref * 1.05 if i == 0 else late), past.append(late)
    rope_like = 20 + 3 * int(rng.integers(0, 5)) if arm == "rope" else None
    if rope_like:
        ppl[-1] = rope_like
    interval = [None if p is None else [p - 0.5, p + 0.5] for p in ppl]
    return {"lengths": FULL.lengths, "perplexity": ppl, "perplexity_past_L": past, "interval": interval,
            "nll_by_file": nll, "tokens_by_file": tokens, "n_tokens": [4 * COUNT] * 4}


def _needle(arm, rng):
    by_length = NEEDLE.get(arm, [1.0, 0.95, 0.9, 0.85])
    correct, acc = [], []
    for i, v in enumerate(by_length):
        if v is None:
            correct.append([None] * 5), acc.append([None] * 5)
            continue
        shape = [0.1, 0.2, 0.4, 0.6, 0.9] if arm == "alibi" and i == 3 else [v] * 5
        row = [int(round(min(1.0, p + 0.02 * rng.normal()) * N)) for p in shape]
        row = [min(N, max(0, c)) for c in row]
        correct.append(row), acc.append([c / N for c in row])
    by = [None if v is None else sum(r) / (N * 5) for v, r in zip(by_length, correct)]
    straddle = {}
    for chunk in ("16", "64"):
        split_level = 0.1 if arm == "irope_chunk64" else None
        straddle[chunk] = [None if v is None else [int((split_level if split_level is not None else v) * 20), 20,
                                                   int(v * 180), 180] for v in by]
    return {"lengths": FULL.lengths, "n_examples": N, "correct": correct, "accuracy": acc, "by_length": by,
            "bins": [[j / 5, (j + 1) / 5] for j in range(5)], "chance": {"random": 0.01, "copy": 1.0},
            "straddle": straddle}


def _boundary(arm):
    if arm == "learned":
        return None
    split = [False] * 3 + [True] * 5 + [False] * 3
    return {"length": 256, "boundary": 128, "starts": list(range(120, 131)), "split": split, "n_examples": 20,
            "correct": [2 if s and arm == "irope_chunk64" else 19 for s in split]}


def _probe(arm, level, copy):
    values = [level] + [None if arm == "learned" else level] * 3
    return {"lengths": FULL.lengths, "n_examples": 100, "by_length": values, "chance": {"random": 0.01, "copy": copy}}


def _record(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    record = {"experiment": "lab", "seed": seed, "extrapolation": {}, "retrieval": {}, "window": {}, "train": {},
              "pair_norms": {}}
    steps = list(range(50, 1001, 50))
    for arm in ARMS:
        record["extrapolation"][arm] = _text(arm, rng)
        needle = _needle(arm, rng)
        record["retrieval"][arm] = {"single_needle": needle, "no_literal_match": copy.deepcopy(needle),
                                    "boundary": _boundary(arm), "multi_key": _probe(arm, 0.05, 0.25),
                                    "variable_tracking": _probe(arm, 0.15, 0.5)}
        record["train"][arm] = {"parameters": 33_664, "curve": {
            "steps": steps, "needle_at_L": [0.0 if s < 500 else 1.0 for s in steps]}}
        if arm in WINDOW_LEFT:
            ex = record["extrapolation"][arm]
            ref = math.exp(ex["nll_by_file"][0][0][1] / COUNT)
            late = ex["perplexity_past_L"][-1]
            record["window"][arm] = {"perplexity_past_L": ref * (1 + (late / ref - 1) * WINDOW_LEFT[arm]),
                                     "near_needle": {"full": [0.5, 0.3, 0.1], "window": [1.0, 1.0, 1.0]}}
        if arm in LIMIT_LEFT:
            ex = record["extrapolation"][arm]
            ref = math.exp(ex["nll_by_file"][0][0][1] / COUNT)
            late = ex["perplexity_past_L"][-1]
            record.setdefault("distance_limit", {})[arm] = {
                "perplexity_past_L": ref * (1 + (late / ref - 1) * LIMIT_LEFT[arm]), "near_needle": [0.9, 0.8, 0.7],
                "single_needle": {"by_length": [0.9, 0.8, LIMIT_NEEDLE[arm]]}}
        if arm in ("rope", "p_rope"):
            fast_slow = [3.0] * 4 + [1.0] * 4
            record["pair_norms"][arm] = {"query": [[fast_slow] * 2] * 2, "key": [[fast_slow] * 2] * 2}
    methods = {}
    for m, (at_L, target, needle, tuned) in EXTENSION.items():
        jitter = 1 + 0.01 * rng.normal()
        methods[m] = {"zero_shot": {"perplexity_at_L": at_L * jitter, "perplexity_at_target": target * jitter,
                                    "retrieval_at_target": needle},
                      "finetuned": {"perplexity_at_L": at_L, "perplexity_at_target": tuned * jitter,
                                    "retrieval_at_target": 0.95}}
    record["extension"] = {"methods": methods}
    return record


def records(seeds=tuple(range(10))) -> dict:
    """``{seed: record}`` on which every claim holds."""
    return {s: _record(s) for s in seeds}


def _set_late(record, arm, ratio, length_index=-1):
    """Make the arm's late perplexity at a length ``ratio`` times its in-range reference."""
    ex = record["extrapolation"][arm]
    ref = math.exp(ex["nll_by_file"][0][0][1] / COUNT)
    for row, count in zip(ex["nll_by_file"][length_index], ex["tokens_by_file"][length_index]):
        row[2:] = [math.log(ref * ratio) * c for c in count[2:]]


def _needle_8L(record, arm, value):
    t = record["retrieval"][arm]["single_needle"]
    t["by_length"][-1] = value
    t["correct"][-1] = [int(value * N)] * 5


def _swap_pairs(record):
    for kind in ("query", "key"):
        record["pair_norms"]["rope"][kind] = [[[1.0] * 4 + [3.0] * 4] * 2] * 2


def _ext(record, method, part, key, value):
    record["extension"]["methods"][method][part][key] = value


#: claim -> an edit of one record that makes the claim false when applied to every seed
BREAKS = {
    "breaking_arms": lambda r: _set_late(r, "rope", 1.3),
    "flat_arms": lambda r: _set_late(r, "alibi", 1.2),
    "between_arms": lambda r: _set_late(r, "nope", 1.01),
    "inside_attention_best_text_at_L": lambda r: r["extrapolation"]["shaw"]["perplexity"].__setitem__(0, 12.0),
    "seed_noise_exceeds_file_noise": lambda r: r["extrapolation"]["rope"]["perplexity"].__setitem__(-1, 20.0),
    "window_restores_relative_text": lambda r: r["window"]["t5"].__setitem__(
        "perplexity_past_L", r["extrapolation"]["t5"]["perplexity_past_L"][-1]),
    "window_does_not_rescue_absolute": lambda r: r["window"]["sinusoidal"].__setitem__(
        "perplexity_past_L", math.exp(r["extrapolation"]["sinusoidal"]["nll_by_file"][0][0][1] / COUNT)),
    "window_restores_near_needles": lambda r: r["window"]["rope"]["near_needle"].__setitem__("window", [0.5] * 3),
    "needle_learned_rate": lambda r: [r["retrieval"][a]["single_needle"]["by_length"].__setitem__(0, 0.5)
                                      for a in ARMS],
    "rope_loses_far_needles": lambda r: _needle_8L(r, "rope", 0.9),
    "chunked_irope_keeps_needles": lambda r: _needle_8L(r, "irope_chunk16", 0.3),
    "small_chunks_beat_whole_chunks": lambda r: r["retrieval"]["irope_chunk64"]["single_needle"][
        "straddle"].__setitem__("16", copy.deepcopy(
            r["retrieval"]["irope_chunk16"]["single_needle"]["straddle"]["16"])),
    "no_arm_matches_keys": lambda r: r["retrieval"]["nope"]["multi_key"]["by_length"].__setitem__(1, 0.4),
    "no_arm_tracks_variables": lambda r: r["retrieval"]["nope"]["variable_tracking"]["by_length"].__setitem__(1, 0.7),
    "literal_key_not_needed": lambda r: [r["retrieval"][a].__setitem__("no_literal_match", {
        **r["retrieval"][a]["single_needle"],
        "by_length": [None if v is None else v - 0.2 for v in r["retrieval"][a]["single_needle"]["by_length"]]})
        for a in ARMS],
    "chunk_boundary_breaks_irope64": lambda r: r["retrieval"]["irope_chunk64"]["boundary"].__setitem__(
        "correct", [19] * 11),
    "no_consistent_u": lambda r: r["retrieval"]["shaw"]["single_needle"]["correct"].__setitem__(-1, [40, 2, 0, 2, 40]),
    "alibi_recency": lambda r: r["retrieval"]["alibi"]["single_needle"]["correct"].__setitem__(-1, [16] * 5),
    "p_rope_keeps_far_needles": lambda r: r["retrieval"]["p_rope"]["single_needle"]["by_length"].__setitem__(
        -1, r["retrieval"]["rope"]["single_needle"]["by_length"][-1]),
    "distance_limit_repairs_rope_text": lambda r: r["distance_limit"]["rope"].__setitem__(
        "perplexity_past_L", r["extrapolation"]["rope"]["perplexity_past_L"][-1]),
    "distance_limit_leaves_p_rope_broken": lambda r: r["distance_limit"]["p_rope"].__setitem__(
        "perplexity_past_L", math.exp(r["extrapolation"]["p_rope"]["nll_by_file"][0][0][1] / COUNT)),
    "distance_limit_finds_far_needles": lambda r: r["distance_limit"]["rope"]["single_needle"]["by_length"].__setitem__(
        -1, r["retrieval"]["rope"]["single_needle"]["by_length"][-1]),
    "p_rope_breaks_earlier": lambda r: _set_late(r, "p_rope", 1.2, 1),
    "p_rope_costs_text_at_L": lambda r: r["extrapolation"]["p_rope"]["perplexity"].__setitem__(0, 7.0),
    "rope_uses_fast_pairs": _swap_pairs,
    "ntk_protects_text": lambda r: _ext(r, "ntk", "zero_shot", "perplexity_at_target", 20.0),
    "interpolation_costs_at_L": lambda r: _ext(r, "pi", "zero_shot", "perplexity_at_L", 7.6),
    "yarn_code_finds_needles_zero_shot": lambda r: _ext(r, "yarn_code", "zero_shot", "retrieval_at_target", 0.05),
    "fine_tuning_improves_every_method": lambda r: _ext(
        r, "pi", "finetuned", "perplexity_at_target",
        r["extension"]["methods"]["pi"]["zero_shot"]["perplexity_at_target"]),
    "kept_fast_pairs_fine_tune_better_than_pi": lambda r: _ext(r, "pi", "finetuned", "perplexity_at_target", 7.0),
    "budget_ends_after_the_needle_forms": lambda r: [c["curve"].__setitem__("needle_at_L", [0.0] * 19 + [1.0])
                                                     for c in r["train"].values()],
}


def sweep(seeds=(0, 1)) -> dict:
    """An ``lr_sweep.json`` record on which the sweep's claims hold: every arm best at the shared rate."""
    cells = []
    for arm in FULL.arms:
        for lr in FULL.sweep.lrs:
            for seed in seeds:
                cost = 1 + 0.02 * abs(math.log(lr / FULL.train.lr))
                fails = arm == "alibi" and lr == max(FULL.sweep.lrs)     # a rate too high for one arm
                text = 8.5 if arm == "p_rope" else 8.0                    # p-RoPE reads worse at every rate
                cells.append({"arm": arm, "lr": lr, "seed": seed, "perplexity_at_L": text * cost,
                              "needle_at_L": 0.5 if fails else 1.0})
    return {"experiment": "lr_sweep", "cells": cells}
