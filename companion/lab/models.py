r"""A tiny decoder-only transformer whose position scheme is one setting of its configuration.

:class:`TinyTransformer` is a GPT-style stack of pre-norm blocks (Radford et al.
2019; Xiong et al. 2020 for the pre-norm placement) with causal self-attention:

.. math::

    h \leftarrow h + \operatorname{Attn}(\operatorname{LN}(h)), \qquad
    h \leftarrow h + \operatorname{MLP}(\operatorname{LN}(h)), \qquad
    \text{logits} = \operatorname{LN}(h)\, W_\text{out}^{\mathsf T},

with ``W_out`` the token embedding itself when the embeddings are tied (Press &
Wolf 2017). Like nanoGPT's ``GPT(GPTConfig(...))``, the model is built from one
frozen :class:`companion.lab.settings.ModelConfig`, which every part reads:
``TinyTransformer(ModelConfig("rope", d_model=32, n_heads=2))``. Only the position
scheme changes between models: it is one object of :mod:`companion.lab.schemes`
(``model.scheme``), whose hooks the model calls at fixed places, and which takes its
math from the companion module that defines it.

In Llama 4 the RoPE layers of ``irope`` attend only inside fixed chunks of the
input (``attention_chunk_size``, 8192 tokens; Meta 2025): a query at position
``i`` sees the keys ``j <= i`` with ``floor(j / C) = floor(i / C)``, so a RoPE
layer never meets a distance of ``C`` or more, and only the position-free layers
read the whole input. ``irope_chunk=C`` gives the RoPE layers that mask
(:func:`companion.lab.schemes.chunked_causal_mask`); ``None`` leaves them global.

A RoPE model (``rope`` or ``irope``) can switch its frequencies after training with
:meth:`TinyTransformer.set_rope_scaling`, using any method of
:data:`companion.scaling.METHODS`; ``"dynamic_ntk"`` recomputes the scale from the
length of every input (emozilla 2023; Peng et al. 2024, section 3.3). Any model can
be read with its keys limited to the last ``w`` positions
(:meth:`TinyTransformer.set_key_window`), the intervention that tests whether far
keys are what breaks it; a RoPE model can also keep every key and read each distance
of ``w`` or more as ``w - 1`` (:meth:`TinyTransformer.set_distance_limit`), which
separates distances it never met from keys it never had to weigh.

The model never names a device: it runs wherever ``.to(device)`` puts it, CPU or
CUDA, and creates every tensor on the device of its input.
"""
from __future__ import annotations

import math
from typing import Annotated

import torch
from torch import nn

from .. import scaling
from .._contracts import Count, InstanceOf, contract
from .kinds import Model, TokenTensor
from .schemes import ROPE_SCHEMES, SCHEMES, RotaryScheme, chunked_causal_mask, make_scheme
from .settings import ModelConfig

__all__ = ["SCHEMES", "ROPE_SCHEMES", "TinyTransformer", "chunked_causal_mask", "count_parameters"]

#: Integer tokens ``(batch, n)``, ``batch, n >= 1`` (their range is the model's rule, :func:`_tokens_in_vocabulary`).
Tokens = Annotated[torch.Tensor, TokenTensor(2, "(batch, n)", min_size=1)]
#: The configuration of a model.
Config = Annotated[ModelConfig, InstanceOf(ModelConfig, "a companion.lab.settings.ModelConfig", error=ValueError)]


def _tokens_in_vocabulary(self, tokens) -> None:
    """Every token is a row of the model's embedding table."""
    vocab_size = self.config.vocab_size
    if int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size:
        raise ValueError(f"tokens must lie in 0..{vocab_size - 1} (vocab_size), got {int(tokens.min())}.."
                         f"{int(tokens.max())}")


def _limit_needs_rope(self, w) -> None:
    """Only a RoPE scheme reads distances that can be capped."""
    if w is not None and not isinstance(self.scheme, RotaryScheme):
        raise ValueError(f"w must be None for a scheme other than {ROPE_SCHEMES} (only RoPE reads distances that can "
                         f"be capped), this model's is {self.config.scheme!r}, got {w}")


@contract
class TinyTransformer(nn.Module):
    r"""A small causal language model built from ``config``, whose ``scheme`` picks the position method.

    ``config`` is a :class:`companion.lab.settings.ModelConfig`: the scheme, the sizes
    (``vocab_size``, ``d_model``, ``n_heads``, ``n_layers``, ``context_length``,
    ``d_ff``), the embeddings (``tie_embeddings``, ``embedding_std``) and each scheme's
    options; its docstring says what each field means.

    ``forward(tokens)`` maps an integer tensor ``(batch, n)`` with values in
    ``0..vocab_size-1`` to logits ``(batch, n, vocab_size)``; the logits at position
    ``t`` depend only on tokens ``0..t``. A ``learned`` model given ``n >
    context_length`` raises :class:`companion.absolute_torch.LearnedPositions`'
    ``IndexError``.

    Attributes a reader (or a test) can inspect: ``config`` (the
    :class:`companion.lab.settings.ModelConfig`), ``scheme`` (the
    :class:`companion.lab.schemes.Scheme`), ``layer_kinds`` (per layer, ``"rope"``,
    ``"nope"``, ``"bias"``, ``"shaw"``, ``"plain"``), ``positions`` (the absolute
    layer or ``None``), ``rope`` (the :class:`companion.rope_torch.RotaryEmbedding` shared
    by all RoPE layers, or ``None``), ``alibi`` and ``t5_bias`` (shared by all layers,
    as in T5).
    """

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.context_length = config.context_length
        self.d_head = config.d_model // config.n_heads
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.scheme = make_scheme(config)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(config.d_model)
        self.lm_head = None if config.tie_embeddings else nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.key_window: int | None = None
        self._init_weights()

    # --- what a reader inspects ----------------------------------------------------

    @property
    def layer_kinds(self) -> list[str]:
        """Per layer, where position enters it: ``"rope"``, ``"nope"``, ``"bias"``, ``"shaw"`` or ``"plain"``."""
        return list(self.scheme.layer_kinds)

    @property
    def positions(self):
        """The absolute position layer (learned, sinusoidal) or ``None``."""
        return getattr(self.scheme, "positions", None)

    @property
    def rope(self):
        """The :class:`companion.rope_torch.RotaryEmbedding` of a RoPE model, or ``None``."""
        return getattr(self.scheme, "rotary", None)

    @property
    def alibi(self):
        """The :class:`companion.alibi_torch.ALiBi` layer, or ``None``."""
        return getattr(self.scheme, "alibi", None)

    @property
    def t5_bias(self):
        """The :class:`companion.relative_torch.T5RelativeBias` shared by all layers, or ``None``."""
        return getattr(self.scheme, "t5_bias", None)

    @property
    def rope_scaling(self) -> dict:
        """The RoPE frequency setting (``{"method": "none", "s": 1.0}`` until changed)."""
        return dict(self._rotary_scheme().setting)

    # --- forward -------------------------------------------------------------------

    @contract(_tokens_in_vocabulary)
    def forward(self, tokens: Tokens) -> torch.Tensor:
        """Logits ``(batch, n, vocab_size)`` for integer tokens ``(batch, n)``."""
        return self._run(tokens)[0]

    @contract(_tokens_in_vocabulary)
    def attention_weights(self, tokens: Tokens) -> list[torch.Tensor]:
        r"""The attention weights of every layer for ``tokens`` ``(batch, n)``, without gradients.

        One tensor ``(batch, n_heads, n, n)`` per layer, row ``i`` the softmax weights
        query ``i`` gives each key (zero where the mask hides a key). Computed
        explicitly, :math:`\operatorname{softmax}(q k^{\mathsf T}/\sqrt{d_h} + B)`, with
        the same queries, keys and masks as :meth:`forward`.
        """
        return self._inspect(tokens, "weights")

    @contract(_tokens_in_vocabulary)
    def queries_and_keys(self, tokens: Tokens) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer, the queries and keys ``(batch, n_heads, n, d_head)`` before any rotation, without gradients."""
        return self._inspect(tokens, "qk")

    def _inspect(self, tokens, what):
        was_training = self.training
        self.eval()
        with torch.no_grad():
            _, weights, qk = self._run(tokens, need_weights=what == "weights", need_qk=what == "qk")
        self.train(was_training)
        return weights if what == "weights" else qk

    def _run(self, tokens, need_weights: bool = False, need_qk: bool = False):
        x = tokens.to(device=self.token_embedding.weight.device, dtype=torch.long)                 # (b, n)
        n = x.shape[1]
        h = self.scheme.embed(self.token_embedding(x))                                           # (b, n, d)
        if isinstance(self.scheme, RotaryScheme):
            self.scheme.before_forward(n)
        bias = self.scheme.score_bias(n, h.dtype, h.device)                                      # (heads, n, n) or None
        window = None if self.key_window is None else _window_mask(n, self.key_window, h.device)
        weights, qk = [], []
        for layer, block in enumerate(self.blocks):
            mask = _and(self.scheme.key_mask(n, layer, h.device), window)                       # (n, n) or None
            h, w, q_k = block(h, self.scheme, layer, mask, bias, need_weights, need_qk)
            weights.append(w)
            qk.append(q_k)
        h = self.final_norm(h)
        weight = self.token_embedding.weight if self.lm_head is None else self.lm_head.weight
        return h @ weight.T, weights, qk                                                         # (b, n, vocab)

    # --- interventions -------------------------------------------------------------

    @contract
    def set_key_window(self, w: Count | None) -> None:
        """Hide, in every layer, the keys ``w`` or more positions back (a sliding window of ``w``);
        ``None`` undoes it."""
        self.key_window = w

    @contract(_limit_needs_rope)
    def set_distance_limit(self, w: Count | None) -> None:
        """Keep every key, and read each distance of ``w`` or more as ``w - 1`` in every RoPE layer (ReRoPE's
        rule); ``None`` undoes it. ``ValueError`` for a scheme other than ``rope`` and ``irope``
        (:meth:`companion.lab.schemes.RotaryScheme.set_distance_limit`)."""
        if isinstance(self.scheme, RotaryScheme):
            self.scheme.set_distance_limit(w)

    def set_rope_scaling(self, method: str = "none", s: float = 1.0, **options) -> dict:
        r"""Switch the RoPE frequencies to ``method`` of :data:`companion.scaling.METHODS`.

        The frequencies are ``companion.scaling.scale(method, d_head, s=s,
        L=context_length, base=rope_base, **options)`` (``options`` may override
        ``L`` or ``base``), and the attention factor the method returns is applied
        by :class:`companion.rope_torch.RotaryEmbedding`. ``"dynamic_ntk"`` is recomputed
        at every forward pass from the input length ``n`` (``current_length=n``),
        so it is the unscaled RoPE up to ``n = L``. ``method="none"`` restores the
        trained frequencies. Only ``rope`` and ``irope`` models have frequencies:
        other schemes raise ``ValueError``. Returns the setting (a dict).
        """
        return self._rotary_scheme().set_scaling(method, s, **options)

    @contract
    def rope_frequencies(self, n: Count | None = None) -> scaling.ScaledRope:
        """The :class:`companion.scaling.ScaledRope` this model uses for an input of length ``n``.

        ``n`` matters only for ``"dynamic_ntk"``; ``None`` means ``context_length``.
        """
        scheme = self._rotary_scheme()
        n = self.context_length if n is None else n
        return scheme.frequencies(scheme.setting, current_length=n)

    def _rotary_scheme(self) -> RotaryScheme:
        if not isinstance(self.scheme, RotaryScheme):
            raise ValueError(f"scheme must be one of {ROPE_SCHEMES} to have RoPE frequencies, this model's is "
                             f"{self.config.scheme!r}")
        return self.scheme

    # --- initialisation --------------------------------------------------------------

    def _init_weights(self) -> None:
        """GPT-2's initialisation: N(0, 0.02), residual outputs scaled by 1/sqrt(2 n_layers); see ``embedding_std``."""
        std = self.config.embedding_std
        std = 0.02 if std is None else self.config.d_model ** -0.5 if std == "inverse_sqrt_d" else std
        nn.init.normal_(self.token_embedding.weight, std=std)
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
        return f"scheme={self.config.scheme!r}, context_length={self.context_length}, layers={self.layer_kinds}"


class _Block(nn.Module):
    """Pre-norm block: ``h + Attn(LN(h))`` then ``h + MLP(LN(h))``."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        d = config.d_model
        d_ff = 4 * d if config.d_ff is None else config.d_ff
        self.norm1 = nn.LayerNorm(d)
        self.attn = _CausalSelfAttention(config)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, d))

    def forward(self, h, scheme, layer, mask, bias, need_weights=False, need_qk=False):
        z, weights, qk = self.attn(self.norm1(h), scheme, layer, mask, bias, need_weights, need_qk)
        # h <- h + Attn(LN(h))
        h = h + z
        # h <- h + MLP(LN(h))
        return h + self.mlp(self.norm2(h)), weights, qk


class _CausalSelfAttention(nn.Module):
    r"""Multi-head causal attention; the scheme's hooks say where position enters.

    ``q, k = scheme.rotate(q, k, layer)``, then ``scheme.attend`` under the causal
    mask (and ``mask``, when a scheme or an intervention restricts the keys further)
    with the score bias ``bias``. All heads at once: ``q, k, v`` are
    ``(batch, n_heads, n, d_head)``.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads = config.n_heads
        d = config.d_model
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, h, scheme, layer, mask, bias, need_weights=False, need_qk=False):
        b, n, d = h.shape
        qkv = self.qkv(h).view(b, n, 3, self.n_heads, d // self.n_heads)     # (b, n, 3, heads, d_head)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)                                   # 3 x (b, heads, n, d_head)
        qk = (q, k) if need_qk else None
        if mask is not None:
            mask = mask & torch.ones(n, n, dtype=torch.bool, device=h.device).tril()
        if scheme.distance_limit is None:
            q, k = scheme.rotate(q, k, layer)
            z, weights = scheme.attend(q, k, v, mask, bias, layer, need_weights)  # (b, heads, n, d_head)
        else:                                                                      # the distance-limit control
            z, weights = scheme.attend_within_limit(q, k, v, mask, bias, layer, need_weights)
        z = z.transpose(1, 2).reshape(b, n, d)                                 # (b, n, d)
        return self.out(z), weights, qk


@contract
def count_parameters(model: Model) -> int:
    """Number of trainable parameters of ``model`` (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# --- private helpers -----------------------------------------------------------------


def _window_mask(n: int, w: int, device) -> torch.Tensor:
    """Boolean ``(n, n)``: key ``j`` visible from query ``i`` when ``i - w < j``."""
    i = torch.arange(n, device=device)
    return i[None, :] > i[:, None] - w


def _and(a, b):
    return b if a is None else a if b is None else a & b
