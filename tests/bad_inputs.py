"""Bad inputs for every public callable of the math modules, and how to judge the answers.

Each public callable of ``companion.{attention, absolute, relative, rope, alibi, nope,
scaling}`` (every name in a module's ``__all__``, and the public methods of its torch
layers) has an entry in :data:`REGISTRY`: a valid call, one :class:`Arg` per
parameter, and cases of its own. An :class:`Arg` knows the bad values of its kind
(wrong type, ``None``, NaN, infinities, negative, zero, non-integer, ``bool`` for an
integer, odd widths, empty arrays, wrong shapes, huge values such as ``1e300``,
``10**18`` and ``2**63``) and the valid spellings of the same value (numpy scalars,
lists, plain and grad-requiring torch tensors), which must give the same result.

Every case has an expectation:

* ``"bad"``: the call must raise ``ValueError`` or ``TypeError`` whose message
  names the parameter (and says what it "must" be);
* ``"valid"``: the call must return the result of the valid call;
* ``"either"``: a clear error, or a finite result (huge but legal values);
* a function: the call must return a result for which it returns True.

:func:`outcome` sorts each call into one of the classes ``clear error``,
``unhelpful error``, ``silent nonsense``, ``valid accepted`` and ``valid rejected``;
``python tests/bad_inputs.py`` prints the counts. ``tests/test_bad_inputs.py`` runs
every case and fails on anything but a clear error or an accepted valid input.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import re
import signal
import sys
from typing import Callable

import numpy as np
import sympy as sp
import torch

from companion import absolute, alibi, attention, nope, relative, rope, scaling

MODULES = {"attention": attention, "absolute": absolute, "relative": relative, "rope": rope,
           "alibi": alibi, "nope": nope, "scaling": scaling}

#: Result types that hold what a function returned; companion builds them, they check nothing.
RECORDS = {
    "relative.XLTerms", "relative.PositionCost", "nope.ProbeResult",
    "scaling.YarnCurves", "scaling.Extension",
}

NAN, INF = float("nan"), float("inf")
HUGE_INTS = [("10**18", 10**18), ("2**63", 2**63)]
WRONG_TYPES = [("str", "abc"), ("None", None), ("list of str", ["a", "b"])]


# ---------------------------------------------------------------------------
# Argument kinds
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Arg:
    """One parameter: its valid value and the bad and valid variants of its kind."""

    value: object

    def bad(self) -> list:
        return []

    def either(self) -> list:
        return []

    def valid(self) -> list:
        return []


@dataclasses.dataclass
class Int(Arg):
    lo: int | None = 1
    even: bool = False
    huge: str = "bad"       # "bad": refused (a size or a position); "either": may be computed
    optional: bool = False

    def bad(self):
        out = [c for c in WRONG_TYPES if not (self.optional and c[1] is None)]
        out += [("float", self.value + 0.5), ("whole float", float(self.value)), ("bool", True),
                ("nan", NAN), ("inf", INF), ("array", np.array([self.value]))]
        if self.lo is not None:
            out.append(("below minimum", self.lo - 1))
            out.append(("negative", -abs(self.value) - 5))
        if self.even:
            out.append(("odd", self.value + 1))
        if self.huge == "bad":
            out += HUGE_INTS
        return out

    def either(self):
        return HUGE_INTS if self.huge == "either" else []

    def valid(self):
        return [("numpy int64", np.int64(self.value)), ("numpy int32", np.int32(self.value))]


@dataclasses.dataclass
class Real(Arg):
    lo: float | None = None
    lo_open: bool = True
    hi: float | None = None
    hi_open: bool = True
    optional: bool = False

    def bad(self):
        out = [c for c in WRONG_TYPES if not (self.optional and c[1] is None)]
        out += [("nan", NAN), ("inf", INF), ("-inf", -INF), ("bool", True), ("complex", 1 + 1j),
                ("array", np.array([1.0, 2.0]))]
        if self.lo is not None:
            out.append(("below minimum", self.lo - 1.0))
            if self.lo_open:
                out.append(("at the open minimum", self.lo))
        if self.hi is not None:
            out.append(("above maximum", self.hi + 1.0))
            if self.hi_open:
                out.append(("at the open maximum", self.hi))
        return out

    def either(self):
        return [("1e300", 1e300)] if self.hi is None else []

    def valid(self):
        if self.value is None:
            return []
        out = [("numpy float64", np.float64(self.value))]
        if float(self.value).is_integer():
            out.append(("int", int(self.value)))
        return out


@dataclasses.dataclass
class Bool(Arg):
    def bad(self):
        return [("str 'no'", "no"), ("int 1", 1), ("None", None), ("array", np.array([True]))]

    def valid(self):
        return [("numpy bool", np.bool_(self.value))]


@dataclasses.dataclass
class Choice(Arg):
    def bad(self):
        return [("unknown name", "nope"), ("None", None), ("int", 3), ("list", [self.value])]


@dataclasses.dataclass
class Array(Arg):
    """A real array; ``min_ndim`` dimensions at least; ``neg_inf_ok`` for scores and biases."""

    min_ndim: int = 1
    positive: bool = False
    neg_inf_ok: bool = False
    empty_ok: bool = False
    optional: bool = False
    huge: str = "either"

    def _v(self):
        return np.asarray(self.value, dtype=np.float64)

    def bad(self):
        v = self._v()
        out = [c for c in WRONG_TYPES if not (self.optional and c[1] is None)]
        out += [("nan entry", _put(v, NAN)), ("inf entry", _put(v, INF)), ("complex", v + 1j),
                ("bool", v > 0), ("numeric strings", v.astype(str)), ("ragged", [[1.0, 2.0], [3.0]])]
        if not self.neg_inf_ok:
            out.append(("-inf entry", _put(v, -INF)))
        if not self.empty_ok:
            out.append(("empty", np.zeros((0,) * max(self.min_ndim, 1))))
        if self.min_ndim >= 1:
            out.append(("scalar", 1.0))
        if self.positive:
            out += [("negative entry", _put(v, -1.0)), ("zero entry", _put(v, 0.0))]
        if self.huge == "bad":
            out.append(("1e300 entries", v * 1e299 + 1e300))
        return out

    def either(self):
        return [("1e300 entries", self._v() * 1e299)] if self.huge == "either" else []

    def valid(self):
        v = self._v()
        return [("list", v.tolist()), ("torch tensor", torch.tensor(v)),
                ("grad-requiring tensor", torch.tensor(v, requires_grad=True))]


@dataclasses.dataclass
class Complex(Arg):
    fixed_length: bool = True

    def bad(self):
        v = np.asarray(self.value, dtype=np.complex128)
        out = WRONG_TYPES + [("nan entry", _put(v, NAN)), ("inf entry", _put(v, INF)), ("scalar", 1.0 + 0j)]
        return out + ([("wrong length", v[..., :-1])] if self.fixed_length else [])

    def valid(self):
        v = np.asarray(self.value, dtype=np.complex128)
        return [("list", v.tolist()), ("torch complex tensor", torch.tensor(v))]


@dataclasses.dataclass
class Positions(Arg):
    """Whole numbers; ``signed`` for distances of either sign."""

    signed: bool = False
    floats_ok: bool = True           # whole floats count as integers

    def bad(self):
        v = np.asarray(self.value)
        out = WRONG_TYPES + [("non-integer", v + 0.5), ("bool", v > 0), ("nan", _put(v.astype(float), NAN)),
                             ("inf", _put(v.astype(float), INF)), ("complex", v + 1j),
                             ("2**63", _put(v.astype(object), 2**63)), ("10**18", _put(v, 10**18)),
                             ("1e300", _put(v.astype(float), 1e300)),
                             ("-2**63 - 1", _put(v.astype(object), -2**63 - 1))]
        if not self.signed:
            out.append(("negative", _put(v, -1)))
        if not self.floats_ok:
            out.append(("whole floats", v.astype(float)))
        return out

    def valid(self):
        v = np.asarray(self.value)
        out = [("list", v.tolist()), ("int32", v.astype(np.int32)), ("torch int tensor", torch.tensor(v))]
        if self.floats_ok:
            out += [("whole floats", v.astype(float)),
                    ("grad-requiring float tensor", torch.tensor(v, dtype=torch.float64, requires_grad=True))]
        return out


@dataclasses.dataclass
class Reals(Arg):
    """Real numbers in the supported range (distances, offsets, angles): any sign."""

    def bad(self):
        v = np.asarray(self.value, dtype=np.float64)
        return WRONG_TYPES + [("nan", _put(v, NAN)), ("inf", _put(v, INF)), ("-inf", _put(v, -INF)),
                              ("complex", v + 1j), ("bool", v > 0), ("1e300", _put(v, 1e300)),
                              ("2**63", _put(v, 2.0**63))]

    def valid(self):
        v = np.asarray(self.value, dtype=np.float64)
        return [("list", v.tolist()), ("torch tensor", torch.tensor(v)),
                ("grad-requiring tensor", torch.tensor(v, requires_grad=True))]


@dataclasses.dataclass
class Mask(Arg):
    optional: bool = True

    def bad(self):
        v = np.asarray(self.value, dtype=bool)
        dead = v.copy()
        dead[..., 0, :] = False
        out = [c for c in WRONG_TYPES if not (self.optional and c[1] is None)]
        return out + [("ints", v.astype(int)), ("floats", v.astype(float)), ("wrong shape", np.ones((7, 9), bool)),
                      ("all-False row", dead)]

    def valid(self):
        v = np.asarray(self.value, dtype=bool)
        return [("list", v.tolist()), ("torch bool tensor", torch.tensor(v))]


@dataclasses.dataclass
class Tensor(Arg):
    """A floating-point torch tensor (the input of a torch layer's forward)."""

    def bad(self):
        t = self.value
        return WRONG_TYPES + [("numpy array", t.numpy()), ("list", t.tolist()), ("int tensor", t.long()),
                              ("bool tensor", t > 0), ("wrong last dim", t[..., :-1]),
                              ("1-D", t.reshape(-1)), ("complex tensor", t.to(torch.complex128))]

    def valid(self):
        return [("grad-requiring", self.value.clone().requires_grad_())]


@dataclasses.dataclass
class TensorMask(Arg):
    optional: bool = True

    def bad(self):
        m = self.value
        dead = m.clone()
        dead[..., 0, :] = False
        return [("str", "abc"), ("list of str", ["a"]), ("int tensor", m.long()), ("float tensor", m.double()),
                ("wrong shape", torch.ones(7, 9, dtype=torch.bool)), ("all-False row", dead),
                ("numpy array", m.numpy())]


@dataclasses.dataclass
class TensorPositions(Arg):
    optional: bool = False
    signed: bool = False
    floats_ok: bool = True

    def bad(self):
        t = torch.as_tensor(self.value if self.value is not None else np.arange(4))
        out = [("str", "abc"), ("list of str", ["a", "b"]), ("non-integer", t + 0.5),
               ("bool", t > 0), ("complex", t.to(torch.complex128)), ("beyond the range", t + 2**40),
               ("nan", t.double() * NAN)]
        if not self.signed:
            out.append(("negative", t - 5))
        if not self.floats_ok:
            out += [("whole float tensor", t.double()), ("whole float list", t.double().tolist())]
        if not self.optional:
            out.append(("None", None))
        return out

    def valid(self):
        t = torch.as_tensor(self.value if self.value is not None else np.arange(4))
        out = [("list", t.tolist()), ("numpy", t.numpy())]
        if self.floats_ok:
            out += [("whole float tensor", t.double()), ("grad-requiring whole floats", t.double().requires_grad_())]
        return out


@dataclasses.dataclass
class Dtype(Arg):
    def bad(self):
        return [("str", "float32"), ("int dtype", torch.int64), ("bool dtype", torch.bool), ("numpy dtype", np.float32)]


@dataclasses.dataclass
class Symbolic(Arg):
    def bad(self):
        return [("nan", NAN), ("inf", INF), ("sympy nan", sp.nan), ("sympy oo", sp.oo), ("None", None),
                ("list", [1, 2]), ("complex infinity", sp.zoo)]

    def valid(self):
        return []


@dataclasses.dataclass
class SymbolicList(Arg):
    def bad(self):
        return [("str", "abc"), ("None", None), ("empty", []), ("nan entry", [NAN]), ("inf entry", [1, INF]),
                ("nested list", [[1]]), ("sympy nan", [sp.nan]), ("number", 3)]

    def valid(self):
        return [("tuple", tuple(self.value)), ("numpy object array", np.array(self.value, dtype=object))]


@dataclasses.dataclass
class Anything(Arg):
    """A parameter that accepts any value (the identity's)."""


def _put(v: np.ndarray, x) -> np.ndarray:
    """A copy of ``v`` with its first entry replaced by ``x`` (dtype widened as needed)."""
    v = np.array(v)
    if isinstance(x, complex) and v.dtype.kind != "c":
        v = v.astype(np.complex128)
    elif isinstance(x, float) and v.dtype.kind in "iub":
        v = v.astype(np.float64)
    if v.ndim == 0:
        return np.asarray(x, dtype=v.dtype)
    v.flat[0] = x
    return v


# ---------------------------------------------------------------------------
# Specs and the registry
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """A case of a callable's own: ``overrides`` on top of the valid call."""

    label: str
    overrides: dict
    expect: object = "bad"           # "bad", "valid", "either", or a predicate on the result
    names: tuple = ()                # the message must name one of these (default: the keys)


@dataclasses.dataclass
class Spec:
    call: Callable
    args: dict
    cases: list = dataclasses.field(default_factory=list)
    anything: bool = False           # no value is bad (the identity)
    masks: bool = False              # the result holds -inf by design (a causal bias)


def seeded(make: Callable) -> Callable:
    """``make`` with torch's global generator seeded first, so that layers compare equal."""
    def call(**kwargs):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return make(**kwargs)
    return call


def method(make_layer: Callable, name: str) -> Callable:
    def call(**kwargs):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            layer = make_layer()
        return getattr(layer, name)(**kwargs)
    return call


rng = np.random.default_rng(0)
D = 8
TH = rope.inv_freq(D)
Q3 = rng.normal(size=(3, D))
K4 = rng.normal(size=(4, D))
V4 = rng.normal(size=(4, 5))
K5 = rng.normal(size=(5, D))
V5 = rng.normal(size=(5, 6))
X46 = rng.normal(size=(4, 6))
W68 = rng.normal(size=(6, D))
W68b = rng.normal(size=(6, D))
W65 = rng.normal(size=(6, 5))
BIAS34 = rng.normal(size=(3, 4))
E46 = rng.normal(size=(4, 6))
PE46 = rng.normal(size=(4, 6))
M88 = rng.normal(size=(D, D))
TABLE = rng.normal(size=(32, 2))
WK5 = rng.normal(size=(5, D))
WV5 = rng.normal(size=(5, 6))
H4 = rng.normal(size=4) + 1j * rng.normal(size=4)
tq = torch.tensor(rng.normal(size=(2, 3, D)))
tk = torch.tensor(rng.normal(size=(2, 5, D)))
tv = torch.tensor(rng.normal(size=(2, 5, 6)))
tr4 = torch.tensor(rng.normal(size=(2, 4, D)))
teq = torch.tensor(rng.normal(size=(3, D)))
tek = torch.tensor(rng.normal(size=(5, D)))
CAUSAL35 = attention.causal_mask(3, 5)


def d_arg(value=D, lo=1):
    return Int(value, lo=lo, even=True)


def base_arg(value=10000.0, lo=0.0):
    return Real(value, lo=lo)


def _close_to(expected):
    return lambda result: np.allclose(_leaves(result), _leaves(expected), rtol=1e-9, atol=1e-12)


REGISTRY: dict[str, Spec] = {
    # --- attention ---------------------------------------------------------
    "attention.softmax": Spec(attention.softmax, {
        "scores": Array(BIAS34, neg_inf_ok=True), "axis": Int(-1, lo=None)},
        [Case("empty key axis", {"scores": np.zeros((3, 0))}),
         Case("all -inf row", {"scores": np.full((2, 3), -INF)}),
         Case("axis out of range", {"axis": 2}),
         Case("-inf masks an entry", {"scores": np.array([[0.0, -INF]])}, lambda r: np.array_equal(r, [[1.0, 0.0]])),
         Case("huge scores", {"scores": np.array([1e300, 0.0])}, lambda r: np.array_equal(r, [1.0, 0.0]))]),
    "attention.causal_mask": Spec(attention.causal_mask, {
        "n_queries": Int(3), "n_keys": Int(4, optional=True)},
        [Case("n_keys < n_queries", {"n_keys": 2}),
         Case("huge square", {"n_queries": 2**20}, names=("n_queries", "n_keys"))]),
    "attention.permutation_matrix": Spec(attention.permutation_matrix, {"perm": Positions([2, 0, 1], floats_ok=False)},
        [Case("repeated index", {"perm": [0, 0, 1]}), Case("out of range", {"perm": [1, 2, 3]}),
         Case("2-D", {"perm": [[0, 1], [1, 0]]}), Case("empty", {"perm": []}),
         Case("huge", {"perm": np.arange(2**15)})]),
    "attention.scaled_dot_product_attention": Spec(attention.scaled_dot_product_attention, {
        "q": Array(Q3, min_ndim=2), "k": Array(K4, min_ndim=2), "v": Array(V4, min_ndim=2),
        "mask": Mask(CAUSAL35[:, 1:]), "bias": Array(BIAS34, min_ndim=0, neg_inf_ok=True, optional=True)},
        [Case("d_k mismatch", {"q": Q3[:, :7]}, names=("q", "k")),
         Case("n_keys mismatch", {"v": V4[:3]}, names=("k", "v")),
         Case("batch mismatch", {"q": np.stack([Q3, Q3]), "k": np.stack([K4] * 3)}, names=("q", "k")),
         Case("d_k = 0", {"q": np.zeros((3, 0)), "k": np.zeros((4, 0))}, names=("q", "k")),
         Case("no keys", {"k": np.zeros((0, D)), "v": np.zeros((0, 5)), "mask": None}, names=("k",)),
         Case("bias of the wrong shape", {"bias": np.zeros((3, 5))}),
         Case("bias row all -inf", {"bias": np.full((3, 4), -INF)}),
         Case("huge q and k", {"q": Q3 * 1e200, "k": K4 * 1e200}, "either", names=("q", "k"))]),
    "attention.self_attention": Spec(attention.self_attention, {
        "x": Array(X46, min_ndim=2), "w_q": Array(W68, min_ndim=2), "w_k": Array(W68b, min_ndim=2),
        "w_v": Array(W65, min_ndim=2), "mask": Mask(attention.causal_mask(4)),
        "bias": Array(rng.normal(size=(4, 4)), min_ndim=0, neg_inf_ok=True, optional=True)},
        [Case("w_k of another width", {"w_k": W68b[:, :7]}, names=("w_k",)),
         Case("w_q with wrong rows", {"w_q": W68[:5]}, names=("w_q",)),
         Case("batched x", {"x": np.stack([X46, 2 * X46])},
              lambda r: np.allclose(r[0][1], attention.self_attention(2 * X46, W68, W68b, W65,
                                                                      attention.causal_mask(4))[0]))]),
    # --- absolute ----------------------------------------------------------
    "absolute.frequencies": Spec(absolute.frequencies, {"d": d_arg(), "base": base_arg()},
        [Case("huge d", {"d": 2**30})]),
    "absolute.wavelengths": Spec(absolute.wavelengths, {"d": d_arg(), "base": base_arg()}),
    "absolute.sinusoidal": Spec(absolute.sinusoidal, {
        "positions": Positions([0, 1, 5, 9]), "d": d_arg(), "base": base_arg()},
        [Case("huge table", {"positions": np.arange(2**16), "d": 2**14}, names=("positions", "d"))]),
    "absolute.SinusoidalPositions": Spec(seeded(absolute.SinusoidalPositions), {"d": d_arg(), "base": base_arg()}),
    "absolute.SinusoidalPositions.forward": Spec(method(lambda: absolute.SinusoidalPositions(D), "forward"), {
        "positions": TensorPositions(torch.arange(5), floats_ok=False), "dtype": Dtype(None)}),
    "absolute.rotation_for_offset": Spec(absolute.rotation_for_offset, {
        "k": Int(3, lo=None), "d": d_arg(), "base": base_arg()},
        [Case("negative offset", {"k": -3}, lambda r: np.allclose(r, absolute.rotation_for_offset(3, D).T))]),
    "absolute.position_dot_products": Spec(absolute.position_dot_products, {
        "m": Positions([0, 3, 7]), "n": Positions([2, 2, 9]), "d": d_arg(), "base": base_arg()},
        [Case("shapes that do not broadcast", {"m": [0, 1, 2], "n": [0, 1]}, names=("m", "n"))]),
    "absolute.dot_product_at_distance": Spec(absolute.dot_product_at_distance, {
        "k": Positions([-3, 0, 2, 7], signed=True), "d": d_arg(), "base": base_arg()}),
    "absolute.score_terms": Spec(absolute.score_terms, {
        "e": Array(E46, min_ndim=2), "pe": Array(PE46, min_ndim=2), "w_q": Array(W68, min_ndim=2),
        "w_k": Array(W68b, min_ndim=2)},
        [Case("pe of another shape", {"pe": PE46[:3]}), Case("w_k of another shape", {"w_k": W68b[:, :7]}),
         Case("w_q with wrong rows", {"w_q": W68[:5]}),
         Case("huge e", {"e": E46 * 1e300, "pe": PE46 * 1e300}, "either", names=("e", "pe"))]),
    "absolute.position_score": Spec(absolute.position_score, {
        "m": Positions([0, 3, 7]), "k": Int(2, lo=None), "M": Array(M88, min_ndim=2), "base": base_arg()},
        [Case("M not square", {"M": M88[:, :6]}), Case("M empty", {"M": np.zeros((0, 0))}),
         Case("M odd", {"M": M88[:7, :7]}), Case("m + k < 0", {"k": -1}, names=("k", "m")),
         Case("M full of 1e308", {"M": np.full((D, D), 1e308)}, "either")]),
    "absolute.LearnedPositions": Spec(seeded(absolute.LearnedPositions), {
        "max_positions": Int(16), "d": Int(8)},
        [Case("huge table", {"max_positions": 2**20, "d": 2**12}, names=("max_positions", "d"))]),
    "absolute.LearnedPositions.forward": Spec(method(lambda: absolute.LearnedPositions(16, D), "forward"), {
        "positions": TensorPositions(torch.arange(5), floats_ok=False)}),
    "absolute.perplexity": Spec(absolute.perplexity, {"probabilities": Array([0.5, 0.25, 0.9], min_ndim=0, positive=True)},
        [Case("above 1", {"probabilities": [0.5, 1.5]}),
         Case("tiny probability", {"probabilities": [1e-320]}, "either"),
         Case("tiny among many", {"probabilities": [1e-320, 1.0]},
              lambda r: math.isclose(r, math.exp(-math.log(1e-320) / 2), rel_tol=1e-9))]),
    # --- relative ----------------------------------------------------------
    "relative.relative_positions": Spec(relative.relative_positions, {
        "n_queries": Int(3), "n_keys": Int(5, optional=True)},
        [Case("n_keys < n_queries", {"n_keys": 2}),
         Case("huge", {"n_queries": 2**16, "n_keys": 2**16}, names=("n_queries", "n_keys"))]),
    "relative.clipped_distances": Spec(relative.clipped_distances, {
        "n_queries": Int(3), "n_keys": Int(5), "k": Int(2, lo=0, huge="either")}),
    "relative.shaw_scores": Spec(relative.shaw_scores, {
        "q": Array(Q3, min_ndim=2), "k": Array(K5, min_ndim=2), "w_k": Array(WK5, min_ndim=2)},
        [Case("batch mismatch", {"q": np.stack([Q3, Q3]), "k": np.stack([K5] * 3)}, names=("q", "k")),
         Case("w_k with even rows", {"w_k": WK5[:4]}), Case("w_k of another width", {"w_k": WK5[:, :7]}),
         Case("fewer keys than queries", {"k": K5[:2]}, names=("k", "n_keys"))]),
    "relative.shaw_attention": Spec(relative.shaw_attention, {
        "q": Array(Q3, min_ndim=2), "k": Array(K5, min_ndim=2), "v": Array(V5, min_ndim=2),
        "w_k": Array(WK5, min_ndim=2), "w_v": Array(WV5, min_ndim=2), "mask": Mask(CAUSAL35)},
        [Case("w_v with other rows", {"w_v": WV5[:3]}), Case("v with other rows", {"v": V5[:4]}),
         Case("batch mismatch", {"q": np.stack([Q3, Q3]), "k": np.stack([K5] * 3),
                                 "v": np.stack([V5] * 3)}, names=("q", "k"))]),
    "relative.ShawRelativeAttention": Spec(seeded(relative.ShawRelativeAttention), {
        "d": Int(8), "max_distance": Int(2, lo=0), "d_v": Int(6, optional=True)}),
    "relative.ShawRelativeAttention.forward": Spec(
        method(lambda: relative.ShawRelativeAttention(D, 2, 6).double(), "forward"), {
            "q": Tensor(tq), "k": Tensor(tk), "v": Tensor(tv), "mask": TensorMask(torch.from_numpy(CAUSAL35))},
        [Case("batch mismatch", {"q": torch.stack([tq[0]] * 2), "k": torch.stack([tk[0]] * 3),
                                 "v": torch.stack([tv[0]] * 3)}, names=("q", "k")),
         Case("float32 q with float64 k", {"q": tq.float()}, names=("q", "k"))]),
    "relative.signed_sinusoid": Spec(relative.signed_sinusoid, {
        "distances": Positions([-3, 0, 4], signed=True), "d": d_arg(), "base": base_arg()}),
    "relative.transformer_xl_terms": Spec(relative.transformer_xl_terms, {
        "e_q": Array(E46[:3], min_ndim=2), "e_k": Array(rng.normal(size=(5, 6)), min_ndim=2),
        "w_q": Array(rng.normal(size=(6, 4)), min_ndim=2), "w_ke": Array(rng.normal(size=(6, 4)), min_ndim=2),
        "w_kr": Array(rng.normal(size=(8, 4)), min_ndim=2), "u": Array(rng.normal(size=4)),
        "v": Array(rng.normal(size=4)), "base": base_arg()},
        [Case("fewer keys than queries", {"e_k": E46[:2]}, names=("e_k", "n_keys")),
         Case("w_kr with odd rows", {"w_kr": rng.normal(size=(7, 4))}),
         Case("u of another length", {"u": np.zeros(3)})]),
    "relative.TransformerXLScores": Spec(seeded(relative.TransformerXLScores), {
        "d_model": d_arg(), "d_head": Int(4), "base": base_arg()},
        [Case("huge", {"d_model": 2**16, "d_head": 2**16}, names=("d_model", "d_head"))]),
    "relative.TransformerXLScores.forward": Spec(
        method(lambda: relative.TransformerXLScores(D, 4).double(), "forward"), {
            "e_q": Tensor(teq), "e_k": Tensor(tek)},
        [Case("fewer keys than queries", {"e_k": tek[:2]}, names=("e_k", "n_keys")),
         Case("batched", {"e_q": teq[None], "e_k": tek[None]}, names=("e_q", "e_k"))]),
    "relative.t5_bucket": Spec(relative.t5_bucket, {
        "relative_position": Positions([-200, -5, 0, 3, 130], signed=True), "bidirectional": Bool(True),
        "num_buckets": Int(32), "max_distance": Int(128)},
        [Case("odd num_buckets, bidirectional", {"num_buckets": 31}),
         Case("max_distance too small", {"max_distance": 8}),
         Case("decoder", {"bidirectional": False},
              lambda r: np.array_equal(r, [31, 5, 0, 0, 0]))]),
    "relative.t5_bias": Spec(relative.t5_bias, {
        "table": Array(TABLE, min_ndim=2), "n_queries": Int(3), "n_keys": Int(5, optional=True),
        "bidirectional": Bool(True), "max_distance": Int(128)},
        [Case("1-D table", {"table": TABLE[:, 0]}), Case("n_keys < n_queries", {"n_keys": 2}),
         Case("huge", {"n_queries": 2**15, "n_keys": 2**15}, names=("n_queries", "n_keys"))]),
    "relative.T5RelativeBias": Spec(seeded(relative.T5RelativeBias), {
        "n_heads": Int(2), "num_buckets": Int(32), "max_distance": Int(128), "bidirectional": Bool(True)}),
    "relative.T5RelativeBias.forward": Spec(method(lambda: relative.T5RelativeBias(2).double(), "forward"), {
        "n_queries": Int(3), "n_keys": Int(5, optional=True)},
        [Case("n_keys < n_queries", {"n_keys": 2}),
         Case("huge", {"n_queries": 2**15, "n_keys": 2**15}, names=("n_queries", "n_keys"))]),
    "relative.T5RelativeBias.bucket": Spec(method(lambda: relative.T5RelativeBias(2), "bucket"), {
        "relative_position": TensorPositions(torch.tensor([-200, -5, 0, 3, 130]), signed=True, floats_ok=False)},
        [Case("negative distances are valid", {"relative_position": torch.tensor([-1, -9])},
              lambda r: r.tolist() == relative.t5_bucket([-1, -9]).tolist())]),
    "relative.position_cost": Spec(relative.position_cost, {
        "method": Choice("shaw"), "n_layers": Int(2, huge="either"), "n_heads": Int(4, huge="either"),
        "d_head": Int(16, huge="either"), "n_queries": Int(8, huge="either"),
        "n_keys": Int(8, optional=True, huge="either"), "clip": Int(16, lo=0, huge="either"),
        "num_buckets": Int(32, lo=2, huge="either"), "tied_uv": Bool(False)},
        [Case("n_keys < n_queries", {"n_keys": 2})]),
    # --- rope --------------------------------------------------------------
    "rope.inv_freq": Spec(rope.inv_freq, {"d": d_arg(), "base": base_arg()}, [Case("huge d", {"d": 2**30})]),
    "rope.angles": Spec(rope.angles, {"positions": Positions([0, 1, 5]), "inv_freq": Array(TH)},
        [Case("2-D inv_freq", {"inv_freq": TH[None]}), Case("huge", {"positions": np.arange(2**16),
                                                                     "inv_freq": np.ones(2**13)},
                                                             names=("positions", "inv_freq"))]),
    "rope.pair_indices": Spec(rope.pair_indices, {"d": d_arg(), "layout": Choice("adjacent")}),
    "rope.layout_permutation": Spec(rope.layout_permutation, {
        "d": d_arg(), "source": Choice("adjacent"), "target": Choice("split")}),
    "rope.rotate": Spec(rope.rotate, {
        "x": Array(K4), "positions": Positions([0, 1, 2, 3]), "inv_freq": Array(TH), "layout": Choice("adjacent")},
        [Case("x of another width", {"x": K4[:, :6]}),
         Case("positions that do not broadcast", {"positions": [0, 1, 2]}),
         Case("inv_freq empty", {"inv_freq": []})]),
    "rope.rotation_matrices": Spec(rope.rotation_matrices, {
        "positions": Positions([0, 1, 5]), "inv_freq": Array(TH), "layout": Choice("split")},
        [Case("huge", {"positions": np.arange(2**12), "inv_freq": np.ones(2**9)},
              names=("positions", "inv_freq"))]),
    "rope.rotate_by_matrices": Spec(rope.rotate_by_matrices, {
        "x": Array(K4), "positions": Positions([0, 1, 2, 3]), "inv_freq": Array(TH), "layout": Choice("adjacent")},
        [Case("x of another width", {"x": K4[:, :6]})]),
    "rope.to_complex": Spec(rope.to_complex, {"x": Array(K4), "layout": Choice("adjacent")},
        [Case("odd width", {"x": K4[:, :7]})]),
    "rope.from_complex": Spec(rope.from_complex, {"z": Complex(rope.to_complex(K4), fixed_length=False), "layout": Choice("split")},
        [Case("no entries", {"z": np.zeros((3, 0), complex)})]),
    "rope.rotate_complex": Spec(rope.rotate_complex, {
        "x": Array(K4), "positions": Positions([0, 1, 2, 3]), "inv_freq": Array(TH), "layout": Choice("adjacent")}),
    "rope.symbolic_rotation_matrix": Spec(rope.symbolic_rotation_matrix, {
        "position": Symbolic(sp.Symbol("m")), "thetas": SymbolicList([1, sp.Rational(1, 2)]),
        "layout": Choice("adjacent")}),
    "rope.score": Spec(rope.score, {
        "q": Array(Q3), "k": Array(K4[:3]), "m": Positions([0, 1, 2]), "n": Positions([4, 2, 0]),
        "inv_freq": Array(TH), "layout": Choice("adjacent")},
        [Case("k of another width", {"k": K4[:3, :6]}), Case("m that does not broadcast", {"m": [0, 1]})]),
    "rope.relative_score": Spec(rope.relative_score, {
        "q": Array(Q3), "k": Array(K4[:3]), "distance": Positions([4, 1, -2], signed=True),
        "inv_freq": Array(TH), "layout": Choice("adjacent")},
        [Case("k of another width", {"k": K4[:3, :6]})]),
    "rope.complex_score": Spec(rope.complex_score, {
        "q": Array(Q3), "k": Array(K4[:3]), "m": Positions([0, 1, 2]), "n": Positions([4, 2, 0]),
        "inv_freq": Array(TH), "layout": Choice("adjacent")},
        [Case("q of another width", {"q": Q3[:, :6]})]),
    "rope.self_attention": Spec(rope.self_attention, {
        "x": Array(X46, min_ndim=2), "w_q": Array(W68, min_ndim=2), "w_k": Array(W68b, min_ndim=2),
        "w_v": Array(W65, min_ndim=2), "positions": Positions([0, 1, 2, 3]), "inv_freq": Array(TH),
        "layout": Choice("adjacent"), "mask": Mask(attention.causal_mask(4))},
        [Case("w_k of another width", {"w_k": W68b[:, :6]}), Case("w_v with wrong rows", {"w_v": W65[:5]})]),
    "rope.long_term_decay": Spec(rope.long_term_decay, {
        "distances": Reals([0.0, 1.5, -10.0, 100.0]), "inv_freq": Array(TH)}),
    "rope.decay_bound": Spec(rope.decay_bound, {
        "h": Complex(H4), "distances": Reals([0.0, 1.5, 100.0]), "inv_freq": Array(TH)}),
    "rope.aliased_step": Spec(rope.aliased_step, {"phi": Reals([0.5, 3.5, -4.0])}),
    "rope.pair_readings": Spec(rope.pair_readings, {"phi": Reals(2.0), "positions": Reals([0.0, 1.0, 2.5])},
        [Case("vector phi", {"phi": [1.0, 2.0]})]),
    "rope.reading_distance": Spec(rope.reading_distance, {"k": Reals([1.0, 2.5, 100.0]), "inv_freq": Array(TH)}),
    "rope.nearest_return": Spec(rope.nearest_return, {"n_max": Int(100), "inv_freq": Array(TH), "k_min": Int(1)},
        [Case("k_min > n_max", {"k_min": 101}),
         Case("hours of work", {"n_max": 2**31, "inv_freq": np.ones(64)}, names=("n_max", "inv_freq"))]),
    "rope.RotaryEmbedding": Spec(seeded(lambda **kw: rope.RotaryEmbedding(**kw).inv_freq), {
        "d": d_arg(), "inv_freq": Array(TH, optional=True), "base": base_arg(), "layout": Choice("adjacent"),
        "attention_factor": Real(1.0, lo=0.0)},
        [Case("inv_freq of another length", {"inv_freq": TH[:3]}), Case("2-D inv_freq", {"inv_freq": TH[None]})]),
    "rope.RotaryEmbedding.forward": Spec(method(lambda: rope.RotaryEmbedding(D), "forward"), {
        "q": Tensor(tr4), "k": Tensor(tr4 * 2), "positions": TensorPositions(None, optional=True)},
        [Case("positions that do not broadcast", {"positions": torch.arange(3)})]),
    "rope.RotaryEmbedding.rotate": Spec(method(lambda: rope.RotaryEmbedding(D, layout="split"), "rotate"), {
        "x": Tensor(tr4), "positions": TensorPositions(torch.tensor([0, 3, 5, 9]), optional=True)}),
    "rope.RotaryEmbedding.set_frequencies": Spec(
        lambda **kw: _set_frequencies(**kw), {"inv_freq": Array(TH / 2), "attention_factor": Real(1.5, lo=0.0)},
        [Case("inv_freq of another length", {"inv_freq": TH[:3]})]),
    # --- alibi -------------------------------------------------------------
    "alibi.slopes": Spec(alibi.slopes, {"n_heads": Int(8)}, [Case("huge", {"n_heads": 2**30})]),
    "alibi.bias": Spec(alibi.bias, {
        "n_heads": Int(4), "n_queries": Int(3), "n_keys": Int(5, optional=True), "mask_future": Bool(True)},
        [Case("n_keys < n_queries", {"n_keys": 2}),
         Case("huge", {"n_heads": 2**10, "n_queries": 2**10, "n_keys": 2**10},
              names=("n_heads", "n_queries", "n_keys"))], masks=True),
    "alibi.distance_weights": Spec(alibi.distance_weights, {"n_heads": Int(4), "n_keys": Int(10)},
        [Case("huge", {"n_heads": 2**15, "n_keys": 2**15}, names=("n_heads", "n_keys"))]),
    "alibi.tail_weight": Spec(alibi.tail_weight, {"n_heads": Int(4), "n_keys": Int(10), "distance": Int(3, lo=0)},
        [Case("distance past the row", {"distance": 10})]),
    "alibi.effective_span": Spec(alibi.effective_span, {
        "n_heads": Int(4), "n_keys": Int(10), "share": Real(0.9, lo=0.0, hi=1.0)}),
    "alibi.ALiBi": Spec(seeded(lambda **kw: alibi.ALiBi(**kw).slopes), {"n_heads": Int(4)}),
    "alibi.ALiBi.forward": Spec(method(lambda: alibi.ALiBi(4), "forward"), {
        "n_queries": Int(3), "n_keys": Int(5, optional=True)},
        [Case("n_keys < n_queries", {"n_keys": 2}),
         Case("huge", {"n_queries": 2**15, "n_keys": 2**15}, names=("n_queries", "n_keys"))], masks=True),
    # --- nope --------------------------------------------------------------
    "nope.no_positions": Spec(nope.no_positions, {"x": Anything(X46)}, anything=True),
    "nope.uniform_causal_weights": Spec(nope.uniform_causal_weights, {"n": Int(5)},
        [Case("huge", {"n": 2**16})]),
    "nope.uniform_bidirectional_weights": Spec(nope.uniform_bidirectional_weights, {"n": Int(5)},
        [Case("huge", {"n": 2**16})]),
    "nope.position_signal": Spec(nope.position_signal, {"n": Int(5), "causal": Bool(True)}),
    "nope.read_position": Spec(nope.read_position, {
        "signal": Array(nope.position_signal(5), min_ndim=0, empty_ok=True, positive=True), "rtol": Real(1e-9, lo=0.0, hi=1.0)},
        [Case("not 1/(i+1)", {"signal": [0.3]}), Case("above 1", {"signal": [1.5]}),
         Case("position beyond the range", {"signal": [1e-300]})]),
    "nope.irope_layer_pattern": Spec(nope.irope_layer_pattern, {"n_layers": Int(8),
                                                                "nope_every": Int(4, huge="either")}),
    "nope.attention_temperature": Spec(nope.attention_temperature, {
        "positions": Positions([0, 8191, 20000]), "floor_scale": Real(8192.0, lo=0.0),
        "attn_scale": Real(0.1, lo=0.0, lo_open=False)}),
    "nope.single_key_weight": Spec(nope.single_key_weight, {
        "n_keys": Positions([1, 10, 1000]), "margin": Array([0.0, 2.0, -3.0], min_ndim=0),
        "scale": Array(1.5, min_ndim=0, positive=True)},
        [Case("n_keys = 0", {"n_keys": [0, 1, 2]}),
         Case("one key far behind", {"n_keys": 1, "margin": -800.0}, lambda r: r == 1.0),
         Case("many keys, far behind", {"n_keys": 10, "margin": -710.0, "scale": 1.0},
              lambda r: math.isclose(float(r), math.exp(-710.0) / 9, rel_tol=1e-6)),
         Case("shapes that do not broadcast", {"n_keys": [1, 2], "margin": [0.0, 1.0, 2.0]},
              names=("n_keys", "margin", "scale"))]),
    "nope.nope_layer_outputs": Spec(nope.nope_layer_outputs, {
        "n_sequences": Int(3), "n_tokens": Int(5), "causal": Bool(True), "d_model": Int(4), "vocab_size": Int(4),
        "weight_std": Real(0.02, lo=0.0), "bos": Bool(True), "seed": Int(0, lo=0, huge="either")},
        [Case("huge", {"n_sequences": 2**12, "n_tokens": 2**12}, names=("n_sequences", "n_tokens"))]),
    "nope.position_probe": Spec(nope.position_probe, {
        "causal": Bool(True), "n_tokens": Int(6, lo=2), "d_model": Int(4), "vocab_size": Int(4),
        "weight_std": Real(0.02, lo=0.0), "bos": Bool(True), "n_train": Int(8), "n_test": Int(4),
        "hidden": Int(8), "steps": Int(3), "lr": Real(0.02, lo=0.0), "seed": Int(0, lo=0, huge="either")},
        [Case("hours of training", {"steps": 10**9, "n_train": 2**14}, names=("steps", "n_train"))]),
    "nope.unmasked_probe_floor": Spec(nope.unmasked_probe_floor, {
        "n_tokens": Int(16, huge="either"), "bos": Bool(True)}),
    # --- scaling -----------------------------------------------------------
    "scaling.Frequencies": Spec(scaling.Frequencies, {
        "inv_freq": Array(TH, positive=True), "attention_factor": Real(1.0, lo=0.0)}),
    "scaling.unscaled": Spec(scaling.unscaled, {
        "d": d_arg(), "s": Real(2.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg()}),
    "scaling.position_interpolation": Spec(scaling.position_interpolation, {
        "d": d_arg(), "s": Real(2.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg()}),
    "scaling.ntk_base": Spec(scaling.ntk_base, {
        "d": d_arg(lo=4), "s": Real(2.0, lo=1.0, lo_open=False), "base": base_arg()},
        [Case("d = 2", {"d": 2})]),
    "scaling.ntk_per_pair": Spec(scaling.ntk_per_pair, {
        "d": d_arg(lo=4), "s": Real(2.0, lo=1.0, lo_open=False), "base": base_arg()}),
    "scaling.ntk_aware": Spec(scaling.ntk_aware, {
        "d": d_arg(lo=4), "s": Real(2.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg()}),
    "scaling.dynamic_scale": Spec(scaling.dynamic_scale, {
        "current_length": Int(8192, huge="either"), "L": Int(4096), "factor": Real(None, lo=1.0, lo_open=False,
                                                                                   optional=True)}),
    "scaling.dynamic_ntk": Spec(scaling.dynamic_ntk, {
        "d": d_arg(lo=4), "s": Real(2.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg(),
        "current_length": Int(10000, optional=True, huge="either"),
        "hf_factor": Real(None, lo=1.0, lo_open=False, optional=True)}),
    "scaling.yarn_ramp": Spec(scaling.yarn_ramp, {
        "r": Array([0.5, 2.0, 40.0], min_ndim=0, empty_ok=True), "alpha": Real(1.0, lo=0.0), "beta": Real(32.0, lo=0.0)},
        [Case("beta < alpha", {"alpha": 40.0}, names=("alpha", "beta"))]),
    "scaling.yarn_attention_factor": Spec(scaling.yarn_attention_factor, {"s": Real(8.0, lo=1.0, lo_open=False)}),
    "scaling.yarn": Spec(scaling.yarn, {
        "d": d_arg(), "s": Real(8.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg(),
        "alpha": Real(1.0, lo=0.0), "beta": Real(32.0, lo=0.0)}),
    "scaling.yarn_correction_range": Spec(scaling.yarn_correction_range, {
        "d": d_arg(16), "L": Int(4096), "base": base_arg(lo=1.0), "beta_fast": Real(32.0, lo=0.0),
        "beta_slow": Real(1.0, lo=0.0), "truncate": Bool(True)},
        [Case("beta_fast < beta_slow", {"beta_fast": 0.5}, names=("beta_fast", "beta_slow"))]),
    "scaling.yarn_code_ramp": Spec(scaling.yarn_code_ramp, {
        "d": d_arg(16), "L": Int(4096), "base": base_arg(lo=1.0), "beta_fast": Real(32.0, lo=0.0),
        "beta_slow": Real(1.0, lo=0.0), "truncate": Bool(True)}),
    "scaling.yarn_code": Spec(scaling.yarn_code, {
        "d": d_arg(16), "s": Real(8.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg(lo=1.0),
        "beta_fast": Real(32.0, lo=0.0), "beta_slow": Real(1.0, lo=0.0), "truncate": Bool(True)}),
    "scaling.yarn_curves": Spec(scaling.yarn_curves, {
        "d": d_arg(16), "s": Real(8.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg(lo=1.0),
        "alpha": Real(1.0, lo=0.0), "beta": Real(32.0, lo=0.0)}),
    "scaling.base_change": Spec(scaling.base_change, {
        "d": d_arg(), "s": Real(2.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg(1e6)}),
    "scaling.llama3": Spec(scaling.llama3, {
        "d": d_arg(16), "s": Real(8.0, lo=1.0, lo_open=False), "L": Int(8192), "base": base_arg(5e5),
        "low_freq_factor": Real(1.0, lo=0.0), "high_freq_factor": Real(4.0, lo=0.0)},
        [Case("high < low", {"high_freq_factor": 0.5}, names=("high_freq_factor", "low_freq_factor"))]),
    "scaling.llama3_bands": Spec(scaling.llama3_bands, {
        "d": d_arg(16), "L": Int(8192), "base": base_arg(5e5),
        "low_freq_factor": Real(1.0, lo=0.0), "high_freq_factor": Real(4.0, lo=0.0)}),
    "scaling.longrope_attention_factor": Spec(scaling.longrope_attention_factor, {
        "s": Real(4.0, lo=1.0, lo_open=False), "L": Int(4096, lo=2, huge="either")}),
    "scaling.longrope": Spec(scaling.longrope, {
        "d": d_arg(), "s": Real(4.0, lo=1.0, lo_open=False), "L": Int(4096), "base": base_arg(),
        "short_factors": Array(np.ones(4), positive=True), "long_factors": Array(np.full(4, 2.0), positive=True),
        "current_length": Int(5000, optional=True, huge="either")},
        [Case("short_factors of another length", {"short_factors": np.ones(3)})]),
    "scaling.frequencies": Spec(scaling.frequencies, {"method": Choice("yarn"), "d": d_arg(16)}),
    "scaling.training_turns": Spec(scaling.training_turns, {"inv_freq": Array(TH, positive=True), "L": Int(4096)}),
    "scaling.angle_ratio": Spec(scaling.angle_ratio, {
        "scaled_inv_freq": Array(TH / 2, positive=True), "inv_freq": Array(TH, positive=True),
        "s": Real(2.0, lo=1.0, lo_open=False)},
        [Case("lengths differ", {"scaled_inv_freq": TH[:3]})]),
    "scaling.out_of_range": Spec(scaling.out_of_range, {
        "scaled_inv_freq": Array(TH / 2, positive=True), "inv_freq": Array(TH, positive=True),
        "s": Real(4.0, lo=1.0, lo_open=False), "L": Int(4096), "tol": Real(1e-9, lo=0.0, lo_open=False)}),
    "scaling.extension": Spec(scaling.extension, {
        "method": Choice("ntk"), "d": d_arg(16, lo=4), "s": Real(8.0, lo=1.0, lo_open=False), "L": Int(4096),
        "base": base_arg()}),
    "scaling.score_curve": Spec(scaling.score_curve, {
        "h": Complex(H4), "distances": Reals([0.0, 1.5, 100.0]), "inv_freq": Array(TH, positive=True)}),
    "scaling.fit_score_curve": Spec(scaling.fit_score_curve, {
        "distances": Array(np.arange(12.0)), "targets": Array(np.cos(np.arange(12.0))),
        "inv_freq": Array(TH, positive=True), "rcond": Real(None, lo=0.0, optional=True),
        "ridge": Real(0.0, lo=0.0, lo_open=False)},
        [Case("rcond and ridge", {"rcond": 1e-6, "ridge": 1.0}, names=("rcond", "ridge")),
         Case("targets of another length", {"targets": np.zeros(5)})]),
    "scaling.interpolation_error_bound": Spec(scaling.interpolation_error_bound, {
        "h": Complex(H4), "inv_freq": Array(TH, positive=True), "spacing": Real(1.0, lo=0.0)}),
    "scaling.pi_bound_ratio": Spec(scaling.pi_bound_ratio, {
        "distances": Reals([1.0, 50.0, 1000.0]), "d": d_arg(16), "base": base_arg(lo=1.0),
        "constant": Choice("exact")}),
    "scaling.node_polynomial": Spec(scaling.node_polynomial, {
        "x": Array([0.5, 3.0], min_ndim=0, empty_ok=True), "nodes": Array([0.0, 1.0, 2.0])},
        [Case("repeated node", {"nodes": [0.0, 1.0, 1.0]}), Case("2-D nodes", {"nodes": [[0.0, 1.0]]})]),
    "scaling.polynomial_interpolant": Spec(scaling.polynomial_interpolant, {
        "nodes": Array([0.0, 1.0, 2.0, 3.0]), "values": Array([1.0, 2.0, 0.0, 5.0]),
        "x": Array([0.5, 4.0, 2.0], min_ndim=0, empty_ok=True)},
        [Case("repeated node", {"nodes": [0.0, 1.0, 1.0, 3.0]}), Case("values of another length", {"values": [1.0]}),
         Case("nodes 1e-200 apart", {"nodes": np.array([0.0, 1.0, 2.0, 3.0]) * 1e-200,
                                     "x": np.array([0.5, 4.0, 2.0]) * 1e-200},
              _close_to(scaling.polynomial_interpolant([0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 0.0, 5.0], [0.5, 4.0, 2.0])))]),
    "scaling.polynomial_remainder_bound": Spec(scaling.polynomial_remainder_bound, {
        "x": Array([0.5, 3.0], min_ndim=0, empty_ok=True), "nodes": Array([0.0, 1.0, 2.0]),
        "derivative_bound": Real(1.0, lo=0.0, lo_open=False)}),
}


def _set_frequencies(**kwargs):
    layer = rope.RotaryEmbedding(D)
    layer.set_frequencies(**kwargs)
    return layer.inv_freq, layer.attention_factor


# ---------------------------------------------------------------------------
# Running and judging
# ---------------------------------------------------------------------------

def public_callables() -> list[str]:
    """Every public callable: names in ``__all__`` and the public methods of the classes there."""
    names = []
    for mod_name, mod in MODULES.items():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not callable(obj):
                continue
            names.append(f"{mod_name}.{name}")
            if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
                for attr, member in vars(obj).items():
                    if callable(member) and not attr.startswith("_") and attr != "extra_repr":
                        names.append(f"{mod_name}.{name}.{attr}")
    return names


def baseline(spec: Spec) -> dict:
    return {name: arg.value for name, arg in spec.args.items()}


def cases(key: str) -> list:
    """Every call of one callable: ``(label, kwargs, expect, names)``."""
    spec = REGISTRY[key]
    base = baseline(spec)
    out = [("valid call", base, "valid", ())]
    for name, arg in spec.args.items():
        for label, value in arg.bad():
            out.append((f"{name}: {label}", {**base, name: value}, "bad", (name,)))
        for label, value in arg.either():
            out.append((f"{name}: {label}", {**base, name: value}, "either", (name,)))
        for label, value in arg.valid():
            out.append((f"{name}: {label}", {**base, name: value}, "valid", (name,)))
    for case in spec.cases:
        names = case.names or tuple(case.overrides)
        out.append((case.label, {**base, **case.overrides}, case.expect, names))
    return out


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def call(spec: Spec, kwargs: dict, seconds: int = 60):
    """``(result, error)`` of one call, with a time limit (a hang counts as an unhelpful answer)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        return spec.call(**kwargs), None
    except _Timeout:
        return None, TimeoutError(f"no answer within {seconds} s")
    except Exception as err:  # noqa: BLE001 -- judged below
        return None, err
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def names_parameter(err: BaseException, names) -> bool:
    message = str(err)
    return "must" in message and any(
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) for name in names
    )


def outcome(key: str, kwargs: dict, expect, names) -> tuple[str, str]:
    """``(class, detail)`` for one call: see the module docstring for the classes."""
    spec = REGISTRY[key]
    result, err = call(spec, kwargs)
    if err is not None:
        clear = isinstance(err, (ValueError, TypeError)) and names_parameter(err, names)
        detail = f"{type(err).__name__}: {str(err)[:160]}"
        if expect == "valid" or callable(expect):
            return "valid rejected", detail
        return ("clear error" if clear else "unhelpful error"), detail
    if expect == "bad":
        return "silent nonsense", f"returned {_short(result)}"
    if not _finite(result, spec.masks):
        return "silent nonsense", f"non-finite result {_short(result)}"
    if expect == "valid":
        reference, ref_err = call(spec, baseline(spec))
        if ref_err is not None:
            return "valid rejected", f"the valid call fails: {ref_err}"
        if not _same(result, reference):
            return "silent nonsense", f"returned {_short(result)}, expected {_short(reference)}"
    if callable(expect) and not expect(result):
        return "silent nonsense", f"returned {_short(result)}"
    return "valid accepted", ""


GOOD = {"clear error", "valid accepted"}


def _leaves(x) -> list:
    """Numbers of a result as flat float64 arrays (tensors, tuples, records, dicts, strings)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    if isinstance(x, torch.nn.Module):
        return [np.asarray(v, dtype=np.float64).ravel() for v in x.state_dict().values()] + [np.array([hash(repr(x))])]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [v for f in dataclasses.fields(x) for v in _leaves(getattr(x, f.name))]
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _leaves(x[k])]
    if isinstance(x, (tuple, list)) and not (x and all(isinstance(e, (int, float, bool, np.number)) for e in x)):
        return [v for e in x for v in _leaves(e)]
    if isinstance(x, sp.MatrixBase):
        return [np.array([hash(sp.srepr(x))], dtype=np.float64)]
    a = np.asarray(x)
    if a.dtype.kind in "USO":
        return [np.array([hash(str(a.tolist()))], dtype=np.float64)]
    if a.dtype.kind == "c":
        return [a.real.ravel().astype(np.float64), a.imag.ravel().astype(np.float64)]
    return [a.ravel().astype(np.float64)]


def _finite(x, masks: bool = False) -> bool:
    if x is None:
        return True
    return all(np.all(np.isfinite(np.where(v == -np.inf, 0.0, v) if masks else v)) for v in _leaves(x))


def _same(a, b) -> bool:
    la, lb = _leaves(a), _leaves(b)
    return len(la) == len(lb) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=1e-9, atol=1e-12) for x, y in zip(la, lb)
    )


def _short(x) -> str:
    text = repr(x).replace("\n", " ")
    return text[:120] + ("..." if len(text) > 120 else "")


def tally(keys=None) -> tuple[collections.Counter, list]:
    counts, problems = collections.Counter(), []
    for key in keys or REGISTRY:
        for label, kwargs, expect, names in cases(key):
            cls, detail = outcome(key, kwargs, expect, names)
            counts[cls] += 1
            if cls not in GOOD:
                problems.append((cls, key, label, detail))
    return counts, problems


if __name__ == "__main__":
    import resource
    import warnings

    warnings.simplefilter("ignore")
    # Let a huge allocation fail at once instead of swapping (the refusal is what is judged).
    resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.RLIM_INFINITY))
    counts, problems = tally(sys.argv[1:] or None)
    missing = [k for k in public_callables() if k not in REGISTRY and k not in RECORDS]
    for cls, key, label, detail in sorted(problems):
        print(f"{cls:16} {key:42} {label:34} {detail}")
    print(f"callables: {len(REGISTRY)} registered, {len(missing)} not registered {missing}")
    print(f"calls: {sum(counts.values())}", dict(counts))
