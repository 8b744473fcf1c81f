r"""The lab's settings: frozen dataclasses with defaults, and the two named configurations.

A configuration is a :class:`LabConfig`: the seeds, the arms (one :class:`Arm` per
position scheme and its options), the model settings every arm shares, the training
budget, the evaluation sizes, the probes, the RoPE extension experiment and the
learning-rate sweep, each a small dataclass whose defaults are the book's. Like
nanoGPT's ``GPTConfig``, a configuration is data: ``LabConfig.to_dict()`` gives the
JSON the stored results record, and ``LabConfig.from_dict()`` reads it back, refusing
any key it does not know (a misspelt ``"stpes"`` is a ``ValueError`` naming it, at
every level). Both read the dataclasses' own fields: a new setting is one line in its
dataclass. (`dacite <https://github.com/konradhalas/dacite>`_ reads dataclasses from
dicts the same way; for these few lines a dependency would cost more than it saves.)

The model of one arm is a :class:`ModelConfig`: the
:class:`SharedModelConfig` of the run, its ``context_length``, and the arm's scheme
and options (:meth:`Arm.model_options`).

:data:`CONFIGS` holds ``full`` (the book's numbers), ``confirmation`` (the full
model at fresh seeds, for the claims frozen after the held-out run) and ``reduced``
(the same pipeline at a tiny size, for continuous integration); :func:`get_config` returns
either by name. Change a field with ``dataclasses.replace`` or
:meth:`Section.with_changes`, which also reaches into the sections::

    cfg = get_config("reduced").with_changes(seeds=(3,), train={"steps": 20})

**Development and held-out seeds.** ``development_seeds`` are the seeds the claims
of :mod:`companion.lab.claims` were written from; ``held_out_seeds`` were run only
after those claims were frozen. Both are recorded with the results, so the chapter
can say how each claim fared on seeds it was not fitted to.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field, fields
from typing import Annotated

from .._contracts import (
    AnyValue,
    Count,
    Either,
    Flag,
    InstanceOf,
    Integer,
    Label,
    NonNegative,
    OneOf,
    Positive,
    Real,
    contract,
)
from ..absolute import BASE
from .kinds import SeedList

__all__ = [
    "Section", "SCHEMES", "ROPE_SCHEMES", "ModelConfig", "Arm", "SharedModelConfig", "TrainConfig", "EvalConfig",
    "ProbeConfig", "ExtensionConfig", "SweepConfig",
    "LabConfig", "CONFIGS", "CONFIRMATION_SEEDS", "get_config", "arms_at",
]


def _settings_of(cls, values, where) -> None:
    """``values`` is a section already, or a dict of settings the section has (``where`` names it in messages)."""
    where = where or cls.__name__
    if isinstance(values, cls):
        return
    if not isinstance(values, dict):
        raise ValueError(f"{where} must be a dict of settings, got {type(values).__name__}")
    known = sorted(f.name for f in fields(cls))
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"{where} has no setting {unknown[0]!r}; its settings are {known}")


class Section:
    """A section of the settings: a frozen dataclass read from, written to and changed as plain data, field by
    field, refusing any key it does not have (every dataclass here is one)."""

    @classmethod
    @contract(_settings_of)
    def from_dict(cls, values: AnyValue, where: Label = ""):
        """Build from ``values`` (a dict); ``ValueError`` naming any key the class does not have."""
        where = where or cls.__name__
        if isinstance(values, cls):
            return values
        types = _field_types(cls)
        return cls(**{k: _read(types[k], v, f"{where}.{k}") for k, v in values.items()})

    def to_dict(self) -> dict:
        """The settings as JSON-serialisable data (tuples become lists)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    def with_changes(self, **changes):
        """A copy with ``changes``; a section may be given as a dict of its fields to change."""
        return _changed(self, changes, type(self).__name__)


def _changed(section, changes, where):
    """A copy of ``section`` with ``changes`` (read as :meth:`Section.from_dict` reads them); a field that is a
    section itself may be given as a dict of its own changes."""
    _settings_of(type(section), changes, where)
    types = _field_types(type(section))
    values = {}
    for name, value in changes.items():
        current = getattr(section, name)
        if isinstance(current, Section) and isinstance(value, dict):
            values[name] = _changed(current, value, name)
        else:
            values[name] = _read(types[name], value, name)
    return dataclasses.replace(section, **values)


def _field_types(cls) -> dict:
    """``{field name: its type}``, the ``Annotated`` declaration around it removed."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: typing.get_args(hints[f.name])[0] if typing.get_origin(hints[f.name]) is Annotated
            else hints[f.name] for f in fields(cls)}


def _read(kind, value, where):
    """``value``, as JSON holds it, in the type ``kind`` of its field: a section from its dict, a dict of
    sections from a dict of dicts, a tuple from a list; anything else as it is (its kind checks it)."""
    if isinstance(kind, type) and issubclass(kind, Section):
        return kind.from_dict(value, where)
    if typing.get_origin(kind) is dict and issubclass(typing.get_args(kind)[1], Section):
        section = typing.get_args(kind)[1]
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be a dict {{name: {section.__name__}}}, got {type(value).__name__}")
        return {name: section.from_dict(entry, f"{where}.{name}") for name, entry in value.items()}
    return tuple(value) if isinstance(value, list) else value


def _plain(value):
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------

#: Every position scheme, in the order the book meets them (one class each in :mod:`companion.lab.schemes`).
SCHEMES = ("learned", "sinusoidal", "shaw", "t5", "rope", "alibi", "nope", "irope")
#: The schemes whose frequencies :meth:`companion.lab.schemes.RotaryScheme.set_scaling` can change.
ROPE_SCHEMES = ("rope", "irope")

#: The name of a position scheme.
SchemeName = Annotated[str, OneOf(*SCHEMES)]
#: The standard deviation of the token embedding at initialisation.
EmbeddingStd = Annotated[float, Either(Real(gt=0), OneOf("inverse_sqrt_d"),
                                       what="a finite real number > 0 or 'inverse_sqrt_d'")]


def _heads_divide_width(d_model, n_heads) -> None:
    """The width splits into ``n_heads`` heads of equal width."""
    if d_model % n_heads:
        raise ValueError(f"d_model must be divisible by n_heads ({n_heads}), got {d_model}")


def _pairs_for_the_scheme(scheme, d_model, n_heads) -> None:
    """RoPE rotates pairs of a head's components; sinusoidal positions come in (sine, cosine) pairs."""
    if scheme in ROPE_SCHEMES and (d_model // n_heads) % 2:
        raise ValueError(f"d_model / n_heads (the head width) must be even for RoPE, got {d_model // n_heads}")
    if scheme == "sinusoidal" and d_model % 2:
        raise ValueError(f"d_model must be even for sinusoidal positions (sine, cosine pairs), got {d_model}")


def _fraction_of_rope_pairs(scheme, rope_fraction, d_model, n_heads) -> None:
    """p-RoPE is a variant of ``rope`` and keeps at least one of the head's pairs rotating."""
    if rope_fraction is None:
        return
    if scheme != "rope":
        raise ValueError(f"rope_fraction applies to the 'rope' scheme only, got scheme {scheme!r}")
    if int(rope_fraction * (d_model // n_heads) // 2) < 1:
        raise ValueError(f"rope_fraction must be in (0, 1] and keep at least one pair rotating, got {rope_fraction!r}")


def _t5_beyond_exact(t5_num_buckets, t5_max_distance) -> None:
    """T5's log-spaced buckets start after its ``t5_num_buckets // 2`` exact ones."""
    exact = t5_num_buckets // 2
    if t5_max_distance is not None and t5_max_distance <= exact:
        raise ValueError(f"t5_max_distance must be > {exact} (t5_num_buckets // 2, the exact buckets), "
                         f"got {t5_max_distance}")


@contract(_heads_divide_width, _pairs_for_the_scheme, _fraction_of_rope_pairs, _t5_beyond_exact)
@dataclass(frozen=True)
class ModelConfig(Section):
    r"""Everything that makes a :class:`companion.lab.models.TinyTransformer`, as nanoGPT's ``GPTConfig`` does.

    ``scheme``: one of :data:`SCHEMES`, the only positional choice.
    ``vocab_size``: at least 2, 256 for byte tokens.
    ``d_model``: the width, divisible by ``n_heads``; the head width
    ``d_model / n_heads`` must be even for RoPE. ``n_layers``: the blocks.
    ``context_length``: the training length ``L``: the number of rows of the learned
    table, and the ``L`` of every :mod:`companion.scaling` method.
    ``d_ff``: the width of the MLP, ``4 * d_model`` when ``None``.
    ``tie_embeddings``: ``True`` reuses the token embedding as the output layer.
    ``embedding_std``: the standard deviation of the token embedding at
    initialisation: ``None`` for GPT-2's 0.02, a positive number, or
    ``"inverse_sqrt_d"`` for :math:`d^{-1/2}` (the scale at which :math:`\sqrt d\,e_t`
    has unit entries, tensor2tensor's initialisation for the Transformer of Vaswani
    et al.).
    ``rope_base``: the RoPE base (10000 in Su et al. 2021).
    ``rope_fraction``: ``None`` or the share ``p`` of pairs that rotate (p-RoPE,
    Barbero et al. 2025); ``rope`` only.
    ``shaw_max_distance``: Shaw et al.'s clipping distance ``k``.
    ``t5_num_buckets``, ``t5_max_distance``: T5's buckets (unidirectional, as in
    T5's decoder); ``t5_max_distance`` is ``context_length`` when ``None`` (at least
    ``t5_num_buckets // 2 + 1``), so that every bucket is met in training (T5 itself
    uses 32 buckets up to 128 with inputs of 512).
    ``irope_nope_every``: in ``irope`` every ``irope_nope_every``-th layer is
    position-free (:func:`companion.nope.irope_layer_pattern`; Llama 4 uses 4).
    ``irope_floor_scale``: ``None`` or a real > 0; when given, the queries of the
    position-free layers of ``irope`` are multiplied by
    :func:`companion.nope.attention_temperature` (Llama 4 uses 8192, which is
    exactly 1 at the lengths of this model).
    ``irope_chunk``: ``None`` or an integer >= 1; when given, the RoPE layers of
    ``irope`` attend only within absolute chunks of ``irope_chunk`` tokens, as Llama
    4's do.
    """

    scheme: SchemeName = "rope"
    vocab_size: Annotated[int, Integer(2, why="a language model predicts one of several tokens")] = 256
    d_model: Count = 64
    n_heads: Count = 4
    n_layers: Count = 2
    context_length: Count = 64
    d_ff: Count | None = None
    tie_embeddings: Flag = True
    embedding_std: EmbeddingStd | None = None
    rope_base: Positive = BASE
    rope_fraction: Annotated[float, Real(gt=0.0, le=1.0, why="the share of pairs that rotate")] | None = None
    shaw_max_distance: NonNegative = 16
    t5_num_buckets: Count = 32
    t5_max_distance: Count | None = None
    irope_nope_every: Count = 2
    irope_floor_scale: Positive | None = None
    irope_chunk: Count | None = None


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Arm(Section):
    r"""One arm: a position scheme (:data:`SCHEMES`) and its options.

    ``irope_chunk``: iRoPE's chunk size (Llama 4's ``attention_chunk_size``);
    ``rope_fraction``: p-RoPE's share of rotating pairs (Barbero et al. 2025);
    ``embedding_std``: the standard deviation of the token embedding at
    initialisation (``None``: GPT-2's 0.02; ``"inverse_sqrt_d"``: :math:`d^{-1/2}`,
    the scale that matches the :math:`\sqrt d` multiplier of Vaswani et al.);
    ``lr``: a peak learning rate for this arm (``None``: the shared one);
    ``sweep_only``: a control trained only in the learning-rate sweep.
    """

    scheme: str
    irope_chunk: int | None = None
    rope_fraction: float | None = None
    embedding_std: float | str | None = None
    lr: float | None = None
    sweep_only: bool = False

    def model_options(self) -> dict:
        """The fields this arm sets in its model's :class:`ModelConfig`."""
        options = {"scheme": self.scheme}
        for name in ("irope_chunk", "rope_fraction", "embedding_std"):
            if getattr(self, name) is not None:
                options[name] = getattr(self, name)
        return options


@dataclass(frozen=True)
class SharedModelConfig(Section):
    """The model settings every arm shares: width, heads, layers and tied embeddings.

    An arm's whole model is a :class:`ModelConfig` (nanoGPT's
    ``GPTConfig``): these fields, the run's ``context_length``, and the arm's scheme and
    options.
    """

    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    tie_embeddings: bool = True


@dataclass(frozen=True)
class TrainConfig(Section):
    """The budget: AdamW steps of ``batch_size`` sequences of ``L`` tokens, one schedule for all.

    ``curve_every``: every so many steps, the learning curve records the loss on the
    tuning text and single-needle accuracy at ``L`` (``curve_windows`` windows,
    ``curve_examples`` examples).
    """

    steps: int = 1000
    batch_size: int = 32
    lr: float = 1e-2
    warmup: int = 100
    weight_decay: float = 0.1
    curve_every: int = 50
    curve_windows: int = 16
    curve_examples: int = 50


@dataclass(frozen=True)
class EvalConfig(Section):
    r"""Evaluation sizes.

    ``multiples``: lengths ``m L`` scored; ``depth_bins``: the needle's depth is
    drawn uniformly inside each of this many equal bins of ``[0, 1]``;
    ``n_examples``: single-needle examples per (length, bin); ``bootstrap``:
    resamples of the file-clustered bootstrap; ``tokens_per_length``: ``None`` for
    all held-out text; ``attention_examples``: examples per bin for the attention
    shares at ``2L``; ``boundary_examples``: examples per start of the needle moved
    across a chunk boundary; ``window_arms`` and ``window_examples``: the arms and examples
    of the masking intervention (keys further back than ``L`` hidden); ``limit_arms``: the
    RoPE arms read with every distance of ``L`` or more as ``L - 1`` (every key kept; none
    in the full run, which was made before this control: its RoPE arms were rerun with it,
    ``stored/controls``);
    ``norm_windows``: windows of held-out text for the RoPE pair norms.
    """

    multiples: tuple = (1, 2, 4, 8)
    depth_bins: int = 5
    n_examples: int = 40
    bootstrap: int = 1000
    tokens_per_length: int | None = None
    attention_examples: int = 10
    boundary_examples: int = 20
    window_arms: tuple = ("rope", "p_rope", "sinusoidal", "t5", "nope")
    window_examples: int = 40
    limit_arms: tuple = ()
    norm_windows: int = 32


@dataclass(frozen=True)
class ProbeConfig(Section):
    """The untrained probes: multi-key retrieval, variable tracking, and retrieval with no literal match."""

    multi_key_needles: int = 4
    multi_key_examples: int = 100
    variable_tracking_hops: int = 2
    variable_tracking_chains: int = 2
    variable_tracking_examples: int = 100
    no_literal_examples: int = 20


@dataclass(frozen=True)
class ExtensionConfig(Section):
    """Experiment 3: the RoPE model read at ``factor * L`` with each method, zero-shot and fine-tuned.

    ``curve_steps``: the fine-tuning steps after which the scores are also taken
    (the last is ``finetune_steps``); ``tokens_per_length``: held-out tokens scored
    per length; ``examples``: single-needle examples per depth bin.
    """

    factor: int = 4
    methods: tuple = ("none", "pi", "ntk", "dynamic_ntk", "yarn", "yarn_code")
    finetune_steps: int = 100
    finetune_lr: float = 1e-3
    curve_steps: tuple = (25, 50, 100)
    tokens_per_length: int | None = 32768
    examples: int = 20
    dynamic_lengths: tuple = (64, 128, 256)


@dataclass(frozen=True)
class SweepConfig(Section):
    """The learning-rate sweep: every arm at full size at each of ``lrs``, on ``seeds``, scored on the tuning files."""

    lrs: tuple = (3e-3, 1e-2, 3e-2)
    seeds: tuple = (0, 1)
    examples: int = 100


def _arms_are_arms(arms) -> None:
    """At least one arm, each an :class:`Arm`."""
    if not isinstance(arms, dict) or not arms:   # the field's default (an empty dict) names none
        raise ValueError("arms must name at least one arm")
    for name, arm in arms.items():
        if not isinstance(arm, Arm):
            raise ValueError(f"arms[{name!r}] must be an Arm, got {type(arm).__name__}")


def _development_apart_from_held_out(development_seeds, held_out_seeds) -> None:
    """No seed is both one the claims were written from and one they are judged on."""
    if set(development_seeds) & set(held_out_seeds):
        raise ValueError("development_seeds and held_out_seeds must not share a seed")


def _section(kind: type) -> InstanceOf:
    return InstanceOf(kind, f"a {kind.__name__}", error=ValueError)


@contract(_arms_are_arms, _development_apart_from_held_out)
@dataclass(frozen=True)
class LabConfig(Section):
    """A whole run: seeds, arms and every section (see the module docstring)."""

    seeds: SeedList = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    development_seeds: SeedList = (0, 1, 2, 3, 4)
    held_out_seeds: SeedList = (5, 6, 7, 8, 9)
    arms: Annotated[dict[str, Arm], InstanceOf(dict, "a dict of arms", error=ValueError)] = field(default_factory=dict)
    context_length: Count = 64
    model: Annotated[SharedModelConfig, _section(SharedModelConfig)] = SharedModelConfig()
    train: Annotated[TrainConfig, _section(TrainConfig)] = TrainConfig()
    task_needles: Count = 1
    eval: Annotated[EvalConfig, _section(EvalConfig)] = EvalConfig()
    probes: Annotated[ProbeConfig, _section(ProbeConfig)] = ProbeConfig()
    extension: Annotated[ExtensionConfig, _section(ExtensionConfig)] = ExtensionConfig()
    sweep: Annotated[SweepConfig, _section(SweepConfig)] = SweepConfig()

    @property
    def main_arms(self) -> list[str]:
        """The arms of the main run (every arm but the sweep's controls), in the book's order."""
        return [name for name, arm in self.arms.items() if not arm.sweep_only]

    @property
    def lengths(self) -> list[int]:
        """The evaluation lengths ``m L``."""
        return [m * self.context_length for m in self.eval.multiples]

    def model_config(self, arm: str) -> ModelConfig:
        """The model of ``arm``: the shared model settings, the training length and the arm's scheme and options."""
        return ModelConfig(context_length=self.context_length, **self.model.to_dict(), **self.arms[arm].model_options())

    def lr_of(self, arm: str) -> float:
        """The peak learning rate of ``arm``: its own, or the shared one."""
        own = self.arms[arm].lr
        return self.train.lr if own is None else own


def arms_at(L: int) -> dict:
    r"""The arms at training length ``L``.

    Every scheme once; the sinusoidal scheme as Vaswani et al. (2017) describe it
    (``sinusoidal``: embeddings multiplied by :math:`\sqrt d`, initialised at
    :math:`\mathcal N(0, 1/d)` as in the authors' tensor2tensor code) and, as a
    control in the learning-rate sweep only, with GPT-2's initialisation
    (``sinusoidal_gpt2_init``, the arm of the book's first edition); p-RoPE with a
    quarter of the pairs rotating (Barbero et al. 2025); iRoPE with chunks of
    ``L/4`` and of ``L``.
    """
    return {
        "learned": Arm("learned"),
        "sinusoidal": Arm("sinusoidal", embedding_std="inverse_sqrt_d"),
        "sinusoidal_gpt2_init": Arm("sinusoidal", sweep_only=True),
        "shaw": Arm("shaw"),
        "t5": Arm("t5"),
        "rope": Arm("rope"),
        "p_rope": Arm("rope", rope_fraction=0.25),
        "alibi": Arm("alibi"),
        "nope": Arm("nope"),
        f"irope_chunk{L // 4}": Arm("irope", irope_chunk=L // 4),
        f"irope_chunk{L}": Arm("irope", irope_chunk=L),
    }


#: The seeds of the confirmation run: never trained, nor named anywhere, before it (10 to 19 were left alone
#: because the book's example command names 17), as many as the power calculation of
#: :mod:`companion.lab.claims` asks for the claims frozen for it (:data:`companion.lab.claims.SECOND_FREEZE`).
CONFIRMATION_SEEDS = tuple(range(100, 109))

#: ``full``: the book's numbers. ``confirmation``: the full model at the seeds of the confirmation
#: run, every arm and experiment the claims frozen for it read, without the RoPE extension (its
#: claims were confirmed on the held-out seeds) and without the sweep. ``reduced``: the same
#: pipeline in about a minute, for CI.
CONFIGS = {
    "full": LabConfig(arms=arms_at(64)),
    "confirmation": LabConfig(seeds=CONFIRMATION_SEEDS, development_seeds=(), held_out_seeds=CONFIRMATION_SEEDS,
                              arms=arms_at(64), extension=ExtensionConfig(methods=(), curve_steps=()),
                              eval=EvalConfig(limit_arms=("rope", "p_rope")), sweep=SweepConfig(seeds=())),
    "reduced": LabConfig(
        seeds=(0, 1), development_seeds=(0,), held_out_seeds=(1,), arms=arms_at(32), context_length=32,
        train=TrainConfig(steps=60, batch_size=8, warmup=6, curve_every=30, curve_windows=2, curve_examples=4),
        eval=EvalConfig(depth_bins=3, n_examples=4, bootstrap=50, tokens_per_length=2048, attention_examples=2,
                        boundary_examples=2, window_examples=4, limit_arms=("rope", "p_rope"), norm_windows=2),
        probes=ProbeConfig(multi_key_needles=2, multi_key_examples=6, variable_tracking_hops=1,
                           variable_tracking_examples=6, no_literal_examples=2),
        extension=ExtensionConfig(finetune_steps=6, curve_steps=(3, 6), tokens_per_length=1024, examples=2,
                                  dynamic_lengths=(32, 64, 128)),
        sweep=SweepConfig(lrs=(1e-2, 3e-2), seeds=(0,), examples=6),
    ),
}


@contract
def get_config(config: Annotated[object, Either(InstanceOf((LabConfig, dict), ""), OneOf(*CONFIGS),
                                                what=f"one of {', '.join(map(repr, CONFIGS))}, a LabConfig or a "
                                                     "dict of its settings")] = "reduced") -> LabConfig:
    """:data:`CONFIGS` by name, a :class:`LabConfig` as it is, or one read from a dict (``LabConfig.from_dict()``)."""
    if isinstance(config, LabConfig):
        return config
    if isinstance(config, dict):
        return LabConfig.from_dict(config, "config")
    return CONFIGS[config]
