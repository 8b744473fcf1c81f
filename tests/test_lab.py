"""companion.lab: configurations, fingerprint, and the reduced run end to end.

The end-to-end run is marked ``lab``; select it alone with ``pytest -m lab`` or skip
it with ``pytest -m "not lab"``.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import time
from pathlib import Path

import pytest
import torch

import companion
from companion import data, lab
from companion.models import SCHEMES

META = {"experiment", "config_name", "config", "companion_version", "code_fingerprint", "corpus", "python",
        "torch", "device", "threads", "platform", "seconds", "peak_memory_mib"}


def test_configs_name_every_scheme_and_the_book_lengths():
    for name, cfg in lab.CONFIGS.items():
        assert cfg["schemes"] == list(SCHEMES), name
        assert cfg["eval"]["multiples"] == [1, 2, 4, 8]
        assert set(cfg["extension"]["methods"]) == {"none", "pi", "ntk", "dynamic_ntk", "yarn"}
        assert cfg["extension"]["factor"] == 4
    assert lab.get_config("full") == lab.CONFIGS["full"] and lab.get_config("full") is not lab.CONFIGS["full"]
    with pytest.raises(ValueError, match="config"):
        lab.get_config("huge")
    with pytest.raises(ValueError, match="config"):
        lab.get_config({"seed": 0})


def test_code_fingerprint_covers_every_module(tmp_path):
    fp = lab.code_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", fp)
    folder = tmp_path / "pkg"
    shutil.copytree(Path(companion.__file__).parent, folder, ignore=shutil.ignore_patterns("figures", "__pycache__"))
    assert lab.code_fingerprint(folder) == fp
    (folder / "rope.py").write_text((folder / "rope.py").read_text() + "\n# changed\n")
    assert lab.code_fingerprint(folder) != fp


def test_peak_memory_is_positive():
    assert 10 < lab.peak_memory_mib() < 1e6


def test_format_table_marks_undefined_lengths():
    results = {"lengths": [8, 16], "schemes": {"learned": {"perplexity": [3.0, None]}, "rope": {"perplexity": [3.0, 2e4]}}}
    table = lab.format_table("extrapolation", results)
    assert "n/a" in table and "2e+04" in table and table.splitlines()[0] == "extrapolation"
    with pytest.raises(ValueError, match="experiment"):
        lab.format_table("other", results)


def test_train_scheme_is_shared_between_experiments():
    cfg = lab.get_config("reduced")
    cfg["train"]["steps"] = 4
    cfg["schemes"] = ["nope"]
    corpus = data.load_corpus()
    model, info = lab.train_scheme("nope", cfg, corpus, progress=False)
    again, _ = lab.train_scheme("nope", cfg, corpus, progress=False)
    assert again is model and info["parameters"] > 0 and len(info["loss"]) == 4
    with pytest.raises(ValueError, match="scheme"):
        lab.train_scheme("xpos", cfg, corpus)


@pytest.mark.lab
def test_reduced_lab_runs_end_to_end(tmp_path, capsys):
    threads = torch.get_num_threads()
    start = time.perf_counter()
    try:
        assert lab.main(["--config", "reduced", "--out", str(tmp_path), "--quiet"]) == 0
    finally:
        torch.set_num_threads(threads)
    seconds = time.perf_counter() - start
    assert seconds < 180
    out = capsys.readouterr().out
    assert "extrapolation" in out and "rope_extension" in out and "lost_in_the_middle" in out

    files = {p.name for p in tmp_path.iterdir()}
    assert files == {"extrapolation.json", "rope_extension.json", "lost_in_the_middle.json", "summary.json"}
    records = {name: json.loads((tmp_path / name).read_text()) for name in files}
    corpus = data.load_corpus()
    for name, record in records.items():
        assert META <= set(record), name
        assert record["config"] == lab.CONFIGS["reduced"] and record["config_name"] == "reduced"
        assert record["companion_version"] == companion.__version__
        assert record["code_fingerprint"] == lab.code_fingerprint()
        assert record["corpus"]["sha256"] == corpus.sha256
        assert record["seconds"] > 0 and record["peak_memory_mib"] > 0
    assert records["summary.json"]["files"] == {"extrapolation": "extrapolation.json",
                                           "rope_extension": "rope_extension.json",
                                           "lost_in_the_middle": "lost_in_the_middle.json"}

    L = lab.CONFIGS["reduced"]["context_length"]
    ex = records["extrapolation.json"]["results"]
    assert ex["lengths"] == [L, 2 * L, 4 * L, 8 * L] and set(ex["schemes"]) == set(SCHEMES)
    learned = ex["schemes"]["learned"]
    assert learned["defined"] == [True, False, False, False] and learned["perplexity"][1:] == [None] * 3
    assert learned["status"] == ["ok", "not defined", "not defined", "not defined"]
    assert "max_positions" in learned["errors"][1]
    for scheme, r in ex["schemes"].items():
        assert r["perplexity"][0] is not None and 1 < r["perplexity"][0] < 256, scheme
        assert r["train"]["parameters"] > 0 and math.isfinite(r["train"]["text_loss"])

    ext = records["rope_extension.json"]["results"]
    assert ext["target_length"] == 4 * L and set(ext["methods"]) == {"none", "pi", "ntk", "dynamic_ntk", "yarn"}
    for method, r in ext["methods"].items():
        for part in ("zero_shot", "finetuned"):
            assert set(r[part]) == {"perplexity_at_L", "perplexity_at_target", "retrieval_at_target"}
            assert 0 <= r[part]["retrieval_at_target"] <= 1
        assert len(r["inv_freq_at_target"]) == 8
    assert ext["methods"]["yarn"]["attention_factor_at_target"] == pytest.approx(0.1 * math.log(4) + 1)
    # dynamic NTK follows the input length: at L it is the unscaled model
    zero = {m: r["zero_shot"] for m, r in ext["methods"].items()}
    assert zero["dynamic_ntk"]["perplexity_at_L"] == zero["none"]["perplexity_at_L"]

    lim = records["lost_in_the_middle.json"]["results"]
    depths = lab.CONFIGS["reduced"]["eval"]["depths"]
    assert lim["depths"] == depths and lim["lengths"] == ex["lengths"]
    for scheme, r in lim["schemes"].items():
        assert len(r["accuracy"]) == 4 and all(len(row) == len(depths) for row in r["accuracy"])
        assert len(r["by_length"]) == 4 and len(r["by_depth"]) == len(depths)
    assert lim["schemes"]["learned"]["accuracy"][1] == [None] * len(depths)
    assert lim["schemes"]["learned"]["status"] == ["ok", "not defined", "not defined", "not defined"]
    assert lim["schemes"]["rope"]["status"] == ["ok"] * 4
    assert lim["schemes"]["learned"]["by_length"][1:] == [None] * 3


def test_cached_results_match_the_current_experiment_definitions():
    """The book reads lessons/lab_results/: they must come from today's full configuration."""
    import json
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "lessons" / "lab_results"
    files = sorted(folder.glob("*.json"))
    assert {f.stem for f in files} >= {"extrapolation", "rope_extension", "lost_in_the_middle"}
    for path in files:
        result = json.loads(path.read_text())
        assert result["config_name"] == "full", path.name
        assert result["config"] == lab.get_config("full"), (
            f"{path.name} was produced by another experiment definition: "
            "rerun `python -m companion.lab --config full --out lessons/lab_results`"
        )
