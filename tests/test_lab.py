"""companion.lab: configuration, jobs, the fingerprint, the stored results, the claims, and the reduced run end to end.

The end-to-end runs are marked ``lab``; select them alone with ``pytest -m lab`` or skip
them with ``pytest -m "not lab"``.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import itertools
import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import companion
from companion import lab
from companion.lab import claims, experiments, fingerprint, provenance, results, runs, settings, stats
from companion.lab.schemes import SCHEMES
from tests.support import lab_synthetic
from tests.support.runs import once_per_run

ROOT = Path(__file__).resolve().parent.parent
META = {"experiment", "config_name", "config", "companion_version", "code_fingerprint", "code_sources", "corpus",
        "python", "torch", "device", "machine", "development_seeds", "held_out_seeds"}


# --- the configuration -------------------------------------------------------------------


def test_configs_hold_every_arm_seed_and_method():
    for name, cfg in settings.CONFIGS.items():
        L = cfg.context_length
        arms = cfg.arms
        assert {a.scheme for a in arms.values()} == set(SCHEMES), name
        assert arms[f"irope_chunk{L // 4}"].irope_chunk == L // 4 < L
        assert arms[f"irope_chunk{L}"].irope_chunk == L
        assert "irope" not in arms       # iRoPE always with its chunked RoPE layers, as in Llama 4
        assert arms["p_rope"].rope_fraction == 0.25 and arms["p_rope"].scheme == "rope"
        assert arms["sinusoidal"].embedding_std == "inverse_sqrt_d" and arms["sinusoidal_gpt2_init"].sweep_only
        assert cfg.eval.multiples == (1, 2, 4, 8)
        # the distance cap: in the runs made since it was written (the full run's RoPE arms were rerun
        # with it, stored/controls, under the confirmation configuration)
        assert set(cfg.eval.limit_arms) == (set() if name == "full" else {"rope", "p_rope"})
        assert set(cfg.eval.limit_arms) <= set(cfg.eval.window_arms)
        if name != "confirmation":
            assert set(cfg.extension.methods) == {"none", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code"}
            assert len(cfg.sweep.lrs) >= 2
        assert cfg.extension.factor == 4 and len(set(cfg.extension.dynamic_lengths)) > 1
        assert len(cfg.seeds) >= 2
        assert set(cfg.development_seeds) | set(cfg.held_out_seeds) == set(cfg.seeds)
    full = settings.get_config("full")
    assert len(full.seeds) >= 10 and len(full.held_out_seeds) >= 5 and len(full.development_seeds) >= 5
    assert full.eval.tokens_per_length is None      # all held-out text
    assert full.sweep.lrs == (3e-3, 1e-2, 3e-2) and len(full.sweep.seeds) == 2
    assert min(full.sweep.lrs) < full.train.lr < max(full.sweep.lrs)      # the sweep brackets the shared rate
    assert set(full.sweep.seeds) <= set(full.development_seeds)   # tuning never looks at a held-out seed
    with pytest.raises(ValueError, match="config"):
        settings.get_config("huge")


def test_the_confirmation_run_is_the_full_model_at_fresh_seeds_without_what_its_claims_do_not_read():
    full, confirmation = settings.get_config("full"), settings.get_config("confirmation")
    assert confirmation.seeds == settings.CONFIRMATION_SEEDS == claims.SECOND_FREEZE["confirmation_seeds"]
    assert not set(confirmation.seeds) & set(full.seeds) and confirmation.held_out_seeds == confirmation.seeds
    assert confirmation.extension.methods == () and confirmation.sweep.seeds == ()
    assert not [j for j in runs.jobs(confirmation) if j[0] == "sweep"]
    same = confirmation.with_changes(seeds=full.seeds, development_seeds=full.development_seeds,
                                     held_out_seeds=full.held_out_seeds, extension=full.extension.to_dict(),
                                     sweep=full.sweep.to_dict(), eval={"limit_arms": full.eval.limit_arms})
    # only the seeds, the extension, the sweep and the distance cap (added after the full run) differ
    assert same == full


def test_configuration_round_trips_and_refuses_misspelt_keys_at_every_level():
    full = settings.get_config("full")
    assert settings.LabConfig.from_dict(json.loads(json.dumps(full.to_dict()))) == full
    as_dict = full.to_dict()
    for path in (("stpes",), ("train", "stpes"), ("eval", "depth_bin"), ("arms", "rope", "schem"),
                 ("extension", "method"), ("sweep", "lr")):
        broken = copy.deepcopy(as_dict)
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = 1
        with pytest.raises(ValueError, match=path[-1]):
            settings.LabConfig.from_dict(broken)
    with pytest.raises(ValueError, match="stpes"):
        full.with_changes(train={"stpes": 3})
    with pytest.raises(ValueError, match="sed"):
        full.with_changes(sed=3)
    changed = full.with_changes(seeds=(3,), train={"steps": 7})
    assert changed.train.steps == 7 and changed.train.batch_size == full.train.batch_size and changed.seeds == (3,)
    assert full.train.steps == 1000                # frozen: the original is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        full.train.steps = 3


def test_every_arm_gets_the_same_budget_and_every_seed_every_arm():
    cfg = settings.get_config("full")
    todo = runs.jobs(cfg)
    arm_jobs = [j for j in todo if j[0] == "arm"]
    assert sorted((s, a) for _, s, a in arm_jobs) == sorted((s, a) for s in cfg.seeds for a in cfg.main_arms)
    assert "sinusoidal_gpt2_init" not in cfg.main_arms
    # the sweep: every arm at every rate and sweep seed, from its own job or from the arm's main job
    sweep = {(s, a, lr) for _, s, a, lr in (j for j in todo if j[0] == "sweep")}
    from_main = {(s, a, cfg.lr_of(a)) for s in cfg.sweep.seeds for a in cfg.main_arms}
    assert sweep | from_main == {(s, a, lr) for s in cfg.sweep.seeds for a in cfg.arms for lr in cfg.sweep.lrs}
    assert not sweep & from_main
    assert not [j for j in runs.jobs(cfg, seeds=[17], sweep="none") if j[0] == "sweep"]
    # one training configuration for all arms: only the position options (and a learning rate the sweep chose) differ
    assert all(set(a.model_options()) <= {"scheme", "irope_chunk", "rope_fraction", "embedding_std"}
               for a in cfg.arms.values())


def test_chance_levels():
    chance = experiments.chance_levels("full")
    assert chance["single_needle"] == {"random": 0.01, "copy": 1.0} == chance["no_literal_match"]
    assert chance["multi_key"]["copy"] == 1 / settings.get_config("full").probes.multi_key_needles == 0.25
    assert chance["variable_tracking"]["copy"] == 0.5


def test_peak_memory_and_cpu_time_are_positive_and_the_machine_is_named():
    assert 10 < provenance.peak_memory_mib() < 1e6
    assert provenance.cpu_seconds() > 0
    with pytest.raises(ValueError, match="who"):
        provenance.peak_memory_mib("others")
    cpu = provenance.machine()
    assert cpu["cpu_model"] and cpu["cpu_capability"] and cpu["cpu_count"] >= 1


def test_train_arm_is_seeded_and_rejects_unknown_arms():
    cfg = settings.get_config("reduced").with_changes(train={"steps": 4, "warmup": 1})
    corpus = lab.stdlib_corpus.load_corpus()
    a, info = experiments.train_arm("nope", 1, cfg, corpus)
    b, _ = experiments.train_arm("nope", 1, cfg, corpus)
    c, _ = experiments.train_arm("nope", 2, cfg, corpus)
    assert info["parameters"] > 0 and len(info["loss"]) == 4 and info["lr"] == cfg.train.lr
    assert all((p == q).all() for p, q in zip(a.parameters(), b.parameters()))
    assert not all((p == q).all() for p, q in zip(a.parameters(), c.parameters()))
    with pytest.raises(ValueError, match="arm"):
        experiments.train_arm("xpos", 0, cfg, corpus)


# --- the fingerprint ---------------------------------------------------------------------


def test_fingerprint_ignores_docstrings_and_comments_but_not_code():
    plain = ast.parse("def f(x):\n    return x + 1\n").body[0]
    documented = ast.parse('def f(x):\n    """Add one."""\n    # the step\n    return x + 1\n').body[0]
    other = ast.parse("def f(x):\n    return x + 2\n").body[0]
    assert fingerprint._hash(plain) == fingerprint._hash(documented) != fingerprint._hash(other)


def test_no_import_circle_in_the_lab():
    """The lab's modules import each other without a circle; the fingerprint imports none of them but the kinds."""
    folder = ROOT / "companion" / "lab"
    modules = {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}
    graph = {}
    for module in modules:
        tree = ast.parse((folder / f"{module}.py").read_text())
        uses = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                uses |= {node.module} if node.module else {alias.name for alias in node.names}
        graph[module] = uses & modules
    assert graph["fingerprint"] <= {"kinds"} and "fingerprint" in graph["runs"]
    assert "runs" not in set().union(*(graph[m] for m in modules if m != "runs"))

    def reaches(start, target, seen=()):
        return any(n == target or (n not in seen and reaches(n, target, (*seen, n))) for n in graph[start])

    assert not [m for m in modules if reaches(m, m)], graph


@pytest.fixture(scope="session")
def hashes(tmp_path_factory):
    """The lab's code trace (:func:`companion.lab.runs.code_hashes`, seconds of a core),
    traced once in this test run by whichever pytest-xdist worker asks first."""
    return once_per_run("lab-code-hashes", runs.code_hashes_of_this_process, tmp_path_factory)


@pytest.fixture
def traced(hashes, monkeypatch):
    """A run in this process stamps its files with the run's trace instead of tracing again."""
    monkeypatch.setattr(runs, "code_hashes_of_this_process", lambda: dict(hashes))


def test_fingerprint_covers_the_math_modules_the_experiments_run(hashes):
    for name in ("companion.rope_torch:RotaryEmbedding.forward", "companion.scaling:yarn_code",
                 "companion.scaling:yarn", "companion.relative_torch:T5RelativeBias.forward",
                 "companion.alibi:slopes", "companion.lab.schemes:chunked_causal_mask",
                 "companion.lab.stats:cluster_bootstrap", "companion.lab.tasks:variable_tracking",
                 "companion.lab.tasks:multi_key_retrieval", "companion.lab.evals:copier_accuracy",
                 "companion.lab.train:train", "companion.lab.experiments:extension",
                 "companion.lab.experiments:window_intervention", "companion.scaling:<constants>"):
        assert name in hashes, name
    # code the experiments never call does not count
    assert "companion.scaling:pi_bound_ratio" not in hashes
    assert not any(k.startswith("companion.symbolic") for k in hashes)
    assert not any(k.startswith("companion.lab.claims") for k in hashes)
    assert fingerprint.changed(hashes, hashes) == []
    edited = {**hashes, "companion.rope_torch:RotaryEmbedding.forward": "0" * 64}
    assert fingerprint.changed(hashes, edited) == ["companion.rope_torch:RotaryEmbedding.forward"]


def test_stored_results_are_not_stale(hashes):
    """The book reads the stored results: they must come from today's configuration and code, or from code
    that a recorded change shows to compute the same numbers."""
    stored = results.load_results()
    assert stored.summary["config_name"] == "full"
    assert settings.LabConfig.from_dict(stored.config) == settings.get_config("full"), (
        "the stored results were produced by another experiment definition: rerun "
        "`python -m companion.lab --config full`")
    changed = fingerprint.changed(stored.code_sources, hashes)
    assert not changed, ("the code the experiments execute changed since the stored run (" + ", ".join(changed)
                         + "): rerun `python -m companion.lab --config full`, or, if the change cannot change a "
                         "number, show that and record it (companion.lab.runs.record_code_change)")
    # each recorded change follows the one before it, from the code that ran, and names its check
    before = stored.summary["code_fingerprint"]
    assert before == fingerprint.fingerprint(stored.summary["code_sources"])
    for change in stored.summary.get("code_changes", []):
        assert change["from"] == before and change["to"] == fingerprint.fingerprint(change["code_sources"])
        assert len(change["change"]) > 40 and len(change["check"]) > 40
        before = change["to"]
    assert before == fingerprint.fingerprint(hashes)


def test_a_change_that_keeps_the_numbers_is_recorded_after_the_code_that_ran(tmp_path, traced, hashes):
    """record_code_change keeps the run's own fingerprint and adds today's after it; it refuses to record no change."""
    stored = results.load_results()
    for path in results.STORED.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    summary = json.loads((tmp_path / "summary.json").read_text())
    summary.pop("code_changes", None)
    summary["code_fingerprint"], summary["code_sources"] = "0" * 64, {"companion.lab.runs:run_job": "1" * 64}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    runs.record_code_change("the jobs' function moved to another module, computing the same", "both ran the "
                            "reduced configuration on one machine; results.differences found none", tmp_path)
    change, = json.loads((tmp_path / "summary.json").read_text())["code_changes"]
    assert change["from"] == "0" * 64 and change["to"] == fingerprint.fingerprint(hashes)
    assert change["code_sources"] == hashes and "differences" in change["check"]
    with pytest.raises(ValueError, match="no change to record"):
        runs.record_code_change("again", "again", tmp_path)
    with pytest.raises(ValueError, match="out_dir"):
        runs.record_code_change("a", "b", tmp_path / "nowhere")
    assert stored.summary == results.load_results().summary       # the package's files are untouched


def test_differences_name_every_number_that_differs_and_ignore_how_it_was_computed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
    record = {"extrapolation": {"rope": {"perplexity": [3.5, 4.25]}},
              "train": {"rope": {"loss": [5.0], "seconds": 9.0}}, "code_fingerprint": "x",
              "machine": {"cpu_model": "A"}, "jobs": {"rope": {"cpu_seconds": 4.0}}}
    (a / "seed0.json").write_text(json.dumps(record))
    other = copy.deepcopy(record)
    other.update(code_fingerprint="y", machine={"cpu_model": "B"}, jobs={"rope": {"cpu_seconds": 5.0}})
    other["train"]["rope"]["seconds"] = 1.0
    (b / "seed0.json").write_text(json.dumps(other))
    assert results.differences(a, b) == []
    other["extrapolation"]["rope"]["perplexity"][1] = 4.2500001
    other["train"]["rope"]["loss"] = [5]                               # an int where a float was
    (b / "seed0.json").write_text(json.dumps(other))
    (b / "lr_sweep.json").write_text("{}")
    assert results.differences(a, b) == ["lr_sweep.json: in one run only",
                                         "seed0.json: extrapolation.rope.perplexity[1]",
                                         "seed0.json: train.rope.loss[0]"]


# --- the stored results as package data -------------------------------------------------


def test_stored_results_are_package_data_and_the_only_copy():
    stored = results.load_results()
    package = Path(companion.__file__).resolve().parent
    assert stored.folder == results.STORED and results.STORED.parent == package / "lab"
    assert not (ROOT / "lessons" / "lab_results").exists()
    files = {p.name for p in results.STORED.glob("*.json")}
    assert files == {f"seed{s}.json" for s in stored.seed_list()} | {"lr_sweep.json", "summary.json"}
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"lab/stored/*.json", "lab/stored/confirmation/*.json", "lab/stored/controls/*.json"} <= set(
        package_data["companion"])
    main_arms = settings.get_config("full").main_arms
    for seed, record in stored.seeds.items():
        assert META <= set(record) and record["seed"] == seed
        assert set(record["extrapolation"]) == set(main_arms) == set(record["retrieval"])


def test_stored_run_records_its_seeds_machine_and_cost():
    summary = results.load_results().summary
    full = settings.get_config("full")
    assert summary["seeds"] == list(full.seeds)
    assert summary["development_seeds"] == list(full.development_seeds)
    assert summary["held_out_seeds"] == list(full.held_out_seeds)
    assert summary["machine"]["cpu_model"] and summary["machine"]["cpu_capability"]
    assert summary["wall_seconds"] > 0 and summary["cpu_seconds"] > 0 and summary["peak_memory_mib_per_process"] > 0
    assert summary["n_jobs"] == len(runs.jobs(full))


def test_loader_and_spread():
    stored = results.load_results()
    values = results.per_seed(stored, "extrapolation", "rope", "perplexity", 0)
    assert len(values) == len(stored.seed_list()) >= 10 and all(v > 1 for v in values)
    assert stored.development_seeds + stored.held_out_seeds == stored.seed_list()
    assert stored.subset([0, 1]).seed_list() == [0, 1]
    with pytest.raises(ValueError, match="seeds"):
        stored.subset([99])
    s = results.spread([1.0, 2.0, 4.0])
    assert (s.mean, s.low, s.high) == (7 / 3, 1.0, 4.0) and s.sd == pytest.approx(math.sqrt(7 / 3))
    assert s.format(1) == "2.3 [1.0-4.0]"
    with pytest.raises(ValueError, match="values"):
        results.spread([1.0, None])
    with pytest.raises(ValueError, match="folder"):
        results.load_results(ROOT)


# Chapters 7 and 9 run alone, copied into an empty folder, from the installed package (the
# lab's stored results as package data, nothing written beside them): every chapter does, in
# tests/test_reader_edition.py::test_chapter_runs_alone.


# --- the reduced run, end to end ---------------------------------------------------------


@pytest.mark.lab
def test_reduced_lab_runs_end_to_end(tmp_path, traced):
    """Two processes started by hand (``--part``), then ``--merge``; then a re-run of one job repeats it exactly."""
    cfg = settings.get_config("reduced")
    for part in range(2):
        assert runs.run_all("reduced", tmp_path, stream=None, part=part, parts=2) == {"jobs": str(tmp_path / "jobs")}
    with pytest.raises(ValueError, match="part"):
        runs.run_all("reduced", tmp_path, stream=None, part=2, parts=2)
    assert set(runs.assemble(tmp_path)) == {f"seed{s}" for s in cfg.seeds} | {"lr_sweep", "summary"}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"seed{s}.json" for s in cfg.seeds] + ["lr_sweep.json", "summary.json"])
    run = results.load_results(tmp_path)
    summary = run.summary
    assert len(summary["sessions"]) == 2 and summary["config_name"] == "reduced"
    assert settings.LabConfig.from_dict(summary["config"]) == cfg
    assert summary["code_fingerprint"] == fingerprint.fingerprint(summary["code_sources"])
    assert summary["wall_seconds"] > 0 and summary["cpu_seconds"] > 0 and summary["peak_memory_mib_per_process"] > 0
    assert summary["n_jobs"] == len(runs.jobs(cfg))
    L = cfg.context_length
    lengths = [L, 2 * L, 4 * L, 8 * L]
    for record in run.seeds.values():
        assert META <= set(record) and record["corpus"]["sha256"] == lab.stdlib_corpus.load_corpus().sha256
        ex = record["extrapolation"]
        assert set(ex) == set(cfg.main_arms)
        learned = ex["learned"]
        assert learned["status"] == ["ok", "not defined", "not defined", "not defined"]
        assert learned["perplexity"][1:] == [None] * 3 and "max_positions" in learned["errors"][1]
        for arm, r in ex.items():
            assert r["lengths"] == lengths and 1 < r["perplexity"][0] < 256, arm
            assert r["perplexity_past_L"][0] is None
            assert r["interval"][0][0] <= r["perplexity"][0] <= r["interval"][0][1]
            assert r["blocks"] == [0, L // 2, L, 2 * L, 4 * L, 8 * L] and len(r["nll_by_file"][0]) == len(r["files"])
        for arm, by_task in record["retrieval"].items():
            for task in experiments.TASKS:
                t = by_task[task]
                assert t["lengths"] == lengths and set(t["chance"]) == {"random", "copy"}
            assert all(len(row) == cfg.eval.depth_bins for row in by_task["single_needle"]["correct"] if row)
            assert set(by_task["single_needle"]["straddle"]) == {str(L // 4), str(L)}
            assert set(by_task["multi_key"]["copiers"]) == {"first", "last", "random"}
            assert (by_task["attention_beyond_L"] is None) == (arm == "learned")
        assert set(record["window"]) == set(cfg.eval.window_arms)
        assert set(record["distance_limit"]) == set(cfg.eval.limit_arms)
        limited = record["distance_limit"]["rope"]
        assert limited["limit"] == L and limited["lengths"] == lengths[1:] and limited["perplexity_past_L"] > 1
        assert limited["single_needle"]["lengths"] == lengths[1:] and len(limited["near_needle"]) == 3
        assert record["train"]["rope"]["curve"]["steps"] == list(range(cfg.train.curve_every, cfg.train.steps + 1,
                                                                       cfg.train.curve_every))
        ext = record["extension"]
        assert ext["target_length"] == 4 * L and set(ext["methods"]) == set(cfg.extension.methods)
        assert ext["methods"]["dynamic_ntk"]["finetune_lengths"] == list(cfg.extension.dynamic_lengths)
        assert ext["methods"]["ntk"]["finetune_lengths"] == [4 * L]
        zero = {m: r["zero_shot"] for m, r in ext["methods"].items()}
        assert zero["dynamic_ntk"]["perplexity_at_L"] == zero["none"]["perplexity_at_L"]
        assert ext["methods"]["yarn"]["attention_factor_at_target"] == pytest.approx(0.1 * math.log(4) + 1)
        # the shipped ramp keeps the fastest pair at L = 32, the paper's keeps none
        none, code, paper = (ext["methods"][m]["inv_freq_at_target"] for m in ("none", "yarn_code", "yarn"))
        assert code[0] == pytest.approx(none[0]) and paper[0] < none[0]
    cells = run.lr_sweep["cells"]
    assert {(c["arm"], c["lr"], c["seed"]) for c in cells} == {
        (a, lr, s) for a in cfg.arms for lr in cfg.sweep.lrs for s in cfg.sweep.seeds}
    # the same job in a fresh process, alone, gives the same numbers
    job = ("arm", 1, "irope_chunk8")
    again = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, sys; from companion.lab import runs; "
         f"json.dump(runs.run_job({job!r}, 'reduced')['result'], sys.stdout)"],
        capture_output=True, text=True, check=True).stdout)
    stored = {k: run.seeds[1][k]["irope_chunk8"] for k in ("extrapolation", "retrieval", "pair_norms")}
    assert {k: again[k] for k in stored} == stored
    assert again["train"]["loss"] == run.seeds[1]["train"]["irope_chunk8"]["loss"]


@pytest.mark.lab
def test_new_seeds_run_into_their_own_folder_and_the_claims_are_checked(tmp_path):
    out = tmp_path / "new"
    # two arms keep it short; the claims that read other arms say they cannot be checked on these records
    done = subprocess.run([sys.executable, "-m", "companion.lab", "--config", "reduced", "--seeds", "7",
                           "--arms", "rope", "alibi", "--out", str(out), "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["seed7.json", "summary.json"]
    assert "claim" in done.stdout and "verdict" in done.stdout
    run = results.load_results(out)
    assert run.seed_list() == [7] and run.lr_sweep is None and sorted(run.arms) == ["alibi", "rope"]


def test_command_line_refuses_to_overwrite_the_stored_results_with_another_configuration(tmp_path):
    with pytest.raises(ValueError, match="out_dir"):
        runs.run_all("reduced", None)
    with pytest.raises(ValueError, match="out_dir"):
        runs.run_all("full", None, seeds=[17])
    with pytest.raises(ValueError, match="out_dir"):
        runs.assemble(tmp_path)
    done = subprocess.run([sys.executable, "-m", "companion.lab", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and all(f in done.stdout for f in ("--part", "--parts", "--merge", "--seeds"))
    done = subprocess.run([sys.executable, "-m", "companion.lab", "--config", "reduced"], capture_output=True,
                          text=True)
    assert done.returncode != 0 and "--out is required" in done.stderr


@pytest.mark.parametrize("notebook", ["07_long_context.ipynb", "09_lab.ipynb"])
def test_no_markdown_cell_opens_a_bare_code_fence(notebook):
    """A stray ``` line turns the prose after it into a code block: every fence must name its language or directive."""
    markdown_it = pytest.importorskip("markdown_it")
    nb = json.loads((ROOT / "lessons" / notebook).read_text())
    parser = markdown_it.MarkdownIt()
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            bare = [t for t in parser.parse("".join(cell["source"])) if t.type == "fence" and not t.info.strip()]
            assert not bare, f"cell {index} of {notebook} opens a fence without a language: {bare[0].content[:60]!r}"


# --- the claims ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stored():
    return results.load_results()


@pytest.fixture(scope="module")
def development():
    return claims.development_records()


def test_every_claim_the_stored_records_can_check_holds_on_them_and_is_exploratory_there(stored):
    verdicts = claims.check_all(stored.seeds, stored.lr_sweep)
    assert {v.name for v in verdicts} == set(claims.CLAIMS) | set(claims.SWEEP_CLAIMS) == set(claims.STAGE)
    unchecked = {v.name for v in verdicts if v.mark == "cannot be checked"}
    assert unchecked == set(claims.SECOND_FREEZE["from_controls"])      # the stored run has no distance limit
    failing = [v for v in verdicts if v.holds is False or v.undecided_by_seeds]
    assert not failing, claims.table(failing)
    # every claim was written from some of the stored seeds: none of these verdicts confirms anything
    assert all(v.standing == "exploratory" for v in verdicts)
    for v in verdicts:
        assert v.statement and v.evidence and (v.seeds == tuple(stored.seed_list()) or v.name in claims.SWEEP_CLAIMS)


def test_the_held_out_run_is_on_record_as_it_was_written(stored):
    """The stored run's record of the held-out run is the first part of today's: the same freeze, the same
    verdicts, and each restatement written then is the first entry of its claim's revisions."""
    history = stored.summary["claims_history"]
    assert history["frozen_commit"] == claims.FIRST_FREEZE["commit"] == claims.HISTORY["frozen_commit"]
    assert history["held_out_seeds"] == stored.held_out_seeds == list(claims.FIRST_FREEZE["checked_on"])
    assert history["held_out_at_freeze"] == json.loads(json.dumps(claims.HELD_OUT_AT_FREEZE))
    for claim_name, why in history["revisions"].items():
        assert claims.REVISIONS[claim_name][0] == why
    frozen = claims.HELD_OUT_AT_FREEZE
    assert {n for n, v in frozen.items() if not v["holds"]} <= set(claims.REVISIONS)
    assert all(len(why) > 40 for entries in claims.REVISIONS.values() for why in entries)


def test_every_change_after_a_freeze_is_recorded():
    """A claim of the first freeze is unchanged or restated with a record; every claim restated at the second
    freeze, and the changes made after the first that no record listed (the sweep's tolerance, the
    initialisation claim replaced by its opposite, variable tracking changed through a shared helper), have
    an entry."""
    first_freeze = set(claims.HELD_OUT_AT_FREEZE)
    restated = {n for n, stage in claims.STAGE.items() if stage == "second"} & first_freeze
    assert restated <= set(claims.REVISIONS)
    assert {"shared_rate_is_near_best", "initialisation_does_not_decide_sinusoidal",
            "no_arm_tracks_variables"} <= set(claims.REVISIONS)
    assert any("5 %" in why and "10 %" in why for why in claims.REVISIONS["shared_rate_is_near_best"])
    assert any("opposite" in why for why in claims.REVISIONS["initialisation_does_not_decide_sinusoidal"])
    new = set(claims.SECOND_FREEZE["new"])
    assert new <= set(claims.STAGE) and not new & first_freeze
    # the first freeze's claims that are still in their frozen form: first stage, written from seeds 0-4
    for claim_name, stage in claims.STAGE.items():
        if stage == "first":
            assert claim_name in first_freeze and claim_name not in claims.REVISIONS, claim_name
            assert claims.WRITTEN_FROM[claim_name] == (0, 1, 2, 3, 4)
        elif stage == "second":
            assert set(claims.WRITTEN_FROM[claim_name]) in ({0, 1, 2, 3, 4}, set(range(10)))
        else:
            assert claims.WRITTEN_FROM[claim_name] == (0, 1)


def test_the_first_freezes_claims_give_today_the_verdicts_recorded_on_the_held_out_seeds(stored, development):
    held_out = stored.subset(stored.held_out_seeds).seeds
    for claim_name, stage in claims.STAGE.items():
        if stage == "first":
            verdict = claims.check(claim_name, held_out, development=development)
            assert verdict.holds is claims.HELD_OUT_AT_FREEZE[claim_name]["holds"] is True, claim_name
            assert verdict.standing == "confirmatory"


def test_claims_take_any_set_of_seeds(stored):
    one = claims.check_all(stored.subset([stored.held_out_seeds[-1]]).seeds)
    assert all(v.seeds in ((), (stored.held_out_seeds[-1],)) for v in one)
    both = claims.breaking_arms(stored.subset(stored.development_seeds).seeds)
    assert both.seeds == tuple(stored.development_seeds)
    # a record without an experiment is reported as not checkable, not as a pass
    bare = {0: {"extrapolation": {}, "retrieval": {}}}
    assert all(v.holds is None and v.mark == "cannot be checked" for v in claims.check_all(bare))


def test_no_claim_that_holds_on_the_ten_stored_seeds_fails_on_two_of_them(stored):
    """Two seeds print FAILS only where they contradict the claim: on each of the 45 pairs of stored seeds,
    every claim that holds on all ten holds or cannot be decided, and an undecided claim says how many
    seeds would decide it."""
    undecided = 0
    for pair in itertools.combinations(stored.seed_list(), 2):
        for v in claims.check_all(stored.subset(list(pair)).seeds):
            assert v.holds is not False, (pair, v.name, v.evidence)
            undecided += v.undecided_by_seeds
    assert undecided > 45         # the mean claims: two seeds rarely decide them


def contradicted(test) -> bool:
    """Whether a test's values speak against it, not merely too few: a value past an every-seed threshold, or a
    95 % interval wholly on the wrong side of the margin (recomputed here from the values)."""
    v = np.asarray(test.values, dtype=float)
    if test.kind in ("every>=", "every<=", "every<"):
        return bool((v < test.margin).any() if test.kind == "every>=" else (v > test.margin).any()
                    if test.kind == "every<=" else (v >= test.margin).any())
    if test.kind == "fixed":
        return test.margin is False
    if test.kind == "exists":
        return False
    if test.kind == "rate>=":
        return stats.wilson_interval(int(v.sum()), v.size).high < test.margin
    if test.kind == "sd>":
        return stats.sd_interval(v).high < test.margin
    iv = stats.mean_interval(v)
    if test.kind == "mean>":
        return iv.high <= test.margin
    if test.kind == "mean<":
        return iv.low >= test.margin
    low, high = test.margin
    return iv.high < low or iv.low > high


# --- the claims on synthetic records: any seeds, the stored schema -------------------------


def test_every_claim_holds_on_records_built_to_satisfy_it():
    seeds = lab_synthetic.records()
    verdicts = claims.check_all(seeds, lab_synthetic.sweep())
    assert {v.name for v in verdicts} == set(claims.CLAIMS) | set(claims.SWEEP_CLAIMS)
    failing = [v for v in verdicts if not v.holds]
    assert not failing, claims.table(failing)
    assert all(v.seeds == tuple(range(10)) for v in verdicts if v.name in claims.CLAIMS)


def test_every_claim_has_a_record_edit_that_breaks_it():
    assert set(lab_synthetic.BREAKS) == set(claims.CLAIMS)


@pytest.mark.parametrize("claim_name", sorted(lab_synthetic.BREAKS))
def test_a_claim_fails_when_its_numbers_say_otherwise(claim_name):
    seeds = lab_synthetic.records()
    assert claims.CLAIMS[claim_name](seeds).holds
    for record in seeds.values():
        lab_synthetic.BREAKS[claim_name](record)
    verdict = claims.CLAIMS[claim_name](seeds)
    assert verdict.holds is False, verdict.evidence
    assert any(contradicted(t) for t in verdict.tests)


def test_a_claim_is_a_function_of_the_records_not_of_the_seed_numbers():
    """Renumbered seeds (17, 23, ...) give the same verdicts; a JSON round trip changes nothing."""
    seeds = lab_synthetic.records()
    renamed = {17 + 6 * i: record for i, record in enumerate(seeds.values())}
    as_json = {int(k): v for k, v in json.loads(json.dumps(renamed)).items()}
    for name, fn in claims.CLAIMS.items():
        a, b = fn(seeds), fn(as_json)
        assert a.holds is b.holds is True, name
        assert b.seeds == tuple(17 + 6 * i for i in range(10)) and a.statement == b.statement


def test_one_seed_that_breaks_a_claim_is_enough_for_an_every_seed_claim():
    seeds = lab_synthetic.records()
    lab_synthetic.BREAKS["flat_arms"](seeds[3])
    assert claims.check("flat_arms", seeds).holds is False
    assert claims.check("flat_arms", {s: r for s, r in seeds.items() if s != 3}).holds


def test_a_claim_about_a_mean_is_undecided_on_two_seeds_and_says_how_many_would_decide_it():
    development = {n: lab_synthetic.records() for n in claims.CLAIMS}
    two = lab_synthetic.records((0, 1))
    verdict = claims.check("p_rope_costs_text_at_L", two, development=development)
    assert verdict.holds is None and verdict.undecided_by_seeds and verdict.mark == "cannot be decided"
    assert 2 < verdict.needed <= 10
    assert verdict.outcome == f"cannot be decided with 2 seeds (about {verdict.needed} would decide it)"
    # as many seeds as it says decide it on these records
    assert claims.check("p_rope_costs_text_at_L", lab_synthetic.records(range(verdict.needed))).holds
    # a claim these records cannot check is not undecided by the seeds, and needs no count
    bare = claims.check("p_rope_costs_text_at_L", {0: {"extrapolation": {}}}, development=development)
    assert bare.mark == "cannot be checked" and bare.needed is None


def test_no_consistent_u_does_not_hold_when_every_seed_has_a_fifteen_point_u():
    """The frozen count passed 95 % of the time with a genuine U of 15 points on every seed (40 examples per
    bin); the equivalence claim almost never holds then, on ten seeds or on thirty."""
    rng = np.random.default_rng(0)
    held = 0
    for _ in range(200):
        seeds = lab_synthetic.records()
        for record in seeds.values():
            for arm in claims.HEADROOM:
                ends = rng.binomial(lab_synthetic.N, 0.60, size=2)
                middle = rng.binomial(lab_synthetic.N, 0.45, size=3)
                record["retrieval"][arm]["single_needle"]["correct"][-1] = [ends[0], *middle, ends[1]]
        held += bool(claims.check("no_consistent_u", seeds).holds)
    assert held <= 2


def test_claims_report_their_verdict_standing_and_evidence():
    text = claims.report(claims.check("flat_arms", lab_synthetic.records()))
    assert text.startswith("Claim: ") and "holds on seeds 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 (exploratory" in \
        " ".join(text.split())
    assert all(len(line) <= 88 for line in text.splitlines())
    renamed = {20 + s: r for s, r in lab_synthetic.records().items()}
    assert "(confirmatory: the claim was written from other seeds)" in " ".join(
        claims.report(claims.check("flat_arms", renamed)).split())
    with pytest.raises(ValueError, match="claim_name"):
        claims.check("no_such_claim", lab_synthetic.records())
    with pytest.raises(ValueError, match="sweep"):
        claims.check("shared_rate_is_near_best", lab_synthetic.records())


def test_sweep_claims_follow_the_sweep_cells():
    cells = lab_synthetic.sweep()
    assert all(v.holds and v.standing == "exploratory" for v in claims.check_sweep(cells))
    worse = copy.deepcopy(cells)
    for c in worse["cells"]:
        if c["arm"] == "shaw" and c["lr"] == settings.get_config("full").train.lr:
            c["perplexity_at_L"] *= 1.2
    assert claims.check("shared_rate_is_near_best", sweep=worse).holds is False
    shared = settings.get_config("full").train.lr
    for arms, rule in ((("t5", "shaw", "rope"), "shared_rate_learns_the_needle"),
                       (("sinusoidal_gpt2_init",), "initialisation_does_not_decide_sinusoidal")):
        broken = copy.deepcopy(cells)
        for c in broken["cells"]:
            if c["arm"] in arms and c["lr"] == shared:
                c["needle_at_L"] = 0.2
        assert claims.check(rule, sweep=broken).holds is False, rule
    better = copy.deepcopy(cells)
    for c in better["cells"]:
        if c["arm"] == "p_rope" and c["lr"] == max(settings.get_config("full").sweep.lrs):
            c["perplexity_at_L"] = 7.0          # p-RoPE's best rate beats RoPE's best
    verdict = claims.check("p_rope_costs_text_at_best_rates", sweep=better)
    assert verdict.holds is False and verdict.numbers["best"]["p_rope"] == max(settings.get_config("full").sweep.lrs)


# --- the power calculation and the confirmation run ------------------------------------------


def test_the_power_calculation_that_sized_the_confirmation_run_is_the_one_recorded(development):
    """Each claim frozen for the confirmation run, on the seeds it was written from: its power on the number of
    fresh seeds chosen, recorded at the freeze; that number is the fewest at which every claim that more seeds
    can decide reaches the power asked for."""
    second = [n for n, stage in claims.STAGE.items() if stage == "second"]
    on_development = [claims.check(n, development[n]) for n in second]
    n = len(claims.SECOND_FREEZE["confirmation_seeds"])
    assert claims.confirmation_size(on_development) == n
    assert claims.SECOND_FREEZE["power"] == {v.name: round(claims.claim_power(v, n), 3) for v in on_development}
    monotone = [v for v in on_development if claims.claim_power(v, 40) >= claims.POWER]
    assert all(claims.claim_power(v, n) >= claims.POWER for v in monotone)
    assert not all(claims.claim_power(v, n - 1) >= claims.POWER for v in monotone)


def test_the_headline_reports_the_second_freeze_as_exploratory_until_its_confirmation_run_exists(stored):
    """Without a confirmation run, a claim of the second freeze is reported with its verdict on the seeds it was
    written from, as exploratory, frozen for the confirmation seeds; a claim of the first freeze with its verdict
    on the held-out seeds; a sweep claim on the sweep, exploratory. With a run, the second freeze is judged there."""
    rows = {row.name: row for row in claims.headline(stored)}
    assert set(rows) == set(claims.STAGE)
    for name, row in rows.items():
        assert row.stage == claims.STAGE[name] and row.written_from == tuple(claims.WRITTEN_FROM[name])
        if row.stage == "first":
            assert row.checked_on == tuple(stored.held_out_seeds) == row.frozen_for
            assert row.verdict.standing == "confirmatory" and row.status == "confirmed"
        elif row.stage == "second":
            assert row.checked_on == row.written_from and row.frozen_for == settings.CONFIRMATION_SEEDS
            assert row.verdict.standing == "exploratory" and row.status == "exploratory"
        else:
            assert row.checked_on == row.written_from and row.frozen_for == () and row.status == "exploratory"
    capped = rows["distance_limit_repairs_rope_text"]      # checked on the control run it was written from
    assert capped.checked_on == (0, 1, 2, 3, 4) and capped.verdict.mark != "cannot be checked"
    # given a run at seeds no claim was written from, the second freeze's verdicts there are confirmatory
    fresh = dataclasses.replace(stored.subset(stored.held_out_seeds),
                                seeds={s + 100: r for s, r in stored.subset(stored.held_out_seeds).seeds.items()})
    judged = {row.name: row for row in claims.headline(stored, fresh)}
    assert judged["p_rope_costs_text_at_L"].checked_on == (105, 106, 107, 108, 109)
    assert judged["p_rope_costs_text_at_L"].status == "undecided"
    assert judged["distance_limit_repairs_rope_text"].verdict.mark == "cannot be checked"


def test_the_confirmation_run_is_the_frozen_protocol_and_its_verdicts_are_on_record(stored, development):
    """The stored confirmation run trained the configuration fixed at the second freeze, at seeds no claim was
    written from and none trained before, under the protocol recorded then (its summary carries the history as it
    stood, with no verdict yet); the verdicts recorded afterwards are what the claims compute from its files."""
    run = results.load_confirmation()
    assert run.summary["config_name"] == "confirmation" and run.seed_list() == list(settings.CONFIRMATION_SEEDS)
    assert settings.get_config(run.config) == settings.get_config("confirmation")
    assert run.summary["n_jobs"] == len(runs.jobs(settings.get_config("confirmation"))) == 90
    assert not set(run.seed_list()) & (set(stored.seed_list()) | set(claims.SECOND_FREEZE["written_from"]))
    before = run.summary["claims_history"]["second_freeze"]
    assert before["confirmed"] == {} and before["commit"] == claims.SECOND_FREEZE["commit"]
    assert before["power"] == claims.SECOND_FREEZE["power"]
    on_record = {**claims.SECOND_FREEZE["confirmed"], **claims.CONFIRMATION_RUN["replicated"]}
    computed = {n: claims.check(n, run.seeds, development=development).mark
                for n, stage in claims.STAGE.items() if stage != "sweep"}
    assert computed == on_record
    assert {n for n, mark in on_record.items() if mark == "FAILS"} == {"chunk_boundary_breaks_irope64",
                                                                        "chunked_irope_keeps_needles"}


def test_a_first_freeze_claim_that_fails_on_the_confirmation_seeds_is_not_confirmed(stored):
    """With the confirmation run, a claim of the first freeze is confirmed only where it also holds on the fresh
    seeds: iRoPE-16 keeping the needle held on seeds 5-9 and fails on 100-108, where two runs never learned it."""
    run = results.load_confirmation()
    rows = {row.name: row for row in claims.headline(stored, run)}
    kept = rows["chunked_irope_keeps_needles"]
    assert kept.verdict.holds is True and kept.replication.holds is False and kept.status == "failed"
    assert kept.replication.seeds == settings.CONFIRMATION_SEEDS
    # a claim the run cannot check keeps its held-out verdict; one that replicates stays confirmed
    assert rows["ntk_protects_text"].replication is None and rows["ntk_protects_text"].status == "confirmed"
    assert rows["breaking_arms"].replication.holds and rows["breaking_arms"].status == "confirmed"
    assert all(row.replication is None for row in rows.values() if row.stage != "first")
    second = {n: row for n, row in rows.items() if row.stage == "second"}
    assert all(row.checked_on == settings.CONFIRMATION_SEEDS and row.verdict.standing == "confirmatory"
               for row in second.values())
    assert {n: row.verdict.mark for n, row in second.items()} == claims.SECOND_FREEZE["confirmed"]


def test_the_power_of_a_test_follows_its_kind():
    # an interval claim gains power with seeds, an every-seed claim loses it
    mean = claims.Test("mean>", "x", (0.4, 0.6, 0.5, 0.7, 0.3), 0.0)
    every = claims.Test("every>=", "x", (0.4, 0.6, 0.5, 0.7, 0.3), 0.2)
    assert claims.power_of_test(mean, 3) < claims.power_of_test(mean, 6) < claims.power_of_test(mean, 12)
    assert claims.power_of_test(every, 3) > claims.power_of_test(every, 6) > claims.power_of_test(every, 12)
    sd = float(np.std(mean.values, ddof=1))
    assert claims.power_of_test(mean, 4) == pytest.approx(stats.t_power(0.5, sd, 4))
    rate = claims.Test("rate>=", "runs", (True,) * 9 + (False,), 0.75, per_seed=10)
    assert claims.power_of_test(rate, 5) == pytest.approx(stats.wilson_power(0.9, 50, 0.75))
    exists = claims.Test("exists", "q", (1.0, 0.0, 0.0, 0.0), None)
    assert claims.power_of_test(exists, 3) == pytest.approx(1 - 0.75 ** 3)


# --- resuming a run ------------------------------------------------------------------------


def test_a_resumed_run_keeps_jobs_of_its_fingerprint_and_sets_the_others_aside(tmp_path):
    folder = tmp_path / "jobs"
    folder.mkdir()
    for name, stamp in (("arm-0-rope", "a" * 64), ("arm-0-nope", "b" * 64), ("sweep-0-t5-0.01", None)):
        record = {"job": name.split("-"), "result": {}}
        if stamp:
            record["fingerprint"] = stamp
        (folder / f"{name}.json").write_text(json.dumps(record))
    done = runs.finished_jobs(folder, "a" * 64)
    assert set(done) == {"arm-0-rope"}
    assert sorted(p.name for p in folder.iterdir()) == ["arm-0-rope.json"]
    assert sorted(p.name for p in (tmp_path / "stale-jobs").iterdir()) == ["arm-0-nope.json", "sweep-0-t5-0.01.json"]


def test_the_job_fingerprint_follows_the_configuration(traced):
    reduced = settings.get_config("reduced")
    assert runs.job_fingerprint(reduced.with_changes(train={"steps": 61})) != runs.job_fingerprint(reduced)


def test_the_readme_states_the_stored_runs_cost():
    """The README's figures for the stored run (jobs, CPU-minutes in all and by kind, wall
    minutes, peak memory) are those its summary.json records."""
    import re

    summary = results.load_results().summary
    text = " ".join((ROOT / "README.md").read_text().split())
    by_kind = summary["cpu_seconds_by_kind"]
    stated = (f"The stored run is {summary['n_jobs']} jobs: {summary['cpu_seconds'] / 60:.1f} CPU-minutes in all "
              f"({by_kind['arm'] / 60:.1f} for the 100 trained arms, {by_kind['sweep'] / 60:.1f} for the sweep), "
              f"{summary['wall_seconds'] / 60:.1f} minutes of wall time on two workers")
    assert stated in text
    load = summary["sessions"][0]["load_average_before"][0]
    assert re.search(rf"load average was {load:.1f} when it started\), and at most "
                     rf"{summary['peak_memory_mib_per_process']:.0f} MiB per process", text)
    # and the confirmation run's, with what it found
    run = results.load_confirmation().summary
    stated = (f"The confirmation run is {run['n_jobs']} jobs (every arm at nine seeds, both interventions on the "
              f"far keys, no RoPE extension and no sweep): {run['cpu_seconds'] / 60:.1f} CPU-minutes, "
              f"{run['wall_seconds'] / 60:.1f} minutes of wall time on two workers (load average "
              f"{run['sessions'][0]['load_average_before'][0]:.1f} at the start), at most "
              f"{run['peak_memory_mib_per_process']:.0f} MiB per process")
    assert stated in text
    held = sum(mark == "holds" for mark in claims.SECOND_FREEZE["confirmed"].values())
    assert f"{held} of the {len(claims.SECOND_FREEZE['confirmed'])} claims frozen for it held there" in text


def test_a_claim_is_quoted_as_paragraphs_with_both_verdicts_and_its_status(stored):
    """The chapters quote a claim as Markdown that wraps on any page: its name and status, its statement, its
    verdict and on which seeds, its verdict on the fresh seeds where the confirmation run checked it again, and
    its evidence there."""
    rows = {row.name: row for row in claims.headline(stored, results.load_confirmation())}
    text = claims.standing_markdown(rows["chunked_irope_keeps_needles"], rows["shared_rate_is_near_best"])
    kept, sweep = text.split("\n\n")
    assert kept.startswith("**`chunked_irope_keeps_needles`: failed.** Claim: iRoPE-16 answers")
    assert "Verdict: holds on seeds 5-9, which it was not written from; on the fresh seeds 100-108, FAILS." in kept
    assert "On the fresh seeds: iRoPE-16 at 8L: 0.49/" in kept
    assert sweep.startswith("**`shared_rate_is_near_best`: exploratory.**")
    assert "on seeds 0, 1, some of which it was written from." in sweep and "fresh seeds" not in sweep
    assert text._repr_markdown_() == text
    assert [claims.seed_range(s) for s in ((5, 6, 7, 8, 9), (0, 1), (100, 104), ())] == ["5-9", "0, 1", "100, 104", ""]
