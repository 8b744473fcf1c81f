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

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import bad_inputs

from companion import _contracts, absolute, interpolation, nope, relative, relative_torch, rope  # noqa: E402

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
