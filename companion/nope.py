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

import numbers
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from . import _checks
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


def no_positions(x):
    r"""What "no positional encoding" means in code: the identity, :math:`x_p = e_p`.

    Nothing is added to the token vectors and nothing to the scores (Haviv et al.
    2022; Kazemnejad et al. 2023). Returns ``x`` itself, unchanged, whatever its
    type or shape; it exists so that a model can name its positional scheme
    ``no_positions`` next to ``sinusoidal`` or ``rope``.
    """
    return x


def uniform_causal_weights(n: int) -> np.ndarray:
    r"""Attention weights of a causal head whose scores are all equal.

    .. math:: A_{ij} = \begin{cases} 1/(i+1) & j \le i \\ 0 & j > i \end{cases}

    Query :math:`i` (0-based) sees keys :math:`0..i` and spreads its weight evenly
    over those :math:`i + 1` keys (Haviv et al. 2022). Shape ``(n, n)``, float64;
    each row sums to 1.
    """
    n = _checks.size("n", n)
    _checks.entries("n * n", n * n)
    mask = causal_mask(n)
    return mask / np.sum(mask, axis=1, keepdims=True)


def uniform_bidirectional_weights(n: int) -> np.ndarray:
    r"""Attention weights of an unmasked head whose scores are all equal: :math:`A_{ij} = 1/n`.

    Every row is the same, so nothing in the output depends on the row's position
    (the permutation argument; Haviv et al. 2022 contrast). Shape ``(n, n)``, float64.
    """
    n = _checks.size("n", n)
    _checks.entries("n * n", n * n)
    return np.full((n, n), 1.0 / n)


def position_signal(n: int, causal: bool = True) -> np.ndarray:
    r"""Output of a uniform head when only the first token's value carries a marker.

    With :math:`v_0 = 1` and :math:`v_j = 0` for :math:`j > 0`,

    .. math:: o_i = \sum_j A_{ij} v_j = A_{i0} = \frac{1}{i + 1} \quad\text{(causal)},
              \qquad o_i = \frac{1}{n} \quad\text{(no mask)} .

    Under the causal mask the output is a different number at every position, from
    which :func:`read_position` recovers :math:`i` exactly (Haviv et al. 2022); without
    the mask every position gets the same :math:`1/n` and carries no position.
    Shape ``(n,)``, float64.
    """
    causal = _checks.boolean("causal", causal)
    weights = uniform_causal_weights(n) if causal else uniform_bidirectional_weights(n)
    v = np.zeros(weights.shape[1])
    v[0] = 1.0
    return weights @ v


def read_position(signal, rtol: float = 1e-9) -> np.ndarray:
    r"""Invert :func:`position_signal`: :math:`i = 1/o_i - 1`.

    Each entry must be of the form :math:`1/(i+1)` for a whole :math:`i \ge 0`, up
    to relative error ``rtol``; anything else (0, negative, above 1, or between two
    such values) raises ``ValueError``. Returns int64 positions of the shape of
    ``signal`` (Haviv et al. 2022).
    """
    o = _checks.array("signal", signal)
    rtol = _checks.positive_float("rtol", rtol)
    if rtol >= 1:
        raise ValueError(f"rtol must be a real number with 0 < rtol < 1, got {rtol}")
    if np.any(o <= 0) or np.any(o > 1 + rtol):
        raise ValueError("signal must lie in (0, 1]: a uniform causal head gives 1/(i+1) at position i")
    if np.any(o < 1.0 / (_checks.MAX_POSITION + 1)):
        raise ValueError(
            f"signal must be at least 1/(2**32 + 1): smaller entries stand for positions beyond the "
            f"supported range 0..2**32, got a minimum of {o.min():.6g}"
        )
    count = np.rint(1.0 / o)
    if np.any(np.abs(count * o - 1.0) > rtol):
        raise ValueError(
            f"signal must be of the form 1/(i+1) for whole i >= 0 (within rtol={rtol}); some entries are not"
        )
    return count.astype(np.int64) - 1


def irope_layer_pattern(n_layers: int, nope_every: int = 4) -> list[str]:
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
    n_layers = _checks.size("n_layers", n_layers, maximum=2**20)
    nope_every = _checks.positive_int("nope_every", nope_every)
    return ["nope" if (layer + 1) % nope_every == 0 else "rope" for layer in range(n_layers)]


def attention_temperature(positions, floor_scale: float = 8192, attn_scale: float = 0.1) -> np.ndarray:
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
    for Attention" (arXiv:2501.19399).

    Parameters
    ----------
    positions : non-negative integers (0-based absolute positions), any shape.
    floor_scale : real > 0.
    attn_scale : real >= 0.

    Returns
    -------
    float64 array of the shape of ``positions``, every entry >= 1.
    """
    p = _checks.positions("positions", positions).astype(np.float64)
    floor_scale = _checks.positive_float("floor_scale", floor_scale)
    attn_scale = _checks.at_least("attn_scale", attn_scale, 0.0)
    return np.log(np.floor((p + 1.0) / floor_scale) + 1.0) * attn_scale + 1.0


def single_key_weight(n_keys, margin, scale=1.0) -> np.ndarray:
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

    Parameters
    ----------
    n_keys : integers >= 1 (the number of keys the query sees), any shape.
    margin : real numbers, the score lead :math:`\delta` of the one key.
    scale : real numbers > 0, the factor :math:`\tau` on every score (default 1).

    Returns
    -------
    float64 array, the broadcast shape of the three arguments, entries in (0, 1].
    """
    n = _checks.integers("n_keys", n_keys)
    if np.any(n < 1):
        raise ValueError(f"n_keys must be integers >= 1, got a minimum of {n.min()}")
    delta = _checks.array("margin", margin)
    tau = _checks.array("scale", scale)
    if np.any(tau <= 0):
        raise ValueError(f"scale must be real numbers > 0, got a minimum of {tau.min()}")
    try:
        shape = np.broadcast_shapes(n.shape, delta.shape, tau.shape)
    except ValueError as err:
        raise ValueError(
            f"n_keys, margin and scale must broadcast together, got shapes {n.shape}, {delta.shape}, {tau.shape}"
        ) from err
    # w = 1 / (1 + (n - 1) e^{-tau delta}) = exp(-log(1 + e^{log(n - 1) - tau delta})): no overflow,
    # and exactly 1 for a single key (log 0 = -inf) whatever the margin.
    with np.errstate(divide="ignore"):
        log_others = np.log(n.astype(np.float64) - 1.0) - tau * delta
    w = np.exp(-np.logaddexp(0.0, log_others))
    return np.broadcast_to(w, shape).astype(np.float64)


def _bool(name: str, value) -> bool:
    return _checks.boolean(name, value)


def _seed(value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"seed must be an integer >= 0, got {value!r}")
    if value >= 2**63:
        raise ValueError(f"seed must be an integer in 0..2**63 - 1 (torch's seeds are 64-bit), got {value}")
    return int(value)


def nope_layer_outputs(
    n_sequences: int,
    n_tokens: int,
    causal: bool,
    d_model: int = 16,
    vocab_size: int = 8,
    weight_std: float = 0.02,
    bos: bool = True,
    seed: int = 0,
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
    first sequences are the same whatever their number.

    Returns
    -------
    outputs : float64 array ``(n_sequences, n_tokens, d_model)``.
    tokens : int64 array ``(n_sequences, n_tokens)`` of token ids.
    """
    n_sequences = _checks.size("n_sequences", n_sequences)
    n_tokens = _checks.size("n_tokens", n_tokens)
    causal = _bool("causal", causal)
    d_model = _checks.size("d_model", d_model)
    vocab_size = _checks.size("vocab_size", vocab_size)
    _checks.entries("n_sequences * n_tokens * d_model", n_sequences * n_tokens * max(d_model, n_tokens))
    _checks.entries("(vocab_size + 1) * d_model", (vocab_size + 1) * d_model)
    _checks.entries("d_model ** 2", d_model * d_model)
    weight_std = _checks.positive_float("weight_std", weight_std)
    bos = _bool("bos", bos)
    seed = _seed(seed)
    rng = np.random.default_rng(seed)
    embedding = rng.normal(size=(vocab_size + 1, d_model))
    w_q, w_k, w_v = rng.normal(scale=weight_std, size=(3, d_model, d_model))
    tokens = rng.integers(0, vocab_size, size=(n_sequences, n_tokens))
    if bos:
        tokens[:, 0] = vocab_size
    mask = causal_mask(n_tokens) if causal else None
    try:
        outputs, _ = self_attention(embedding[tokens], w_q, w_k, w_v, mask=mask)
    except ValueError as err:  # the inputs are well formed, so only the scale can be at fault
        raise ValueError(f"weight_std must be small enough for finite attention scores, got {weight_std}") from err
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


def position_probe(
    causal: bool = True,
    n_tokens: int = 16,
    d_model: int = 16,
    vocab_size: int = 8,
    weight_std: float = 0.02,
    bos: bool = True,
    n_train: int = 256,
    n_test: int = 128,
    hidden: int = 64,
    steps: int = 400,
    lr: float = 0.02,
    seed: int = 0,
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

    Returns
    -------
    :class:`ProbeResult` with ``mae``, ``accuracy``, ``baseline_mae`` (the error of
    always guessing the mean position, :math:`n/4` for even ``n_tokens``) and the
    ``predicted`` positions of the test sequences. The global PyTorch random state
    is left as it was. The training work, ``steps`` times ``n_train * n_tokens``
    rows times ``hidden * d_model``, may be at most ``2**38`` multiply-adds (160 times
    the defaults, minutes on a CPU), and ``lr`` at most 10; more is refused.
    """
    n_tokens = _checks.size("n_tokens", n_tokens)
    if n_tokens < 2:
        raise ValueError(f"n_tokens must be an integer >= 2 (one slot has no position to find), got {n_tokens}")
    n_train = _checks.size("n_train", n_train)
    n_test = _checks.size("n_test", n_test)
    hidden = _checks.size("hidden", hidden)
    steps = _checks.size("steps", steps)
    width = _checks.size("d_model", d_model)
    work = steps * n_train * n_tokens * hidden * width
    if work > _PROBE_WORK:
        raise ValueError(
            f"steps * n_train * n_tokens * hidden * d_model must stay within 2**38 = {_PROBE_WORK:,} "
            f"multiply-adds of training (minutes on a CPU), got {work:,}; use fewer steps or a smaller probe"
        )
    lr = _checks.positive_float("lr", lr)
    if lr > 10.0:
        raise ValueError(f"lr must be a real number in (0, 10] (Adam's step size), got {lr}")
    seed = _seed(seed)
    outputs, _ = nope_layer_outputs(
        n_train + n_test, n_tokens, causal, d_model=d_model, vocab_size=vocab_size,
        weight_std=weight_std, bos=bos, seed=seed,
    )
    d_model = outputs.shape[-1]
    positions = np.broadcast_to(np.arange(n_tokens, dtype=np.float64), outputs.shape[:2])
    x_train = outputs[:n_train].reshape(-1, d_model)
    x_test = outputs[n_train:].reshape(-1, d_model)
    y_train = positions[:n_train].reshape(-1)
    y_test = positions[n_train:].reshape(-1)
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
            probe = nn.Sequential(nn.Linear(d_model, hidden), nn.ReLU(), nn.Linear(hidden, 1))
            optimiser = torch.optim.Adam(probe.parameters(), lr=lr)
            for _ in range(steps):
                optimiser.zero_grad()
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


def unmasked_probe_floor(n_tokens: int, bos: bool = True) -> float:
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
    n_tokens = _checks.positive_int("n_tokens", n_tokens)
    free = n_tokens - 1 if _bool("bos", bos) else n_tokens
    return (free * free // 4) / n_tokens
