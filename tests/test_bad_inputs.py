"""Every public callable of the math modules refuses bad input clearly and accepts valid input.

Every public callable declares a contract (one kind per parameter, rules between them);
``tests/support/bad_inputs.py`` generates the bad inputs of each kind and holds a valid example
call per callable (run it as a script for the counts of each outcome). Here every
callable is called with each bad-input class and each valid spelling of its
arguments; anything but a ``ValueError``/``TypeError`` naming the parameter, or the
valid call's result, fails. A public callable without a contract or an example fails
too, so a new function cannot escape. Hypothesis adds random values at the edges of
the supported ranges. A numerical warning (an overflow, a division by zero) is an error
here: a value at the edge of its range must give the right number, not a warning and
an inf or a 0 that happens to be right.
"""
from __future__ import annotations

import inspect
import math
import re

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import (  # noqa: E402
    _contracts,
    absolute,
    absolute_torch,
    alibi,
    alibi_torch,
    attention,
    configs,
    integer_positions,
    interpolation,
    layer_plans,
    mla,
    mrope,
    nope,
    pair_usage,
    precision,
    relative,
    relative_torch,
    remap,
    rope,
    rope_torch,
    scaling,
    sinks,
    sparse,
    trained_range,
    video_time,
)
from tests.support import bad_inputs

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def test_every_public_callable_has_a_contract():
    public = bad_inputs.public_callables()
    undeclared = [name for name in public if bad_inputs.contract_of(name) is None]
    assert not undeclared, f"public callables without a declared contract (companion._contracts.contract): {undeclared}"
    missing = [name for name in public if name not in bad_inputs.EXAMPLES]
    assert not missing, f"public callables without a valid example call in tests/bad_inputs.py: {missing}"
    stale = [name for name in bad_inputs.EXAMPLES if name not in public]
    assert not stale, f"examples for names that are not public callables: {stale}"
    for name, spec in bad_inputs.REGISTRY.items():
        unexampled = set(bad_inputs.contract_of(name).kinds) - set(spec.args)
        assert not unexampled, f"{name}: the example leaves out {sorted(unexampled)}"
        n_bad = sum(expect == "bad" for _, _, expect, _ in bad_inputs.cases(name))
        assert spec.anything or n_bad >= 3, f"{name} has only {n_bad} bad-input cases"


def test_the_harness_can_tell_the_outcomes_apart():
    spec = bad_inputs.Spec(lambda x: x, {"x": bad_inputs.Anything(1)}, [])
    bad_inputs.REGISTRY["_probe"] = spec
    try:
        assert bad_inputs.outcome("_probe", {"x": 1}, "bad", ("x",))[0] == "silent nonsense"
        assert bad_inputs.outcome("_probe", {"x": float("nan")}, "valid", ("x",))[0] == "silent nonsense"
        assert bad_inputs.outcome("_probe", {"x": 2}, "valid", ("x",))[0] == "silent nonsense"
        assert bad_inputs.outcome("_probe", {"x": 1}, "valid", ("x",))[0] == "valid accepted"
        spec.call = lambda x: (_ for _ in ()).throw(ValueError("x must be 1"))
        assert bad_inputs.outcome("_probe", {"x": 2}, "bad", ("x",))[0] == "clear error"
        assert bad_inputs.outcome("_probe", {"x": 2}, "bad", ("y",))[0] == "unhelpful error"
        assert bad_inputs.outcome("_probe", {"x": 1}, "valid", ("x",))[0] == "valid rejected"
        spec.call = lambda x: (_ for _ in ()).throw(KeyError("x"))
        assert bad_inputs.outcome("_probe", {"x": 2}, "bad", ("x",))[0] == "unhelpful error"
    finally:
        del bad_inputs.REGISTRY["_probe"]


@pytest.mark.parametrize("name", sorted(bad_inputs.REGISTRY))
def test_bad_input_is_refused_by_name_and_valid_input_accepted(name):
    problems = []
    for label, kwargs, expect, names in bad_inputs.cases(name):
        cls, detail = bad_inputs.outcome(name, kwargs, expect, names)
        if cls not in bad_inputs.GOOD:
            problems.append(f"{label}: {cls}: {detail}")
    assert not problems, f"{name}:\n" + "\n".join(problems)


# --- the supported range of positions --------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_positions_are_accepted_exactly_within_the_supported_range(p):
    call = lambda: absolute.sinusoidal([p], 4)  # noqa: E731
    if 0 <= p <= _contracts.MAX_POSITION:
        pe = call()
        assert np.allclose(pe[0, 0], math.sin(p)) and np.all(np.isfinite(pe))
    else:
        with pytest.raises(ValueError, match="positions must"):
            call()


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-(2**66), max_value=2**66))
def test_distances_of_either_sign_are_bucketed_or_refused(t):
    if abs(t) <= _contracts.MAX_POSITION:
        bucket = int(relative.t5_bucket(t))
        assert 0 <= bucket < 32 and bucket == int(relative_torch.T5RelativeBias(1).bucket(torch.tensor([t]))[0])
    else:
        with pytest.raises(ValueError, match="relative_position must"):
            relative.t5_bucket(t)


@pytest.mark.parametrize("value", [2**63, 10**30, 1e300, -(2**63) - 1, float(2**53)])
def test_huge_positions_never_wrap_through_int64(value):
    for call in (lambda: rope.angles([value], rope.inv_freq(4)),
                 lambda: rope.rotate(np.ones((1, 4)), [value], rope.inv_freq(4)),
                 lambda: nope.attention_temperature([value])):
        with pytest.raises(ValueError, match="positions must"):
            call()
    with pytest.raises(ValueError, match="distance must"):
        rope.relative_score(np.ones(4), np.ones(4), [value], rope.inv_freq(4))


def test_the_limit_itself_is_accepted_and_angles_there_are_accurate():
    m = _contracts.MAX_POSITION
    phi = rope.angles([m], [1.0])[0, 0]
    exact = mpmath.mpf(m)
    assert abs(mpmath.cos(exact) - math.cos(phi)) < 1e-6


# --- numerically stable formulas for valid input ---------------------------------------

@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=1, max_value=_contracts.MAX_POSITION), st.floats(min_value=-1e4, max_value=1e4),
       st.floats(min_value=1e-3, max_value=10.0))
def test_single_key_weight_matches_high_precision(n, margin, scale):
    w = float(nope.single_key_weight(n, margin, scale))
    with mpmath.workdps(50):
        exact = 1 / (1 + (n - 1) * mpmath.exp(-mpmath.mpf(scale) * mpmath.mpf(margin)))
    assert 0.0 <= w <= 1.0
    assert math.isclose(w, float(exact), rel_tol=1e-9, abs_tol=1e-300)


def test_single_key_weight_of_one_key_is_one_at_any_margin():
    assert np.array_equal(nope.single_key_weight(1, [-800.0, -1e6, 0.0, 1e6]), np.ones(4))


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=-250, max_value=250))
def test_polynomial_interpolant_does_not_depend_on_the_unit(power):
    nodes, values, x = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 2.0, 0.0, 5.0]), np.array([0.5, 4.0, -1.0])
    unit = 10.0**power
    scaled = interpolation.polynomial_interpolant(nodes * unit, values, x * unit)
    assert np.allclose(scaled, interpolation.polynomial_interpolant(nodes, values, x), rtol=1e-9)


def test_perplexity_of_tiny_probabilities_is_finite_or_refused_by_name():
    assert math.isclose(absolute.perplexity([1e-320, 1.0]), math.exp(-math.log(1e-320) / 2), rel_tol=1e-12)
    with pytest.raises(ValueError, match="probabilities must not be this small"):
        absolute.perplexity([1e-320])


# --- torch layers raise as their numpy twins do ----------------------------------------

def test_shaw_layer_refuses_a_row_with_no_key_like_shaw_attention():
    torch.manual_seed(0)
    layer = relative_torch.ShawRelativeAttention(4, 1).double()
    q, k, v = (torch.randn(3, 4, dtype=torch.float64) for _ in range(3))
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    with pytest.raises(ValueError, match="mask must leave every query a key"):
        relative.shaw_attention(q.numpy(), k.numpy(), v.numpy(), layer.w_k.detach().numpy(),
                                layer.w_v.detach().numpy(), mask=mask.numpy())
    with pytest.raises(ValueError, match="mask must leave every query a key"):
        layer(q, k, v, mask=mask)


def test_grad_requiring_tensors_are_read_without_breaking_the_graph():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    out = rope.rotate(x, np.arange(3), rope.inv_freq(4))
    assert np.allclose(out, rope.rotate(x.detach().numpy(), np.arange(3), rope.inv_freq(4)))
    assert x.grad is None and x.requires_grad


# --- every size guard: the limit itself accepted, one step past it refused with the count ---------

N = _contracts.MAX_ENTRIES  # 2**28


def _limit_check(rule):
    """The ``limit`` check inside a rule (a rule may wrap it once or twice), or ``None``."""
    if getattr(rule, "__qualname__", "") == "limit.<locals>.check":
        return rule
    for cell in getattr(rule, "__closure__", None) or ():
        if callable(cell.cell_contents) and (found := _limit_check(cell.cell_contents)) is not None:
            return found
    return None


def _guards() -> dict:
    """``{(callable, label): rule}`` for every size guard (an ``entries`` or ``limit`` rule) of every public callable."""
    found = {}
    for key in bad_inputs.public_callables():
        for rule in bad_inputs.contract_of(key).rules:
            if (check := _limit_check(rule)) is not None:
                found[key, inspect.getclosurevars(check).nonlocals["label"]] = rule
    return found


def _rule_passes(key, rule, arguments) -> None:
    """Run the one ``rule`` of ``key`` on ``arguments`` converted by their declared kinds (without the body,
    which would build an array of 2**28 entries)."""
    kinds = bad_inputs.contract_of(key).kinds
    values = {name: value if name not in kinds or value is None else kinds[name](name, value)
              for name, value in arguments.items()}
    rule(*(values[name] for name in rule.names))


def _half_d(call):
    """A ``d / 2`` guard: ``d = 2**29`` gives 2**28 frequencies, ``d = 2**29 + 2`` one more."""
    return [(lambda: call(2**29 + 2), N + 1)], [{"d": 2**29}]


def _square(call):
    """An ``n * n`` guard: ``n = 2**14`` gives 2**28 entries, ``n = 2**14 + 1`` more."""
    return [(lambda: call(2**14 + 1), (2**14 + 1) ** 2)], [{"n": 2**14}]


def _pairs(call):
    """An ``n_queries * n_keys`` guard, ``n_keys`` given or left as ``n_queries``."""
    return ([(lambda: call(2, 2**27 + 1), N + 2), (lambda: call(2**14 + 1, None), (2**14 + 1) ** 2)],
            [{"n_queries": 2, "n_keys": 2**27}, {"n_queries": 2**14, "n_keys": None}])


def _heads(call, at_self=dict):
    """An ``n_heads * n_queries * n_keys`` guard for 4 heads, ``n_keys`` given or left as ``n_queries``."""
    ats = [{"n_queries": 1, "n_keys": 2**26}, {"n_queries": 2**13, "n_keys": None}]
    return ([(lambda: call(1, 2**26 + 1), N + 4), (lambda: call(2**13 + 1, None), 4 * (2**13 + 1) ** 2)],
            [lambda at=at: {**at, **at_self()} for at in ats])


def _angles(call, name="positions", **at):
    """A ``positions.size * len(inv_freq)`` guard: 2**14 positions by 2**14 frequencies, then one more position."""
    return ([(lambda: call(np.arange(2**14 + 1)), N + 2**14)],
            [{name: np.arange(2**14), "inv_freq": rope.inv_freq(2**15), **at}])


TH14 = rope.inv_freq(2**15)           # 2**14 frequencies
ROW14 = np.zeros((1, 2**15))          # one vector of 2**14 pairs
T2, T4 = np.zeros((32, 2)), np.zeros((32, 4))
E1 = np.zeros((1, 1))


def _xl(n_q, n_k, d_r):
    return relative.transformer_xl_terms(np.zeros((n_q, 1)), np.zeros((n_k, 1)), E1, E1, np.zeros((d_r, 1)),
                                         np.zeros(1), np.zeros(1))


def _remap(call, n):
    """``n`` queries and keys of 2**8 pairs: 2**28 angles at ``n = 2**10``."""
    q = np.zeros((n, 2**9))
    return call(q, q, rope.inv_freq(2**9))


def _remap_guard(call):
    q = np.zeros((2**10, 2**9))
    return ([(lambda: _remap(call, 2**10 + 1), (2**10 + 1) ** 2 * 2**8)],
            [{"q": q, "k": q, "inv_freq": rope.inv_freq(2**9)}])


MROPE_AXES = [0] * 2**14               # every pair on one axis
Q3, TH3 = np.zeros((3, 8)), rope.inv_freq(8)
def _mla(call):
    """An MLA ``heads * n * n`` guard: 4 heads of 2**13 tokens give 2**28 scores, one token more is past it.
    ``call(q_nope, q_rope, k_rope, positions)`` gets ``(heads, n, 1)`` and ``(heads, n, 2)`` queries, one
    ``(n, 2)`` rotated key and the positions."""
    def past(heads, n):
        return lambda: call(np.zeros((heads, n, 1)), np.zeros((heads, n, 2)), np.zeros((n, 2)), np.arange(n))
    return ([(past(4, 2**13 + 1), 4 * (2**13 + 1) ** 2), (past(1, 2**14 + 1), (2**14 + 1) ** 2)],
            [{"q_nope": np.zeros((4, 2**13, 1))}, {"q_nope": np.zeros((1, 2**14, 1))}])


def _indexer(n, heads):
    """The lightning indexer on ``n`` tokens of ``heads`` heads, 2 components each, one pair rotated."""
    return sparse.indexer_scores(np.zeros((n, heads, 2)), np.zeros((n, 2)), np.zeros((n, heads)), [1.0])


WIDE = configs.frequencies_at({"head_dim": 2**14, "rope_theta": 10000.0, "max_position_embeddings": 4096}, 1)


#: ``(callable, label) -> ([(call one step past the limit, the count it reports)], [arguments at the limit])``
#: (arguments as a dictionary, or a function that makes one when they are large or draw random numbers).
GUARDS = {
    ("attention.relative_positions", "n_queries * n_keys"): _pairs(attention.relative_positions),
    ("attention.causal_mask", "n_queries * n_keys"): _pairs(attention.causal_mask),
    ("absolute.frequencies", "d / 2"): _half_d(absolute.frequencies),
    ("absolute.wavelengths", "d / 2"): _half_d(absolute.wavelengths),
    ("absolute.sinusoidal", "positions.size * d"): (
        [(lambda: absolute.sinusoidal(np.arange(2), 2**27 + 2), N + 4)], [{"positions": np.arange(2), "d": 2**27}]),
    ("absolute.rotation_for_offset", "d * d"): (
        [(lambda: absolute.rotation_for_offset(0, 2**14 + 2), (2**14 + 2) ** 2)], [{"d": 2**14}]),
    ("absolute.position_dot_products", "m.size * d"): (
        [(lambda: absolute.position_dot_products(np.arange(2), [0], 2**27 + 2), N + 4)],
        [{"m": np.arange(2), "d": 2**27}]),
    ("absolute.position_dot_products", "n.size * d"): (
        [(lambda: absolute.position_dot_products([0], np.arange(2), 2**27 + 2), N + 4)],
        [{"n": np.arange(2), "d": 2**27}]),
    ("absolute.dot_product_at_distance", "k.size * d / 2"): (
        [(lambda: absolute.dot_product_at_distance(np.arange(2), 2**28 + 4), N + 4)],
        [{"k": np.arange(2), "d": 2**28}]),
    ("absolute.position_score", "m.size * d"): (
        [(lambda: absolute.position_score(np.arange(2**21 + 1), 0, np.eye(128)), N + 128)],
        [lambda: {"m": np.arange(2**21), "M": np.eye(128)}]),
    ("absolute_torch.SinusoidalPositions.forward", "positions.numel() * d"): (
        [(lambda: absolute_torch.SinusoidalPositions(2**27 + 2)(torch.arange(2)), N + 4)],
        [lambda: {"self": absolute_torch.SinusoidalPositions(2**27), "positions": torch.arange(2)}]),
    ("absolute_torch.LearnedPositions", "max_positions * d"): (
        [(lambda: absolute_torch.LearnedPositions(2, 2**27 + 1), N + 2)], [{"max_positions": 2, "d": 2**27}]),
    ("relative.relative_positions", "n_queries * n_keys"): _pairs(relative.relative_positions),
    ("relative.clipped_distances", "n_queries * n_keys"): (
        [(lambda: relative.clipped_distances(2, 2**27 + 1, 4), N + 2)], [{"n_queries": 2, "n_keys": 2**27}]),
    ("relative.signed_sinusoid", "distances.size * d"): (
        [(lambda: relative.signed_sinusoid(np.arange(2), 2**27 + 2), N + 4)],
        [{"distances": np.arange(2), "d": 2**27}]),
    ("relative.transformer_xl_terms", "(n_queries + n_keys) * d_r"): (
        [(lambda: _xl(1, 2**14, 2**14), N + 2**14)],
        [{"e_q": E1, "e_k": np.zeros((2**14 - 1, 1)), "w_kr": np.zeros((2**14, 1))}]),
    ("relative.transformer_xl_terms", "n_queries * n_keys"): (
        [(lambda: _xl(2**14, 2**14 + 1, 2), N + 2**14)],
        [{"e_q": np.zeros((2**14, 1)), "e_k": np.zeros((2**14, 1))}]),
    ("relative.t5_bias", "n_heads * n_queries * n_keys"): (
        [(lambda: relative.t5_bias(T2, 2, 2**26 + 1), N + 4), (lambda: relative.t5_bias(T4, 2**13 + 1), 4 * (2**13 + 1) ** 2)],
        [{"table": T2, "n_queries": 2, "n_keys": 2**26}, {"table": T4, "n_queries": 2**13, "n_keys": None}]),
    ("relative_torch.ShawRelativeAttention", "(2 max_distance + 1) * max(d, d_v)"): (
        [(lambda: relative_torch.ShawRelativeAttention(2, 2**26), N + 2),
         (lambda: relative_torch.ShawRelativeAttention(1, 0, d_v=N + 1), N + 1)],
        [{"d": N, "max_distance": 0, "d_v": None}, {"d": 1, "max_distance": 0, "d_v": N}]),
    ("relative_torch.TransformerXLScores", "d_model * d_head"): (
        [(lambda: relative_torch.TransformerXLScores(2**14, 2**14 + 1), N + 2**14)], [{"d_model": 2**14, "d_head": 2**14}]),
    ("relative_torch.TransformerXLScores.forward", "n_queries * n_keys"): (
        [(lambda: relative_torch.TransformerXLScores(2, 1)(torch.zeros(2**14, 2), torch.zeros(2**14 + 1, 2)), N + 2**14)],
        [{"e_q": torch.zeros(2**14, 2), "e_k": torch.zeros(2**14, 2)}]),
    ("relative_torch.T5RelativeBias", "num_buckets * n_heads"): (
        [(lambda: relative_torch.T5RelativeBias(2**23 + 1), N + 32)], [{"n_heads": 2**23, "num_buckets": 32}]),
    ("relative_torch.T5RelativeBias.forward", "n_heads * n_queries * n_keys"): _heads(
        lambda n_q, n_k: relative_torch.T5RelativeBias(4)(n_q, n_k), lambda: {"self": relative_torch.T5RelativeBias(4)}),
    ("rope.inv_freq", "d / 2"): _half_d(rope.inv_freq),
    ("rope.angles", "positions.size * len(inv_freq)"): _angles(lambda m: rope.angles(m, TH14)),
    ("rope.rotate", "positions.size * len(inv_freq)"): _angles(lambda m: rope.rotate(ROW14, m, TH14)),
    ("rope.rotation_matrices", "positions.size * d * d"): (
        [(lambda: rope.rotation_matrices([0], np.ones(2**13 + 1)), 4 * (2**13 + 1) ** 2),
         (lambda: rope.rotation_matrices(np.arange(4), np.ones(2**12 + 1)), 16 * (2**12 + 1) ** 2)],
        [{"positions": [0], "inv_freq": np.ones(2**13)}, {"positions": np.arange(4), "inv_freq": np.ones(2**12)}]),
    ("rope.rotate_by_matrices", "positions.size * d * d"): (
        [(lambda: rope.rotate_by_matrices(np.zeros((1, 2**14 + 2)), [0], np.ones(2**13 + 1)), 4 * (2**13 + 1) ** 2)],
        [{"positions": [0], "inv_freq": np.ones(2**13)}]),
    ("rope.rotate_complex", "positions.size * len(inv_freq)"): _angles(lambda m: rope.rotate_complex(ROW14, m, TH14)),
    ("rope.score", "m.size * len(inv_freq)"): _angles(lambda m: rope.score(ROW14, ROW14, m, [0], TH14), "m"),
    ("rope.score", "n.size * len(inv_freq)"): _angles(lambda n: rope.score(ROW14, ROW14, [0], n, TH14), "n"),
    ("rope.relative_score", "distance.size * len(inv_freq)"): _angles(
        lambda t: rope.relative_score(ROW14, ROW14, t, TH14), "distance"),
    ("rope.complex_score", "m.size * len(inv_freq)"): _angles(lambda m: rope.complex_score(ROW14, ROW14, m, [0], TH14), "m"),
    ("rope.complex_score", "n.size * len(inv_freq)"): _angles(lambda n: rope.complex_score(ROW14, ROW14, [0], n, TH14), "n"),
    ("rope.self_attention", "positions.size * len(inv_freq)"): _angles(
        lambda m: rope.self_attention(np.zeros((m.size, 1)), np.zeros((1, 2**15)), np.zeros((1, 2**15)), E1, m, TH14)),
    ("rope.long_term_decay", "distances.size * len(inv_freq)"): _angles(lambda t: rope.long_term_decay(t, TH14), "distances"),
    ("rope.decay_bound", "distances.size * len(inv_freq)"): _angles(
        lambda t: rope.decay_bound(np.ones(2**14, complex), t, TH14), "distances"),
    ("rope_torch.RotaryEmbedding", "d / 2"): _half_d(rope_torch.RotaryEmbedding),
    ("alibi.bias", "n_heads * n_queries * n_keys"): _heads(
        lambda n_q, n_k: alibi.bias(4, n_q, n_k), lambda: {"n_heads": 4}),
    ("alibi.distance_weights", "n_heads * n_keys"): (
        [(lambda: alibi.distance_weights(2, 2**27 + 1), N + 2)], [{"n_heads": 2, "n_keys": 2**27}]),
    ("alibi.effective_span", "n_heads * n_keys"): (
        [(lambda: alibi.effective_span(2, 2**27 + 1), N + 2)], [{"n_heads": 2, "n_keys": 2**27}]),
    ("alibi_torch.ALiBi.forward", "n_heads * n_queries * n_keys"): _heads(
        lambda n_q, n_k: alibi_torch.ALiBi(4)(n_q, n_k), lambda: {"self": alibi_torch.ALiBi(4)}),
    ("nope.uniform_causal_weights", "n * n"): _square(nope.uniform_causal_weights),
    ("nope.uniform_bidirectional_weights", "n * n"): _square(nope.uniform_bidirectional_weights),
    ("nope.position_signal", "n * n"): _square(nope.position_signal),
    ("nope.nope_layer_outputs", "n_sequences * n_tokens * d_model"): (
        [(lambda: nope.nope_layer_outputs(2, 2**13 + 1, True, d_model=2**14), N + 2**15),
         (lambda: nope.nope_layer_outputs(1, 2**14 + 1, True), (2**14 + 1) ** 2)],
        [{"n_sequences": 2, "n_tokens": 2**13, "d_model": 2**14}, {"n_sequences": 1, "n_tokens": 2**14, "d_model": 16}]),
    ("nope.nope_layer_outputs", "(vocab_size + 1) * d_model"): (
        [(lambda: nope.nope_layer_outputs(1, 2, True, d_model=2**10, vocab_size=2**18), N + 2**10)],
        [{"vocab_size": 2**18 - 1, "d_model": 2**10}]),
    ("nope.nope_layer_outputs", "d_model ** 2"): (
        [(lambda: nope.nope_layer_outputs(1, 2, True, d_model=2**14 + 1), (2**14 + 1) ** 2)], [{"d_model": 2**14}]),
    ("nope.position_probe", "steps * n_train * n_tokens * hidden * d_model"): (
        [(lambda: nope.position_probe(steps=2**16 + 1), 2**38 + 2**22)],
        [{"steps": 2**16, "n_train": 256, "n_tokens": 16, "hidden": 64, "d_model": 16}]),
    ("nope.position_probe", "(n_train + n_test) * n_tokens * d_model"): (
        [(lambda: nope.position_probe(n_train=2**13, n_test=2**13 + 1, d_model=2**10, hidden=1, steps=1), N + 2**14)],
        [{"n_train": 2**13, "n_test": 2**13, "n_tokens": 16, "d_model": 2**10}]),
    ("nope.position_probe", "(vocab_size + 1) * d_model"): (
        [(lambda: nope.position_probe(vocab_size=2**18, d_model=2**10, hidden=1, steps=1), N + 2**10)],
        [{"vocab_size": 2**18 - 1, "d_model": 2**10}]),
    ("nope.position_probe", "d_model ** 2"): (
        [(lambda: nope.position_probe(d_model=2**14 + 1, n_train=1, n_test=1, hidden=1, steps=1), (2**14 + 1) ** 2)],
        [{"d_model": 2**14}]),
    **{(f"scaling.{name}", "d / 2"): _half_d(call) for name, call in {
        "unscaled": scaling.unscaled, "position_interpolation": scaling.position_interpolation,
        "ntk_per_pair": lambda d: scaling.ntk_per_pair(d, 2.0), "ntk_aware": scaling.ntk_aware,
        "dynamic_ntk": scaling.dynamic_ntk, "yarn": scaling.yarn, "yarn_code_ramp": lambda d: scaling.yarn_code_ramp(d, 4096),
        "yarn_code": scaling.yarn_code, "yarn_curves": scaling.yarn_curves, "base_change": scaling.base_change,
        "llama3": scaling.llama3, "llama3_bands": scaling.llama3_bands,
        "longrope": lambda d: scaling.longrope(d, short_factors=np.ones(2), long_factors=np.ones(2)),
        "proportional": lambda d: scaling.proportional(d, 1)}.items()},
    ("trained_range.extension", "d / 2"): _half_d(lambda d: trained_range.extension("pi", d)),
    ("interpolation.score_curve", "distances.size * len(inv_freq)"): _angles(
        lambda t: interpolation.score_curve(np.ones(2**14, complex), t, TH14), "distances"),
    ("interpolation.fit_score_curve", "distances.size * d"): (
        [(lambda: interpolation.fit_score_curve(np.arange(2**13 + 1), np.zeros(2**13 + 1), TH14), N + 2**15)],
        [{"distances": np.arange(2**13), "inv_freq": TH14}]),
    ("interpolation.pi_bound_ratio", "distances.size * d / 2"): (
        [(lambda: interpolation.pi_bound_ratio(np.arange(2), 2**28 + 4), N + 4)], [{"distances": np.arange(2), "d": 2**28}]),
    ("interpolation.node_polynomial", "x.size * len(nodes)"): (
        [(lambda: interpolation.node_polynomial(np.zeros(2**14 + 1), np.arange(2**14)), N + 2**14)],
        [{"x": np.zeros(2**14), "nodes": np.arange(2**14)}]),
    ("interpolation.polynomial_interpolant", "x.size * len(nodes)"): (
        [(lambda: interpolation.polynomial_interpolant(np.arange(2**14), np.zeros(2**14), np.zeros(2**14 + 1)), N + 2**14)],
        [{"x": np.zeros(2**14), "nodes": np.arange(2**14)}]),
    ("interpolation.polynomial_remainder_bound", "x.size * len(nodes)"): (
        [(lambda: interpolation.polynomial_remainder_bound(np.zeros(2**14 + 1), np.arange(2**14), 1.0), N + 2**14)],
        [{"x": np.zeros(2**14), "nodes": np.arange(2**14)}]),
    ("integer_positions.reading_distance", "k.size * len(inv_freq)"): _angles(
        lambda k: integer_positions.reading_distance(k + 1, TH14), "k"),
    ("precision.angles_in", "positions.size * len(inv_freq)"): _angles(lambda m: precision.angles_in(m, TH14)),
    ("precision.angle_error", "positions.size * len(inv_freq)"): _angles(lambda m: precision.angle_error(m, TH14)),
    ("precision.table_error", "positions.size * len(inv_freq)"): _angles(lambda m: precision.table_error(m, TH14)),
    ("precision.rotate_like_library", "positions.size * len(inv_freq)"): _angles(
        lambda m: precision.rotate_like_library(np.zeros((1, 1, 2**15)), m, TH14)),
    ("precision.score_error", "query_positions.size * d"): (
        [(lambda: precision.score_error(np.zeros(2**14), np.zeros(2**14), np.arange(2**14 + 1), 0, rope.inv_freq(2**14)),
          N + 2**14)],
        [{"query_positions": np.arange(2**14), "q": np.zeros(2**14)}]),
    ("mrope.angles", "positions.size * len(inv_freq)"): (
        [(lambda: mrope.angles(np.arange(2**14 + 1)[None], TH14, MROPE_AXES), N + 2**14)],
        [{"positions": np.arange(2**14)[None], "inv_freq": TH14}]),
    ("mrope.rotate", "positions.size * len(inv_freq)"): (
        [(lambda: mrope.rotate(ROW14, np.arange(2**14 + 1)[None], TH14, MROPE_AXES), N + 2**14)],
        [{"positions": np.arange(2**14)[None], "inv_freq": TH14}]),
    ("mrope.text_positions", "3 * n"): ([(lambda: mrope.text_positions(N // 3 + 1), 3 * (N // 3 + 1))], [{"n": N // 3}]),
    ("mrope.vision_positions", "grid_thw's 3 * t * h * w"): (
        [(lambda: mrope.vision_positions([1, 2**14, N // 3 // 2**14 + 1]), 3 * 2**14 * (N // 3 // 2**14 + 1))],
        [{"grid_thw": [1, 2**14, N // 3 // 2**14]}]),
    ("mrope.vision_positions", "(t - 1) * time_interval"): (
        [(lambda: mrope.vision_positions([2, 1, 1], time_interval=2.0**32 + 1), 2.0**32 + 1)],
        [{"grid_thw": [2, 1, 1], "time_interval": 2.0**32}]),
    ("mrope.multimodal_positions", "(t - 1) * time_interval of each grid"): (
        # the largest grid counts, wherever it stands among the segments
        [(lambda: mrope.multimodal_positions([(2, 1, 1)], time_interval=2.0**32 + 1), 2.0**32 + 1),
         (lambda: mrope.multimodal_positions([(2, 1, 1), 3, (3, 1, 1)], time_interval=2.0**31 + 1), 2.0**32 + 2)],
        [{"segments": [(2, 1, 1)], "time_interval": 2.0**32},
         {"segments": [(2, 1, 1), 3, (3, 1, 1)], "time_interval": 2.0**31}]),
    ("mrope.patch_positions", "2 * h * w"): (
        [(lambda: mrope.patch_positions(2**13, 2**14 + 1), N + 2**14)], [{"h": 2**13, "w": 2**14}]),
    ("video_time.videorope_positions", "3 * tokens"): (
        # a grid counts its merged tokens: 2**14 * 5462 for (1, 2**15, 2 * 5462) merged by 2
        [(lambda: video_time.videorope_positions([N // 3 + 1]), 3 * (N // 3 + 1)),
         (lambda: video_time.videorope_positions([N // 3 - 3, (1, 2, 2)]), 3 * (N // 3 + 1)),
         (lambda: video_time.videorope_positions([(1, 2**15, 2 * 5462)], 2), 3 * 2**14 * 5462)],
        [{"segments": [N // 3], "spatial_merge_size": 1},
         {"segments": [(1, 2**15, 2 * (N // 3 // 2**14))], "spatial_merge_size": 2}]),
    ("video_time.videorope_positions", "temporal_spacing * (text tokens + each grid's t)"): (
        [(lambda: video_time.videorope_positions([(2**16 + 1, 1, 1)], temporal_spacing=2**16), 2**32 + 2**16),
         (lambda: video_time.videorope_positions([2**15, (2**15 + 1, 1, 1)], temporal_spacing=2**16), 2**32 + 2**16)],
        [{"segments": [(2**16, 1, 1)], "temporal_spacing": 2**16},
         {"segments": [2**15, (2**15, 1, 1)], "temporal_spacing": 2**16}]),
    ("mla.scores", "heads * n * n"): _mla(lambda q, q_r, k_r, m: mla.scores(q, q_r, q, k_r, m, [1.0])),
    ("mla.absorbed_scores", "heads * n * n"): _mla(
        lambda q, q_r, k_r, m: mla.absorbed_scores(q, q_r, np.zeros((m.size, 1)), k_r, np.zeros((q.shape[0], 1, 1)),
                                                   m, [1.0])),
    ("mla.attention", "heads * n * n"): _mla(lambda q, q_r, k_r, m: mla.attention(q, q_r, q, k_r, q, m, [1.0], 1.0)),
    ("sparse.indexer_scores", "n * n * heads"): (
        [(lambda: _indexer(2**13 + 1, 4), 4 * (2**13 + 1) ** 2), (lambda: _indexer(2**14 + 1, 1), (2**14 + 1) ** 2)],
        [{"q": np.zeros((2**13, 4, 2))}, {"q": np.zeros((2**14, 1, 2))}]),
    ("sparse.entry_positions", "n_tokens // rate"): (
        # rounded down: 2**29 + 1 tokens in windows of 2 are 2**28 entries
        [(lambda: sparse.entry_positions(N + 1, 1), N + 1), (lambda: sparse.entry_positions(2 * N + 2, 2), N + 1)],
        [{"n_tokens": N, "rate": 1}, {"n_tokens": 2 * N + 1, "rate": 2}]),
    ("sparse.entry_mask", "n_queries * n_entries"): (
        [(lambda: sparse.entry_mask(2, 2**27 + 1, 4), N + 2), (lambda: sparse.entry_mask(2**27 + 1, 2, 4), N + 2)],
        [{"n_queries": 2, "n_entries": 2**27}, {"n_queries": 2**27, "n_entries": 2}]),
    ("layer_plans.sliding_window_mask", "n * n"): _square(lambda n: layer_plans.sliding_window_mask(n, 4)),
    ("layer_plans.chunked_mask", "n * n"): _square(lambda n: layer_plans.chunked_mask(n, 4)),
    ("layer_plans.layer_mask", "n * n"): _square(lambda n: layer_plans.layer_mask(layer_plans.LayerPlan(rope=True), n)),
    ("sinks.uniform_weights_with_sink", "n * n"): _square(lambda n: sinks.uniform_weights_with_sink(n, 0.0)),
    ("remap.relative_distances", "n * n"): _square(remap.relative_distances),
    ("remap.dca_distances", "n * n"): _square(lambda n: remap.dca_distances(n, 4, 8)),
    ("remap.remapped_scores", "n_q * n_k * d / 2"): _remap_guard(
        lambda q, k, theta: remap.remapped_scores(q, k, theta, np.zeros((q.shape[0], k.shape[0])))),
    ("remap.rerope_two_pass", "n_q * n_k * d / 2"): _remap_guard(
        lambda q, k, theta: remap.rerope_two_pass(q, k, theta, 4)),
    ("remap.rerope_two_pass", "window * leak"): (
        [(lambda: remap.rerope_two_pass(Q3, Q3, TH3, 2**16, 2**16 + 1), 2**32 + 2**16)],
        [{"window": 2**16, "leak": 2**16}, {"window": 2**32, "leak": None}]),
    ("remap.dca_scores", "n_q * n_k * d / 2"): _remap_guard(
        lambda q, k, theta: remap.dca_scores(q, k, theta, 4, 8)),
    ("remap.rerope_cache", "window * leak"): (
        [(lambda: remap.rerope_cache(Q3, 2**16, TH3, 2**16 + 1), 2**32 + 2**16)],
        [{"window": 2**16, "leak": 2**16}, {"window": 2**32, "leak": None}]),
    ("remap.rerope_step", "window * leak"): (
        [(lambda: remap.rerope_step(np.zeros(8), Q3, Q3, 2**16, TH3, 2**16 + 1), 2**32 + 2**16)],
        [{"window": 2**16, "leak": 2**16}, {"window": 2**32, "leak": None}]),
    ("pair_usage.aimed_scores", "distances.size * len(inv_freq)"): (
        [(lambda: pair_usage.aimed_scores(rope.inv_freq(2**15), np.array([0]), 0, np.arange(2**14 + 1)), N + 2**14)],
        [{"distances": np.arange(2**14), "inv_freq": rope.inv_freq(2**15)}]),
    ("pair_usage.attention_on_offset", "context * len(inv_freq)"): (
        [(lambda: pair_usage.attention_on_offset(rope.inv_freq(2**15), np.array([0]), 0, 2**14 + 1, 1.0),
          N + 2**14)],
        [{"context": 2**14, "inv_freq": rope.inv_freq(2**15)}]),
    ("pair_usage.random_scores", "samples * len(distances) * d"): (
        [(lambda: pair_usage.random_scores(2**14, np.arange(2**7), 2**7 + 1, 0), N + 2**21)],
        [{"samples": 2**7, "distances": np.arange(2**7), "d": 2**14}]),
    ("configs.rotate", "positions.size * head_dim"): (
        # the positions must broadcast onto x's rows, so x is as large as the result: a view of one zero
        [(lambda: configs.rotate(np.broadcast_to(0.0, (2**14 + 1, 2**14)), np.arange(2**14 + 1), WIDE), N + 2**14)],
        [{"positions": np.arange(2**14), "frequencies": WIDE}]),
}


def test_every_size_guard_is_in_the_table():
    assert set(_guards()) == set(GUARDS)


@pytest.mark.parametrize("key, label", list(GUARDS), ids=[f"{key}:{label}" for key, label in GUARDS])
def test_a_size_guard_accepts_its_limit_and_refuses_one_step_past_it(key, label):
    """At its limit a guard lets the call through (checked on the rule alone: the body would build the
    array); one step past it the call is refused before its body runs (not by a function the body calls,
    whose guard may count the same), naming what is counted and how many it came to. A limit moved either
    way, or a count that lost or gained a factor, fails here."""
    past, at = GUARDS[key, label]
    obj = bad_inputs.resolve(key)
    body = inspect.unwrap(obj.__init__ if isinstance(obj, type) else obj).__code__
    for call, count in past:
        with pytest.raises(ValueError, match=rf"^{re.escape(label)} must stay within .+; got {count:,}$") as refused:
            call()
        assert body not in {entry.frame.code.raw for entry in refused.traceback}, f"{key}: refused inside its body"
    rule = _guards()[key, label]
    for arguments in at:
        _rule_passes(key, rule, arguments() if callable(arguments) else arguments)
