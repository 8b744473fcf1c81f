r"""The lab's configuration: frozen dataclasses with defaults, and the two named configurations.

A configuration is a :class:`LabConfig`: the seeds, the arms (one :class:`Arm` per
position scheme and its options), the model, the training budget, the evaluation
sizes, the probes, the RoPE extension experiment and the learning-rate sweep, each
a small dataclass whose defaults are the book's. Like nanoGPT's ``GPTConfig``, a
configuration is data: ``LabConfig.to_dict()`` gives the JSON the stored results
record, and ``LabConfig.from_dict()`` reads it back, refusing any key it does not
know (a misspelt ``"stpes"`` is a ``ValueError`` naming it, at every level).

:data:`CONFIGS` holds ``full`` (the book's numbers) and ``reduced`` (the same
pipeline at a tiny size, for continuous integration); :func:`get_config` returns
either by name. Change a field with ``dataclasses.replace`` or
:meth:`LabConfig.with_changes`, which also reaches into the sections::

    cfg = get_config("reduced").with_changes(seeds=(3,), train={"steps": 20})

**Development and held-out seeds.** ``development_seeds`` are the seeds the claims
of :mod:`companion.lab.claims` were written from; ``held_out_seeds`` were run only
after those claims were frozen. Both are recorded with the results, so the chapter
can say how each claim fared on seeds it was not fitted to.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Annotated

from .._contracts import AnyValue, Count, Either, InstanceOf, Label, OneOf, SeedList, contract

__all__ = [
    "Arm", "ModelConfig", "TrainConfig", "EvalConfig", "ProbeConfig", "ExtensionConfig", "SweepConfig",
    "LabConfig", "CONFIGS", "get_config", "arms_at",
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


class _Section:
    """Reading and writing a frozen dataclass as a plain dict, refusing unknown keys."""

    @classmethod
    @contract(_settings_of)
    def from_dict(cls, values: AnyValue, where: Label = ""):
        """Build from ``values`` (a dict); ``ValueError`` naming any key the class does not have."""
        where = where or cls.__name__
        if isinstance(values, cls):
            return values
        return cls(**{k: cls._read(k, v, f"{where}.{k}") for k, v in values.items()})

    @classmethod
    def _read(cls, name, value, where):
        return tuple(value) if isinstance(value, list) else value

    def to_dict(self) -> dict:
        """The settings as JSON-serialisable data (tuples become lists)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(value):
    if isinstance(value, _Section):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Arm(_Section):
    r"""One arm: a position scheme (:data:`companion.lab.schemes.SCHEMES`) and its options.

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
        """The keyword arguments this arm adds to :class:`companion.lab.models.TinyTransformer`."""
        options = {"scheme": self.scheme}
        for name in ("irope_chunk", "rope_fraction", "embedding_std"):
            if getattr(self, name) is not None:
                options[name] = getattr(self, name)
        return options


@dataclass(frozen=True)
class ModelConfig(_Section):
    """The tiny decoder every arm shares: width, heads and layers (nanoGPT's ``GPTConfig``)."""

    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    tie_embeddings: bool = True


@dataclass(frozen=True)
class TrainConfig(_Section):
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
class EvalConfig(_Section):
    r"""Evaluation sizes.

    ``multiples``: lengths ``m L`` scored; ``depth_bins``: the needle's depth is
    drawn uniformly inside each of this many equal bins of ``[0, 1]``;
    ``n_examples``: single-needle examples per (length, bin); ``bootstrap``:
    resamples of the file-clustered bootstrap; ``tokens_per_length``: ``None`` for
    all held-out text; ``attention_examples``: examples per bin for the attention
    shares at ``2L``; ``boundary_examples``: examples per start of the needle moved
    across a chunk boundary; ``window_arms`` and ``window_examples``: the arms and examples
    of the masking intervention (keys further back than ``L`` hidden);
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
    norm_windows: int = 32


@dataclass(frozen=True)
class ProbeConfig(_Section):
    """The untrained probes: multi-key retrieval, variable tracking, and retrieval with no literal match."""

    multi_key_needles: int = 4
    multi_key_examples: int = 100
    variable_tracking_hops: int = 2
    variable_tracking_chains: int = 2
    variable_tracking_examples: int = 100
    no_literal_examples: int = 20


@dataclass(frozen=True)
class ExtensionConfig(_Section):
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
class SweepConfig(_Section):
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
class LabConfig(_Section):
    """A whole run: seeds, arms and every section (see the module docstring)."""

    seeds: SeedList = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    development_seeds: SeedList = (0, 1, 2, 3, 4)
    held_out_seeds: SeedList = (5, 6, 7, 8, 9)
    arms: Annotated[dict, InstanceOf(dict, "a dict of arms", error=ValueError)] = field(default_factory=dict)
    context_length: Count = 64
    model: Annotated[ModelConfig, _section(ModelConfig)] = ModelConfig()
    train: Annotated[TrainConfig, _section(TrainConfig)] = TrainConfig()
    task_needles: Count = 1
    eval: Annotated[EvalConfig, _section(EvalConfig)] = EvalConfig()
    probes: Annotated[ProbeConfig, _section(ProbeConfig)] = ProbeConfig()
    extension: Annotated[ExtensionConfig, _section(ExtensionConfig)] = ExtensionConfig()
    sweep: Annotated[SweepConfig, _section(SweepConfig)] = SweepConfig()

    @classmethod
    def _read(cls, name, value, where):
        sections = {f.name: f.type for f in fields(cls)}
        if name == "arms":
            if not isinstance(value, dict):
                raise ValueError(f"{where} must be a dict of arms, got {type(value).__name__}")
            return {arm: Arm.from_dict(options, f"{where}.{arm}") for arm, options in value.items()}
        kinds = {"model": ModelConfig, "train": TrainConfig, "eval": EvalConfig, "probes": ProbeConfig,
                 "extension": ExtensionConfig, "sweep": SweepConfig}
        if name in kinds and name in sections:
            return kinds[name].from_dict(value, where)
        return super()._read(name, value, where)

    def with_changes(self, **changes) -> "LabConfig":
        """A copy with ``changes``; a section may be given as a dict of its fields to change."""
        values = {}
        for name, value in changes.items():
            current = getattr(self, name, None) if name in {f.name for f in fields(self)} else None
            if isinstance(current, _Section) and isinstance(value, dict):
                unknown = sorted(set(value) - {f.name for f in fields(current)})
                if unknown:
                    raise ValueError(f"{name} has no setting {unknown[0]!r}; its settings are "
                                     f"{sorted(f.name for f in fields(current))}")
                value = dataclasses.replace(current, **{k: self._read(k, v, k) for k, v in value.items()})
            values[name] = value
        unknown = sorted(set(values) - {f.name for f in fields(self)})
        if unknown:
            raise ValueError(f"LabConfig has no setting {unknown[0]!r}; its settings are "
                             f"{sorted(f.name for f in fields(self))}")
        return dataclasses.replace(self, **values)

    @property
    def main_arms(self) -> list[str]:
        """The arms of the main run (every arm but the sweep's controls), in the book's order."""
        return [name for name, arm in self.arms.items() if not arm.sweep_only]

    @property
    def lengths(self) -> list[int]:
        """The evaluation lengths ``m L``."""
        return [m * self.context_length for m in self.eval.multiples]

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


#: ``full``: the book's numbers. ``reduced``: the same pipeline in about a minute, for CI.
CONFIGS = {
    "full": LabConfig(arms=arms_at(64)),
    "reduced": LabConfig(
        seeds=(0, 1), development_seeds=(0,), held_out_seeds=(1,), arms=arms_at(32), context_length=32,
        train=TrainConfig(steps=60, batch_size=8, warmup=6, curve_every=30, curve_windows=2, curve_examples=4),
        eval=EvalConfig(depth_bins=3, n_examples=4, bootstrap=50, tokens_per_length=2048, attention_examples=2,
                        boundary_examples=2, window_examples=4, norm_windows=2),
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
