r"""A tiny decoder-only transformer whose position scheme is one argument.

:class:`TinyTransformer` is a GPT-style stack of pre-norm blocks (Radford et al.
2019; Xiong et al. 2020 for the pre-norm placement) with causal self-attention:

.. math::

    h \leftarrow h + \operatorname{Attn}(\operatorname{LN}(h)), \qquad
    h \leftarrow h + \operatorname{MLP}(\operatorname{LN}(h)), \qquad
    \text{logits} = \operatorname{LN}(h)\, W_\text{out}^{\mathsf T},

with ``W_out`` the token embedding itself when the embeddings are tied (Press &
Wolf 2017). Only the position scheme changes between models, and every scheme is
taken from the companion module that defines it; nothing positional is
re-implemented here:

==============  ===========================================================  =====================================
``scheme``      where position enters                                        companion module
==============  ===========================================================  =====================================
``learned``     a learned row added to the input (GPT-2)                     :class:`companion.absolute.LearnedPositions`
``sinusoidal``  a fixed sinusoid added to the input (Vaswani et al. 2017)    :class:`companion.absolute.SinusoidalPositions`
``shaw``        a learned vector per clipped distance on keys and values     :class:`companion.relative.ShawRelativeAttention`
``t5``          a learned scalar per distance bucket added to the score      :class:`companion.relative.T5RelativeBias`
``rope``        queries and keys rotated by their positions (Su et al.)      :class:`companion.rope.RotaryEmbedding`
``alibi``       a fixed linear distance penalty on the score (Press et al.)  :class:`companion.alibi.ALiBi`
``nope``        nowhere: only the causal mask (Haviv et al. 2022)            :func:`companion.nope.no_positions`
``irope``       RoPE layers with position-free layers between (Llama 4)      :func:`companion.nope.irope_layer_pattern`
==============  ===========================================================  =====================================

In Llama 4 the RoPE layers of ``irope`` attend only inside fixed chunks of the
input (``attention_chunk_size``, 8192 tokens; Meta 2025): a query at position
``i`` sees the keys ``j <= i`` with ``floor(j / C) = floor(i / C)``, so a RoPE
layer never meets a distance of ``C`` or more, and only the position-free layers
read the whole input. ``irope_chunk=C`` gives the RoPE layers that mask
(:func:`chunked_causal_mask`); ``None`` leaves them global.

A RoPE model (``rope`` or ``irope``) can switch its frequencies after training with
:meth:`TinyTransformer.set_rope_scaling`, using any method of
:data:`companion.scaling.METHODS`; ``"dynamic_ntk"`` recomputes the scale from the
length of every input (emozilla 2023; Peng et al. 2024, section 3.3).

The model never names a device: it runs wherever ``.to(device)`` puts it, CPU or
CUDA, and creates every tensor on the device of its input.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks, absolute, alibi, nope, relative, rope, scaling

__all__ = ["SCHEMES", "ROPE_SCHEMES", "TinyTransformer", "chunked_causal_mask", "count_parameters"]

#: Every position scheme :class:`TinyTransformer` accepts, in the order the book meets them.
SCHEMES = ("learned", "sinusoidal", "shaw", "t5", "rope", "alibi", "nope", "irope")
#: The schemes whose frequencies :meth:`TinyTransformer.set_rope_scaling` can change.
ROPE_SCHEMES = ("rope", "irope")


class TinyTransformer(nn.Module):
    r"""A small causal language model; ``scheme`` picks the position method.

    Parameters
    ----------
    scheme : one of :data:`SCHEMES`.
    vocab_size : int >= 2, 256 for byte tokens.
    d_model : int, the width; must be divisible by ``n_heads``.
    n_heads : int; the head width ``d_model / n_heads`` must be even for RoPE.
    n_layers : int.
    context_length : int ``L``, the training length: the number of rows of the
        learned table, and the ``L`` of every :mod:`companion.scaling` method.
    d_ff : width of the MLP, ``4 * d_model`` when ``None``.
    tie_embeddings : bool; ``True`` reuses the token embedding as the output layer.
    rope_base : real > 0, the RoPE base (10000 in Su et al. 2021).
    shaw_max_distance : int >= 0, Shaw et al.'s clipping distance ``k``.
    t5_num_buckets, t5_max_distance : T5's buckets (unidirectional, as in T5's
        decoder); ``t5_max_distance`` defaults to ``context_length`` (at least
        ``t5_num_buckets // 2 + 1``) so that every bucket is met in training (T5 itself uses 32 buckets up to 128 with inputs of
        512).
    irope_nope_every : int; in ``irope`` every ``irope_nope_every``-th layer is
        position-free (:func:`companion.nope.irope_layer_pattern`; Llama 4 uses 4).
    irope_floor_scale : ``None`` or real > 0; when given, the queries of the
        position-free layers of ``irope`` are multiplied by
        :func:`companion.nope.attention_temperature` (Llama 4 uses 8192, which is
        exactly 1 at the lengths of this model).
    irope_chunk : ``None`` or int >= 1; when given, the RoPE layers of ``irope``
        attend only within absolute chunks of ``irope_chunk`` tokens
        (:func:`chunked_causal_mask`), as Llama 4's do.

    ``forward(tokens)`` maps an integer tensor ``(batch, n)`` with values in
    ``0..vocab_size-1`` to logits ``(batch, n, vocab_size)``; the logits at position
    ``t`` depend only on tokens ``0..t``. A ``learned`` model given ``n >
    context_length`` raises :class:`companion.absolute.LearnedPositions`'
    ``IndexError``.

    Attributes a reader (or a test) can inspect: ``layer_kinds`` (per layer,
    ``"rope"``, ``"nope"``, ``"bias"``, ``"shaw"``, ``"plain"``), ``positions``
    (the absolute layer or ``None``), ``rope`` (the one
    :class:`companion.rope.RotaryEmbedding` shared by all RoPE layers, or ``None``),
    ``alibi``, ``t5_bias`` (shared by all layers, as in T5), and ``config`` (a
    JSON-serialisable dict of the arguments).
    """

    def __init__(self, scheme: str = "rope", *, vocab_size: int = 256, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, context_length: int = 64, d_ff: int | None = None,
                 tie_embeddings: bool = True, rope_base: float = rope.DEFAULT_BASE,
                 shaw_max_distance: int = 16, t5_num_buckets: int = 32, t5_max_distance: int | None = None,
                 irope_nope_every: int = 2, irope_floor_scale: float | None = None,
                 irope_chunk: int | None = None):
        super().__init__()
        self.config = _model_config(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})
        c = self.config
        self.scheme = c["scheme"]
        self.context_length = c["context_length"]
        self.d_head = c["d_model"] // c["n_heads"]
        self.token_embedding = nn.Embedding(c["vocab_size"], c["d_model"])
        self.positions = _absolute_layer(c)
        self.rope = rope.RotaryEmbedding(self.d_head, base=c["rope_base"]) if self.scheme in ROPE_SCHEMES else None
        self.alibi = alibi.ALiBi(c["n_heads"]) if self.scheme == "alibi" else None
        self.t5_bias = (relative.T5RelativeBias(c["n_heads"], c["t5_num_buckets"], c["t5_max_distance"],
                                                bidirectional=False) if self.scheme == "t5" else None)
        self.layer_kinds = _layer_kinds(c)
        self.blocks = nn.ModuleList(_Block(c, kind) for kind in self.layer_kinds)
        self.final_norm = nn.LayerNorm(c["d_model"])
        self.lm_head = None if c["tie_embeddings"] else nn.Linear(c["d_model"], c["vocab_size"], bias=False)
        self._init_weights()
        self.rope_scaling = {"method": "none", "s": 1.0}
        self._dynamic_cache: dict = {}

    # --- forward -------------------------------------------------------------------

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, n, vocab_size)`` for integer tokens ``(batch, n)``."""
        return self._run(tokens, need_weights=False)[0]

    def attention_weights(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        r"""The attention weights of every layer for ``tokens`` ``(batch, n)``, without gradients.

        One tensor ``(batch, n_heads, n, n)`` per layer, row ``i`` the softmax weights
        query ``i`` gives each key (zero where the mask hides a key). Computed
        explicitly, :math:`\operatorname{softmax}(q k^{\mathsf T}/\sqrt{d_h} + B)`, with
        the same queries, keys and masks as :meth:`forward`.
        """
        was_training = self.training
        self.eval()
        with torch.no_grad():
            weights = self._run(tokens, need_weights=True)[1]
        self.train(was_training)
        return weights

    def _run(self, tokens, need_weights: bool):
        x = _check_tokens(tokens, self.config["vocab_size"], self.token_embedding.weight.device)
        n = x.shape[1]
        h = self._embed(x)
        bias = self._score_bias(n, h.dtype)
        if self.rope is not None and self.rope_scaling["method"] == "dynamic_ntk":
            self._follow_length(n)
        temperature = self._temperature(n, h)
        chunk = self.config["irope_chunk"]
        rope_mask = None if chunk is None or self.scheme != "irope" else chunked_causal_mask(n, chunk, h.device)
        weights = []
        for block in self.blocks:
            h, w = block(h, self.rope, bias, temperature, rope_mask, need_weights)
            weights.append(w)
        h = self.final_norm(h)
        weight = self.token_embedding.weight if self.lm_head is None else self.lm_head.weight
        return h @ weight.T, weights

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        e = self.token_embedding(x)
        if self.scheme == "learned":
            return e + self.positions(torch.arange(x.shape[1], device=x.device))
        if self.scheme == "sinusoidal":
            # Vaswani et al. (2017), section 3.4: embeddings times sqrt(d_model), then the sinusoid.
            pe = self.positions(torch.arange(x.shape[1], device=x.device), dtype=e.dtype)
            return e * math.sqrt(self.config["d_model"]) + pe
        return nope.no_positions(e) if self.scheme == "nope" else e

    def _score_bias(self, n: int, dtype: torch.dtype) -> torch.Tensor | None:
        """The ``(n_heads, n, n)`` score bias with ``-inf`` above the diagonal, for ALiBi and T5."""
        if self.alibi is not None:
            return self.alibi(n).to(dtype)
        if self.t5_bias is not None:
            b = self.t5_bias(n).to(dtype)
            future = torch.ones(n, n, dtype=torch.bool, device=b.device).triu(1)
            return b.masked_fill(future, float("-inf"))
        return None

    def _temperature(self, n: int, h: torch.Tensor) -> torch.Tensor | None:
        floor_scale = self.config["irope_floor_scale"]
        if self.scheme != "irope" or floor_scale is None:
            return None
        tau = nope.attention_temperature(np.arange(n), floor_scale=floor_scale)
        return torch.as_tensor(tau, dtype=h.dtype, device=h.device)[:, None]

    # --- RoPE scaling --------------------------------------------------------------

    def set_rope_scaling(self, method: str = "none", s: float = 1.0, **options) -> dict:
        r"""Switch the RoPE frequencies to ``method`` of :data:`companion.scaling.METHODS`.

        The frequencies are ``companion.scaling.frequencies(method, d_head, s=s,
        L=context_length, base=rope_base, **options)`` (``options`` may override
        ``L`` or ``base``), and the attention factor the method returns is applied
        by :class:`companion.rope.RotaryEmbedding`. ``"dynamic_ntk"`` is recomputed
        at every forward pass from the input length ``n`` (``current_length=n``),
        so it is the unscaled RoPE up to ``n = L``. ``method="none"`` restores the
        trained frequencies. Only ``rope`` and ``irope`` models have frequencies:
        other schemes raise ``ValueError``. Returns the setting (a dict).
        """
        if self.rope is None:
            raise ValueError(f"scheme must be one of {ROPE_SCHEMES} to set a RoPE scaling, this model's is {self.scheme!r}")
        method = _checks.one_of("method", method, tuple(scaling.METHODS))
        s = _checks.at_least("s", s, 1.0)
        setting = {"method": method, "s": s, **options}
        freqs = self._frequencies(setting, current_length=None)
        self.rope.set_frequencies(freqs.inv_freq, freqs.attention_factor)
        self.rope_scaling = setting
        self._dynamic_cache = {}
        return dict(setting)

    def rope_frequencies(self, n: int | None = None) -> scaling.Frequencies:
        """The :class:`companion.scaling.Frequencies` this model uses for an input of length ``n``.

        ``n`` matters only for ``"dynamic_ntk"``; ``None`` means ``context_length``.
        """
        if self.rope is None:
            raise ValueError(f"scheme must be one of {ROPE_SCHEMES} to have RoPE frequencies, got {self.scheme!r}")
        n = self.context_length if n is None else _checks.positive_int("n", n)
        return self._frequencies(self.rope_scaling, current_length=n)

    def _frequencies(self, setting: dict, current_length: int | None) -> scaling.Frequencies:
        options = {"s": setting["s"], "L": self.context_length, "base": self.config["rope_base"],
                   **{k: v for k, v in setting.items() if k not in ("method", "s")}}
        if setting["method"] == "dynamic_ntk" and current_length is not None:
            options["current_length"] = current_length
        return scaling.frequencies(setting["method"], self.d_head, **options)

    def _follow_length(self, n: int) -> None:
        if n not in self._dynamic_cache:
            self._dynamic_cache[n] = self._frequencies(self.rope_scaling, current_length=n)
        freqs = self._dynamic_cache[n]
        if not np.array_equal(self.rope.inv_freq.numpy(), freqs.inv_freq) \
                or self.rope.attention_factor != freqs.attention_factor:
            self.rope.set_frequencies(freqs.inv_freq, freqs.attention_factor)

    # --- initialisation --------------------------------------------------------------

    def _init_weights(self) -> None:
        """GPT-2's initialisation: N(0, 0.02), residual outputs scaled by 1/sqrt(2 n_layers)."""
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        if self.lm_head is not None:
            nn.init.normal_(self.lm_head.weight, std=0.02)
        for block in self.blocks:
            for layer in (block.attn.qkv, block.mlp[0]):
                nn.init.normal_(layer.weight, std=0.02)
                nn.init.zeros_(layer.bias)
            for layer in (block.attn.out, block.mlp[2]):
                nn.init.normal_(layer.weight, std=0.02 / math.sqrt(2 * len(self.blocks)))
                nn.init.zeros_(layer.bias)

    def extra_repr(self) -> str:
        return f"scheme={self.scheme!r}, context_length={self.context_length}, layers={self.layer_kinds}"


class _Block(nn.Module):
    """Pre-norm block: ``h + Attn(LN(h))`` then ``h + MLP(LN(h))``."""

    def __init__(self, c: dict, kind: str):
        super().__init__()
        d = c["d_model"]
        self.norm1 = nn.LayerNorm(d)
        self.attn = _CausalSelfAttention(c, kind)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, c["d_ff"]), nn.GELU(), nn.Linear(c["d_ff"], d))

    def forward(self, h, rope_layer, bias, temperature, rope_mask=None, need_weights=False):
        z, weights = self.attn(self.norm1(h), rope_layer, bias, temperature, rope_mask, need_weights)
        h = h + z
        return h + self.mlp(self.norm2(h)), weights


class _CausalSelfAttention(nn.Module):
    r"""Multi-head causal attention; ``kind`` says where position enters.

    ``"plain"`` (absolute schemes: position is already in the input) and ``"nope"``
    use :math:`\operatorname{softmax}(q k^{\mathsf T}/\sqrt{d_h})` under the causal
    mask; ``"rope"`` rotates ``q`` and ``k`` first (under ``rope_mask`` instead of the
    causal mask when one is given: iRoPE's chunks); ``"bias"`` adds the model's
    ``(n_heads, n, n)`` bias (ALiBi, T5); ``"shaw"`` calls
    :class:`companion.relative.ShawRelativeAttention`. All heads at once:
    ``q, k, v`` are ``(batch, n_heads, n, d_head)``.
    """

    def __init__(self, c: dict, kind: str):
        super().__init__()
        self.kind = kind
        self.n_heads = c["n_heads"]
        d = c["d_model"]
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.shaw = relative.ShawRelativeAttention(d // c["n_heads"], c["shaw_max_distance"]) if kind == "shaw" else None

    def forward(self, h, rope_layer, bias, temperature, rope_mask=None, need_weights=False):
        b, n, d = h.shape
        q, k, v = self.qkv(h).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if self.kind == "rope":
            q, k = rope_layer(q, k)
        elif self.kind == "nope" and temperature is not None:
            q = q * temperature
        weights = None
        if self.kind == "shaw":
            causal = torch.ones(n, n, dtype=torch.bool, device=h.device).tril()
            z, weights = self.shaw(q, k, v, mask=causal)
        elif need_weights:
            z, weights = _explicit_attention(q, k, v, self._mask(n, bias, rope_mask, h.device))
        elif self.kind == "bias":
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        elif self.kind == "rope" and rope_mask is not None:
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=rope_mask)
        else:
            z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(z.transpose(1, 2).reshape(b, n, d)), (weights if need_weights else None)

    def _mask(self, n, bias, rope_mask, device):
        """The mask this layer attends under: the score bias, iRoPE's chunks, or the causal mask."""
        if self.kind == "bias":
            return bias
        if self.kind == "rope" and rope_mask is not None:
            return rope_mask
        return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def _explicit_attention(q, k, v, mask):
    """``softmax(q k^T / sqrt(d_h) + mask) v`` and the weights; ``mask`` boolean (True = attend) or additive."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
    else:
        scores = scores + mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def chunked_causal_mask(n: int, chunk: int, device=None) -> torch.Tensor:
    r"""Boolean ``(n, n)`` mask of causal attention within absolute chunks of ``chunk`` tokens.

    ``mask[i, j]`` is ``True`` (attend) when :math:`j \le i` and
    :math:`\lfloor j / C \rfloor = \lfloor i / C \rfloor`: the chunked local
    attention of Llama 4's RoPE layers (Meta 2025, ``attention_chunk_size``). For
    ``chunk >= n`` it is the ordinary causal mask.
    """
    n = _checks.positive_int("n", n)
    chunk = _checks.positive_int("chunk", chunk)
    i = torch.arange(n, device=device)
    same_chunk = (i[:, None] // chunk) == (i[None, :] // chunk)
    return same_chunk & (i[None, :] <= i[:, None])


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters of ``model`` (tied weights counted once)."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# --- private helpers -----------------------------------------------------------------


def _model_config(scheme, vocab_size, d_model, n_heads, n_layers, context_length, d_ff, tie_embeddings,
                  rope_base, shaw_max_distance, t5_num_buckets, t5_max_distance, irope_nope_every,
                  irope_floor_scale, irope_chunk) -> dict:
    """Validate the arguments of :class:`TinyTransformer`; return them as a plain dict."""
    _checks.one_of("scheme", scheme, SCHEMES)
    vocab_size = _checks.positive_int("vocab_size", vocab_size)
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be an integer >= 2, got {vocab_size}")
    d_model = _checks.positive_int("d_model", d_model)
    n_heads = _checks.positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model must be divisible by n_heads ({n_heads}), got {d_model}")
    if scheme in ROPE_SCHEMES and (d_model // n_heads) % 2:
        raise ValueError(f"d_model / n_heads (the head width) must be even for RoPE, got {d_model // n_heads}")
    if scheme == "sinusoidal" and d_model % 2:
        raise ValueError(f"d_model must be even for sinusoidal positions (sine, cosine pairs), got {d_model}")
    if not isinstance(tie_embeddings, bool):
        raise ValueError(f"tie_embeddings must be True or False, got {tie_embeddings!r}")
    if isinstance(shaw_max_distance, bool) or not isinstance(shaw_max_distance, int) or shaw_max_distance < 0:
        raise ValueError(f"shaw_max_distance must be an integer >= 0, got {shaw_max_distance!r}")
    context_length = _checks.positive_int("context_length", context_length)
    t5_num_buckets = _checks.positive_int("t5_num_buckets", t5_num_buckets)
    exact = t5_num_buckets // 2  # T5's exact buckets in one direction
    if t5_max_distance is None:
        t5_max_distance = max(context_length, exact + 1)
    elif _checks.positive_int("t5_max_distance", t5_max_distance) <= exact:
        raise ValueError(f"t5_max_distance must be > {exact} (t5_num_buckets // 2, the exact buckets), got {t5_max_distance}")
    return {
        "scheme": scheme, "vocab_size": vocab_size, "d_model": d_model, "n_heads": n_heads,
        "n_layers": _checks.positive_int("n_layers", n_layers), "context_length": context_length,
        "d_ff": 4 * d_model if d_ff is None else _checks.positive_int("d_ff", d_ff),
        "tie_embeddings": tie_embeddings, "rope_base": _checks.positive_float("rope_base", rope_base),
        "shaw_max_distance": shaw_max_distance,
        "t5_num_buckets": t5_num_buckets, "t5_max_distance": t5_max_distance,
        "irope_nope_every": _checks.positive_int("irope_nope_every", irope_nope_every),
        "irope_floor_scale": None if irope_floor_scale is None
        else _checks.positive_float("irope_floor_scale", irope_floor_scale),
        "irope_chunk": None if irope_chunk is None else _checks.positive_int("irope_chunk", irope_chunk),
    }


def _absolute_layer(c: dict) -> nn.Module | None:
    if c["scheme"] == "learned":
        return absolute.LearnedPositions(c["context_length"], c["d_model"])
    if c["scheme"] == "sinusoidal":
        return absolute.SinusoidalPositions(c["d_model"])
    return None


def _layer_kinds(c: dict) -> list[str]:
    scheme, n_layers = c["scheme"], c["n_layers"]
    if scheme == "irope":
        return nope.irope_layer_pattern(n_layers, c["irope_nope_every"])
    kind = {"rope": "rope", "nope": "nope", "shaw": "shaw", "t5": "bias", "alibi": "bias"}.get(scheme, "plain")
    return [kind] * n_layers


def _check_tokens(tokens, vocab_size: int, device) -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor) or tokens.dtype not in (torch.int64, torch.int32, torch.uint8, torch.int16):
        raise ValueError(f"tokens must be an integer torch.Tensor of shape (batch, n), got {type(tokens).__name__}"
                         + (f" of dtype {tokens.dtype}" if isinstance(tokens, torch.Tensor) else ""))
    if tokens.ndim != 2 or tokens.shape[1] < 1 or tokens.shape[0] < 1:
        raise ValueError(f"tokens must have shape (batch, n) with batch, n >= 1, got {tuple(tokens.shape)}")
    x = tokens.to(device=device, dtype=torch.long)
    if int(x.min()) < 0 or int(x.max()) >= vocab_size:
        raise ValueError(f"tokens must lie in 0..{vocab_size - 1} (vocab_size), got {int(x.min())}..{int(x.max())}")
    return x
