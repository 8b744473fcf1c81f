"""companion: the tested code behind *Positions in Transformers*.

One module per idea, in the order the book meets them:

- :mod:`companion.attention` -- softmax, masks, permutations, scaled dot-product attention
- :mod:`companion.absolute` -- sinusoidal and learned absolute positions (chapter 1)
- :mod:`companion.relative` -- Shaw et al., Transformer-XL and T5 relative positions (chapter 2)
- :mod:`companion.rope` -- rotary position embedding (chapter 3)
- :mod:`companion.pair_usage` -- what a single RoPE pair can do: aim at an offset, or carry content (chapter 3)
- :mod:`companion.alibi` -- attention with linear biases (chapter 4)
- :mod:`companion.absolute_torch`, :mod:`companion.relative_torch`, :mod:`companion.rope_torch`,
  :mod:`companion.alibi_torch` -- the same methods as torch layers, for models (each
  tested against the numpy function it mirrors); only these, :mod:`companion.precision`
  and the lab import torch
- :mod:`companion.nope` -- no positional encoding, and Llama 4's interleaved layers (chapter 5)
- :mod:`companion.scaling` -- context extension for RoPE (chapter 6)
- :mod:`companion.trained_range` -- which pairs a longer context takes past the trained angles (chapter 6)
- :mod:`companion.interpolation` -- why interpolating is safer than extrapolating (chapters 6 and 8)
- :mod:`companion.integer_positions` -- positions read at whole numbers: aliasing and clock hands (chapter 8)
- :mod:`companion.configs` -- what a checkpoint's ``config.json`` makes the library run (chapter 10)
- :mod:`companion.precision` -- RoPE angles, tables and scores in float32, bfloat16 and float16 (chapter 10)
- :mod:`companion.layer_plans` -- position settings per layer: local/global, RoPE/NoPE, chunks, QK-norm,
  recurrent layers (chapter 11)
- :mod:`companion.mla` -- multi-head latent attention's decoupled RoPE (chapter 11)
- :mod:`companion.sparse` -- positions inside sparse and compressed attention (chapter 11)
- :mod:`companion.sinks` -- attention sinks: StreamingLLM's cache and gpt-oss's learned sink (chapter 12)
- :mod:`companion.remap` -- ReRoPE, Leaky ReRoPE and Dual Chunk Attention (chapter 12)
- :mod:`companion.mrope` -- RoPE over several position axes: M-RoPE and 2-D RoPE (chapter 12)
- :mod:`companion.video_time` -- how a video gets its time: absolute time, timestamps, VideoRoPE (chapter 12)
- :mod:`companion.symbolic` -- SymPy building blocks for the proofs
- :mod:`companion.checks` -- checks of exercise answers that say what was expected
- :mod:`companion.mistakes` -- typical wrong answers to exercises, which the checks name
- :mod:`companion.figures` -- the interactive figures
- :mod:`companion.plotting` -- the house style of the static plots
- :mod:`companion.tables` -- numbered, captioned tables of results

The lab of chapter 9 is the subpackage :mod:`companion.lab` (tiny models trained with
every scheme, their data, training, evaluations and experiments, and the stored
results the chapters read); import it with ``from companion import lab``.

``import companion`` loads none of them: each module is imported when it is first
used (``companion.rope``, ``from companion import rope``), so a script that needs
the numbers of one chapter does not wait for SymPy or the figures.
"""
import importlib

__version__ = "0.5.0"

__all__ = [
    "attention", "absolute", "relative", "rope", "alibi", "absolute_torch", "relative_torch", "rope_torch",
    "alibi_torch", "pair_usage", "nope", "scaling", "trained_range", "interpolation", "integer_positions",
    "symbolic", "checks", "mistakes",
    "configs", "precision", "mrope", "layer_plans", "sinks", "remap", "mla", "sparse", "video_time",
]
#: Subpackages and modules loaded on first use but not listed above (no functions of the book's math).
_ALSO = ("figures", "plotting", "tables", "lab")


def __getattr__(name: str):
    """``companion.<module>``: the submodule, imported on first use (PEP 562)."""
    if name in __all__ or name in _ALSO:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_ALSO))
