"""companion.lab.stdlib_corpus and companion.lab.tasks: the standard-library corpus and the synthetic tasks."""
from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.lab import stdlib_corpus, tasks


@pytest.fixture(scope="module")
def corpus():
    return stdlib_corpus.load_corpus()


# --- corpus ----------------------------------------------------------------------------------


def test_corpus_is_the_listed_stdlib_files(corpus):
    root = stdlib_corpus.stdlib_dir()
    assert set(corpus.files) | set(corpus.missing) == set(stdlib_corpus.CORPUS_FILES)
    held_out = set(stdlib_corpus.VALIDATION_FILES) | set(stdlib_corpus.TUNING_FILES)
    train = b"".join((root / f).read_bytes() + b"\n" for f in corpus.files if f not in held_out)
    tuning = b"".join((root / f).read_bytes() + b"\n" for f in corpus.files if f in stdlib_corpus.TUNING_FILES)
    valid = b"".join((root / f).read_bytes() + b"\n" for f in corpus.files if f in stdlib_corpus.VALIDATION_FILES)
    assert bytes(corpus.train.numpy()) == train
    assert bytes(corpus.tuning.numpy()) == tuning
    assert bytes(corpus.validation.numpy()) == valid
    assert corpus.sha256 == hashlib.sha256(train + tuning + valid).hexdigest()
    assert corpus.train.dtype == torch.uint8 and corpus.train.numel() > 1_000_000
    assert corpus.validation.numel() > 100_000 and corpus.tuning.numel() > 50_000
    assert not set(stdlib_corpus.TUNING_FILES) & set(stdlib_corpus.VALIDATION_FILES)


def test_validation_starts_are_where_each_file_begins(corpus):
    root = stdlib_corpus.stdlib_dir()
    files = [f for f in corpus.files if f in stdlib_corpus.VALIDATION_FILES]
    assert len(corpus.validation_starts) == len(files)
    for start, name in zip(corpus.validation_starts, files):
        content = (root / name).read_bytes()
        assert bytes(corpus.validation[start:start + len(content)].numpy()) == content


def test_corpus_info_is_plain_data(corpus):
    info = corpus.info()
    assert info["sha256"] == corpus.sha256 and len(info["sha256"]) == 64
    assert info["validation_files"] == [f for f in stdlib_corpus.CORPUS_FILES if f in stdlib_corpus.VALIDATION_FILES and f in corpus.files]
    assert info["tuning_files"] == [f for f in stdlib_corpus.CORPUS_FILES if f in stdlib_corpus.TUNING_FILES and f in corpus.files]
    assert info["train_bytes"] + info["tuning_bytes"] + info["validation_bytes"] == (
        corpus.train.numel() + corpus.tuning.numel() + corpus.validation.numel())


def test_missing_files_are_skipped_and_listed(tmp_path):
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    (tmp_path / "heapq.py").write_bytes(b"y = 2\n")
    c = stdlib_corpus.load_corpus(files=("a.py", "gone.py", "heapq.py"), root=tmp_path)
    assert c.missing == ("gone.py",) and c.files == ("a.py", "heapq.py")
    assert bytes(c.train.numpy()) == b"x = 1\n\n" and bytes(c.validation.numpy()) == b"y = 2\n\n"
    with pytest.raises(ValueError, match="files"):
        stdlib_corpus.load_corpus(files=("a.py",), root=tmp_path)
    with pytest.raises(ValueError, match="files"):
        stdlib_corpus.load_corpus(files="a.py", root=tmp_path)


def test_text_batch_targets_are_the_next_byte_and_deterministic(corpus):
    x, y = stdlib_corpus.text_batch(corpus.train, 4, 32, torch.Generator().manual_seed(3))
    x2, y2 = stdlib_corpus.text_batch(corpus.train, 4, 32, torch.Generator().manual_seed(3))
    assert x.shape == y.shape == (4, 32) and x.dtype == torch.long
    assert torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(x, x2) and torch.equal(y, y2)
    with pytest.raises(ValueError, match="length"):
        stdlib_corpus.text_batch(corpus.validation[:10], 2, 32, torch.Generator())
    with pytest.raises(ValueError, match="generator"):
        stdlib_corpus.text_batch(corpus.train, 2, 8, 0)


def test_text_windows_are_consecutive(corpus):
    w = stdlib_corpus.text_windows(corpus.validation, 16, 5)
    assert w.shape == (5, 17)
    assert torch.equal(w[:, -1][:-1], w[1:, 0])  # window k ends where window k + 1 starts
    assert torch.equal(w.flatten()[:17], corpus.validation[:17].long())
    assert stdlib_corpus.text_windows(corpus.validation[:50], 16).shape == (3, 17)


def test_sha256_and_codec():
    assert stdlib_corpus.sha256(b"abc") == hashlib.sha256(b"abc").hexdigest()
    assert stdlib_corpus.sha256(torch.tensor([97, 98, 99], dtype=torch.uint8)) == stdlib_corpus.sha256(b"abc")
    assert stdlib_corpus.decode(stdlib_corpus.encode("héllo @KQ=37")) == "héllo @KQ=37"
    with pytest.raises(ValueError, match="data"):
        stdlib_corpus.sha256("abc")
    with pytest.raises(ValueError, match="tokens"):
        stdlib_corpus.decode([300])


# --- retrieval -------------------------------------------------------------------------------


NEEDLE = re.compile(r"@([A-Z]{2})=(\d{2})")


def check_retrieval(task, length, n_needles=1):
    assert task.tokens.shape == (task.tokens.shape[0], length)
    for b in range(task.tokens.shape[0]):
        text = task.text(b)
        needles = dict(NEEDLE.findall(text[:-6]))
        assert len(needles) == n_needles and text.count("@") == n_needles
        query = re.fullmatch(r"[a-z @A-Z=0-9]*\?([A-Z]{2})=(\d{2})", text)
        assert query, text
        key, value = query.groups()
        assert needles[key] == value
        pos = task.answer_positions[b]
        assert torch.equal(pos, torch.tensor([length - 2, length - 1]))
        assert torch.equal(task.tokens[b, pos], task.answers[b])
        assert stdlib_corpus.decode(task.answers[b]) == value


@pytest.mark.parametrize("depth", [0.0, 0.3, 0.5, 1.0])
def test_needle_is_at_the_requested_depth(depth):
    length = 50
    task = tasks.retrieval(4, length, depth=depth, seed=1)
    check_retrieval(task, length)
    context, m = length - 6, 6
    start = round(depth * (context - m))
    for b in range(4):
        assert task.text(b)[start:start + m] == "@" + task.text(b)[-5:]
    assert torch.all(task.depth == depth)


@settings(max_examples=40, deadline=None)
@given(length=st.integers(42, 200), depth=st.floats(0, 1), seed=st.integers(0, 2**20), n_needles=st.integers(1, 5))
def test_retrieval_answer_is_the_queried_needles_value(length, depth, seed, n_needles):
    task = tasks.retrieval(3, length, depth=depth, seed=seed, n_needles=n_needles)
    check_retrieval(task, length, n_needles)
    start = round(depth * (length - 12))
    key = task.text(0)[-5:-3]
    assert task.text(0)[start:start + 3] == "@" + key


def test_generators_are_deterministic_under_a_seed():
    for make in (lambda s: tasks.retrieval(5, 60, seed=s), lambda s: tasks.multi_key_retrieval(5, 60, seed=s),
                 lambda s: tasks.no_literal_match_retrieval(5, 60, seed=s),
                 lambda s: tasks.variable_tracking(5, 80, seed=s), lambda s: tasks.copying(5, 21, seed=s)):
        a, b, c = make(7), make(7), make(8)
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.answers, b.answers)
        assert torch.equal(a.answer_positions, b.answer_positions)
        assert not torch.equal(a.tokens, c.tokens)


def test_random_depths_are_recorded():
    task = tasks.retrieval(50, 64, seed=2)
    assert task.depth.min() >= 0 and task.depth.max() <= 1 and task.depth.std() > 0.1
    for b in range(50):
        start = round(float(task.depth[b]) * (64 - 12))
        assert task.text(b)[start] == "@"


def test_per_example_depths():
    task = tasks.retrieval(3, 40, depth=[0.0, 0.5, 1.0], seed=0)
    assert [t.index("@") for t in map(task.text, range(3))] == [0, 14, 28]


def test_multi_key_retrieval_has_distinct_keys_in_fixed_slots():
    task = tasks.multi_key_retrieval(200, 90, seed=4, n_needles=6)
    check_retrieval(task, 90, 6)
    assert task.name == "multi_key_retrieval" and task.needle_length == 6
    context = 90 - 6
    edges = [j * context // 6 for j in range(7)]
    for b in range(20):
        text = task.text(b)
        starts = [m.start() for m in NEEDLE.finditer(text[:-6])]
        assert [np.searchsorted(edges, s, side="right") - 1 for s in starts] == list(range(6))   # one per slot
        assert all(s + 6 <= e for s, e in zip(starts, edges[1:]))                                # inside it
        slot = int(task.slot[b])
        assert starts[slot] == int(task.needle_start[b]) and text[starts[slot] + 1:starts[slot] + 3] == text[-5:-3]
    # the queried slot is uniform: every slot is asked about
    assert set(task.slot.tolist()) == set(range(6))


def test_copiers_score_one_in_k_on_multi_key_and_one_on_a_single_needle():
    from companion.lab import evals
    task = tasks.multi_key_retrieval(2000, 129, seed=5, n_needles=4)
    slot = task.slot.numpy()
    first, last = evals.copier_accuracy(task, "first"), evals.copier_accuracy(task, "last")
    assert first[slot == 0].mean() == 1.0 and first[slot != 0].mean() < 0.03   # right only on slot 0
    assert last[slot == 3].mean() == 1.0 and last[slot != 3].mean() < 0.03
    for rule in evals.COPIERS:
        assert abs(evals.copier_accuracy(task, rule).mean() - 0.25) < 0.04
    single = tasks.retrieval(50, 100, seed=1)
    assert all(evals.copier_accuracy(single, rule).all() for rule in evals.COPIERS)
    chains = tasks.variable_tracking(400, 129, hops=2, n_chains=2, seed=2)
    assert abs(evals.copier_accuracy(chains, "random").mean() - 0.5) < 0.08
    with pytest.raises(ValueError, match="rule"):
        evals.copier_accuracy(task, "nearest")


def test_no_literal_match_shares_no_key_letter_with_its_needle():
    task = tasks.no_literal_match_retrieval(50, 80, seed=3)
    for b in range(50):
        text = task.text(b)
        (key, value), = NEEDLE.findall(text[:-6])
        asked = text[-5:-3]
        assert not set(key) & set(asked) and text[-6] == "?" and text[-2:] == value
        assert text.count("@") == 1 and text[int(task.needle_start[b])] == "@"


def test_needle_start_and_length_are_recorded():
    task = tasks.retrieval(10, 70, seed=1)
    assert task.needle_length == 6
    for b in range(10):
        assert task.text(b)[int(task.needle_start[b])] == "@"
    chains = tasks.variable_tracking(5, 80, n_chains=2, seed=1)
    for b in range(5):
        assert chains.text(b)[int(chains.needle_start[b])] == "@"


def test_variable_tracking_answer_follows_the_chain():
    task = tasks.variable_tracking(20, 120, hops=3, n_chains=2, seed=5)
    for b in range(20):
        text = task.text(b)
        body, query = text[:-6], text[-6:]
        assigned = dict(re.findall(r"@([A-Z]{2})=([A-Z]{2}|\d{2})", body))
        assert len(assigned) == 8 and body.count("@") == 8
        name = query[1:3]
        hops = 0
        while not assigned[name].isdigit():
            name, hops = assigned[name], hops + 1
        assert hops == 3
        assert assigned[name] == query[4:] == stdlib_corpus.decode(task.answers[b])
        assert 0 <= float(task.depth[b]) <= 1


def test_copying_second_half_is_the_first():
    for length in (21, 22):
        task = tasks.copying(3, length, seed=0)
        c = (length - 1) // 2
        text = task.text(0)
        assert text[-c - 1] == "|" and text[-c:] == text[-2 * c - 1:-c - 1]
        assert torch.equal(task.answer_positions[0], torch.arange(length - c, length))
        assert torch.equal(task.tokens[0, task.answer_positions[0]], task.answers[0])
    assert tasks.copying(1, 22).text(0)[0] == "^"


def test_task_batch_puts_the_loss_on_the_answers():
    task = tasks.retrieval(4, 30, seed=0)
    x, y = tasks.task_batch(task)
    assert torch.equal(x, task.tokens[:, :-1])
    assert ((y != -100).sum(1) == 2).all()
    for b in range(4):
        for p, a in zip(task.answer_positions[b], task.answers[b]):
            assert y[b, p - 1] == a
    with pytest.raises(ValueError, match="task"):
        tasks.task_batch(task.tokens)


@pytest.mark.parametrize("call, name", [
    (lambda: tasks.retrieval(2, 64, depth=1.5), "depth"),
    (lambda: tasks.retrieval(2, 64, depth=[0.1, 0.2, 0.3]), "depth"),
    (lambda: tasks.retrieval(2, 10), "length"),
    (lambda: tasks.retrieval(0, 64), "n_examples"),
    (lambda: tasks.retrieval(2, 64, seed=-1), "seed"),
    (lambda: tasks.retrieval(2, 64, n_needles=0), "n_needles"),
    (lambda: tasks.retrieval(2, 64, key_len=0), "key_len"),
    (lambda: tasks.retrieval(2, 400, n_needles=27, key_len=1), "n_needles"),
    (lambda: tasks.multi_key_retrieval(2, 64, n_needles=1), "n_needles"),
    (lambda: tasks.multi_key_retrieval(2, 29, n_needles=4), "length"),
    (lambda: tasks.no_literal_match_retrieval(2, 10), "length"),
    (lambda: tasks.variable_tracking(2, 20), "length"),
    (lambda: tasks.variable_tracking(2, 80, hops=0), "hops"),
    (lambda: tasks.copying(2, 2), "length"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_haystack_never_contains_task_symbols():
    task = tasks.multi_key_retrieval(10, 200, seed=3)
    tokens = task.tokens.numpy()
    filler = np.isin(tokens, np.frombuffer(tasks.FILLER, np.uint8))
    assert filler.sum(1).min() == 200 - 4 * 6 - 6
