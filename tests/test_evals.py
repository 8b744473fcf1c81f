"""companion.lab.evals: any callable model; oracle and uniform models pin the scales."""
from __future__ import annotations

import math

import pytest
import torch

from companion.lab import evals, stdlib_corpus, tasks
from companion.lab.models import TinyTransformer
from companion.lab.settings import ModelConfig

V = 256


def periodic(n=5000):
    return torch.arange(n) % V


def oracle_next(tokens):
    """Knows the periodic stream: the next token is always (x + 1) mod V."""
    return 1e4 * torch.nn.functional.one_hot((tokens + 1) % V, V).float()


def uniform(tokens):
    return torch.zeros(*tokens.shape, V)


def task_oracle(task):
    """A callable that looks each example up and predicts its true next token everywhere."""
    table = {tuple(row[:-1].tolist()): row[1:] for row in task.tokens}

    def fn(tokens):
        nxt = torch.stack([table[tuple(row.tolist())] for row in tokens])
        return 1e4 * torch.nn.functional.one_hot(nxt, V).float()

    return fn


def test_oracle_perplexity_is_one_and_uniform_is_the_vocabulary_size():
    windows = stdlib_corpus.text_windows(periodic(), 64, 20)
    assert evals.perplexity(oracle_next, windows) == pytest.approx(1.0, abs=1e-12)
    assert evals.perplexity(uniform, windows) == pytest.approx(V, rel=1e-12)


def test_perplexity_by_length_scales_and_counts():
    rows = evals.perplexity_by_length(uniform, periodic(), [16, 64], tokens_per_length=1024, batch_tokens=80)
    assert [r["length"] for r in rows] == [16, 64]
    assert [r["n_windows"] for r in rows] == [64, 16] and all(r["n_tokens"] == 1024 for r in rows)
    assert all(r["defined"] and r["error"] is None and r["perplexity"] == pytest.approx(V) for r in rows)
    rows = evals.perplexity_by_length(oracle_next, periodic(), 32)
    assert rows[0]["perplexity"] == pytest.approx(1.0)


def test_undefined_lengths_are_recorded_not_raised():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig("learned", d_model=16, n_heads=2, context_length=16))
    rows = evals.perplexity_by_length(model, periodic(), [16, 32], tokens_per_length=256)
    assert rows[0]["defined"] and rows[0]["perplexity"] > 1
    assert rows[1] == {"length": 32, "n_windows": 8, "n_tokens": 256, "perplexity": None, "defined": False,
                       "error": rows[1]["error"], "perplexity_past": None, "interval": None}
    assert "max_positions" in rows[1]["error"]
    grid = evals.accuracy_grid(model, [16, 32], [0.0, 1.0], n_examples=4)
    assert [r["defined"] for r in grid] == [True, True, False, False]
    assert grid[2]["accuracy"] is None and "max_positions" in grid[2]["error"]


def test_oracle_retrieval_accuracy_is_one_and_uniform_is_zero():
    task = tasks.retrieval(30, 50, seed=1, n_needles=3)
    result = evals.answer_accuracy(task_oracle(task), task, batch_size=7)
    assert result == {"accuracy": 1.0, "n_examples": 30}
    assert evals.answer_correct(task_oracle(task), task).all()
    result = evals.answer_accuracy(uniform, task)
    assert result["accuracy"] == 0.0


def test_accuracy_grid_with_an_oracle_that_reads_the_needle():
    def reader(tokens):
        """Finds '@' + the queried key in its input and predicts the value digits after the query's '='."""
        logits = torch.zeros(*tokens.shape, V)
        for b, row in enumerate(tokens):
            text = stdlib_corpus.decode(row)
            q = text.rindex("?")
            key = text[q + 1:q + 3]
            value = text[text.index("@" + key + "=") + 4:][:2]
            logits[b, q + 3, ord(value[0])] = 1
            if q + 4 < len(text):
                logits[b, q + 4, ord(value[1])] = 1
        return logits

    grid = evals.accuracy_grid(reader, [40, 80], [0.0, 0.5, 1.0], n_examples=6, n_needles=2)
    assert len(grid) == 6 and {(r["length"], r["depth"]) for r in grid} == {(n, d) for n in (40, 80) for d in (0, .5, 1)}
    assert all(r["accuracy"] == 1.0 and r["n_examples"] == 6 for r in grid)


def test_a_module_is_put_in_eval_mode_and_run_without_gradients():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig("rope", d_model=16, n_heads=2, context_length=16)).train()
    fn = evals.as_model_fn(model)
    out = fn(torch.zeros(1, 4, dtype=torch.long))
    assert not model.training and not out.requires_grad
    ppl = evals.perplexity(model, stdlib_corpus.text_windows(periodic(), 16, 4))
    assert 1 < ppl < 2 * V


def test_docstring_example():
    corpus = stdlib_corpus.load_corpus()
    rows = evals.perplexity_by_length(uniform, corpus.validation, [64, 128])
    assert [round(r["perplexity"], 6) for r in rows] == [256.0, 256.0]


def test_bad_input_raises_value_error_naming_the_parameter():
    windows = stdlib_corpus.text_windows(periodic(), 8, 2)
    with pytest.raises(ValueError, match="model"):
        evals.perplexity("not a model", windows)
    with pytest.raises(ValueError, match="model must return logits"):
        evals.perplexity(lambda t: torch.zeros(t.shape[0], V), windows)
    with pytest.raises(ValueError, match="windows"):
        evals.perplexity(uniform, torch.zeros(3, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="batch_size"):
        evals.perplexity(uniform, windows, batch_size=0)
    with pytest.raises(ValueError, match="lengths"):
        evals.perplexity_by_length(uniform, periodic(), [])
    with pytest.raises(ValueError, match="lengths"):
        evals.perplexity_by_length(uniform, periodic(), [16, 0])
    with pytest.raises(ValueError, match="tokens_per_length"):
        evals.perplexity_by_length(uniform, periodic(), [16], tokens_per_length=0)
    with pytest.raises(ValueError, match="depths"):
        evals.accuracy_grid(uniform, [40], [0.5, 1.5])
    with pytest.raises(ValueError, match="n_examples"):
        evals.accuracy_grid(uniform, [40], [0.5], n_examples=0)
    with pytest.raises(ValueError, match="task"):
        evals.answer_accuracy(uniform, "task")


def test_log_probabilities_are_exact_for_a_known_distribution():
    """Logits log(p) for a fixed p give perplexity exp(H(p, next)) exactly."""
    p = torch.full((V,), 0.5 / (V - 1))
    p[1] = 0.5
    logp = p.log()
    stream = torch.zeros(200, dtype=torch.long)
    stream[1::2] = 1  # 0, 1, 0, 1, ...: half the targets are token 1 (p = 0.5), half token 0
    windows = stdlib_corpus.text_windows(stream, 10, 10)
    ppl = evals.perplexity(lambda t: logp.expand(*t.shape, V), windows)
    assert ppl == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.5 / (V - 1))) / 2), rel=1e-9)


def test_perplexity_past_L_scores_only_the_late_positions():
    """A model that is right before position L and uniform from L on: the past-L perplexity is V."""
    L = 16

    def breaks_at_L(tokens):
        logits = oracle_next(tokens)
        logits[:, L:] = 0.0
        return logits

    row = evals.perplexity_by_length(breaks_at_L, periodic(), [4 * L], past=L)[0]
    assert row["perplexity_past"] == pytest.approx(V, rel=1e-9)
    assert row["perplexity"] == pytest.approx(V ** (3 / 4), rel=1e-6)     # a quarter of the window is right
    assert evals.perplexity_by_length(breaks_at_L, periodic(), [L], past=L)[0]["perplexity_past"] is None


def test_bootstrap_interval_brackets_the_perplexity_and_shrinks_to_a_point():
    nll = torch.distributions.Exponential(1.0).sample((400,)).double().numpy() * 10
    low, high = evals.bootstrap_interval(nll, 10, 2000, seed=3)
    point = math.exp(nll.sum() / (400 * 10))
    assert low < point < high and high - low < 0.3 * point
    assert evals.bootstrap_interval([5.0] * 50, 10, 100) == pytest.approx([math.exp(0.5)] * 2)
    assert evals.bootstrap_interval(nll, 10, 500, seed=3) == evals.bootstrap_interval(nll, 10, 500, seed=3)
    row = evals.perplexity_by_length(uniform, periodic(), [32], n_bootstrap=50)[0]
    assert row["interval"] == pytest.approx([V, V])
    with pytest.raises(ValueError, match="window_nll"):
        evals.bootstrap_interval([], 10)
    with pytest.raises(ValueError, match="n_bootstrap"):
        evals.perplexity_by_length(uniform, periodic(), [32], n_bootstrap=-1)
    with pytest.raises(ValueError, match="level"):
        evals.bootstrap_interval(nll, 10, level=1.5)


def test_attention_beyond_counts_the_weight_on_far_keys():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig("nope", d_model=16, n_heads=2, n_layers=1, context_length=16))
    with torch.no_grad():                       # zero queries: uniform causal attention
        model.blocks[0].attn.qkv.weight[:16] = 0.0
        model.blocks[0].attn.qkv.bias[:16] = 0.0
    task = tasks.retrieval(3, 41, depth=0.5, seed=2)
    query = 40 - 2                              # the position predicting the first answer digit
    share = evals.attention_beyond(model, task, 16)
    assert share == pytest.approx([(query - 16 + 1) / (query + 1)], rel=1e-5)
    with pytest.raises(ValueError, match="attention_weights"):
        evals.attention_beyond(uniform, task, 16)


# --- sums by file and block, and the file-clustered bootstrap ----------------------------


def test_sums_by_file_and_block_add_up_to_the_perplexity():
    """Each scored token counted once, in the file of the token it predicts and the block of its position."""
    stream = periodic(1000)
    starts = [0, 300, 700]

    def half_right(tokens):           # right at even positions, uniform at odd ones
        logits = oracle_next(tokens)
        logits[:, 1::2] = 0.0
        return logits

    row = evals.perplexity_by_length(half_right, stream, [40], file_starts=starts, blocks=[0, 10, 20, 40])[0]
    nll, count = torch.tensor(row["nll_by_file"], dtype=torch.float64), torch.tensor(row["tokens_by_file"])
    assert count.sum() == row["n_tokens"] == 24 * 40 and count.shape == (3, 3)
    assert math.exp(nll.sum() / count.sum()) == pytest.approx(row["perplexity"], rel=1e-12)
    # files: targets at offsets 1..960, so 299, 400 and 261 tokens; blocks of 10, 10 and 20 positions
    assert count.sum(1).tolist() == [299, 400, 261] and count.sum(0).tolist() == [240, 240, 480]
    # half of each block's positions are uniform guesses (log V), the others certain
    assert (nll.sum(0) / count.sum(0)).tolist() == pytest.approx([math.log(V) / 2] * 3, rel=1e-9)
    with pytest.raises(ValueError, match="file_starts"):
        evals.perplexity_by_length(half_right, stream, [40], file_starts=[5, 300])
    with pytest.raises(ValueError, match="blocks"):
        evals.perplexity_by_length(half_right, stream, [40], file_starts=starts, blocks=[0, 20, 10])


def test_file_bootstrap_resamples_files_not_windows():
    from companion.lab import stats
    # two files with very different losses: resampling files moves the perplexity between them
    nll, count = [100.0, 400.0], [100, 100]
    low, high = stats.cluster_bootstrap(nll, count, 2000, seed=1)
    assert low == pytest.approx(math.e, rel=1e-9) and high == pytest.approx(math.e ** 4, rel=1e-9)
    # one file alike everywhere: no spread
    assert stats.cluster_bootstrap([50.0], [25], 100) == pytest.approx([math.e ** 2] * 2)
    row = evals.perplexity_by_length(uniform, periodic(), [32], n_bootstrap=50, file_starts=[0, 1000, 3000])[0]
    assert row["interval"] == pytest.approx([V, V])
    with pytest.raises(ValueError, match="tokens_by_cluster"):
        stats.cluster_bootstrap([1.0], [0])


# --- depth bins and chunk boundaries -------------------------------------------------------


def test_depth_bin_grid_jitters_inside_bins_and_splits_at_chunk_boundaries():
    rows = evals.depth_bin_grid(uniform, [64, 128], 4, 30, seed=2, chunks=(16,))
    assert len(rows) == 8 and [r["bin"] for r in rows[:4]] == [[0.0, 0.25], [0.25, 0.5], [0.5, 0.75], [0.75, 1.0]]
    assert all(r["correct"] == 0 and r["accuracy"] == 0.0 for r in rows)
    for r in rows:
        across, n_across, clear, n_clear = r["straddle"][16]
        assert n_across + n_clear == 30 and across == clear == 0
    # an oracle is right everywhere, straddling or not; about 5 of 16 starts straddle a boundary of 16
    oracle_rows = []
    for r_length in (64, 128):
        for j in range(4):
            rng = __import__("numpy").random.default_rng([2, r_length, j])
            depth = (j + rng.random(30)) / 4
            task = tasks.retrieval(30, r_length + 1, depth=depth, seed=2 * 100_003 + r_length * 101 + j)
            starts = task.needle_start.numpy()
            assert ((starts >= round(j / 4 * (r_length - 11))) & (starts <= round((j + 1) / 4 * (r_length - 11)))).all()
            oracle_rows.append(task)
    share = sum(r["straddle"][16][1] for r in rows) / (8 * 30)
    assert 0.2 < share < 0.45
    assert evals.straddles([10, 11, 12, 15, 16], 6, 16).tolist() == [False, True, True, True, False]
    with pytest.raises(ValueError, match="n_bins"):
        evals.depth_bin_grid(uniform, [64], 0, 10)


def test_learned_table_past_its_rows_is_recorded_in_the_bin_grid():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig("learned", d_model=16, n_heads=2, n_layers=1, context_length=32))
    rows = evals.depth_bin_grid(model, [32, 64], 2, 3, chunks=(8,))
    assert [r["defined"] for r in rows] == [True, True, False, False]
    assert rows[2]["accuracy"] is None and "max_positions" in rows[2]["error"]
