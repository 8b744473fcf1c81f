"""Bad inputs for every public callable of the math modules, generated from their contracts.

Each public callable of the math modules (every name in a module's ``__all__``, and
the public methods of its classes) declares its parameters with
``companion._contracts.contract``: one kind per parameter (``EvenSize``, ``Positions``,
``Frequencies``...) and the rules between them. This file holds, per callable, only a
valid example call (:data:`EXAMPLES`) and the special cases that only that callable
has (shapes that must agree, overflow, a row with no key...). From each parameter's
kind, :func:`arg_for` builds its bad values (wrong type, ``None``, NaN, infinities,
negative, zero, non-integer, ``bool`` for an integer, odd widths, empty arrays, wrong
dimensions, huge values such as ``1e300``, ``10**18`` and ``2**63``) and the valid
spellings of the example's value (numpy scalars, lists, plain and grad-requiring torch
tensors), which must give the same result.

Every case has an expectation:

* ``"bad"``: the call must raise ``ValueError`` or ``TypeError`` whose message
  names the parameter (and says what it "must" be);
* ``"valid"``: the call must return the result of the valid call;
* ``"either"``: a clear error, or a finite result (huge but legal values);
* a function: the call must return a result for which it returns True.

:func:`outcome` sorts each call into one of the classes ``clear error``,
``unhelpful error``, ``silent nonsense``, ``valid accepted`` and ``valid rejected``;
``python -m tests.support.bad_inputs`` prints the counts. ``tests/test_bad_inputs.py`` runs
every case and fails on anything but a clear error or an accepted valid input.
"""
from __future__ import annotations

import collections
import dataclasses
import importlib
import math
import re
import signal
import sys
from typing import Callable

import numpy as np
import sympy as sp
import torch

from companion import (
    _contracts,
    _tensors,
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
    symbolic,
    trained_range,
    video_time,
)

MODULES = {"attention": attention, "absolute": absolute, "absolute_torch": absolute_torch, "relative": relative,
           "relative_torch": relative_torch, "rope": rope, "rope_torch": rope_torch, "alibi": alibi,
           "alibi_torch": alibi_torch, "nope": nope, "scaling": scaling, "trained_range": trained_range,
           "interpolation": interpolation, "integer_positions": integer_positions, "configs": configs, "precision": precision,
           "mrope": mrope, "pair_usage": pair_usage, "layer_plans": layer_plans, "sinks": sinks, "remap": remap,
           "symbolic": symbolic, "mla": mla, "sparse": sparse, "video_time": video_time}

#: Result types that hold what a function returned; companion builds them, they check nothing.
RECORDS = {
    "relative.XLTerms", "relative.PositionCost", "nope.ProbeResult", "scaling.YarnCurves", "trained_range.Extension",
    "configs.RopeType", "configs.UnknownKeysWarning", "configs.RopeSettings", "configs.ConfigFrequencies",
    "configs.PublishedConfig", "configs.UnmodelledEffectWarning", "configs.PositionEffect", "configs.LayerRope",
    "symbolic.Witness",
}

NAN, INF = float("nan"), float("inf")
HUGE_INTS = [("10**18", 10**18), ("2**63", 2**63)]
WRONG_TYPES = [("str", "abc"), ("None", None), ("list of str", ["a", "b"])]


# ---------------------------------------------------------------------------
# What the values of each kind are
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
    hi: int | None = None
    even: bool = False
    optional: bool = False
    multiple: int | None = None

    def bad(self):
        out = [c for c in WRONG_TYPES if not (self.optional and c[1] is None)]
        if self.value is None:
            return out
        out += [("float", self.value + 0.5), ("whole float", float(self.value)), ("bool", True),
                ("nan", NAN), ("inf", INF), ("array", np.array([self.value]))]
        if self.lo is not None:
            out.append(("below minimum", self.lo - 1))
            if self.lo >= 0:
                out.append(("negative", -abs(self.value) - 5))
        if self.hi is not None and self.hi < 10**18:
            out.append(("above maximum", self.hi + 1))
        if self.even:
            out.append(("odd", self.value + 1))
        if self.multiple:
            out.append(("not a multiple", self.value + self.multiple // 2))
        return out + [c for c in HUGE_INTS if self.hi is not None and c[1] > self.hi]

    def either(self):
        return [c for c in HUGE_INTS if self.hi is None or c[1] <= self.hi]

    def valid(self):
        if self.value is None:
            return []
        out = [("numpy int64", np.int64(self.value))]
        return out + ([("numpy int32", np.int32(self.value))] if abs(self.value) < 2**31 else [])


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
class Text(Arg):
    optional: bool = False
    nonempty: bool = False

    def bad(self):
        out = [c for c in [("None", None), ("int", 3), ("list", ["a"])] if not (self.optional and c[1] is None)]
        return out + ([("empty", ""), ("blank", "  ")] if self.nonempty else [])


@dataclasses.dataclass
class TextList(Arg):
    def bad(self):
        return [("one string", "a"), ("empty", []), ("empty entry", ["a", ""]), ("number entry", ["a", 3]), ("None", None)]


@dataclasses.dataclass
class Array(Arg):
    """A real array; ``min_ndim`` dimensions at least (exactly ``ndim``); ``neg_inf_ok`` for scores."""

    min_ndim: int = 1
    ndim: int | None = None
    positive: bool = False
    neg_inf_ok: bool = False
    empty_ok: bool = False
    optional: bool = False
    bounded: bool = False
    nonnegative: bool = False
    below: float | None = None

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
        if self.ndim is not None and v.ndim == self.ndim:
            out.append(("one dimension more", v[None]))
            if self.ndim >= 1:
                out.append(("one dimension less", v.reshape(-1)[:1].reshape((1,) * (self.ndim - 1))))
        if self.positive:
            out += [("negative entry", _put(v, -1.0)), ("zero entry", _put(v, 0.0))]
        if self.nonnegative:
            out += [("negative entry", _put(v, -1.0))]
        if self.below is not None:
            out += [("entry at the bound", _put(v, self.below)), ("entry above the bound", _put(v, self.below + 1.0))]
        if self.bounded:
            out += [("1e300 entries", _put(v, 1e300)), ("2**63", _put(v, 2.0**63))]
        return out

    def either(self):
        out = [] if self.bounded else [("1e300 entries", self._v() * 1e299)]
        return out + ([("empty", np.zeros((0,) * max(self.min_ndim, 1)))] if self.empty_ok else [])

    def valid(self):
        v = self._v()
        return [("list", v.tolist()), ("torch tensor", torch.tensor(v)),
                ("grad-requiring tensor", torch.tensor(v, requires_grad=True))]
@dataclasses.dataclass
class Complex(Arg):
    min_ndim: int = 0

    def bad(self):
        v = np.asarray(self.value, dtype=np.complex128)
        out = WRONG_TYPES + [("nan entry", _put(v, NAN)), ("inf entry", _put(v, INF))]
        return out + ([("scalar", 1.0 + 0j)] if self.min_ndim else [])

    def either(self):
        v = np.asarray(self.value, dtype=np.complex128)
        return [("scalar", 1.0 + 0j)] if not self.min_ndim else [] + [("one entry less", v[..., :-1])]

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
class SymbolicAny(Arg):
    """A SymPy expression, matrix or number: never text, which SymPy would evaluate as
    Python (also inside a list or a dict), nor a truth value."""

    optional: bool = False

    def bad(self):
        out = [("str", "x + 1"), ("numpy str", np.str_("x")), ("list of str", ["x"]), ("dict of str", {"a": "x"}),
               ("bool", True), ("object", object())]
        return out + ([] if self.optional else [("None", None)])


@dataclasses.dataclass
class SymbolicList(Arg):
    def bad(self):
        return [("str", "abc"), ("None", None), ("empty", []), ("nan entry", [NAN]), ("inf entry", [1, INF]),
                ("nested list", [[1]]), ("sympy nan", [sp.nan]), ("number", 3)]

    def valid(self):
        return [("tuple", tuple(self.value)), ("numpy object array", np.array(self.value, dtype=object))]


@dataclasses.dataclass
class Counts(Arg):
    """A non-empty list of integers >= 1 (all different if ``distinct``)."""

    distinct: bool = False
    length: int | None = None

    def bad(self):
        out = WRONG_TYPES + [("empty", []), ("zero entry", [0] + list(self.value)[1:]), ("float entry", [1.5]),
                             ("bool entry", [True])]
        out += [("one too few", list(self.value)[:-1]), ("one too many", [*self.value, 1])] if self.length else []
        return out + ([("repeated", [self.value[0], self.value[0]])] if self.distinct else [])

    def valid(self):
        return [("tuple", tuple(self.value)), ("numpy int64 entries", [np.int64(v) for v in self.value])]


@dataclasses.dataclass
class Mapping(Arg):
    """A ``config.json`` dictionary (or what reading one gives)."""

    def bad(self):
        return [("str", "abc"), ("None", None), ("list of pairs", list(dict(self.value).items())), ("int", 3)]


@dataclasses.dataclass
class Record(Arg):
    """A value of a record type the package builds (ConfigFrequencies, a SymPy matrix)."""

    optional: bool = False

    def bad(self):
        out = [("str", "abc"), ("None", None), ("dict", {"inv_freq": [1.0]})]
        return [c for c in out if not (self.optional and c[1] is None)]


@dataclasses.dataclass
class Anything(Arg):
    """A parameter that accepts any value (the identity's)."""


def arg_for(kind: _contracts.Kind, value, optional: bool) -> Arg:
    """The bad and valid values of a parameter of ``kind`` whose valid value is ``value``."""
    c = _contracts
    if isinstance(kind, c.Integer):
        return Int(value, lo=kind.lo, hi=kind.hi, even=kind.even, optional=optional, multiple=kind.multiple)
    if isinstance(kind, c.Real):
        lo, hi = (kind.gt if kind.gt is not None else kind.ge), (kind.lt if kind.lt is not None else kind.le)
        return Real(value, lo=lo, lo_open=kind.gt is not None, hi=hi, hi_open=kind.lt is not None, optional=optional)
    if isinstance(kind, c.Boolean):
        return Bool(value)
    if isinstance(kind, c.OneOf):
        return Choice(value)
    if isinstance(kind, c.Text):
        return Text(value, optional=optional, nonempty=kind.nonempty)
    if isinstance(kind, c.Texts):
        return TextList(value)
    if isinstance(kind, c.Array):
        return Array(value, min_ndim=max(kind.ndim_at_least, kind.ndim or 0), ndim=kind.ndim, positive=kind.positive,
                     neg_inf_ok=kind.neg_inf, empty_ok=not kind.nonempty and not kind.ndim, optional=optional,
                     bounded=kind.bounded, nonnegative=kind.nonnegative, below=kind.below)
    if isinstance(kind, c.FrequencyVector):
        return Array(value, min_ndim=1, ndim=1, positive=kind.positive, optional=optional)
    if isinstance(kind, c.WholeNumbers):
        return Positions(value, signed=kind.signed, floats_ok=kind.floats)
    if isinstance(kind, c.ComplexArray):
        return Complex(value, min_ndim=kind.ndim_at_least)
    if isinstance(kind, c.BooleanMask):
        return Mask(value, optional=optional)
    if isinstance(kind, c.PositiveCounts):
        return Counts(value, distinct=kind.distinct, length=kind.length)
    if isinstance(kind, _tensors.Tensor):
        return Tensor(value)
    if isinstance(kind, _tensors.TensorPositions):
        return TensorPositions(value, optional=optional, signed=kind.signed, floats_ok=kind.floats)
    if isinstance(kind, _tensors.TensorMask):
        return TensorMask(value, optional=optional)
    if isinstance(kind, _tensors.TorchDtype):
        return Dtype(value)
    if isinstance(kind, symbolic.SymbolicNumber):
        return Symbolic(value)
    if isinstance(kind, symbolic.SymbolicNumbers):
        return SymbolicList(value)
    if isinstance(kind, symbolic.SymbolicExpression):
        return SymbolicAny(value, optional=optional)
    if isinstance(kind, c.Anything):
        return Anything(value)
    if isinstance(kind, c.InstanceOf) and isinstance(value, dict):
        return Mapping(value)
    if isinstance(kind, c.InstanceOf) or isinstance(kind, symbolic.SymbolicMatrix):
        return Record(value, optional=optional)
    raise TypeError(f"no bad values for the kind {kind!r}: add them to arg_for")


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
# Examples and special cases, per callable
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """A case of a callable's own: ``overrides`` on top of the valid call."""

    label: str
    overrides: dict
    expect: object = "bad"           # "bad", "valid", "either", or a predicate on the result
    names: tuple = ()                # the message must name one of these (default: the keys)


@dataclasses.dataclass
class Example:
    """A valid call of one callable (``call(**kwargs)``) and the cases only it has."""

    call: Callable
    kwargs: dict
    cases: list = dataclasses.field(default_factory=list)
    anything: bool = False           # no value is bad (the identity)
    masks: bool = False              # the result holds -inf by design (a causal bias)
    non_finite_ok: bool = False      # inf or nan in the result is the answer (a format's overflow, "none")


@dataclasses.dataclass
class Spec:
    """An example with one :class:`Arg` per parameter, built from the callable's contract."""

    call: Callable
    args: dict
    cases: list
    anything: bool = False
    masks: bool = False
    non_finite_ok: bool = False


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


GEMMA = {"head_dim": 16, "max_position_embeddings": 4096, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
         "rope_scaling": {"factor": 2.0, "rope_type": "linear"}}
YARN = {"head_dim": 16, "rope_theta": 1e4, "max_position_embeddings": 8192,
        "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048}}
DYNAMIC = {"head_dim": 16, "rope_theta": 1e4, "max_position_embeddings": 4096,
           "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
YARN_AT_3K = configs.frequencies_at(YARN, 3000)
HYBRID = {"model_type": "qwen3_next", "head_dim": 16, "num_hidden_layers": 4, "rope_theta": 1e7,
          "partial_rotary_factor": 0.5, "layer_types": ["linear_attention"] * 3 + ["full_attention"]}
NOPE_SWITCH = {"model_type": "granitemoehybrid", "head_dim": 16, "rope_theta": 1e4, "position_embedding_type": "nope"}
MINISTRAL = {"model_type": "ministral3", "head_dim": 16, "max_position_embeddings": 65536,
             "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                                 "original_max_position_embeddings": 16384, "llama_4_scaling_beta": 0.1}}
DEEPSEEK = {"model_type": "deepseek_v3", "qk_rope_head_dim": 16, "rope_theta": 1e4, "max_position_embeddings": 8192,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                             "original_max_position_embeddings": 2048}}
SYM_S = symbolic.symbol_matrix("s", 2, 2)
SYM_X = symbolic.symbol_matrix("x", 2, 2)
A_SYM, B_SYM = sp.symbols("a b", real=True)
MROPE_P = np.array([[0, 0, 1, 1, 2], [0, 1, 0, 1, 2], [0, 1, 2, 0, 3]])
MLA_Q, MLA_QR = rng.normal(size=(2, 5, 6)), rng.normal(size=(2, 5, D))
MLA_K, MLA_KR = rng.normal(size=(2, 5, 6)), rng.normal(size=(5, D))
MLA_C, MLA_W = rng.normal(size=(5, 3)), rng.normal(size=(2, 6, 3))
IDX_Q, IDX_W = rng.normal(size=(5, 2, D)), rng.normal(size=(5, 2))
X58 = rng.normal(size=(5, D))
PLAN_LOCAL = layer_plans.LayerPlan(rope=True, base=10000.0, window=4)
PLANS = layer_plans.gemma3(6, every=3, window=16)


def _close_to(expected):
    return lambda result: np.allclose(_leaves(result), _leaves(expected), rtol=1e-9, atol=1e-12)


EXAMPLES: dict[str, Example] = {
    # --- attention ------------------------------------------------------------
    "attention.softmax": Example(attention.softmax, dict(scores=BIAS34, axis=-1), [
        Case('empty key axis', {'scores': np.zeros((3, 0))}),
        Case('all -inf row', {'scores': np.full((2, 3), -INF)}),
        Case('axis out of range', {'axis': 2}),
        Case('-inf masks an entry', {'scores': np.array([[0.0, -INF]])}, lambda r: np.array_equal(r, [[1.0, 0.0]])),
        Case('huge scores', {'scores': np.array([1e+300, 0.0])}, lambda r: np.array_equal(r, [1.0, 0.0])),
    ]),
    "attention.causal_mask": Example(attention.causal_mask, dict(n_queries=3, n_keys=4), [
        Case('n_keys < n_queries', {'n_keys': 2}),
        Case('huge square', {'n_queries': 2 ** 20}, names=('n_queries', 'n_keys')),
    ]),
    "attention.permutation_matrix": Example(attention.permutation_matrix, dict(perm=[2, 0, 1]), [
        Case('repeated index', {'perm': [0, 0, 1]}),
        Case('out of range', {'perm': [1, 2, 3]}),
        Case('2-D', {'perm': [[0, 1], [1, 0]]}),
        Case('empty', {'perm': []}),
        Case('huge', {'perm': np.arange(2 ** 15)}),
    ]),
    "attention.scaled_dot_product_attention": Example(
        attention.scaled_dot_product_attention, dict(q=Q3, k=K4, v=V4, mask=CAUSAL35[:, 1:], bias=BIAS34), [
        Case('d_k mismatch', {'q': Q3[:, :7]}, names=('q', 'k')),
        Case('n_keys mismatch', {'v': V4[:3]}, names=('k', 'v')),
        Case('batch mismatch', {'q': np.stack([Q3, Q3]), 'k': np.stack([K4] * 3)}, names=('q', 'k')),
        Case('d_k = 0', {'q': np.zeros((3, 0)), 'k': np.zeros((4, 0))}, names=('q', 'k')),
        Case('no keys', {'k': np.zeros((0, D)), 'v': np.zeros((0, 5)), 'mask': None}, names=('k',)),
        Case('bias of the wrong shape', {'bias': np.zeros((3, 5))}),
        Case('bias row all -inf', {'bias': np.full((3, 4), -INF)}),
        Case('huge q and k', {'q': Q3 * 1e+200, 'k': K4 * 1e+200}, 'either', names=('q', 'k')),
    ]),
    "attention.self_attention": Example(
        attention.self_attention, dict(x=X46, w_q=W68, w_k=W68b, w_v=W65, mask=attention.causal_mask(4),
                                       bias=rng.normal(size=(4, 4))), [
        Case('w_k of another width', {'w_k': W68b[:, :7]}, names=('w_k',)),
        Case('w_q with wrong rows', {'w_q': W68[:5]}, names=('w_q',)),
        Case('batched x', {'x': np.stack([X46, 2 * X46])},
             lambda r: np.allclose(r[0][1], attention.self_attention(2 * X46, W68, W68b, W65, attention.causal_mask(4))[0])),
    ]),
    # --- absolute -------------------------------------------------------------
    "absolute.frequencies": Example(absolute.frequencies, dict(d=D, base=10000.0), [
        Case('huge d', {'d': 2 ** 30}),
    ]),
    "absolute.wavelengths": Example(absolute.wavelengths, dict(d=D, base=10000.0)),
    "absolute.sinusoidal": Example(absolute.sinusoidal, dict(positions=[0, 1, 5, 9], d=D, base=10000.0), [
        Case('huge table', {'positions': np.arange(2 ** 16), 'd': 2 ** 14}, names=('positions', 'd')),
    ]),
    "absolute_torch.SinusoidalPositions": Example(seeded(absolute_torch.SinusoidalPositions), dict(d=D, base=10000.0)),
    "absolute_torch.SinusoidalPositions.forward": Example(
        method(lambda: absolute_torch.SinusoidalPositions(D), 'forward'), dict(positions=torch.arange(5), dtype=None)),
    "absolute.rotation_for_offset": Example(absolute.rotation_for_offset, dict(k=3, d=D, base=10000.0), [
        Case('negative offset', {'k': -3}, lambda r: np.allclose(r, absolute.rotation_for_offset(3, D).T)),
    ]),
    "absolute.position_dot_products": Example(
        absolute.position_dot_products, dict(m=[0, 3, 7], n=[2, 2, 9], d=D, base=10000.0), [
        Case('shapes that do not broadcast', {'m': [0, 1, 2], 'n': [0, 1]}, names=('m', 'n')),
    ]),
    "absolute.dot_product_at_distance": Example(
        absolute.dot_product_at_distance, dict(k=[-3, 0, 2, 7], d=D, base=10000.0)),
    "absolute.score_terms": Example(absolute.score_terms, dict(e=E46, pe=PE46, w_q=W68, w_k=W68b), [
        Case('pe of another shape', {'pe': PE46[:3]}),
        Case('w_k of another shape', {'w_k': W68b[:, :7]}),
        Case('w_q with wrong rows', {'w_q': W68[:5]}),
        Case('huge e', {'e': E46 * 1e+300, 'pe': PE46 * 1e+300}, 'either', names=('e', 'pe')),
    ]),
    "absolute.position_score": Example(absolute.position_score, dict(m=[0, 3, 7], k=2, M=M88, base=10000.0), [
        Case('M not square', {'M': M88[:, :6]}),
        Case('M empty', {'M': np.zeros((0, 0))}),
        Case('M odd', {'M': M88[:7, :7]}),
        Case('m + k < 0', {'k': -1}, names=('k', 'm')),
        Case('M full of 1e308', {'M': np.full((D, D), 1e+308)}, 'either'),
    ]),
    "absolute_torch.LearnedPositions": Example(seeded(absolute_torch.LearnedPositions), dict(max_positions=16, d=8), [
        Case('huge table', {'max_positions': 2 ** 20, 'd': 2 ** 12}, names=('max_positions', 'd')),
    ]),
    "absolute_torch.LearnedPositions.forward": Example(
        method(lambda: absolute_torch.LearnedPositions(16, D), 'forward'), dict(positions=torch.arange(5))),
    "absolute.perplexity": Example(absolute.perplexity, dict(probabilities=[0.5, 0.25, 0.9]), [
        Case('above 1', {'probabilities': [0.5, 1.5]}),
        Case('tiny probability', {'probabilities': [1e-320]}, 'either'),
        Case('tiny among many', {'probabilities': [1e-320, 1.0]},
             lambda r: math.isclose(r, math.exp(-math.log(1e-320) / 2), rel_tol=1e-09)),
    ]),
    # --- relative -------------------------------------------------------------
    "relative.relative_positions": Example(relative.relative_positions, dict(n_queries=3, n_keys=5), [
        Case('n_keys < n_queries', {'n_keys': 2}),
        Case('huge', {'n_queries': 2 ** 16, 'n_keys': 2 ** 16}, names=('n_queries', 'n_keys')),
    ]),
    "relative.clipped_distances": Example(relative.clipped_distances, dict(n_queries=3, n_keys=5, k=2)),
    "relative.shaw_scores": Example(relative.shaw_scores, dict(q=Q3, k=K5, w_k=WK5), [
        Case('batch mismatch', {'q': np.stack([Q3, Q3]), 'k': np.stack([K5] * 3)}, names=('q', 'k')),
        Case('w_k with even rows', {'w_k': WK5[:4]}),
        Case('w_k of another width', {'w_k': WK5[:, :7]}),
        Case('fewer keys than queries', {'k': K5[:2]}, names=('k', 'n_keys')),
    ]),
    "relative.shaw_attention": Example(
        relative.shaw_attention, dict(q=Q3, k=K5, v=V5, w_k=WK5, w_v=WV5, mask=CAUSAL35), [
        Case('w_v with other rows', {'w_v': WV5[:3]}),
        Case('v with other rows', {'v': V5[:4]}),
        Case('batch mismatch', {'q': np.stack([Q3, Q3]), 'k': np.stack([K5] * 3), 'v': np.stack([V5] * 3)},
             names=('q', 'k')),
    ]),
    "relative_torch.ShawRelativeAttention": Example(
        seeded(relative_torch.ShawRelativeAttention), dict(d=8, max_distance=2, d_v=6)),
    "relative_torch.ShawRelativeAttention.forward": Example(
        method(lambda: relative_torch.ShawRelativeAttention(D, 2, 6).double(), 'forward'), dict(q=tq, k=tk, v=tv,
                                                                                          mask=torch.from_numpy(CAUSAL35)), [
        Case('batch mismatch',
             {'q': torch.stack([tq[0]] * 2), 'k': torch.stack([tk[0]] * 3), 'v': torch.stack([tv[0]] * 3)},
             names=('q', 'k')),
        Case('float32 q with float64 k', {'q': tq.float()}, names=('q', 'k')),
    ]),
    "relative.signed_sinusoid": Example(relative.signed_sinusoid, dict(distances=[-3, 0, 4], d=D, base=10000.0)),
    "relative.transformer_xl_terms": Example(
        relative.transformer_xl_terms, dict(e_q=E46[:3], e_k=rng.normal(size=(5, 6)), w_q=rng.normal(size=(6, 4)),
                                            w_ke=rng.normal(size=(6, 4)), w_kr=rng.normal(size=(8, 4)),
                                            u=rng.normal(size=4), v=rng.normal(size=4), base=10000.0), [
        Case('fewer keys than queries', {'e_k': E46[:2]}, names=('e_k', 'n_keys')),
        Case('w_kr with odd rows', {'w_kr': rng.normal(size=(7, 4))}),
        Case('u of another length', {'u': np.zeros(3)}),
    ]),
    "relative_torch.TransformerXLScores": Example(
        seeded(relative_torch.TransformerXLScores), dict(d_model=D, d_head=4, base=10000.0), [
        Case('huge', {'d_model': 2 ** 16, 'd_head': 2 ** 16}, names=('d_model', 'd_head')),
    ]),
    "relative_torch.TransformerXLScores.forward": Example(
        method(lambda: relative_torch.TransformerXLScores(D, 4).double(), 'forward'), dict(e_q=teq, e_k=tek), [
        Case('fewer keys than queries', {'e_k': tek[:2]}, names=('e_k', 'n_keys')),
        Case('batched', {'e_q': teq[None], 'e_k': tek[None]}, names=('e_q', 'e_k')),
    ]),
    "relative.t5_bucket": Example(
        relative.t5_bucket, dict(relative_position=[-200, -5, 0, 3, 130], bidirectional=True, num_buckets=32,
                                 max_distance=128), [
        Case('odd num_buckets, bidirectional', {'num_buckets': 31}),
        Case('max_distance too small', {'max_distance': 8}),
        Case('decoder', {'bidirectional': False}, lambda r: np.array_equal(r, [31, 5, 0, 0, 0])),
    ]),
    "relative.t5_bias": Example(
        relative.t5_bias, dict(table=TABLE, n_queries=3, n_keys=5, bidirectional=True, max_distance=128), [
        Case('1-D table', {'table': TABLE[:, 0]}),
        Case('n_keys < n_queries', {'n_keys': 2}),
        Case('huge', {'n_queries': 2 ** 15, 'n_keys': 2 ** 15}, names=('n_queries', 'n_keys')),
    ]),
    "relative_torch.T5RelativeBias": Example(
        seeded(relative_torch.T5RelativeBias), dict(n_heads=2, num_buckets=32, max_distance=128, bidirectional=True)),
    "relative_torch.T5RelativeBias.forward": Example(
        method(lambda: relative_torch.T5RelativeBias(2).double(), 'forward'), dict(n_queries=3, n_keys=5), [
        Case('n_keys < n_queries', {'n_keys': 2}),
        Case('huge', {'n_queries': 2 ** 15, 'n_keys': 2 ** 15}, names=('n_queries', 'n_keys')),
    ]),
    "relative_torch.T5RelativeBias.bucket": Example(
        method(lambda: relative_torch.T5RelativeBias(2), 'bucket'), dict(
                                                                   relative_position=torch.tensor([-200, -5, 0, 3, 130])), [
        Case('negative distances are valid', {'relative_position': torch.tensor([-1, -9])},
             lambda r: r.tolist() == relative.t5_bucket([-1, -9]).tolist()),
    ]),
    "relative.position_cost": Example(
        relative.position_cost, dict(method='shaw', n_layers=2, n_heads=4, d_head=16, n_queries=8, n_keys=8, clip=16,
                                     num_buckets=32, tied_uv=False), [
        Case('n_keys < n_queries', {'n_keys': 2}),
    ]),
    # --- rope -----------------------------------------------------------------
    "rope.inv_freq": Example(rope.inv_freq, dict(d=D, base=10000.0), [
        Case('huge d', {'d': 2 ** 30}),
    ]),
    "rope.angles": Example(rope.angles, dict(positions=[0, 1, 5], inv_freq=TH), [
        Case('2-D inv_freq', {'inv_freq': TH[None]}),
        Case('huge', {'positions': np.arange(2 ** 16), 'inv_freq': np.ones(2 ** 13)}, names=('positions', 'inv_freq')),
    ]),
    "rope.pair_indices": Example(rope.pair_indices, dict(d=D, layout='adjacent')),
    "rope.layout_permutation": Example(rope.layout_permutation, dict(d=D, source='adjacent', target='split')),
    "rope.rotate": Example(rope.rotate, dict(x=K4, positions=[0, 1, 2, 3], inv_freq=TH, layout='adjacent'), [
        Case('x of another width', {'x': K4[:, :6]}),
        Case('positions that do not broadcast', {'positions': [0, 1, 2]}),
        Case('inv_freq empty', {'inv_freq': []}),
    ]),
    "rope.rotation_matrices": Example(rope.rotation_matrices, dict(positions=[0, 1, 5], inv_freq=TH, layout='split'), [
        Case('huge', {'positions': np.arange(2 ** 12), 'inv_freq': np.ones(2 ** 9)}, names=('positions', 'inv_freq')),
    ]),
    "rope.rotate_by_matrices": Example(
        rope.rotate_by_matrices, dict(x=K4, positions=[0, 1, 2, 3], inv_freq=TH, layout='adjacent'), [
        Case('x of another width', {'x': K4[:, :6]}),
    ]),
    "rope.to_complex": Example(rope.to_complex, dict(x=K4, layout='adjacent'), [
        Case('odd width', {'x': K4[:, :7]}),
    ]),
    "rope.from_complex": Example(rope.from_complex, dict(z=rope.to_complex(K4), layout='split'), [
        Case('no entries', {'z': np.zeros((3, 0), complex)}),
    ]),
    "rope.rotate_complex": Example(
        rope.rotate_complex, dict(x=K4, positions=[0, 1, 2, 3], inv_freq=TH, layout='adjacent')),
    "symbolic.rotation_matrix": Example(
        symbolic.rotation_matrix, dict(position=sp.Symbol('m'), thetas=[1, sp.Rational(1, 2)], layout='adjacent')),
    "rope.score": Example(rope.score, dict(q=Q3, k=K4[:3], m=[0, 1, 2], n=[4, 2, 0], inv_freq=TH, layout='adjacent'), [
        Case('k of another width', {'k': K4[:3, :6]}),
        Case('m that does not broadcast', {'m': [0, 1]}),
    ]),
    "rope.relative_score": Example(
        rope.relative_score, dict(q=Q3, k=K4[:3], distance=[4, 1, -2], inv_freq=TH, layout='adjacent'), [
        Case('k of another width', {'k': K4[:3, :6]}),
    ]),
    "rope.complex_score": Example(
        rope.complex_score, dict(q=Q3, k=K4[:3], m=[0, 1, 2], n=[4, 2, 0], inv_freq=TH, layout='adjacent'), [
        Case('q of another width', {'q': Q3[:, :6]}),
    ]),
    "rope.self_attention": Example(
        rope.self_attention, dict(x=X46, w_q=W68, w_k=W68b, w_v=W65, positions=[0, 1, 2, 3], inv_freq=TH,
                                  layout='adjacent', mask=attention.causal_mask(4)), [
        Case('w_k of another width', {'w_k': W68b[:, :6]}),
        Case('w_v with wrong rows', {'w_v': W65[:5]}),
    ]),
    "rope.long_term_decay": Example(rope.long_term_decay, dict(distances=[0.0, 1.5, -10.0, 100.0], inv_freq=TH)),
    "rope.decay_bound": Example(rope.decay_bound, dict(h=H4, distances=[0.0, 1.5, 100.0], inv_freq=TH)),
    # --- integer_positions -------------------------------------------------------------
    "integer_positions.aliased_step": Example(integer_positions.aliased_step, dict(phi=[0.5, 3.5, -4.0])),
    "integer_positions.pair_readings": Example(integer_positions.pair_readings, dict(phi=2.0, positions=[0.0, 1.0, 2.5]), [
        Case('vector phi', {'phi': [1.0, 2.0]}),
    ]),
    "integer_positions.reading_distance": Example(integer_positions.reading_distance, dict(k=[1.0, 2.5, 100.0], inv_freq=TH)),
    "integer_positions.nearest_return": Example(integer_positions.nearest_return, dict(n_max=100, inv_freq=TH, k_min=1), [
        Case('k_min > n_max', {'k_min': 101}),
        Case('hours of work', {'n_max': 2 ** 31, 'inv_freq': np.ones(64)}, names=('n_max', 'inv_freq')),
    ]),
    # --- rope -----------------------------------------------------------------
    "rope_torch.RotaryEmbedding": Example(
        seeded(lambda **kw: rope_torch.RotaryEmbedding(**kw).inv_freq), dict(d=D, inv_freq=TH, base=10000.0,
                                                                       layout='adjacent', attention_factor=1.0), [
        Case('inv_freq of another length', {'inv_freq': TH[:3]}),
        Case('2-D inv_freq', {'inv_freq': TH[None]}),
    ]),
    "rope_torch.RotaryEmbedding.forward": Example(
        method(lambda: rope_torch.RotaryEmbedding(D), 'forward'), dict(q=tr4, k=tr4 * 2, positions=None), [
        Case('positions that do not broadcast', {'positions': torch.arange(3)}),
    ]),
    "rope_torch.RotaryEmbedding.rotate": Example(
        method(lambda: rope_torch.RotaryEmbedding(D, layout='split'), 'rotate'), dict(x=tr4,
                                                                                positions=torch.tensor([0, 3, 5, 9]))),
    "rope_torch.RotaryEmbedding.set_frequencies": Example(
        lambda **kw: _set_frequencies(**kw), dict(inv_freq=TH / 2, attention_factor=1.5), [
        Case('inv_freq of another length', {'inv_freq': TH[:3]}),
    ]),
    # --- alibi ----------------------------------------------------------------
    "alibi.slopes": Example(alibi.slopes, dict(n_heads=8), [
        Case('huge', {'n_heads': 2 ** 30}),
    ]),
    "alibi.bias": Example(alibi.bias, dict(n_heads=4, n_queries=3, n_keys=5, mask_future=True), [
        Case('n_keys < n_queries', {'n_keys': 2}),
        Case('huge', {'n_heads': 2 ** 10, 'n_queries': 2 ** 10, 'n_keys': 2 ** 10},
             names=('n_heads', 'n_queries', 'n_keys')),
    ], masks=True),
    "alibi.distance_weights": Example(alibi.distance_weights, dict(n_heads=4, n_keys=10), [
        Case('huge', {'n_heads': 2 ** 15, 'n_keys': 2 ** 15}, names=('n_heads', 'n_keys')),
    ]),
    "alibi.tail_weight": Example(alibi.tail_weight, dict(n_heads=4, n_keys=10, distance=3), [
        Case('distance past the row', {'distance': 10}),
    ]),
    "alibi.effective_span": Example(alibi.effective_span, dict(n_heads=4, n_keys=10, share=0.9)),
    "alibi_torch.ALiBi": Example(seeded(lambda **kw: alibi_torch.ALiBi(**kw).slopes), dict(n_heads=4)),
    "alibi_torch.ALiBi.forward": Example(method(lambda: alibi_torch.ALiBi(4), 'forward'), dict(n_queries=3, n_keys=5), [
        Case('n_keys < n_queries', {'n_keys': 2}),
        Case('huge', {'n_queries': 2 ** 15, 'n_keys': 2 ** 15}, names=('n_queries', 'n_keys')),
    ], masks=True),
    # --- nope -----------------------------------------------------------------
    "nope.no_positions": Example(nope.no_positions, dict(x=X46), anything=True),
    "nope.uniform_causal_weights": Example(nope.uniform_causal_weights, dict(n=5), [
        Case('huge', {'n': 2 ** 16}),
    ]),
    "nope.uniform_bidirectional_weights": Example(nope.uniform_bidirectional_weights, dict(n=5), [
        Case('huge', {'n': 2 ** 16}),
    ]),
    "nope.position_signal": Example(nope.position_signal, dict(n=5, causal=True)),
    "nope.read_position": Example(nope.read_position, dict(signal=nope.position_signal(5), rtol=1e-09), [
        Case('not 1/(i+1)', {'signal': [0.3]}),
        Case('above 1', {'signal': [1.5]}),
        Case('position beyond the range', {'signal': [1e-300]}),
    ]),
    "nope.irope_layer_pattern": Example(nope.irope_layer_pattern, dict(n_layers=8, nope_every=4)),
    "nope.attention_temperature": Example(
        nope.attention_temperature, dict(positions=[0, 8191, 20000], floor_scale=8192.0, attn_scale=0.1)),
    "nope.single_key_weight": Example(
        nope.single_key_weight, dict(n_keys=[1, 10, 1000], margin=[0.0, 2.0, -3.0], scale=1.5), [
        Case('n_keys = 0', {'n_keys': [0, 1, 2]}),
        Case('one key far behind', {'n_keys': 1, 'margin': -800.0}, lambda r: r == 1.0),
        Case('many keys, far behind', {'n_keys': 10, 'margin': -710.0, 'scale': 1.0},
             lambda r: math.isclose(float(r), math.exp(-710.0) / 9, rel_tol=1e-06)),
        Case('shapes that do not broadcast', {'n_keys': [1, 2], 'margin': [0.0, 1.0, 2.0]},
             names=('n_keys', 'margin', 'scale')),
    ]),
    "nope.nope_layer_outputs": Example(
        nope.nope_layer_outputs, dict(n_sequences=3, n_tokens=5, causal=True, d_model=4, vocab_size=4,
                                      weight_std=0.02, bos=True, seed=0), [
        Case('huge', {'n_sequences': 2 ** 12, 'n_tokens': 2 ** 12}, names=('n_sequences', 'n_tokens')),
    ]),
    "nope.position_probe": Example(
        nope.position_probe, dict(causal=True, n_tokens=6, d_model=4, vocab_size=4, weight_std=0.02, bos=True,
                                  n_train=8, n_test=4, hidden=8, steps=3, lr=0.02, seed=0), [
        Case('hours of training', {'steps': 10 ** 9, 'n_train': 2 ** 14}, names=('steps', 'n_train')),
    ]),
    "nope.unmasked_probe_floor": Example(nope.unmasked_probe_floor, dict(n_tokens=16, bos=True)),
    # --- scaling --------------------------------------------------------------
    "scaling.ScaledRope": Example(scaling.ScaledRope, dict(inv_freq=TH, attention_factor=1.0)),
    "scaling.unscaled": Example(scaling.unscaled, dict(d=D, s=2.0, L=4096, base=10000.0)),
    "scaling.position_interpolation": Example(scaling.position_interpolation, dict(d=D, s=2.0, L=4096, base=10000.0)),
    "scaling.ntk_base": Example(scaling.ntk_base, dict(d=D, s=2.0, base=10000.0), [
        Case('d = 2', {'d': 2}),
    ]),
    "scaling.ntk_per_pair": Example(scaling.ntk_per_pair, dict(d=D, s=2.0, base=10000.0)),
    "scaling.ntk_aware": Example(scaling.ntk_aware, dict(d=D, s=2.0, L=4096, base=10000.0)),
    "scaling.dynamic_scale": Example(scaling.dynamic_scale, dict(current_length=8192, L=4096, factor=None)),
    "scaling.dynamic_ntk": Example(
        scaling.dynamic_ntk, dict(d=D, s=2.0, L=4096, base=10000.0, current_length=10000, hf_factor=None)),
    "scaling.yarn_ramp": Example(scaling.yarn_ramp, dict(r=[0.5, 2.0, 40.0], alpha=1.0, beta=32.0), [
        Case('beta < alpha', {'alpha': 40.0}, names=('alpha', 'beta')),
    ]),
    "scaling.yarn_attention_factor": Example(scaling.yarn_attention_factor, dict(s=8.0)),
    "scaling.yarn_mscale": Example(scaling.yarn_mscale, dict(s=8.0, mscale=0.707)),
    "scaling.proportional": Example(scaling.proportional, dict(d=D, rotated_pairs=2, s=2.0, base=10000.0), [
        Case('rotated_pairs past the head', {'rotated_pairs': D // 2 + 1}),
    ]),
    "scaling.yarn": Example(scaling.yarn, dict(d=D, s=8.0, L=4096, base=10000.0, alpha=1.0, beta=32.0)),
    "scaling.yarn_correction_range": Example(
        scaling.yarn_correction_range, dict(d=16, L=4096, base=10000.0, beta_fast=32.0, beta_slow=1.0, truncate=True), [
        Case('beta_fast < beta_slow', {'beta_fast': 0.5}, names=('beta_fast', 'beta_slow')),
    ]),
    "scaling.yarn_code_ramp": Example(
        scaling.yarn_code_ramp, dict(d=16, L=4096, base=10000.0, beta_fast=32.0, beta_slow=1.0, truncate=True)),
    "scaling.yarn_code": Example(
        scaling.yarn_code, dict(d=16, s=8.0, L=4096, base=10000.0, beta_fast=32.0, beta_slow=1.0, truncate=True)),
    "scaling.yarn_curves": Example(scaling.yarn_curves, dict(d=16, s=8.0, L=4096, base=10000.0, alpha=1.0, beta=32.0)),
    "scaling.base_change": Example(scaling.base_change, dict(d=D, s=2.0, L=4096, base=1000000.0)),
    "scaling.llama3": Example(
        scaling.llama3, dict(d=16, s=8.0, L=8192, base=500000.0, low_freq_factor=1.0, high_freq_factor=4.0), [
        Case('high < low', {'high_freq_factor': 0.5}, names=('high_freq_factor', 'low_freq_factor')),
    ]),
    "scaling.llama3_bands": Example(
        scaling.llama3_bands, dict(d=16, L=8192, base=500000.0, low_freq_factor=1.0, high_freq_factor=4.0)),
    "scaling.longrope_attention_factor": Example(scaling.longrope_attention_factor, dict(s=4.0, L=4096)),
    "scaling.longrope": Example(
        scaling.longrope, dict(d=D, s=4.0, L=4096, base=10000.0, short_factors=np.ones(4),
                               long_factors=np.full(4, 2.0), current_length=5000), [
        Case('short_factors of another length', {'short_factors': np.ones(3)}),
    ]),
    "scaling.scale": Example(scaling.scale, dict(method='yarn', d=16)),
    "scaling.training_turns": Example(scaling.training_turns, dict(inv_freq=TH, L=4096)),
    # --- trained_range --------------------------------------------------------
    "trained_range.angle_ratio": Example(trained_range.angle_ratio, dict(scaled_inv_freq=TH / 2, inv_freq=TH, s=2.0), [
        Case('lengths differ', {'scaled_inv_freq': TH[:3]}),
    ]),
    "trained_range.out_of_range": Example(
        trained_range.out_of_range, dict(scaled_inv_freq=TH / 2, inv_freq=TH, s=4.0, L=4096, tol=1e-09)),
    "trained_range.extension": Example(trained_range.extension, dict(method='ntk', d=16, s=8.0, L=4096, base=10000.0)),
    # --- interpolation --------------------------------------------------------
    "interpolation.score_curve": Example(
        interpolation.score_curve, dict(h=H4, distances=[0.0, 1.5, 100.0], inv_freq=TH)),
    "interpolation.fit_score_curve": Example(
        interpolation.fit_score_curve, dict(distances=np.arange(12.0), targets=np.cos(np.arange(12.0)), inv_freq=TH,
                                            rcond=None, ridge=0.0), [
        Case('rcond and ridge', {'rcond': 1e-06, 'ridge': 1.0}, names=('rcond', 'ridge')),
        Case('targets of another length', {'targets': np.zeros(5)}),
    ]),
    "interpolation.interpolation_error_bound": Example(
        interpolation.interpolation_error_bound, dict(h=H4, inv_freq=TH, spacing=1.0)),
    "interpolation.pi_bound_ratio": Example(
        interpolation.pi_bound_ratio, dict(distances=[1.0, 50.0, 1000.0], d=16, base=10000.0, constant='exact')),
    "interpolation.node_polynomial": Example(interpolation.node_polynomial, dict(x=[0.5, 3.0], nodes=[0.0, 1.0, 2.0]), [
        Case('repeated node', {'nodes': [0.0, 1.0, 1.0]}),
        Case('2-D nodes', {'nodes': [[0.0, 1.0]]}),
    ]),
    "interpolation.polynomial_interpolant": Example(
        interpolation.polynomial_interpolant, dict(nodes=[0.0, 1.0, 2.0, 3.0], values=[1.0, 2.0, 0.0, 5.0],
                                                   x=[0.5, 4.0, 2.0]), [
        Case('repeated node', {'nodes': [0.0, 1.0, 1.0, 3.0]}),
        Case('values of another length', {'values': [1.0]}),
        Case('nodes 1e-200 apart',
             {'nodes': np.array([0.0, 1.0, 2.0, 3.0]) * 1e-200, 'x': np.array([0.5, 4.0, 2.0]) * 1e-200},
             _close_to(interpolation.polynomial_interpolant([0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 0.0, 5.0], [0.5, 4.0, 2.0]))),
    ]),
    "interpolation.polynomial_remainder_bound": Example(
        interpolation.polynomial_remainder_bound, dict(x=[0.5, 3.0], nodes=[0.0, 1.0, 2.0], derivative_bound=1.0)),
    # --- new since the contracts -------------------------------------------------
    "attention.relative_positions": Example(attention.relative_positions, dict(n_queries=3, n_keys=5), [
        Case('n_keys < n_queries', {'n_keys': 2}),
        Case('huge', {'n_queries': 2 ** 16, 'n_keys': 2 ** 16}, names=('n_queries', 'n_keys')),
    ]),
    "alibi.largest_power_of_two": Example(alibi.largest_power_of_two, dict(n_heads=12), [
        Case('a power of two', {'n_heads': 16}, lambda r: r == 16),
        Case('one head', {'n_heads': 1}, lambda r: r == 1),
    ]),
    "trained_range.Extension.of": Example(
        trained_range.Extension.of, dict(method='yarn', scaled_inv_freq=TH / 2, inv_freq=TH, s=2.0, L=4096,
                                         attention_factor=1.0), [
        Case('lengths differ', {'scaled_inv_freq': TH[:3]}),
    ], non_finite_ok=True),
    # --- precision ---------------------------------------------------------------
    "precision.significant_bits": Example(precision.significant_bits, dict(dtype='bfloat16')),
    "precision.angles_in": Example(precision.angles_in, dict(positions=[0, 7, 4096], inv_freq=TH, dtype='float32'), non_finite_ok=True),
    "precision.angle_error": Example(
        precision.angle_error, dict(positions=[0, 7, 4096], inv_freq=TH, dtype='bfloat16'), [
        Case('float16 beyond 65504', {'positions': [70000], 'dtype': 'float16'}, lambda r: np.isinf(r).all()),
    ], non_finite_ok=True),
    "precision.table_error": Example(
        precision.table_error, dict(positions=[0, 7, 4096], inv_freq=TH, angle_dtype='float32', table_dtype='bfloat16')),
    "precision.rotate_like_library": Example(
        precision.rotate_like_library, dict(x=K4, positions=[0, 1, 2, 3], inv_freq=TH, angle_dtype='float32',
                                            table_dtype='float16'), [
        Case('x of another width', {'x': K4[:, :6]}),
        Case('positions that do not broadcast', {'positions': [0, 1, 2]}),
    ]),
    "precision.score_error": Example(
        precision.score_error, dict(q=Q3[0], k=K4[0], query_positions=[5, 9, 300], distance=3, inv_freq=TH,
                                    angle_dtype='float32', table_dtype='bfloat16'), [
        Case('q and k of other lengths', {'k': K4[0, :6]}, names=('q', 'k')),
        Case('a query before the distance', {'query_positions': [1, 9]}, names=('query_positions',)),
    ]),
    # --- symbolic ----------------------------------------------------------------
    "symbolic.symbol_matrix": Example(symbolic.symbol_matrix, dict(name='w', rows=2, cols=3)),
    "symbolic.permutation_matrix": Example(symbolic.permutation_matrix, dict(perm=[2, 0, 1]), [
        Case('repeated index', {'perm': [0, 0, 1]}),
        Case('out of range', {'perm': [1, 2, 3]}),
    ]),
    "symbolic.all_permutation_matrices": Example(symbolic.all_permutation_matrices, dict(n=3)),
    "symbolic.causal_mask": Example(symbolic.causal_mask, dict(n=3)),
    "symbolic.softmax_rows": Example(symbolic.softmax_rows, dict(S=SYM_S, mask=symbolic.causal_mask(2)), [
        Case('mask of another shape', {'mask': sp.ones(3, 3)}),
        Case('a row with no key', {'mask': sp.Matrix([[0, 0], [1, 1]])}),
    ]),
    "symbolic.self_attention": Example(
        symbolic.self_attention, dict(X=SYM_X, W_Q=sp.eye(2), W_K=sp.eye(2), W_V=sp.eye(2),
                                      mask=symbolic.causal_mask(2))),
    "symbolic.is_zero_matrix": Example(
        symbolic.is_zero_matrix, dict(M=sp.Matrix([[sp.sin(A_SYM) ** 2 + sp.cos(A_SYM) ** 2 - 1]])), [
        Case('not zero', {'M': sp.Matrix([[A_SYM]])}, lambda r: r is False),
    ]),
    "symbolic.is_zero": Example(
        symbolic.is_zero, dict(
                               expr=sp.sin(A_SYM + B_SYM) - sp.sin(A_SYM) * sp.cos(B_SYM) - sp.cos(A_SYM) * sp.sin(B_SYM)), anything=True),
    "symbolic.nonzero_witness": Example(
        symbolic.nonzero_witness, dict(expr=A_SYM - B_SYM, seed=0, tries=20, tolerance=1e-12)),
    "symbolic.expand_trig_full": Example(symbolic.expand_trig_full, dict(expr=sp.sin(A_SYM + B_SYM)), anything=True),
    "symbolic.sinusoid_vector": Example(symbolic.sinusoid_vector, dict(position=A_SYM, thetas=[1, sp.Rational(1, 2)])),
    "symbolic.sinusoid_vector_exp": Example(symbolic.sinusoid_vector_exp, dict(position=3, powers=[1, 2], w=B_SYM)),
    "symbolic.shift_matrix": Example(symbolic.shift_matrix, dict(offset=A_SYM, thetas=[1, sp.Rational(1, 2)])),
    "symbolic.clip": Example(symbolic.clip, dict(t=A_SYM, c=2), anything=True),
    "symbolic.shaw_score": Example(
        symbolic.shaw_score, dict(q=sp.Matrix([1, 2]), k=sp.Matrix([3, 4]), key_table=lambda t: sp.Matrix([t, 2 * t]),
                                  i=1, j=4, c=2), [
        Case('k of another height', {'k': sp.Matrix([1, 2, 3])}, names=('q', 'k')),
        Case('key_table of another height', {'key_table': lambda t: sp.Matrix([t])}, names=('key_table',)),
    ]),
    # --- configs -----------------------------------------------------------------
    "configs.read_config": Example(configs.read_config, dict(config=YARN, layer_type=None), [
        Case('layer type of a flat dictionary', {'layer_type': 'full_attention'}),
        Case('Gemma 3 local layers', {'config': GEMMA, 'layer_type': 'sliding_attention'},
             lambda r: (r.rope_type, r.base) == ('default', 10000.0)),
        Case('a position key the class reads and the reader does not model',
             {'config': {**YARN, 'model_type': 'granite_swa', 'layer_rope_theta': [1e4]}}, names=('layer_rope_theta',)),
        Case('RoPE switched off', {'config': NOPE_SWITCH}, lambda r: (r.rope_type, r.rotary_dim) == ('none', 0)),
    ]),
    "configs.frequencies_at": Example(configs.frequencies_at, dict(config=YARN, seq_len=3000, layer_type=None), [
        Case('settings instead of the dictionary', {'config': configs.read_config(YARN)},
             lambda r: np.array_equal(r.inv_freq, YARN_AT_3K.inv_freq)),
    ]),
    "configs.DynamicNTKState": Example(
        lambda **kw: configs.DynamicNTKState(**kw).current, dict(config=DYNAMIC, layer_type=None), [
        Case('not dynamic', {'config': YARN}),
    ]),
    "configs.DynamicNTKState.update": Example(
        lambda **kw: configs.DynamicNTKState(DYNAMIC).update(**kw), dict(seq_len=6000)),
    "configs.rotate": Example(
        configs.rotate, dict(x=rng.normal(size=(4, 16)), positions=[0, 1, 2, 3], frequencies=YARN_AT_3K,
                             layout='split'), [
        Case('x of another width', {'x': rng.normal(size=(4, 12))}),
    ]),
    "configs.config_extension": Example(
        configs.config_extension, dict(config=YARN, context=8192, trained_length=2048, layer_type=None), [
        Case('context shorter than training', {'context': 1000}),
        Case('a configuration that rotates nothing', {'config': NOPE_SWITCH}, names=('config',)),
    ]),
    "configs.published": Example(configs.published, dict(name='Llama 2 7B')),
    "pair_usage.aimed_scores": Example(pair_usage.aimed_scores, dict(
        inv_freq=rope.inv_freq(8), pairs=np.array([0, 1]), offset=1, distances=np.arange(6), amplitude=2.0), [
        Case('a pair past the head', {'pairs': np.array([4])}),
    ]),
    "pair_usage.attention_on_offset": Example(pair_usage.attention_on_offset, dict(
        inv_freq=rope.inv_freq(8), pairs=np.array([0]), offset=1, context=16, amplitude=3.0), [
        Case('offset outside the context', {'offset': 16}),
    ]),
    "pair_usage.random_scores": Example(pair_usage.random_scores, dict(
        d=8, distances=np.arange(3), samples=5, seed=1, tied=False)),
    "pair_usage.drift_bound": Example(pair_usage.drift_bound, dict(inv_freq=rope.inv_freq(8), length=100)),
    "pair_usage.stable_length": Example(pair_usage.stable_length, dict(inv_freq=rope.inv_freq(8), tolerance=0.1)),
    "configs.source_link": Example(configs.source_link, dict(source="arXiv:2307.09288, table 1")),
    "configs.source_links": Example(configs.source_links, dict(sources=("arXiv:2307.09288", "https://example.org/a"))),
    "configs.model_defaults": Example(lambda: configs.model_defaults()["transformers"], {}, anything=True),
    "configs.layer_plan": Example(
        lambda **kw: [(layer.layer_type, layer.settings is None) for layer in configs.layer_plan(**kw)],
        dict(config=HYBRID), [
        Case('no_rope_layers of the wrong length', {'config': {**HYBRID, 'no_rope_layers': [1, 0]}},
             names=('no_rope_layers',)),
        Case('layer_types of the wrong length', {'config': {**HYBRID, 'layer_types': ['full_attention']}},
             names=('layer_types',)),
        Case('layer kinds derived by the class from full_attention_interval',
             {'config': {k: v for k, v in HYBRID.items() if k != 'layer_types'}},
             lambda r: r == [('linear_attention', True)] * 3 + [('full_attention', False)]),
        Case('layer kinds left to a class whose rule is not modelled',
             {'config': {**{k: v for k, v in HYBRID.items() if k != 'layer_types'}, 'model_type': 'qwen4_exp_text'}},
             names=('layer_types',)),
    ]),
    "configs.query_scale": Example(configs.query_scale, dict(config=MINISTRAL, positions=[0, 16384, 40000]), [
        Case('a class without the query scale', {'config': {**MINISTRAL, 'model_type': 'mistral'}},
             lambda r: np.array_equal(r, np.ones(3))),
    ]),
    "configs.softmax_scale_factor": Example(configs.softmax_scale_factor, dict(config=DEEPSEEK, layer_type=None), [
        Case('a class without the softmax mscale', {'config': {**DEEPSEEK, 'model_type': 'llama'}},
             lambda r: r == 1.0),
    ]),
    # --- mrope ----------------------------------------------------------------
    "mrope.pair_axes": Example(mrope.pair_axes, dict(sections=[1, 1, 2], layout='sectioned'), [
        Case('interleaved with two sections', {'sections': [2, 2], 'layout': 'interleaved'}, names=('sections',)),
        Case('no room to interleave', {'sections': [1, 1, 2], 'layout': 'interleaved'}, names=('sections',)),
    ]),
    "mrope.axis_frequencies": Example(mrope.axis_frequencies, dict(inv_freq=TH, axes=[0, 1, 2, 2]), [
        Case('one axis too few', {'axes': [0, 1, 2]}),
    ]),
    "mrope.angles": Example(mrope.angles, dict(positions=MROPE_P, inv_freq=TH, axes=[0, 1, 2, 2]), [
        Case('two rows for three axes', {'positions': MROPE_P[:2]}),
        Case('axes of the wrong length', {'axes': [0, 1]}),
        Case('text positions are plain RoPE', {'positions': np.tile(np.arange(5), (3, 1))},
             _close_to(rope.angles(np.arange(5), TH))),
    ]),
    "mrope.rotate": Example(mrope.rotate, dict(x=X58, positions=MROPE_P, inv_freq=TH, axes=[0, 1, 2, 2],
                                               layout='split'), [
        Case('x of another width', {'x': X58[:, :6]}, names=('x',)),
        Case('positions for 4 tokens', {'positions': MROPE_P[:, :4]}, names=('positions',)),
        Case('two rows for three axes', {'positions': MROPE_P[:2]}, names=('positions',)),
        Case('text positions are plain RoPE', {'positions': np.tile(np.arange(5), (3, 1))},
             _close_to(rope.rotate(X58, np.arange(5), TH, 'split'))),
    ]),
    "mrope.text_positions": Example(mrope.text_positions, dict(n=4, start=2), [
        Case('huge n', {'n': 2 ** 31}),
    ]),
    "mrope.vision_positions": Example(
        mrope.vision_positions, dict(grid_thw=(2, 4, 6), start=3, spatial_merge_size=2, time_interval=1.0), [
        Case('two sizes', {'grid_thw': (4, 6)}),
        Case('height not a multiple of the merge', {'grid_thw': (1, 3, 6)}, names=('grid_thw', 'spatial_merge_size')),
        Case('huge grid', {'grid_thw': (2 ** 12, 2 ** 12, 2 ** 12)}),
        Case('positions beyond the range', {'time_interval': 1e300}),
    ]),
    "mrope.multimodal_positions": Example(
        mrope.multimodal_positions, dict(segments=[3, (1, 4, 4), 2], spatial_merge_size=2, time_interval=1.0,
                                         advance='largest'), [
        Case('time beyond the range', {'segments': [3, (4, 4, 4)], 'time_interval': 1e300}),
        Case('the library rule on an image', {'advance': 'spatial'},
             lambda r: np.array_equal(r[0], mrope.multimodal_positions([3, (1, 4, 4), 2], 2)[0])),
        Case('empty', {'segments': []}),
        Case('a zero-length text run', {'segments': [0, (1, 4, 4)]}),
        Case('a grid of two sizes', {'segments': [3, (4, 4)]}),
        Case('a grid not merged whole', {'segments': [3, (1, 3, 4)]}, names=('segments', 'spatial_merge_size')),
        Case('a bool', {'segments': [True]}),
        Case('a string', {'segments': ['abc']}),
        Case('grids as lists', {'segments': [3, [1, 4, 4], 2]}, 'valid'),
    ]),
    "mrope.axial_inv_freq": Example(mrope.axial_inv_freq, dict(d=D, base=10000.0), [
        Case('d not a multiple of 4', {'d': 6}),
    ]),
    "mrope.axial_pair_axes": Example(mrope.axial_pair_axes, dict(d=D), [
        Case('d not a multiple of 4', {'d': 6}),
    ]),
    "mrope.patch_positions": Example(mrope.patch_positions, dict(h=4, w=6, spatial_merge_size=2), [
        Case('h not a multiple of the merge', {'h': 3}, names=('h', 'spatial_merge_size')),
        Case('huge grid', {'h': 2 ** 16, 'w': 2 ** 16}, names=('h', 'w')),
    ]),
    # --- layers ---------------------------------------------------------------
    "layer_plans.LayerPlan": Example(layer_plans.LayerPlan, dict(rope=True, base=10000.0, factor=2.0, window=16, chunk=None,
                                                        qk_norm=False, temperature=False, rotary_dim=None,
                                                        recurrent=False), [
        Case('a recurrent layer that rotates', {'recurrent': True}, names=('recurrent',)),
    ]),
    "layer_plans.qwen3_next": Example(layer_plans.qwen3_next, dict(n_layers=8, every=4, base=1e7, rotary_dim=64)),
    "layer_plans.kimi_linear": Example(layer_plans.kimi_linear, dict(n_layers=8, every=4)),
    "layer_plans.gemma2": Example(layer_plans.gemma2, dict(n_layers=4, window=16, base=10000.0)),
    "layer_plans.gemma3": Example(layer_plans.gemma3, dict(n_layers=6, every=3, window=16, local_base=10000.0,
                                                 global_base=1e6, global_factor=8.0)),
    "layer_plans.gpt_oss": Example(layer_plans.gpt_oss, dict(n_layers=4, window=16, base=150000.0)),
    "layer_plans.llama4": Example(layer_plans.llama4, dict(n_layers=8, nope_every=4, chunk=64, base=500000.0, qk_norm=True)),
    "layer_plans.smollm3": Example(layer_plans.smollm3, dict(n_layers=8, nope_every=4, base=5e6)),
    "layer_plans.rnope_swa": Example(layer_plans.rnope_swa, dict(n_layers=8, every=4, window=16, base=10000.0)),
    "layer_plans.sliding_window_mask": Example(layer_plans.sliding_window_mask, dict(n=6, window=3), [
        Case('huge n', {'n': 2 ** 20}),
    ]),
    "layer_plans.chunked_mask": Example(layer_plans.chunked_mask, dict(n=6, chunk=4), [
        Case('huge n', {'n': 2 ** 20}),
    ]),
    "layer_plans.layer_mask": Example(layer_plans.layer_mask, dict(plan=PLAN_LOCAL, n=6), [
        Case('a dict for a plan', {'plan': {'rope': True}}),
        Case('a recurrent layer', {'plan': layer_plans.LayerPlan(rope=False, recurrent=True)}, names=('plan',)),
        Case('huge n', {'n': 2 ** 20}),
    ]),
    "layer_plans.reach": Example(layer_plans.reach, dict(plan=PLAN_LOCAL, n=6)),
    "layer_plans.longest_rotated_distance": Example(layer_plans.longest_rotated_distance, dict(plans=PLANS, n=64), [
        Case('a list of dicts', {'plans': [{'rope': True}]}),
        Case('no layers', {'plans': []}, lambda r: r == 0),
    ]),
    "layer_plans.cached_keys": Example(layer_plans.cached_keys, dict(plans=PLANS, n=64), [
        Case('a list of strings', {'plans': ['global']}),
    ]),
    "layer_plans.layer_frequencies": Example(layer_plans.layer_frequencies, dict(plan=PLAN_LOCAL, d=D), [
        Case('a NoPE layer', {'plan': layer_plans.LayerPlan(rope=False)}, lambda r: r is None),
        Case('a partial rotation wider than the head',
             {'plan': layer_plans.LayerPlan(rope=True, base=1e4, rotary_dim=16)}, names=('d',)),
        Case('a partial rotation', {'plan': layer_plans.LayerPlan(rope=True, base=1e4, rotary_dim=4)},
             _close_to(rope.inv_freq(4))),
    ]),
    "layer_plans.qk_rms_norm": Example(layer_plans.qk_rms_norm, dict(x=Q3, eps=1e-5), [
        Case('a zero row', {'x': np.zeros((2, D))}, lambda r: np.array_equal(r, np.zeros((2, D)))),
        Case('eps 0 on a zero row', {'x': np.zeros((2, D)), 'eps': 0.0}, names=('eps',)),
        Case('eps 0', {'eps': 0.0}, lambda r: np.allclose(np.mean(r ** 2, axis=-1), 1.0)),
    ]),
    # --- sinks ----------------------------------------------------------------
    "sinks.softmax_with_sink": Example(sinks.softmax_with_sink, dict(scores=BIAS34, sink_logit=[0.5, -1.0, 2.0]), [
        Case('one sink per key', {'sink_logit': [0.5, -1.0, 2.0, 0.0]}),
        Case('a row with neither key nor sink', {'scores': np.full((3, 4), -INF), 'sink_logit': -INF},
             names=('scores', 'sink_logit')),
        Case('no sink is the softmax', {'sink_logit': -INF}, _close_to(attention.softmax(BIAS34))),
    ]),
    "sinks.sink_weight": Example(sinks.sink_weight, dict(scores=BIAS34, sink_logit=[0.5, -1.0, 2.0]), [
        Case('one sink per key', {'sink_logit': [0.5, -1.0, 2.0, 0.0]}),
        Case('a row with neither key nor sink', {'scores': np.full((3, 4), -INF), 'sink_logit': -INF},
             names=('scores', 'sink_logit')),
    ]),
    "sinks.attention_with_sink": Example(
        sinks.attention_with_sink, dict(q=np.stack([Q3, Q3]), k=np.stack([K4, K4]), v=np.stack([V4, V4]),
                                        sink_logit=[0.5, -1.0], mask=CAUSAL35[:, 1:]), [
        Case('d mismatch', {'k': np.stack([K4, K4])[..., :7]}, names=('q', 'k')),
        Case('n_keys mismatch', {'v': np.stack([V4, V4])[:, :3]}, names=('k', 'v')),
        Case('three sinks for two heads', {'sink_logit': [0.5, -1.0, 0.0]}),
        Case('mask of the wrong shape', {'mask': np.ones((3, 5), dtype=bool)}),
    ]),
    "sinks.uniform_weights_with_sink": Example(sinks.uniform_weights_with_sink, dict(n=5, sink_logit=0.7), [
        Case('huge n', {'n': 2 ** 20}),
    ]),
    "sinks.counted_mass": Example(sinks.counted_mass, dict(n=5, sink_logit=0.7)),
    "sinks.read_count": Example(sinks.read_count, dict(mass=[0.3, 0.5, 0.9], sink_logit=0.7), [
    ]),
    "sinks.streaming_cache": Example(sinks.streaming_cache, dict(n_tokens=12, window=5, n_sink=4), [
        Case('no sinks', {'n_sink': 0}, lambda r: r[0].tolist() == list(range(7, 12))),
    ]),
    "sinks.streaming_scores": Example(
        sinks.streaming_scores, dict(q=X58[0], k=X58, window=2, inv_freq=TH, n_sink=1, layout='split'), [
        Case('q of another width', {'q': X58[0, :6]}, names=('q', 'k')),
        Case('keys of another width', {'k': X58[:, :6]}, names=('q', 'k')),
    ]),
    "sinks.streaming_scores_cached": Example(
        sinks.streaming_scores_cached, dict(q=X58[0], k_rotated=X58, window=2, inv_freq=TH, n_sink=1,
                                            layout='split'), [
        Case('keys of another width', {'k_rotated': X58[:, :6]}, names=('q', 'k_rotated')),
        Case('the same as recomputing', {},
             _close_to(sinks.streaming_scores(X58[0], sparse.unrotate(X58, np.arange(5), TH, 'split'), 2, TH, 1))),
    ]),
    # --- remap ----------------------------------------------------------------
    "remap.rerope_distance": Example(remap.rerope_distance, dict(distance=[0, 3, 9, 40], window=8), [
    ]),
    "remap.leaky_rerope_distance": Example(
        remap.leaky_rerope_distance, dict(distance=[0, 3, 9, 40], window=8, leak=16.0), [
    ]),
    "remap.relative_distances": Example(remap.relative_distances, dict(n=5), [
        Case('huge n', {'n': 2 ** 20}),
    ]),
    "remap.dca_query_positions": Example(remap.dca_query_positions, dict(n=12, chunk=4, trained_length=6), [
        Case('chunk as long as training', {'chunk': 6}, names=('chunk', 'trained_length')),
    ]),
    "remap.dca_distances": Example(remap.dca_distances, dict(n=12, chunk=4, trained_length=6), [
        Case('chunk as long as training', {'chunk': 6}, names=('chunk', 'trained_length')),
        Case('huge n', {'n': 2 ** 20}),
    ]),
    "remap.remapped_scores": Example(
        remap.remapped_scores, dict(q=Q3, k=K4, inv_freq=TH, distances=BIAS34, layout='split'), [
        Case('k of another width', {'k': K4[:, :6]}, names=('k',)),
        Case('distances of the wrong shape', {'distances': BIAS34[:, :3]}),
        Case('plain distances are RoPE', {'distances': np.subtract.outer(np.arange(3), np.arange(4)) * 1.0},
             _close_to(rope.rotate(Q3, np.arange(3), TH, 'split') @ rope.rotate(K4, np.arange(4), TH, 'split').T)),
    ]),
    "remap.rerope_two_pass": Example(
        remap.rerope_two_pass, dict(q=Q3, k=K4, inv_freq=TH, window=2, leak=None, layout='split'), [
        Case('k of another width', {'k': K4[:, :6]}, names=('k',)),
        Case('leaky', {'leak': 4}, lambda r: r.shape == (3, 4)),
        Case('window times leak beyond the range', {'window': 2 ** 31, 'leak': 4}, names=('window', 'leak')),
    ]),
    "remap.dca_scores": Example(
        remap.dca_scores, dict(q=Q3, k=K4[:3], inv_freq=TH, chunk=2, trained_length=3, layout='split'), [
        Case('k of another width', {'k': K4[:3, :6]}, names=('k',)),
        Case('more keys than queries', {'k': K4}, names=('q', 'k')),
        Case('chunk as long as training', {'chunk': 3}, names=('chunk', 'trained_length')),
    ]),
    "remap.logn_scale": Example(remap.logn_scale, dict(positions=[0, 5, 100], trained_length=8)),
    "remap.rerope_cache": Example(remap.rerope_cache, dict(k=K4, window=2, inv_freq=TH, leak=None, layout='split'), [
        Case('k of another width', {'k': K4[:, :6]}, names=('k',)),
        Case('window times leak beyond the range', {'window': 2 ** 31, 'leak': 4}, names=('window', 'leak')),
    ]),
    "remap.rerope_step": Example(
        remap.rerope_step, dict(q=Q3[0], k_near=K4, k_far=K4, window=2, inv_freq=TH, leak=None, layout='split'), [
        Case('copies of two shapes', {'k_far': K4[:3]}, names=('q', 'k_near', 'k_far')),
        Case('q of another width', {'q': Q3[0, :6]}, names=('q',)),
    ]),
    "remap.dca_released_settings": Example(remap.dca_released_settings, dict(pretraining_length=4096,
                                                                              local_window=None), [
        Case('a length that is not a multiple of 16', {'pretraining_length': 1000}),
        Case('a window as long as the largest index', {'pretraining_length': 64, 'local_window': 48},
             names=('local_window',)),
    ]),
    # --- mla ------------------------------------------------------------------
    "mla.scores": Example(mla.scores, dict(q_nope=MLA_Q, q_rope=MLA_QR, k_nope=MLA_K, k_rope=MLA_KR,
                                           positions=np.arange(5), inv_freq=TH, layout='adjacent'), [
        Case('heads that differ', {'k_nope': MLA_K[:1]}, names=('q_nope', 'k_nope')),
        Case('a rotated key per head', {'k_rope': MLA_QR}, names=('k_rope',)),
        Case('positions for 4 tokens', {'positions': np.arange(4)}, names=('positions',)),
        Case('unrotated widths that differ', {'k_nope': MLA_K[..., :2]}, names=('q_nope', 'k_nope')),
    ]),
    "mla.absorbed_scores": Example(mla.absorbed_scores, dict(q_nope=MLA_Q, q_rope=MLA_QR, latent=MLA_C,
                                                             k_rope=MLA_KR, w_uk=MLA_W, positions=np.arange(5),
                                                             inv_freq=TH, layout='adjacent'), [
        Case('w_uk of another shape', {'w_uk': MLA_W[:, :2]}, names=('w_uk',)),
        Case('the expanded scores', {}, _close_to(mla.scores(MLA_Q, MLA_QR, MLA_C @ np.swapaxes(MLA_W, -1, -2),
                                                             MLA_KR, np.arange(5), TH))),
    ]),
    "mla.attention": Example(mla.attention, dict(q_nope=MLA_Q, q_rope=MLA_QR, k_nope=MLA_K, k_rope=MLA_KR, v=MLA_K,
                                                 positions=np.arange(5), inv_freq=TH, scale=0.5, layout='adjacent',
                                                 mask=attention.causal_mask(5)), [
        Case('a mask of another shape', {'mask': attention.causal_mask(4)}, names=('mask',)),
        Case('a mask that leaves a query no key', {'mask': np.zeros((5, 5), dtype=bool)}, names=('mask',)),
        Case('values for other heads', {'v': MLA_K[:1]}, names=('v',)),
    ]),
    "mla.cache_entries": Example(mla.cache_entries, dict(kv_lora_rank=512, qk_rope_head_dim=64, n_heads=128,
                                                         qk_nope_head_dim=128, v_head_dim=128)),
    # --- sparse ---------------------------------------------------------------
    "sparse.indexer_scores": Example(sparse.indexer_scores, dict(q=IDX_Q, k=X58, weights=IDX_W, inv_freq=TH[:2],
                                                                 layout='split'), masks=True, cases=[
        Case('keys of another width', {'k': X58[:, :6]}, names=('k',)),
        Case('a rotated slice wider than the head', {'inv_freq': rope.inv_freq(10)}, names=('inv_freq',)),
        Case('weights for other heads', {'weights': IDX_W[:, :1]}, names=('weights',)),
    ]),
    "sparse.selected_keys": Example(sparse.selected_keys, dict(index_scores=BIAS34[:, :3], top_k=2), [
        Case('not square', {'index_scores': BIAS34}, names=('index_scores',)),
    ]),
    "sparse.pooled_entries": Example(sparse.pooled_entries, dict(kv=X58, gate=X58, position_bias=X58[:2], rate=2), [
        Case('a bias for another window', {'position_bias': X58[:3]}, names=('gate', 'position_bias')),
        Case('fewer tokens than a window', {'rate': 6}, names=('kv',)),
    ]),
    "sparse.entry_positions": Example(sparse.entry_positions, dict(n_tokens=12, rate=4), [
        Case('huge n_tokens', {'n_tokens': 2 ** 31, 'rate': 1}),
    ]),
    "sparse.entry_mask": Example(sparse.entry_mask, dict(n_queries=12, n_entries=3, rate=4), [
        Case('huge', {'n_queries': 2 ** 20, 'n_entries': 2 ** 20}),
    ]),
    "sparse.unrotate": Example(sparse.unrotate, dict(x=X58, positions=np.arange(5), inv_freq=TH, layout='adjacent'), [
        Case('x of another width', {'x': X58[:, :6]}, names=('x',)),
        Case('inverts rope.rotate', {'x': rope.rotate(X58, np.arange(5), TH)}, _close_to(X58)),
    ]),
    # --- video_time -----------------------------------------------------------
    "video_time.frame_timestamps": Example(video_time.frame_timestamps, dict(frame_indices=[0, 2, 4, 6], fps=2.0,
                                                                             temporal_patch_size=2), [
        Case('an odd count', {'frame_indices': [0, 2, 4]}, _close_to([0.5, 2.0])),
    ]),
    "video_time.timestamped_segments": Example(video_time.timestamped_segments, dict(
        timestamp_tokens=[3, 4], grid_hw=(4, 4), spatial_merge_size=2, before=2, after=1), [
        Case('a frame not merged whole', {'grid_hw': (3, 4)}, names=('grid_hw', 'spatial_merge_size')),
    ]),
    "video_time.videorope_pair_axes": Example(video_time.videorope_pair_axes, dict(sections=(16, 24, 24)), [
        Case('height and width of different sizes', {'sections': (16, 24, 20)}, names=('sections',)),
    ]),
    "video_time.videorope_positions": Example(video_time.videorope_positions, dict(
        segments=[3, (2, 4, 4), 2], spatial_merge_size=2, temporal_spacing=2), [
        Case('a grid not merged whole', {'segments': [3, (1, 3, 4)]}, names=('segments', 'spatial_merge_size')),
        Case('an empty sequence', {'segments': []}),
    ]),
}


def _set_frequencies(**kwargs):
    layer = rope_torch.RotaryEmbedding(D)
    layer.set_frequencies(**kwargs)
    return layer.inv_freq, layer.attention_factor


# ---------------------------------------------------------------------------
# Running and judging
# ---------------------------------------------------------------------------



def public_callables() -> list[str]:
    """Every public callable: names in ``__all__`` (records aside) and the public methods of the classes there."""
    names = []
    for mod_name, mod in MODULES.items():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not callable(obj) or isinstance(obj, dict):
                continue
            if f"{mod_name}.{name}" not in RECORDS:
                names.append(f"{mod_name}.{name}")
            if isinstance(obj, type):
                for attr, member in vars(obj).items():
                    member = member.__func__ if isinstance(member, classmethod) else member
                    fields = getattr(obj, "__dataclass_fields__", {})
                    if callable(member) and not attr.startswith("_") and attr != "extra_repr" and attr not in fields:
                        names.append(f"{mod_name}.{name}.{attr}")
    return names


def resolve(key: str):
    """The object a key names: ``module.function``, ``module.Class`` or ``module.Class.method``."""
    obj = importlib.import_module(f"companion.{key.split('.')[0]}")
    for part in key.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def contract_of(key: str):
    """The declared contract of a public callable (a class's is its ``__init__``'s), or ``None``."""
    obj = resolve(key)
    return getattr(obj.__init__ if isinstance(obj, type) else obj, "__contract__", None)


def spec(key: str) -> Spec:
    """The example of ``key`` with an :class:`Arg` per parameter, made from the declared kinds."""
    example = EXAMPLES[key]
    declared = contract_of(key)
    args = {}
    for name, kind in declared.kinds.items():
        if name in example.kwargs:
            args[name] = arg_for(kind, example.kwargs[name], name in declared.optional)
    return Spec(example.call, args, example.cases, example.anything, example.masks, example.non_finite_ok)


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
    if not spec.non_finite_ok and not _finite(result, spec.masks):
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
        return [v for k in sorted(x, key=str) for v in _leaves(x[k])]
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


#: Every callable's example with the values of its declared kinds.
REGISTRY: dict[str, Spec] = {key: spec(key) for key in EXAMPLES}


if __name__ == "__main__":
    import resource
    import warnings

    warnings.simplefilter("ignore")
    # Let a huge allocation fail at once instead of swapping (the refusal is what is judged).
    resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.RLIM_INFINITY))
    counts, problems = tally(sys.argv[1:] or None)
    missing = [k for k in public_callables() if k not in EXAMPLES]
    for cls, key, label, detail in sorted(problems):
        print(f"{cls:16} {key:42} {label:34} {detail}")
    print(f"callables: {len(REGISTRY)} with examples, {len(missing)} without {missing}")
    print(f"calls: {sum(counts.values())}", dict(counts))
