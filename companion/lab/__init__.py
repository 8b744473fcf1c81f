"""companion.lab: tiny transformers trained with every position scheme, and what they show.

The lab of chapter 9, one module per part:

- :mod:`companion.lab.models` -- a tiny decoder whose position scheme is one argument
- :mod:`companion.lab.data` -- a byte-level corpus of Python's own source, and RULER-style tasks
- :mod:`companion.lab.train` -- a small, seeded training loop
- :mod:`companion.lab.evals` -- perplexity and retrieval accuracy for any callable from tokens to logits
- :mod:`companion.lab.experiments` -- the experiments, their configurations, and the command
  ``python -m companion.lab --config full`` that recomputes them
- :mod:`companion.lab.fingerprint` -- a hash of exactly the code the experiments execute
- :mod:`companion.lab.results` -- the stored results (package data, ``companion/lab/stored``)
  and :func:`load_results`, the one loader the chapters use
"""
from . import data, evals, experiments, fingerprint, models, results, train
from .results import load_results

__all__ = ["models", "data", "train", "evals", "experiments", "fingerprint", "results", "load_results"]
