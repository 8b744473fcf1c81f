"""companion.lab: tiny transformers trained with every position scheme, and what they show.

The lab of chapter 9, one module per part:

- :mod:`companion.lab.config` -- the configuration as dataclasses, and the ``full`` and ``reduced`` ones
- :mod:`companion.lab.schemes` -- one small object per position scheme, with the hooks the model calls
- :mod:`companion.lab.models` -- a tiny decoder whose position scheme is one argument
- :mod:`companion.lab.data` -- a byte-level corpus of Python's own source, and RULER-style tasks
- :mod:`companion.lab.train` -- a small, seeded training loop
- :mod:`companion.lab.evals` -- perplexity and retrieval accuracy for any callable from tokens to logits
- :mod:`companion.lab.stats` -- intervals over seeds, files and examples
- :mod:`companion.lab.experiments` -- the experiments on one arm at one seed
- :mod:`companion.lab.runner` -- jobs, worker processes, the stored files, and the command
  ``python -m companion.lab --config full`` that recomputes them
- :mod:`companion.lab.fingerprint` -- a hash of exactly the code the experiments execute
- :mod:`companion.lab.results` -- the stored results (package data, ``companion/lab/stored``)
  and :func:`load_results`, the one loader the chapters use
- :mod:`companion.lab.claims` -- every claim the chapters make about the results, as a function
  of any set of seeds
"""
from . import claims, config, data, evals, experiments, fingerprint, models, results, runner, schemes, stats, train
from .results import load_results

__all__ = ["config", "schemes", "models", "data", "train", "evals", "stats", "experiments", "runner",
           "fingerprint", "results", "claims", "load_results"]
