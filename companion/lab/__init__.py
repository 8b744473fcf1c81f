"""companion.lab: tiny transformers trained with every position scheme, and what they show.

The lab of chapter 9, one module per part:

- :mod:`companion.lab.settings` -- the settings as dataclasses (the model's among them), and the
  ``full`` and ``reduced`` configurations
- :mod:`companion.lab.schemes` -- one small object per position scheme, with the hooks the model calls
- :mod:`companion.lab.models` -- a tiny decoder whose position scheme is one setting
- :mod:`companion.lab.stdlib_corpus` -- a byte-level corpus of Python's own source
- :mod:`companion.lab.tasks` -- RULER-style retrieval tasks in the same bytes
- :mod:`companion.lab.train` -- a small, seeded training loop
- :mod:`companion.lab.evals` -- perplexity and retrieval accuracy for any callable from tokens to logits
- :mod:`companion.lab.stats` -- intervals over seeds, files and examples
- :mod:`companion.lab.experiments` -- the experiments on one arm at one seed
- :mod:`companion.lab.runs` -- jobs, worker processes, resuming and the stored files; the command
  ``python -m companion.lab --config full`` recomputes them
- :mod:`companion.lab.provenance` -- the machine, the libraries, the CPU time and memory a run records
- :mod:`companion.lab.fingerprint` -- a hash of exactly the code the experiments execute
- :mod:`companion.lab.results` -- the stored results (package data, ``companion/lab/stored``)
  and :func:`~companion.lab.results.load_results`, the one loader the chapters use
- :mod:`companion.lab.claims` -- every claim the chapters make about the results, as a function
  of any set of seeds
- :mod:`companion.lab.kinds` -- the kinds of parameter only the lab has (models, token tensors, seeds)
"""
from . import (
               claims,
               evals,
               experiments,
               fingerprint,
               kinds,
               models,
               provenance,
               results,
               runs,
               schemes,
               settings,
               stats,
               stdlib_corpus,
               tasks,
               train,
)
from .results import load_results

__all__ = ["settings", "schemes", "models", "stdlib_corpus", "tasks", "train", "evals", "stats", "experiments", "runs",
           "provenance", "fingerprint", "results", "claims", "kinds", "load_results"]
