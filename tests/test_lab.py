"""companion.lab: configurations, the fingerprint, the stored results, and the reduced run end to end.

The end-to-end run is marked ``lab``; select it alone with ``pytest -m lab`` or skip
it with ``pytest -m "not lab"``.
"""
from __future__ import annotations

import ast
import json
import math
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import companion
from companion import lab
from companion.lab import experiments, fingerprint, results
from companion.lab.models import SCHEMES

ROOT = Path(__file__).resolve().parent.parent
META = {"experiment", "config_name", "config", "companion_version", "code_fingerprint", "code_sources", "corpus",
        "python", "torch", "device", "platform"}


def test_configs_hold_every_arm_seed_and_method():
    for name, cfg in experiments.CONFIGS.items():
        L = cfg["context_length"]
        arms = cfg["arms"]
        assert {a["scheme"] for a in arms.values()} == set(SCHEMES), name
        assert arms[f"irope_chunk{L // 4}"]["irope_chunk"] == L // 4 < L
        assert arms[f"irope_chunk{L}"]["irope_chunk"] == L
        assert "irope" not in arms       # iRoPE always with its chunked RoPE layers, as in Llama 4
        assert cfg["eval"]["multiples"] == [1, 2, 4, 8]
        assert set(cfg["extension"]["methods"]) == {"none", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code"}
        assert cfg["extension"]["factor"] == 4 and len(set(cfg["extension"]["dynamic_lengths"])) > 1
        assert len(cfg["seeds"]) >= 2 and len(cfg["lr_sweep"]["lrs"]) >= 2
    assert len(experiments.CONFIGS["full"]["seeds"]) >= 3
    assert experiments.CONFIGS["full"]["eval"]["tokens_per_length"] is None      # all held-out text
    full = experiments.get_config("full")
    assert full == experiments.CONFIGS["full"] and full is not experiments.CONFIGS["full"]
    with pytest.raises(ValueError, match="config"):
        experiments.get_config("huge")
    with pytest.raises(ValueError, match="config"):
        experiments.get_config({"seeds": [0]})


def test_every_arm_gets_the_same_budget_and_every_seed_every_arm():
    cfg = experiments.get_config("full")
    arm_jobs = [j for j in experiments.jobs(cfg) if j[0] == "arm"]
    assert sorted((s, a) for _, s, a in arm_jobs) == sorted((s, a) for s in cfg["seeds"] for a in cfg["arms"])
    sweep = [j for j in experiments.jobs(cfg) if j[0] == "sweep"]
    assert len(sweep) == len(cfg["arms"]) * len(cfg["lr_sweep"]["lrs"]) * len(cfg["lr_sweep"]["seeds"])
    # one training configuration for all arms: only the position options differ
    assert all(set(options) <= {"scheme", "irope_chunk"} for options in cfg["arms"].values())


def test_chance_levels():
    chance = experiments.chance_levels("full")
    assert chance["single_needle"] == {"random": 0.01, "copy": 1.0}
    assert chance["multi_key"]["copy"] == 1 / experiments.CONFIGS["full"]["probes"]["multi_key"]["n_needles"]
    assert chance["variable_tracking"]["copy"] == 0.5


def test_peak_memory_and_cpu_time_are_positive():
    assert 10 < experiments.peak_memory_mib() < 1e6
    assert experiments.cpu_seconds() > 0
    with pytest.raises(ValueError, match="who"):
        experiments.peak_memory_mib("others")


def test_train_arm_is_seeded_and_rejects_unknown_arms():
    cfg = experiments.get_config("reduced")
    cfg["train"].update(steps=4, warmup=1)
    corpus = lab.data.load_corpus()
    a, info = experiments.train_arm("nope", 1, cfg, corpus)
    b, _ = experiments.train_arm("nope", 1, cfg, corpus)
    c, _ = experiments.train_arm("nope", 2, cfg, corpus)
    assert info["parameters"] > 0 and len(info["loss"]) == 4
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


@pytest.fixture(scope="module")
def hashes():
    return fingerprint.source_hashes()


def test_fingerprint_covers_the_math_modules_the_experiments_run(hashes):
    for name in ("companion.rope:RotaryEmbedding.forward", "companion.scaling:yarn_code",
                 "companion.scaling:yarn", "companion.relative:T5RelativeBias.forward",
                 "companion.alibi:slopes", "companion.lab.models:chunked_causal_mask",
                 "companion.lab.evals:bootstrap_interval", "companion.lab.data:variable_tracking",
                 "companion.lab.train:train", "companion.lab.experiments:extension", "companion.scaling:<constants>"):
        assert name in hashes, name
    # code the experiments never call does not count
    assert "companion.scaling:pi_bound_ratio" not in hashes and not any(k.startswith("companion.symbolic") for k in hashes)
    assert fingerprint.changed(hashes, hashes) == []
    edited = {**hashes, "companion.rope:RotaryEmbedding.forward": "0" * 64}
    assert fingerprint.changed(hashes, edited) == ["companion.rope:RotaryEmbedding.forward"]


def test_stored_results_are_not_stale(hashes):
    """The book reads the stored results: they must come from today's configuration and code."""
    stored = results.load_results()
    assert stored.summary["config_name"] == "full"
    assert stored.config == experiments.get_config("full"), (
        "the stored results were produced by another experiment definition: rerun `python -m companion.lab --config full`")
    changed = fingerprint.changed(stored.summary["code_sources"], hashes)
    assert not changed, ("the code the experiments execute changed since the stored run (" + ", ".join(changed)
                         + "): rerun `python -m companion.lab --config full`")
    assert stored.summary["code_fingerprint"] == fingerprint.fingerprint(hashes)


# --- the stored results as package data -------------------------------------------------


def test_stored_results_are_package_data_and_the_only_copy():
    stored = results.load_results()
    package = Path(companion.__file__).resolve().parent
    assert stored.folder == results.STORED and results.STORED.parent == package / "lab"
    assert not (ROOT / "lessons" / "lab_results").exists()
    files = {p.name for p in results.STORED.glob("*.json")}
    assert files == {f"seed{s}.json" for s in stored.config["seeds"]} | {"lr_sweep.json", "summary.json"}
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "lab/stored/*.json" in package_data["companion"]
    for seed, record in stored.seeds.items():
        assert META <= set(record) and record["seed"] == seed
        assert set(record["extrapolation"]) == set(stored.arms) == set(record["retrieval"])


def test_loader_and_spread():
    stored = results.load_results()
    values = results.per_seed(stored, "extrapolation", "rope", "perplexity", 0)
    assert len(values) == len(stored.config["seeds"]) >= 3 and all(v > 1 for v in values)
    s = results.spread([1.0, 2.0, 4.0])
    assert (s.mean, s.low, s.high) == (7 / 3, 1.0, 4.0) and s.sd == pytest.approx(math.sqrt(7 / 3))
    assert s.format(1) == "2.3 [1.0-4.0]"
    with pytest.raises(ValueError, match="values"):
        results.spread([1.0, None])
    with pytest.raises(ValueError, match="folder"):
        results.load_results(ROOT)


@pytest.mark.parametrize("notebook", ["07_long_context.ipynb", "09_lab.ipynb"])
def test_chapter_runs_alone_from_the_installed_package(notebook, tmp_path):
    """Copied alone into an empty folder, the chapter runs in a fresh kernel: no checkout files, no network."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    shutil.copy(ROOT / "lessons" / notebook, tmp_path / notebook)
    nb = nbformat.read(tmp_path / notebook, as_version=4)
    probe = ("from companion.lab import results as _r\nimport os as _os\n"
             "print('STORED', _r.STORED, 'CWD', _os.getcwd())")
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    assert sorted(p.name for p in tmp_path.iterdir()) == [notebook]          # it wrote nothing beside itself
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    stored, cwd = out.split("STORED ")[1].split(" CWD ")
    assert Path(stored.strip()) == results.STORED and Path(cwd.strip()) == tmp_path
    assert "lessons" not in Path(stored.strip()).parts


# --- the reduced run, end to end ---------------------------------------------------------


@pytest.mark.lab
def test_reduced_lab_runs_end_to_end(tmp_path):
    """One process per seed (``--part``), then ``--merge``: the way the stored results are made."""
    cfg = experiments.get_config("reduced")
    for part in range(len(cfg["seeds"])):
        paths = experiments.run_all("reduced", tmp_path, stream=None, part=part)
        assert set(paths) == {f"seed{cfg['seeds'][part]}", f"lr_sweep_part{part}", f"summary_part{part}"}
    assert set(experiments.merge_parts(tmp_path)) == {"lr_sweep", "summary"}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"seed{s}.json" for s in cfg["seeds"]] + ["lr_sweep.json", "summary.json"])
    run = results.load_results(tmp_path)
    summary = run.summary
    assert summary["processes"] == len(cfg["seeds"]) == len(summary["part_wall_seconds"])
    assert summary["config"] == cfg and summary["config_name"] == "reduced"
    assert summary["code_fingerprint"] == fingerprint.fingerprint(summary["code_sources"])
    assert summary["wall_seconds"] > 0 and summary["cpu_seconds"] > 0 and summary["peak_memory_mib_per_process"] > 0
    assert summary["n_jobs"] == len(experiments.jobs(cfg))
    L = cfg["context_length"]
    lengths = [L, 2 * L, 4 * L, 8 * L]
    for seed, record in run.seeds.items():
        assert META <= set(record) and record["corpus"]["sha256"] == lab.data.load_corpus().sha256
        ex = record["extrapolation"]
        assert set(ex) == set(cfg["arms"])
        learned = ex["learned"]
        assert learned["status"] == ["ok", "not defined", "not defined", "not defined"]
        assert learned["perplexity"][1:] == [None] * 3 and "max_positions" in learned["errors"][1]
        for arm, r in ex.items():
            assert r["lengths"] == lengths and 1 < r["perplexity"][0] < 256, arm
            assert r["perplexity_past_L"][0] is None
            assert r["interval"][0][0] <= r["perplexity"][0] <= r["interval"][0][1]
        for arm, by_task in record["retrieval"].items():
            for task in experiments.TASKS:
                t = by_task[task]
                assert t["lengths"] == lengths and len(t["accuracy"]) == 4
                assert all(len(row) == len(cfg["eval"]["depths"]) for row in t["accuracy"])
                assert set(t["chance"]) == {"random", "copy"}
            assert (by_task["attention_beyond_L"] is None) == (arm == "learned")
        ext = record["extension"]
        assert ext["target_length"] == 4 * L and set(ext["methods"]) == set(cfg["extension"]["methods"])
        assert ext["methods"]["dynamic_ntk"]["finetune_lengths"] == cfg["extension"]["dynamic_lengths"]
        assert ext["methods"]["ntk"]["finetune_lengths"] == [4 * L]
        zero = {m: r["zero_shot"] for m, r in ext["methods"].items()}
        assert zero["dynamic_ntk"]["perplexity_at_L"] == zero["none"]["perplexity_at_L"]
        assert ext["methods"]["yarn"]["attention_factor_at_target"] == pytest.approx(0.1 * math.log(4) + 1)
        # the shipped ramp keeps the fastest pair at L = 32, the paper's keeps none
        none, code, paper = (ext["methods"][m]["inv_freq_at_target"] for m in ("none", "yarn_code", "yarn"))
        assert code[0] == pytest.approx(none[0]) and paper[0] < none[0]
    cells = run.lr_sweep["cells"]
    assert {(c["arm"], c["lr"]) for c in cells} == {(a, lr) for a in cfg["arms"] for lr in cfg["lr_sweep"]["lrs"]}


def test_command_line_refuses_to_overwrite_the_stored_results_with_another_configuration(tmp_path):
    with pytest.raises(ValueError, match="out_dir"):
        experiments.run_all("reduced", None)
    with pytest.raises(ValueError, match="part"):
        experiments.run_all("reduced", tmp_path, part=5)
    with pytest.raises(ValueError, match="out_dir"):
        experiments.merge_parts(tmp_path)
    done = subprocess.run([sys.executable, "-m", "companion.lab", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--part" in done.stdout and "--merge" in done.stdout
    done = subprocess.run([sys.executable, "-m", "companion.lab", "--config", "reduced"], capture_output=True, text=True)
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
