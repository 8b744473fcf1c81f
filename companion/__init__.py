"""companion: the tested code behind *Positions in Transformers*.

One module per idea, in the order the book meets them:

- :mod:`companion.attention` -- softmax, masks, permutations, scaled dot-product attention
- :mod:`companion.absolute` -- sinusoidal and learned absolute positions (chapter 1)
- :mod:`companion.relative` -- Shaw et al., Transformer-XL and T5 relative positions (chapter 2)
- :mod:`companion.rope` -- rotary position embedding (chapter 3)
- :mod:`companion.alibi` -- attention with linear biases (chapter 4)
- :mod:`companion.nope` -- no positional encoding, and Llama 4's interleaved layers (chapter 5)
- :mod:`companion.scaling` -- context extension for RoPE (chapter 6)
- :mod:`companion.symbolic` -- SymPy building blocks for the proofs
- :mod:`companion.checks` -- checks of exercise answers that say what was expected
- :mod:`companion.exercises` -- typical wrong answers to exercises, which the checks name
- :mod:`companion.figures` -- the interactive figures

The lab (chapter 9) adds :mod:`companion.models` (a tiny decoder whose position scheme
is one argument), :mod:`companion.data` (a byte-level corpus of Python's own source and
synthetic retrieval tasks), :mod:`companion.train`, :mod:`companion.evals` (works with
any callable from tokens to logits) and :mod:`companion.lab` (the three experiments;
``python -m companion.lab --config full --out lessons/lab_results``).
"""
from . import absolute, alibi, attention, checks, configs, data, exercises, evals, models, nope, precision, relative, rope, scaling, symbolic, train

__version__ = "0.2.0"

__all__ = [
    "attention", "absolute", "relative", "rope", "alibi", "nope", "scaling", "symbolic", "checks", "exercises",
    "models", "data", "train", "evals", "configs", "precision",
]
