"""Speed of the companion layers on one set of tensors.

Run: ``python -m benchmarks.bench_companion`` (uses CUDA when available).

Times, as the median of several repeats after warm-up:

* a plain copy of q and k (``clone``), the memory-bandwidth floor;
* ``companion.rope_torch.RotaryEmbedding`` forward on q and k, each of shape
  (batch 8, heads 8, length 4096, head dim 128), float32, in both pair layouts,
  with cached cos/sin tables (``positions=None``) and with explicit positions
  (angles recomputed in float64 every call);
* the same rotation done the obvious way: the explicit block-diagonal rotation
  matrices of ``companion.rope.rotation_matrices`` applied with ``einsum``;
* ALiBi and T5 bias construction for length 4096 and 8 heads, when
  ``companion.alibi`` / ``companion.relative`` are present;
* Hugging Face Transformers' ``apply_rotary_pos_emb`` (Llama) on the same q and k,
  with the cos/sin tables of its ``LlamaRotaryEmbedding`` computed once outside the
  timing, and the rotary module's forward (the tables) plus the rotation, when
  ``transformers`` is installed; the ratios to companion's layers are printed.
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from companion import rope, rope_torch

BATCH, HEADS, LENGTH, HEAD_DIM = 8, 8, 4096, 128


def timed(fn, device, repeats=7, warmup=2) -> float:
    """Median wall time of ``fn()`` in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bias_builders(device):
    """``(label, callable or reason)`` for the ALiBi and T5 bias layers, guarded.

    The torch layers ``companion.alibi_torch.ALiBi`` and ``companion.relative_torch.T5RelativeBias``
    build the ``(heads, n, n)`` bias for ``n = LENGTH`` on ``device``; the numpy
    ``companion.alibi.bias`` is timed too. Anything missing is reported, not fatal.
    """
    specs = [
        ("ALiBi bias, torch ALiBi", "alibi", lambda mod: _layer(mod.ALiBi(n_heads=HEADS), device)),
        ("ALiBi bias, numpy bias()", "alibi",
         lambda mod: (lambda: mod.bias(n_heads=HEADS, n_queries=LENGTH))),
        ("T5 bias, torch T5RelativeBias", "relative",
         lambda mod: _layer(mod.T5RelativeBias(n_heads=HEADS), device)),
    ]
    out = []
    for label, module_name, make in specs:
        try:
            build = make(__import__(f"companion.{module_name}", fromlist=["_"]))
            build()
        except Exception as err:  # a module written elsewhere may be missing or differ
            build = f"not available ({type(err).__name__}: {err})"
        out.append((f"{label} ({HEADS} heads, {LENGTH}x{LENGTH})", build))
    return out


def library_rotation(q, k, device):
    """``(label, callable)`` rows for Transformers' Llama rotary embedding, or a reason it is missing.

    The rotary module is built from a ``LlamaConfig`` in code (no download) with the
    same head dim and base 10000 as companion's layers. ``apply_rotary_pos_emb`` gets
    the module's ``cos``/``sin`` of shape (1, length, head dim), computed once.
    """
    try:
        from transformers import LlamaConfig
        from transformers.models.llama import modeling_llama
    except ImportError as err:
        return [("transformers apply_rotary_pos_emb", f"not available ({err})")], None
    config = LlamaConfig(hidden_size=HEADS * HEAD_DIM, num_attention_heads=HEADS, head_dim=HEAD_DIM,
                         num_hidden_layers=1, max_position_embeddings=LENGTH, rope_theta=10000.0)
    rotary = modeling_llama.LlamaRotaryEmbedding(config).to(device)
    position_ids = torch.arange(LENGTH, device=device)[None]
    cos, sin = rotary(q, position_ids)
    apply = modeling_llama.apply_rotary_pos_emb
    rows = [("transformers apply_rotary_pos_emb (tables given)", lambda: apply(q, k, cos, sin)),
            ("transformers rotary tables + apply", lambda: apply(q, k, *rotary(q, position_ids)))]
    return rows, apply(q, k, cos, sin)


def _layer(layer, device):
    layer = layer.to(device)
    return lambda: layer(n_queries=LENGTH)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    shape = (BATCH, HEADS, LENGTH, HEAD_DIM)
    q = torch.randn(shape, device=device)
    k = torch.randn(shape, device=device)
    positions = torch.arange(LENGTH, device=device)
    adjacent = rope_torch.RotaryEmbedding(HEAD_DIM, layout="adjacent").to(device)
    split = rope_torch.RotaryEmbedding(HEAD_DIM, layout="split").to(device)

    start = time.perf_counter()
    R = torch.tensor(rope.rotation_matrices(np.arange(LENGTH), rope.inv_freq(HEAD_DIM)),
                     dtype=torch.float32, device=device)
    build_s = time.perf_counter() - start

    def explicit():
        return torch.einsum("nij,bhnj->bhni", R, q), torch.einsum("nij,bhnj->bhni", R, k)

    with torch.no_grad():
        rows = [
            ("copy q and k (bandwidth floor)", timed(lambda: (q.clone(), k.clone()), device)),
            ("RotaryEmbedding adjacent, cached", timed(lambda: adjacent(q, k), device)),
            ("RotaryEmbedding split, cached", timed(lambda: split(q, k), device)),
            ("RotaryEmbedding adjacent, positions given", timed(lambda: adjacent(q, k, positions), device)),
            ("explicit matrices (einsum)", timed(explicit, device, repeats=5, warmup=1)),
        ]
        fast, slow = adjacent(q, k), explicit()
        error = max((fast[0] - slow[0]).abs().max().item(), (fast[1] - slow[1]).abs().max().item())
        library_rows, library_out = library_rotation(q, k, device)
        for label, run in library_rows:
            rows.append((label, run if isinstance(run, str) else timed(run, device)))
        library_error = None
        if library_out is not None:  # the library uses the split layout: compare with companion's split
            ours = split(q, k)
            library_error = max((ours[0] - library_out[0]).abs().max().item(),
                                (ours[1] - library_out[1]).abs().max().item())
        for label, build in bias_builders(device):
            rows.append((label, build if isinstance(build, str) else timed(build, device, repeats=3, warmup=0)))

    print(f"device: {device}; torch {torch.__version__}; threads {torch.get_num_threads()}")
    print(f"tensors: q and k, each {shape} float32 ({4 * np.prod(shape) / 2**20:.0f} MiB)")
    print(f"explicit matrices built in {build_s:.2f} s (not timed below); "
          f"max |rotary - explicit| = {error:.2e}\n")
    width = max(len(label) for label, _ in rows)
    print(f"{'operation':<{width}}  median ms")
    for label, value in rows:
        print(f"{label:<{width}}  {value:9.2f}" if isinstance(value, float) else f"{label:<{width}}  {value}")
    copy_ms, rotary_ms, explicit_ms = rows[0][1], rows[1][1], rows[4][1]
    print(f"\nrotary / copy      = {rotary_ms / copy_ms:.2f}  (aim: <= 3)")
    print(f"split rotary / copy = {rows[2][1] / copy_ms:.2f}")
    print(f"explicit / rotary  = {explicit_ms / rotary_ms:.1f}")
    library = dict(rows)
    apply_ms = library.get("transformers apply_rotary_pos_emb (tables given)")
    if isinstance(apply_ms, float):
        full_ms = library["transformers rotary tables + apply"]
        print(f"\ntransformers apply / copy             = {apply_ms / copy_ms:.2f}")
        print(f"companion adjacent / transformers apply = {rotary_ms / apply_ms:.2f}")
        print(f"companion split / transformers apply    = {rows[2][1] / apply_ms:.2f}")
        print(f"companion adjacent, positions given / transformers tables + apply = "
              f"{rows[3][1] / full_ms:.2f}")
        print(f"max |companion split - transformers| = {library_error:.2e} "
              f"(float32 angles in the library, float64 in companion)")


if __name__ == "__main__":
    main()
