r"""NoPE: no positional encoding at all, and where position comes from anyway.

Haviv et al. (2022), "Transformer Language Models without Positional Encodings
Still Learn Positional Information", show that causal language models with nothing
added to the input or the score are competitive: the causal mask alone lets a head
count how many tokens it sees. Without the mask (a bidirectional model) that is
impossible. Llama 4 (Meta, April 2025) interleaves such position-free layers among
RoPE layers ("iRoPE") and rescales their queries at long range.

:func:`position_probe` trains a small probe (PyTorch, CPU, a second or two) to read
the position back from a position-free attention layer's output, with and without
the causal mask; :func:`single_key_weight` measures how the softmax flattens over
long contexts and how much a query scale such as :func:`attention_temperature`
restores.
"""
from __future__ import annotations

import functools
from typing import Annotated, NamedTuple

import numpy as np

from ._contracts import (
    MAX_POSITION,
    Anything,
    Array,
    Count,
    Finite,
    Flag,
    Integer,
    NonNegativeReal,
    Positions,
    Positive,
    Real,
    Reals,
    Seed,
    Size,
    WholeNumbers,
    broadcast,
    contract,
    entries,
    limit,
)
from .attention import causal_mask, self_attention

__all__ = [
    "no_positions",
    "uniform_causal_weights",
    "uniform_bidirectional_weights",
    "position_signal",
    "read_position",
    "irope_layer_pattern",
    "attention_temperature",
    "single_key_weight",
    "nope_layer_outputs",
    "ProbeResult",
    "position_probe",
    "unmasked_probe_floor",
]

_SQUARE = entries("n * n", lambda n: n * n)


@contract
def no_positions(x: Annotated[object, Anything()]):
    r"""What "no positional encoding" means in code: the identity, :math:`x_p = e_p`.

    Nothing is added to the token vectors and nothing to the scores (Haviv et al.
    2022; Kazemnejad et al. 2023). Returns ``x`` itself, unchanged, whatever its
    type or shape; it exists so that a model can name its positional scheme
    ``no_positions`` next to ``sinusoidal`` or ``rope``.
    """
    # x_p = e_p
    return x


@contract(_SQUARE)
def uniform_causal_weights(n: Size) -> np.ndarray:
    r"""Attention weights of a causal head whose scores are all equal.

    .. math:: A_{ij} = \begin{cases} 1/(i+1) & j \le i \\ 0 & j > i \end{cases}

    Query :math:`i` (0-based) sees keys :math:`0..i` and spreads its weight evenly
    over those :math:`i + 1` keys (Haviv et al. 2022); each row sums to 1. ``n`` is
    the number of tokens.

    Shapes: returns ``(n, n)``, float64.
    """
    mask = causal_mask(n)
    # A_ij = 1 / (i + 1) for j <= i, the mask over its row count
    return mask / np.sum(mask, axis=1, keepdims=True)


@contract(_SQUARE)
def uniform_bidirectional_weights(n: Size) -> np.ndarray:
    r"""Attention weights of an unmasked head whose scores are all equal: :math:`A_{ij} = 1/n`.

    Every row is the same, so nothing in the output depends on the row's position
    (the permutation argument; Haviv et al. 2022 contrast). ``n`` is the number of
    tokens.

    Shapes: returns ``(n, n)``, float64.
    """
    # A_ij = 1 / n
    return np.full((n, n), 1.0 / n)


@contract(_SQUARE)
def position_signal(n: Size, causal: Flag = True) -> np.ndarray:
    r"""Output of a uniform head when only the first token's value carries a marker.

    With :math:`v_0 = 1` and :math:`v_j = 0` for :math:`j > 0`,

    .. math:: o_i = \sum_j A_{ij} v_j = A_{i0} = \frac{1}{i + 1} \quad\text{(causal)},
              \qquad o_i = \frac{1}{n} \quad\text{(no mask)} .

    Under the causal mask the output is a different number at every position, from
    which :func:`read_position` recovers :math:`i` exactly (Haviv et al. 2022); without
    the mask every position gets the same :math:`1/n` and carries no position.
    ``causal`` chooses between the two heads of :func:`uniform_causal_weights` and
    :func:`uniform_bidirectional_weights`.

    Shapes: returns ``(n,)``, float64.
    """
    weights = uniform_causal_weights(n) if causal else uniform_bidirectional_weights(n)
    # v_0 = 1, v_j = 0 for j > 0
    v = np.zeros(weights.shape[1])
    v[0] = 1.0
    # o_i = sum_j A_ij v_j = A_i0
    return weights @ v


def _signal_of_positions(signal, rtol) -> None:
    if np.any(signal <= 0) or np.any(signal > 1 + rtol):
        raise ValueError("signal must lie in (0, 1]: a uniform causal head gives 1/(i+1) at position i")
    if np.any(signal < 1.0 / (MAX_POSITION + 1)):
        raise ValueError(
            f"signal must be at least 1/(2**32 + 1): smaller entries stand for positions beyond the "
            f"supported range 0..2**32, got a minimum of {signal.min():.6g}"
        )
    count = np.rint(1.0 / signal)
    if np.any(np.abs(count * signal - 1.0) > rtol):
        raise ValueError(
            f"signal must be of the form 1/(i+1) for whole i >= 0 (within rtol={rtol}); some entries are not"
        )


@contract(_signal_of_positions)
def read_position(signal: Reals, rtol: Annotated[float, Real(gt=0.0, lt=1.0)] = 1e-9) -> np.ndarray:
    r"""Invert :func:`position_signal`: :math:`i = 1/o_i - 1`.

    Each entry must be of the form :math:`1/(i+1)` for a whole :math:`i \ge 0`, up
    to relative error ``rtol``; anything else (0, negative, above 1, or between two
    such values) raises ``ValueError``. Returns the positions (Haviv et al. 2022).

    Shapes: ``signal`` any shape; returns its shape, int64.
    """
    # i = 1/o_i - 1, rounded to the whole number it stands for
    return np.rint(1.0 / signal).astype(np.int64) - 1


@contract
def irope_layer_pattern(n_layers: Annotated[int, Integer(1, 2**20)], nope_every: Count = 4) -> list[str]:
    r"""Which layers use RoPE and which none, in Llama 4's interleaved "iRoPE" stack.

    Layer :math:`l` (0-based) is position-free when :math:`(l + 1) \bmod
    \text{nope\_every} = 0`, i.e. layers 3, 7, 11, ... for ``nope_every = 4``:

    ``["rope", "rope", "rope", "nope", "rope", ...]``.

    Source: Meta's ``llama-models`` code, ``models/llama4/model.py``
    (``is_nope_layer = (layer_id + 1) % nope_layer_interval == 0``), and Hugging
    Face's ``Llama4TextConfig`` (``no_rope_layers[l] = int((l + 1) %
    no_rope_layer_interval != 0)``, default interval 4). In Meta's code the NoPE
    layers also attend globally (causal mask over the whole context) while the RoPE
    layers use chunked local attention, and only the NoPE layers get
    :func:`attention_temperature`.

    Returns a list of ``n_layers`` strings, each ``"rope"`` or ``"nope"``.
    """
    # layer l has no positions when (l + 1) mod nope_every = 0
    return ["nope" if (layer + 1) % nope_every == 0 else "rope" for layer in range(n_layers)]


@contract
def attention_temperature(positions: Positions, floor_scale: Positive = 8192,
                          attn_scale: NonNegativeReal = 0.1) -> np.ndarray:
    r"""Llama 4's inference-time scale for the queries of its position-free layers.

    .. math::

        \tau(p) = \ln\Bigl(\Bigl\lfloor \frac{p + 1}{\text{floor\_scale}} \Bigr\rfloor + 1\Bigr)
                  \cdot \text{attn\_scale} + 1 ,

    applied as :math:`q_p \leftarrow \tau(p)\, q_p` in NoPE layers only. It is exactly
    1 for :math:`p + 1 < \text{floor\_scale}` (8,192 tokens: short contexts are left
    alone) and then grows like a logarithm, sharpening the softmax over very long
    contexts. Source: Meta's ``llama-models`` ``models/llama4/model.py``
    (``attn_scales = log(floor((seq_positions + 1) / floor_scale) + 1) * attn_scale +
    1``, defaults ``floor_scale = 8192``, ``attn_scale = 0.1``, enabled by
    ``attn_temperature_tuning``) and Hugging Face's ``Llama4TextAttention``, both
    citing temperature tuning from Nakanishi (2025), "Scalable-Softmax Is Superior
    for Attention" (arXiv:2501.19399). ``positions`` holds the 0-based absolute
    positions :math:`p`; every entry of the result is >= 1.

    Shapes: ``positions`` any shape; returns its shape, float64.
    """
    p = positions.astype(np.float64)
    # tau(p) = ln(floor((p + 1) / floor_scale) + 1) attn_scale + 1
    return np.log(np.floor((p + 1.0) / floor_scale) + 1.0) * attn_scale + 1.0


@contract(broadcast("n_keys", "margin", "scale"))
def single_key_weight(n_keys: Annotated[np.ndarray, WholeNumbers(minimum=1)], margin: Reals,
                      scale: Annotated[np.ndarray, Array(positive=True)] = 1.0) -> np.ndarray:
    r"""Softmax weight of one key whose score beats each of the other keys by ``margin``.

    With scores :math:`s + \delta` for the one key and :math:`s` for the other
    :math:`n - 1`, all multiplied by ``scale`` :math:`\tau` (a query scale such as
    :func:`attention_temperature`),

    .. math::

        w = \frac{e^{\tau\delta}}{e^{\tau\delta} + n - 1}
          = \frac{1}{1 + (n - 1)\, e^{-\tau\delta}} .

    For fixed :math:`\delta` and :math:`\tau` the weight falls towards 0 as :math:`n`
    grows: the softmax flattens over long contexts ("attention fading", Nakanishi
    2025, "Scalable-Softmax Is Superior for Attention", arXiv:2501.19399). A scale
    :math:`\tau > 1` sharpens it again; :math:`\tau = 1 + c \ln n` keeps it bounded
    away from 0.

    ``n_keys`` is the number :math:`n` of keys the query sees, ``margin`` the score
    lead :math:`\delta` of the one key, and ``scale`` the factor :math:`\tau` on every
    score (default 1). The weight lies in (0, 1].

    Shapes: ``n_keys``, ``margin`` and ``scale`` broadcastable; returns their broadcast
    shape, float64.
    """
    # ln(n - 1) - tau delta (ln 0 = -inf for a single key, whatever the margin)
    with np.errstate(divide="ignore"):
        log_others = np.log(n_keys.astype(np.float64) - 1.0) - scale * margin
    # w = 1 / (1 + (n - 1) e^{-tau delta}) = exp(-log(1 + e^{ln(n - 1) - tau delta})): no overflow
    w = np.exp(-np.logaddexp(0.0, log_others))
    return np.array(w, dtype=np.float64)


_OUTPUTS = (entries("n_sequences * n_tokens * d_model",
                    lambda n_sequences, n_tokens, d_model: n_sequences * n_tokens * max(d_model, n_tokens)),
            entries("(vocab_size + 1) * d_model", lambda vocab_size, d_model: (vocab_size + 1) * d_model),
            entries("d_model ** 2", lambda d_model: d_model * d_model))
_FINITE_SCORES = Finite("weight_std", "the attention scores overflow: use a smaller weight_std")


@contract(*_OUTPUTS, result=_FINITE_SCORES)
def nope_layer_outputs(
    n_sequences: Size,
    n_tokens: Size,
    causal: Flag,
    d_model: Size = 16,
    vocab_size: Size = 8,
    weight_std: Positive = 0.02,
    bos: Flag = True,
    seed: Seed = 0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Outputs of one position-free attention head on random token sequences.

    One layer is drawn from ``seed``: an embedding table with ``vocab_size + 1`` rows
    (entries :math:`\mathcal N(0, 1)`; the last row is the beginning-of-sequence token
    ``BOS``, id ``vocab_size``) and :math:`W_Q, W_K, W_V \in \mathbb R^{d \times d}`
    with entries :math:`\mathcal N(0, \text{weight\_std}^2)`. Then ``n_sequences``
    sequences of ``n_tokens`` tokens are drawn uniformly from the vocabulary (slot 0
    holds ``BOS`` when ``bos`` is true), embedded with **no positional information**,
    and passed through

    .. math:: O = \operatorname{softmax}\Bigl(\frac{X W_Q (X W_K)^{\mathsf T}}{\sqrt d} + M\Bigr) X W_V ,

    with :math:`M` the causal mask (:math:`-\infty` above the diagonal) when
    ``causal`` is true and no mask otherwise (:func:`companion.attention.self_attention`).
    Small weights, as at the start of training, make the attention nearly uniform, so
    query :math:`i` of the causal head averages its :math:`i + 1` visible values
    (Haviv et al. 2022; the first-layer construction of Kazemnejad et al. 2023).

    The layer depends on ``seed`` and the shapes only, not on ``n_sequences``: the
    first sequences are the same whatever their number. Returns ``(outputs, tokens)``:
    the outputs :math:`O` and the token ids.

    Shapes: returns ``outputs`` ``(n_sequences, n_tokens, d_model)``, float64, and
    ``tokens`` ``(n_sequences, n_tokens)``, int64.
    """
    rng = np.random.default_rng(seed)
    # embedding rows ~ N(0, 1), the last one BOS; W_Q, W_K, W_V ~ N(0, weight_std^2)
    embedding = rng.normal(size=(vocab_size + 1, d_model))
    w_q, w_k, w_v = rng.normal(scale=weight_std, size=(3, d_model, d_model))
    # tokens drawn uniformly, BOS in slot 0: (n_sequences, n_tokens)
    tokens = rng.integers(0, vocab_size, size=(n_sequences, n_tokens))
    if bos:
        tokens[:, 0] = vocab_size
    mask = causal_mask(n_tokens) if causal else None
    # O = softmax(X W_Q (X W_K)^T / sqrt(d) + M) X W_V: (n_sequences, n_tokens, d_model)
    outputs, _ = self_attention(embedding[tokens], w_q, w_k, w_v, mask=mask)
    return outputs, tokens.astype(np.int64)


#: Most training work :func:`position_probe` takes on (160 times its defaults, minutes on a CPU).
_PROBE_WORK = 2**38


class ProbeResult(NamedTuple):
    """What :func:`position_probe` measured on the held-out sequences."""

    mae: float
    """Mean absolute error of the predicted position, in positions."""
    accuracy: float
    """Fraction of held-out tokens whose rounded prediction is exactly their position."""
    baseline_mae: float
    """Error of the best guess without looking: always the mean training position."""
    predicted: np.ndarray
    """Predicted positions, float64 ``(n_test, n_tokens)``; column ``i`` holds slot ``i``."""


_TRAINING_WORK = limit("steps * n_train * n_tokens * hidden * d_model",
                       lambda steps, n_train, n_tokens, hidden, d_model: steps * n_train * n_tokens * hidden * d_model,
                       _PROBE_WORK, f"2**38 = {_PROBE_WORK:,} multiply-adds of training (minutes on a CPU): use "
                       "fewer steps or a smaller probe")


@contract(_TRAINING_WORK, entries("(n_train + n_test) * n_tokens * d_model",
                                  lambda n_train, n_test, n_tokens, d_model: (n_train + n_test) * n_tokens
                                  * max(d_model, n_tokens)),
          *_OUTPUTS[1:], result=_FINITE_SCORES)
def position_probe(
    causal: Flag = True,
    n_tokens: Annotated[int, Integer(2, MAX_POSITION, why="one slot has no position to find")] = 16,
    d_model: Size = 16,
    vocab_size: Size = 8,
    weight_std: Positive = 0.02,
    bos: Flag = True,
    n_train: Size = 256,
    n_test: Size = 128,
    hidden: Size = 64,
    steps: Size = 400,
    lr: Annotated[float, Real(gt=0.0, le=10.0, why="Adam's step size")] = 0.02,
    seed: Seed = 0,
) -> ProbeResult:
    r"""Train a small probe to read each token's position from a NoPE head's output.

    Probing in the manner of Haviv et al. (2022): a frozen layer, and a separate small
    network trained to predict, from one output row alone, which slot it came from.
    The layer and the sequences come from :func:`nope_layer_outputs` (``n_train +
    n_test`` sequences; the first ``n_train`` train the probe, the rest test it). The
    probe is a multilayer perceptron :math:`\mathbb R^{d} \to \mathbb R^{\text{hidden}}
    \to \mathbb R` with a ReLU, on features standardised with the training mean and
    standard deviation, trained by full-batch Adam for ``steps`` steps on the squared
    error :math:`(\hat\imath - i)^2` (float32, one CPU thread, seeded; a second or
    two).

    Under the causal mask the output of slot :math:`i` carries about :math:`1/(i+1)`
    of the ``BOS`` value, and the probe recovers :math:`i` (error well below one
    position with the defaults). Without the mask the rows of different slots are
    identically distributed (:math:`\operatorname{Attn}(PX) = P\operatorname{Attn}(X)`),
    so no probe can beat a constant guess except where a token's *content* gives its
    slot away (``BOS`` in slot 0, visible once ``weight_std`` is large enough for the
    query to matter).

    Returns a :class:`ProbeResult` with ``mae``, ``accuracy``, ``baseline_mae`` (the
    error of always guessing the mean position, :math:`n/4` for even ``n_tokens``)
    and the ``predicted`` positions of the test sequences. The global PyTorch random
    state is left as it was. The training work, ``steps`` times ``n_train * n_tokens``
    rows times ``hidden * d_model``, may be at most ``2**38`` multiply-adds (160 times
    the defaults, minutes on a CPU), and ``lr``, Adam's step size, at most 10; more is
    refused.

    A probe is seeded, so the same arguments train the same probe: each is trained once
    per process and kept, and a second call returns a copy of the first result (a
    chapter's exercise and its check ask for the same probes).

    Shapes: ``predicted`` ``(n_test, n_tokens)``, float64; column ``i`` holds slot ``i``.
    """
    result = _trained_probe(causal, n_tokens, d_model, vocab_size, weight_std, bos, n_train, n_test, hidden,
                            steps, lr, seed)
    return result._replace(predicted=result.predicted.copy())


@functools.lru_cache(maxsize=64)
def _trained_probe(causal: bool, n_tokens: int, d_model: int, vocab_size: int, weight_std: float, bos: bool,
                   n_train: int, n_test: int, hidden: int, steps: int, lr: float, seed: int) -> ProbeResult:
    """The probe of :func:`position_probe`, trained (arguments already checked).

    The probe is a small torch network: torch is imported here, when a probe is
    trained, so that the rest of the chapter's functions (numpy) load none of it.
    """
    import torch
    from torch import nn

    outputs, _ = nope_layer_outputs(
        n_train + n_test, n_tokens, causal, d_model=d_model, vocab_size=vocab_size,
        weight_std=weight_std, bos=bos, seed=seed,
    )
    d_model = outputs.shape[-1]
    # each output row's slot i, the target: (n_train + n_test, n_tokens)
    positions = np.broadcast_to(np.arange(n_tokens, dtype=np.float64), outputs.shape[:2])
    # one row per token: (n_train * n_tokens, d_model) and (n_test * n_tokens, d_model)
    x_train = outputs[:n_train].reshape(-1, d_model)
    x_test = outputs[n_train:].reshape(-1, d_model)
    y_train = positions[:n_train].reshape(-1)
    y_test = positions[n_train:].reshape(-1)
    # features standardised with the training mean and standard deviation
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std[std < 1e-12] = 1.0
    x_train = torch.tensor((x_train - mean) / std, dtype=torch.float32)
    x_test = torch.tensor((x_test - mean) / std, dtype=torch.float32)
    target = torch.tensor(y_train, dtype=torch.float32)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: more threads only add overhead
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            # R^d -> R^hidden -> R, with a ReLU
            probe = nn.Sequential(nn.Linear(d_model, hidden), nn.ReLU(), nn.Linear(hidden, 1))
            optimiser = torch.optim.Adam(probe.parameters(), lr=lr)
            for _ in range(steps):
                optimiser.zero_grad()
                # mean of (i_hat - i)^2, full batch
                loss = torch.mean((probe(x_train).squeeze(-1) - target) ** 2)
                loss.backward()
                optimiser.step()
            with torch.no_grad():
                predicted = probe(x_test).squeeze(-1).double().numpy()
    finally:
        torch.set_num_threads(threads)
    return ProbeResult(
        mae=float(np.mean(np.abs(predicted - y_test))),
        accuracy=float(np.mean(np.rint(predicted) == y_test)),
        baseline_mae=float(np.mean(np.abs(y_test - y_train.mean()))),
        predicted=predicted.reshape(n_test, n_tokens),
    )


@contract
def unmasked_probe_floor(n_tokens: Count, bos: Flag = True) -> float:
    r"""The smallest mean absolute error any probe can reach on an unmasked NoPE layer.

    If the tokens in slots :math:`s, \dots, n-1` are independent and identically
    distributed, the rows of those slots in :math:`\operatorname{Attn}(X)` all have the
    same distribution (permutation equivariance), so a probe that sees one row
    produces the same distribution of guesses :math:`c` at each of them. Its
    expected error is then at least

    .. math::

        \frac{1}{n} \min_{c} \sum_{i=s}^{n-1} |c - i|
        = \frac{1}{n} \Bigl\lfloor \frac{m^2}{4} \Bigr\rfloor, \qquad m = n - s ,

    the minimum being reached at a median of :math:`s, \dots, n-1`. With ``bos`` the
    fixed token in slot 0 (:math:`s = 1`) is granted a perfect guess; without it
    (:math:`s = 0`) the floor is :math:`n/4` for even :math:`n`. Compare
    :attr:`ProbeResult.mae` of :func:`position_probe` with ``causal=False``.

    Returns a float >= 0.
    """
    # m = n - s free slots: s = 1 with BOS, 0 without
    free = n_tokens - 1 if bos else n_tokens
    # floor(m^2 / 4) / n
    return (free * free // 4) / n_tokens
