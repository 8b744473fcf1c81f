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
- :mod:`companion.figures` -- the interactive figures
"""
from . import absolute, alibi, attention, nope, relative, rope, scaling, symbolic

__version__ = "0.1.0"

__all__ = ["attention", "absolute", "relative", "rope", "alibi", "nope", "scaling", "symbolic"]
