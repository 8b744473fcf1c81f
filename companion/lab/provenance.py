r"""Provenance: what the stored files record about the machine, the process and the libraries that made them.

A job records its CPU time (:func:`cpu_seconds`) and its process's peak memory
(:func:`peak_memory_mib`); every stored file records :func:`run_metadata`: the
configuration, the fingerprint of the code the jobs executed
(:mod:`companion.lab.fingerprint`), the corpus, the versions of Python, torch and
NumPy, and the CPU (:func:`machine`), because another CPU, BLAS or torch build may
change the last digits of a perplexity.
"""
from __future__ import annotations

import os
import platform
import resource
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import torch

from .. import __version__
from .._contracts import OneOf, contract
from . import fingerprint, stdlib_corpus
from .settings import LabConfig

__all__ = ["peak_memory_mib", "cpu_seconds", "machine", "run_metadata"]

#: Whose resources: this process, or its finished children.
Who = Annotated[str, OneOf("self", "children")]


@contract
def peak_memory_mib(who: Who = "self") -> float:
    """Peak resident memory in MiB of this process (``"self"``) or its largest finished child (``"children"``)."""
    which = {"self": resource.RUSAGE_SELF, "children": resource.RUSAGE_CHILDREN}[who]
    peak = resource.getrusage(which).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


@contract
def cpu_seconds(who: Who = "self") -> float:
    """User plus system CPU time of this process (``"self"``) or of its finished children."""
    which = {"self": resource.RUSAGE_SELF, "children": resource.RUSAGE_CHILDREN}[who]
    usage = resource.getrusage(which)
    return usage.ru_utime + usage.ru_stime


def machine() -> dict:
    """The CPU this process runs on: model name (``/proc/cpuinfo``), the instruction set torch uses, and core count."""
    model, flags = platform.processor() or platform.machine(), []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == (platform.processor() or platform.machine()):
                model = value.strip()
            if key.strip() == "flags" and not flags:
                flags = value.split()
    except OSError:
        pass
    wanted = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile")
    return {"cpu_model": model, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "isa_flags": [f for f in wanted if f in flags], "cpu_count": os.cpu_count(),
            "platform": platform.platform(), "processor": platform.processor() or platform.machine()}


def run_metadata(name: str, cfg: LabConfig, code_sources: dict) -> dict:
    """What every stored file records: the configuration, the code (``code_sources``, the
    :func:`companion.lab.fingerprint.source_hashes` of the code the jobs executed), the corpus,
    the libraries and the machine."""
    return {
        "config_name": name, "config": cfg.to_dict(), "companion_version": __version__,
        "code_fingerprint": fingerprint.fingerprint(code_sources), "code_sources": dict(code_sources),
        "corpus": stdlib_corpus.load_corpus().info(), "python": platform.python_version(), "torch": torch.__version__,
        "numpy": np.__version__, "device": "cpu", "threads_per_process": 1, "machine": machine(),
        "development_seeds": list(cfg.development_seeds), "held_out_seeds": list(cfg.held_out_seeds),
    }
