"""companion.lab.models and .schemes: shapes, causality, the companion module behind each scheme, RoPE scaling,
p-RoPE, the key window, the distance limit and the queries' and keys' pair norms."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from companion import absolute_torch, alibi_torch, nope, relative_torch, remap, rope, rope_torch, scaling
from companion.lab import evals, schemes
from companion.lab.models import ROPE_SCHEMES, SCHEMES, TinyTransformer, count_parameters
from companion.lab.settings import ModelConfig

SMALL = {"vocab_size": 40, "d_model": 16, "n_heads": 2, "n_layers": 2, "context_length": 12}


def small(scheme, **kw):
    torch.manual_seed(0)
    return TinyTransformer(ModelConfig(scheme, **{**SMALL, **kw})).eval()


def tokens(batch=3, n=12, seed=0, vocab=40):
    return torch.randint(0, vocab, (batch, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_forward_shape_and_finite(scheme):
    logits = small(scheme)(tokens())
    assert logits.shape == (3, 12, 40)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_changing_a_future_token_never_changes_past_logits(scheme):
    model = small(scheme)
    x = tokens()
    with torch.no_grad():
        before = model(x)
        for t in (0, 5, 11):
            y = x.clone()
            y[:, t] = (y[:, t] + 1) % 40
            after = model(y)
            torch.testing.assert_close(after[:, :t], before[:, :t], rtol=0, atol=1e-6)
            assert not torch.allclose(after[:, t], before[:, t])


def test_causality_holds_with_dynamic_ntk_past_the_training_length():
    model = small("rope")
    model.set_rope_scaling("dynamic_ntk")
    x = tokens(n=40)
    y = x.clone()
    y[:, 30] = (y[:, 30] + 1) % 40
    with torch.no_grad():
        torch.testing.assert_close(model(y)[:, :30], model(x)[:, :30], rtol=0, atol=1e-6)


@pytest.mark.parametrize("scheme", [s for s in SCHEMES if s != "learned"])
def test_every_scheme_but_learned_reads_past_the_training_length(scheme):
    assert small(scheme)(tokens(n=50)).shape == (3, 50, 40)


def test_learned_table_overrun_raises_the_companion_index_error():
    model = small("learned")
    model(tokens(n=12))
    with pytest.raises(IndexError, match="max_positions"):
        model(tokens(n=13))


# --- each scheme uses the companion module it should ------------------------------------


def spy(monkeypatch, cls, calls, name):
    original = cls.forward

    def forward(self, *args, **kwargs):
        calls.append(name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "forward", forward)


@pytest.mark.parametrize("scheme, cls, attribute", [
    ("learned", absolute_torch.LearnedPositions, "positions"),
    ("sinusoidal", absolute_torch.SinusoidalPositions, "positions"),
    ("rope", rope_torch.RotaryEmbedding, "rope"),
    ("alibi", alibi_torch.ALiBi, "alibi"),
    ("t5", relative_torch.T5RelativeBias, "t5_bias"),
])
def test_scheme_holds_and_calls_its_companion_module(monkeypatch, scheme, cls, attribute):
    model = small(scheme)
    assert isinstance(getattr(model, attribute), cls)
    calls = []
    spy(monkeypatch, cls, calls, scheme)
    model(tokens())
    expected = model.config.n_layers if scheme == "rope" else 1  # T5's bias is shared by all layers
    assert calls == [scheme] * expected


def test_other_schemes_hold_no_position_module():
    for scheme in SCHEMES:
        model = small(scheme)
        found = {type(m) for m in model.modules()}
        position_types = {absolute_torch.LearnedPositions, absolute_torch.SinusoidalPositions,
                          rope_torch.RotaryEmbedding, alibi_torch.ALiBi, relative_torch.T5RelativeBias,
                          relative_torch.ShawRelativeAttention}
        assert len(found & position_types) == (0 if scheme == "nope" else 1), scheme


def test_shaw_every_layer_uses_shaw_relative_attention(monkeypatch):
    model = small("shaw", shaw_max_distance=3)
    layers = list(model.scheme.layers)
    assert len(layers) == model.config.n_layers
    assert all(isinstance(s, relative_torch.ShawRelativeAttention) and s.max_distance == 3 for s in layers)
    calls = []
    spy(monkeypatch, relative_torch.ShawRelativeAttention, calls, "shaw")
    model(tokens())
    assert calls == ["shaw"] * len(layers)


def test_changing_the_companion_module_changes_the_model(monkeypatch):
    """The ALiBi model's scores come from companion.alibi_torch.ALiBi and nowhere else."""
    model = small("alibi")
    x = tokens()
    before = model(x)
    monkeypatch.setattr(alibi_torch.ALiBi, "forward", lambda self, n, n_keys=None: torch.zeros(2, n, n).masked_fill(
        torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf")))
    assert not torch.allclose(model(x), before)


def test_nope_calls_no_positions(monkeypatch):
    calls = []
    monkeypatch.setattr(nope, "no_positions", lambda x: calls.append(1) or x)
    small("nope")(tokens())
    assert calls == [1]


def test_irope_follows_irope_layer_pattern(monkeypatch):
    seen = []
    original = nope.irope_layer_pattern
    monkeypatch.setattr(nope, "irope_layer_pattern", lambda n, k: seen.append((n, k)) or original(n, k))
    model = small("irope", n_layers=4, irope_nope_every=2)
    assert seen == [(4, 2)]
    assert model.layer_kinds == ["rope", "nope", "rope", "nope"]
    calls = []
    spy(monkeypatch, rope_torch.RotaryEmbedding, calls, "rope")
    model(tokens())
    assert calls == ["rope", "rope"]


def test_irope_temperature_uses_attention_temperature(monkeypatch):
    model = small("irope", irope_floor_scale=4.0)
    seen = []
    original = nope.attention_temperature
    monkeypatch.setattr(nope, "attention_temperature", lambda p, **kw: seen.append(kw) or original(p, **kw))
    changed = model(tokens())
    assert seen == [{"floor_scale": 4.0}]
    plain = small("irope")
    assert not torch.allclose(changed, plain(tokens()))


# --- RoPE scaling ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["pi", "ntk", "yarn", "yarn_code", "linear"])
def test_rope_scaling_switch_uses_companion_scaling(method):
    model = small("rope")
    x = tokens()
    before = model(x)
    model.set_rope_scaling(method, s=4)
    expected = scaling.scale(method, model.d_head, s=4, L=12, base=10000.0)
    np.testing.assert_array_equal(model.rope.inv_freq.numpy(), expected.inv_freq)
    assert model.rope.attention_factor == expected.attention_factor
    assert not torch.allclose(model(x), before)
    model.set_rope_scaling("none")
    np.testing.assert_array_equal(model.rope.inv_freq.numpy(), rope.inv_freq(model.d_head))
    torch.testing.assert_close(model(x), before, rtol=0, atol=0)


def test_rope_scaling_options_reach_the_method():
    model = small("irope")
    model.set_rope_scaling("base_change", base=1e6)
    np.testing.assert_array_equal(model.rope.inv_freq.numpy(), rope.inv_freq(model.d_head, 1e6))
    model.set_rope_scaling("yarn", s=2, beta=8.0)
    np.testing.assert_array_equal(model.rope.inv_freq.numpy(),
                                  scaling.yarn(model.d_head, s=2, L=12, beta=8.0).inv_freq)


def test_dynamic_ntk_follows_the_current_length():
    model = small("rope")
    model.set_rope_scaling("dynamic_ntk")
    for n in (6, 12, 30, 48):
        model(tokens(n=n))
        expected = scaling.dynamic_ntk(model.d_head, L=12, current_length=n).inv_freq
        np.testing.assert_array_equal(model.rope.inv_freq.numpy(), expected)
        np.testing.assert_array_equal(model.rope_frequencies(n).inv_freq, expected)
    np.testing.assert_array_equal(scaling.dynamic_ntk(model.d_head, L=12, current_length=12).inv_freq,
                                  rope.inv_freq(model.d_head))


def test_dynamic_ntk_equals_plain_rope_up_to_the_training_length():
    model = small("rope")
    x = tokens(n=10)
    before = model(x)
    model.set_rope_scaling("dynamic_ntk")
    torch.testing.assert_close(model(x), before, rtol=0, atol=0)


def test_rope_scaling_bad_input():
    with pytest.raises(ValueError, match="scheme"):
        small("alibi").set_rope_scaling("pi", s=2)
    with pytest.raises(ValueError, match="method"):
        small("rope").set_rope_scaling("stretch", s=2)
    with pytest.raises(ValueError, match="s must"):
        small("rope").set_rope_scaling("pi", s=0.5)
    with pytest.raises(ValueError, match="scheme"):
        small("nope").rope_frequencies()


# --- construction -------------------------------------------------------------------------


def test_tied_and_untied_embeddings():
    tied, untied = small("rope"), small("rope", tie_embeddings=False)
    assert tied.lm_head is None and untied.lm_head is not None
    assert count_parameters(untied) - count_parameters(tied) == 40 * 16


def test_t5_and_alibi_are_shared_by_all_layers():
    model = small("t5", n_layers=3)
    assert sum(isinstance(m, relative_torch.T5RelativeBias) for m in model.modules()) == 1
    assert model.t5_bias.max_distance == 17 and not model.t5_bias.bidirectional
    assert small("t5", context_length=40).t5_bias.max_distance == 40


@pytest.mark.parametrize("kwargs, name", [
    ({"scheme": "absolute"}, "scheme"),
    ({"scheme": "rope", "d_model": 18, "n_heads": 4}, "d_model"),
    ({"scheme": "rope", "d_model": 18, "n_heads": 2}, "head width"),
    ({"scheme": "rope", "vocab_size": 1}, "vocab_size"),
    ({"scheme": "rope", "n_layers": 0}, "n_layers"),
    ({"scheme": "learned", "context_length": 0}, "context_length"),
    ({"scheme": "shaw", "shaw_max_distance": -1}, "shaw_max_distance"),
    ({"scheme": "rope", "tie_embeddings": 1}, "tie_embeddings"),
    ({"scheme": "rope", "rope_base": -1.0}, "rope_base"),
    ({"scheme": "t5", "t5_max_distance": 8}, "t5_max_distance"),
])
def test_bad_construction_raises_value_error_naming_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ModelConfig(**kwargs)


def test_bad_tokens_raise_value_error():
    model = small("rope")
    with pytest.raises(ValueError, match="tokens"):
        model(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="tokens"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens must lie in 0..39"):
        model(torch.full((1, 5), 40))
    with pytest.raises(ValueError, match="model"):
        count_parameters("model")


def test_config_is_one_frozen_dataclass_of_plain_data():
    import dataclasses
    import json

    config = small("t5").config
    assert isinstance(config, ModelConfig) and ModelConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 8
    assert set(ROPE_SCHEMES) <= set(SCHEMES)
    # the model reads its sizes from the configuration, derived defaults included
    assert small("t5").blocks[0].mlp[0].out_features == 4 * SMALL["d_model"]
    assert small("t5").t5_bias.max_distance == max(SMALL["context_length"], 32 // 2 + 1)
    assert small("rope", d_ff=24).blocks[0].mlp[0].out_features == 24
    with pytest.raises(ValueError, match="^config must be a companion.lab.settings.ModelConfig, got str$"):
        TinyTransformer("rope")


# --- one object per scheme ---------------------------------------------------------------


@pytest.mark.parametrize("scheme, cls", [
    ("learned", schemes.LearnedScheme), ("sinusoidal", schemes.SinusoidalScheme), ("shaw", schemes.ShawScheme),
    ("t5", schemes.T5Scheme), ("rope", schemes.RotaryScheme), ("alibi", schemes.ALiBiScheme),
    ("nope", schemes.NoPEScheme), ("irope", schemes.IRopeScheme)])
def test_each_scheme_is_one_object_with_the_models_hooks(scheme, cls):
    model = small(scheme)
    assert type(model.scheme) is cls and isinstance(model.scheme, schemes.Scheme)
    # the model's attention code names no scheme: the hooks are the only place a scheme enters
    import inspect

    from companion.lab import models
    body = inspect.getsource(models._CausalSelfAttention) + inspect.getsource(models.TinyTransformer._run)
    assert not any(f'"{name}"' in body for name in SCHEMES)


def test_p_rope_keeps_the_fastest_pairs_and_zeroes_the_rest():
    theta = rope.inv_freq(16)
    kept = schemes.p_rope_frequencies(theta, 0.25)
    np.testing.assert_array_equal(kept[:2], theta[:2])
    assert (kept[2:] == 0).all()
    model = small("rope", rope_fraction=0.5)                   # d_head 8: 4 pairs, 2 of them rotate
    np.testing.assert_array_equal(model.rope.inv_freq.numpy(), [*rope.inv_freq(8)[:2], 0, 0])
    # an unrotated pair is position-free: shifting every position leaves its score unchanged
    q = torch.randn(1, 1, 5, 8)
    rotated = model.rope.rotate(q)
    torch.testing.assert_close(rotated[..., 4:], q[..., 4:], rtol=0, atol=0)
    model.set_rope_scaling("pi", s=4)
    assert (model.rope.inv_freq.numpy()[2:] == 0).all()        # scaling keeps the unrotated pairs at 0
    np.testing.assert_allclose(model.rope.inv_freq.numpy()[:2], rope.inv_freq(8)[:2] / 4)
    for bad in ({"scheme": "alibi", "rope_fraction": 0.5}, {"scheme": "rope", "rope_fraction": 0.1},
                {"scheme": "rope", "rope_fraction": 1.5}):
        with pytest.raises(ValueError, match="rope_fraction"):
            ModelConfig(**{**SMALL, **bad})


def test_embedding_scale_of_the_sinusoidal_arm():
    paper = small("sinusoidal", embedding_std="inverse_sqrt_d")
    gpt2 = small("sinusoidal")
    assert paper.token_embedding.weight.std().item() == pytest.approx(16 ** -0.5, rel=0.1)
    assert gpt2.token_embedding.weight.std().item() == pytest.approx(0.02, rel=0.1)
    # sqrt(d) e_t has entries of about 1 with the paper's scale, the size of the sinusoid's entries
    x = tokens()
    content = paper.token_embedding(x) * 16 ** 0.5
    assert content.std().item() == pytest.approx(1.0, rel=0.15)
    with pytest.raises(ValueError, match="embedding_std"):
        small("sinusoidal", embedding_std=-1.0)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_key_window_hides_exactly_the_far_keys(scheme):
    if scheme == "learned":
        model = small(scheme)
    else:
        model = small(scheme, context_length=6)
    x = tokens(n=12)
    model.set_key_window(4)
    i, j = torch.meshgrid(torch.arange(12), torch.arange(12), indexing="ij")
    for w in model.attention_weights(x):
        assert (w[..., j <= i - 4] == 0).all() and (w.sum(-1) - 1).abs().max() < 1e-5
    with torch.no_grad():
        windowed = model(x)
        # a token reaches 3 positions further per layer: after two layers, nothing past 3 + 2 * 3
        y = x.clone()
        y[:, 3] = (y[:, 3] + 1) % 40
        torch.testing.assert_close(model(y)[:, 10:], windowed[:, 10:], rtol=0, atol=1e-6)
        assert not torch.equal(model(y)[:, 9], windowed[:, 9])
    model.set_key_window(None)
    with torch.no_grad():
        assert not torch.equal(model(y)[:, 10:], model(x)[:, 10:])
    with pytest.raises(ValueError, match="w"):
        model.set_key_window(0)


@pytest.mark.parametrize("options", [{}, {"rope_fraction": 0.25}])
def test_a_distance_limit_is_rerope_in_every_layer_and_keeps_every_key(options):
    """With the limit, each layer's attention is softmax(ReRoPE scores / sqrt(d)) of companion.remap, every
    distance of the limit or more read as limit - 1, and every key keeps a weight; None restores the model."""
    model = small("rope", context_length=6, **options)
    x = tokens(n=20)
    with torch.no_grad():
        plain = model(x)
    model.set_distance_limit(6)
    weights, qk = model.attention_weights(x), model.queries_and_keys(x)
    inv_freq = model.rope.inv_freq.numpy()
    causal = np.tril(np.ones((20, 20), dtype=bool))
    for w, (q, k) in zip(weights, qk):
        for b in range(q.shape[0]):
            for h in range(q.shape[1]):
                scores = remap.rerope_two_pass(q[b, h].double().numpy(), k[b, h].double().numpy(), inv_freq, 5,
                                               layout="adjacent") / np.sqrt(q.shape[-1])
                scores = np.where(causal, scores, -np.inf)
                expected = np.exp(scores - scores.max(-1, keepdims=True))
                expected /= expected.sum(-1, keepdims=True)
                np.testing.assert_allclose(w[b, h].numpy(), expected, atol=1e-6)
        assert (w[..., torch.tensor(causal)] > 0).all()            # no key is hidden
    with torch.no_grad():
        assert not torch.allclose(model(x), plain)
        model.set_distance_limit(20)                                  # no distance reaches the limit
        torch.testing.assert_close(model(x), plain, rtol=0, atol=1e-5)
        model.set_distance_limit(None)
        assert torch.equal(model(x), plain)


@pytest.mark.parametrize("scheme", [s for s in SCHEMES if s not in ROPE_SCHEMES])
def test_a_distance_limit_is_refused_by_schemes_without_rotations(scheme):
    with pytest.raises(ValueError, match=r"^w must be None for a scheme other than .+ \(only RoPE reads distances"):
        small(scheme).set_distance_limit(6)
    with pytest.raises(ValueError, match="w"):
        small("rope").set_distance_limit(0)


def test_queries_and_keys_and_their_pair_norms():
    model = small("rope")
    x = tokens()
    pairs = model.queries_and_keys(x)
    assert len(pairs) == 2 and all(q.shape == k.shape == (3, 2, 12, 8) for q, k in pairs)
    norms = evals.pair_norms(model, x)
    q0 = pairs[0][0].unflatten(-1, (4, 2)).norm(dim=-1).mean(dim=(0, 2))
    np.testing.assert_allclose(norms["query"][0], q0.numpy(), rtol=1e-6)
    assert np.array(norms["key"]).shape == (2, 2, 4)
    with pytest.raises(ValueError, match="model"):
        evals.pair_norms(lambda t: t, x)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("scheme", SCHEMES)
def test_runs_on_cuda_unchanged(scheme):
    model = small(scheme).to("cuda")
    x = tokens()
    torch.testing.assert_close(model(x.cuda()).cpu(), small(scheme)(x), rtol=1e-3, atol=1e-3)


def test_chunked_causal_mask():
    from companion.lab.models import chunked_causal_mask
    mask = chunked_causal_mask(10, 4)
    i, j = np.meshgrid(np.arange(10), np.arange(10), indexing="ij")
    assert (mask.numpy() == ((j <= i) & (i // 4 == j // 4))).all()
    assert chunked_causal_mask(6, 6).equal(torch.ones(6, 6, dtype=torch.bool).tril())
    with pytest.raises(ValueError, match="chunk"):
        chunked_causal_mask(6, 0)


def test_irope_chunks_confine_the_rope_layers_and_not_the_nope_layers():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig("irope", d_model=16, n_heads=2, n_layers=2, context_length=16, irope_chunk=4))
    assert model.layer_kinds == ["rope", "nope"]
    x = torch.randint(0, 256, (2, 12))
    rope_w, nope_w = model.attention_weights(x)
    assert (rope_w[:, :, 9, :8] == 0).all() and (rope_w[:, :, 9, 8:10] > 0).all()
    assert (nope_w[:, :, 9, :10] > 0).all()
    # a change in an earlier chunk reaches a later query only through the position-free layer
    with pytest.raises(ValueError, match="irope_chunk"):
        ModelConfig("irope", irope_chunk=0)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_attention_weights_are_the_ones_forward_uses(scheme):
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig(scheme, d_model=16, n_heads=2, n_layers=2, context_length=16)).eval()
    x = torch.randint(0, 256, (2, 12))
    weights = model.attention_weights(x)
    assert len(weights) == 2 and all(w.shape == (2, 2, 12, 12) for w in weights)
    for w in weights:
        assert torch.allclose(w.sum(-1), torch.ones(2, 2, 12), atol=1e-5)
        assert (w.triu(1) == 0).all()                                      # causal
    with torch.no_grad():
        explicit = model._run(x, need_weights=True)[0]
        assert torch.allclose(model(x), explicit, atol=1e-4)
