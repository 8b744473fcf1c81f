"""companion.lab.train: the schedule, the loop, determinism, the progress bar."""
from __future__ import annotations

import math

import pytest
import torch

from companion.lab import stdlib_corpus, tasks, train
from companion.lab.models import TinyTransformer
from companion.lab.settings import ModelConfig


@pytest.fixture(scope="module")
def corpus():
    return stdlib_corpus.load_corpus()


def tiny(scheme="rope", seed=0):
    torch.manual_seed(seed)
    return TinyTransformer(ModelConfig(scheme, d_model=32, n_heads=2, n_layers=2, context_length=32))


def test_lr_schedule_warmup_then_cosine():
    lrs = [train.lr_at(t, 100, 1.0, 10, 0.1) for t in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert lrs[10] == pytest.approx(1.0) and lrs[-1] == pytest.approx(0.1)
    assert all(a <= b for a, b in zip(lrs[:10], lrs[1:10]))
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    mid = 10 + (100 - 10 - 1) / 2
    assert train.lr_at(int(mid), 100, 1.0, 10, 0.1) == pytest.approx(0.55, abs=0.02)
    assert train.lr_at(0, 5, 2.0, 0, 0.0) == 2.0


@pytest.mark.parametrize("args, name", [
    ((5, 5, 1.0, 1), "step"), ((0, 0, 1.0, 1), "steps"), ((0, 5, 0.0, 1), "peak"),
    ((0, 5, 1.0, -1), "warmup"), ((0, 5, 1.0, 1, -0.1), "min_ratio"),
])
def test_lr_at_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        train.lr_at(*args)


def test_training_reduces_the_loss(corpus):
    model = tiny()
    history = train.train(model, train.text_batches(corpus.train, 16, 32), 60, lr=3e-3, progress=False)
    assert len(history) == 60 and all(math.isfinite(v) for v in history)
    first, last = sum(history[:5]) / 5, sum(history[-5:]) / 5
    assert first > 5.0  # about ln 256 = 5.55 at the start
    assert last < first - 1.5
    assert not model.training


def test_training_is_deterministic(corpus):
    runs = []
    for _ in range(2):
        model = tiny("alibi", seed=3)
        runs.append(train.train(model, train.text_batches(corpus.train, 4, 32), 8, seed=5, progress=False))
    assert runs[0] == runs[1]
    other = train.train(tiny("alibi", seed=3), train.text_batches(corpus.train, 4, 32), 8, seed=6, progress=False)
    assert other != runs[0]


def test_task_batches_train_on_answers_only():
    batches = train.task_batches(tasks.retrieval, 8, 31, n_needles=2)
    x, y = batches(0, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (8, 31)
    assert ((y != -100).sum(1) == 2).all()
    x2, _ = batches(0, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    history = train.train(tiny(), batches, 20, progress=False)
    assert history[-1] < history[0]


def test_mixed_batches_alternate(corpus):
    text = train.text_batches(corpus.train, 2, 16)
    task = train.task_batches(tasks.copying, 2, 16)
    mixed = train.mixed_batches(text, task)
    g = torch.Generator().manual_seed(0)
    assert (mixed(0, g)[1] != -100).all()
    assert (mixed(1, g)[1] == -100).any()
    with pytest.raises(ValueError, match="sources"):
        train.mixed_batches()


def test_progress_bar_is_tqdm_and_can_be_silenced(capsys, corpus):
    train.train(tiny(), train.text_batches(corpus.train, 2, 8), 4, progress=True, label="demo")
    err = capsys.readouterr().err
    assert "demo:" in err and "/4 [" in err and "it/s" in err     # tqdm's bar on standard error
    train.train(tiny(), train.text_batches(corpus.train, 2, 8), 2, progress=False)
    assert capsys.readouterr().err == ""


def test_default_device():
    assert train.default_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_a_learning_curve_callback_sees_the_model_and_changes_nothing(corpus):
    """The callback runs after every k-th step with the model, and the training is the same with or without it."""
    from companion.lab import evals
    seen = []

    def callback(step, model):
        assert model.training
        seen.append((step, evals.perplexity_by_length(model, corpus.validation, [16], 256)[0]["perplexity"]))

    a, b = tiny(), tiny()
    plain = train.train(a, train.text_batches(corpus.train, 4, 16), 10, seed=3, progress=False)
    with_curve = train.train(b, train.text_batches(corpus.train, 4, 16), 10, seed=3, progress=False, every=4,
                             callback=callback)
    assert [s for s, _ in seen] == [4, 8] and plain == with_curve
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    with pytest.raises(ValueError, match="callback"):
        train.train(tiny(), train.text_batches(corpus.train, 2, 8), 2, every=1)


@pytest.mark.parametrize("kwargs, name", [
    ({"steps": 0}, "steps"), ({"lr": -1.0}, "lr"), ({"warmup": -2}, "warmup"),
    ({"weight_decay": -0.1}, "weight_decay"), ({"grad_clip": -1.0}, "grad_clip"), ({"seed": -1}, "seed"),
    ({"every": -1}, "every"),
])
def test_train_bad_input(kwargs, name, corpus):
    args = {"steps": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        train.train(tiny(), train.text_batches(corpus.train, 2, 8), **args)


def test_train_rejects_non_models_and_non_batches(corpus):
    with pytest.raises(ValueError, match="model"):
        train.train(lambda x: x, train.text_batches(corpus.train, 2, 8), 2)
    with pytest.raises(ValueError, match="batches"):
        train.train(tiny(), [1, 2], 2)
    with pytest.raises(ValueError, match="make_task"):
        train.task_batches("retrieval", 2, 8)
    with pytest.raises(ValueError, match="length"):
        train.task_batches(tasks.retrieval, 2, 8)
