r"""NoPE: no positional encoding at all, and where position comes from anyway.

Haviv et al. (2022), "Transformer Language Models without Positional Encodings
Still Learn Positional Information", show that causal language models with nothing
added to the input or the score are competitive: the causal mask alone lets a head
count how many tokens it sees. Without the mask (a bidirectional model) that is
impossible. Llama 4 (Meta, April 2025) interleaves such position-free layers among
RoPE layers ("iRoPE") and rescales their queries at long range.
"""
from __future__ import annotations

import numpy as np

from . import _checks
from .attention import causal_mask

__all__ = [
    "no_positions",
    "uniform_causal_weights",
    "uniform_bidirectional_weights",
    "position_signal",
    "read_position",
    "irope_layer_pattern",
    "attention_temperature",
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
    n = _checks.positive_int("n", n)
    mask = causal_mask(n)
    return mask / np.sum(mask, axis=1, keepdims=True)


def uniform_bidirectional_weights(n: int) -> np.ndarray:
    r"""Attention weights of an unmasked head whose scores are all equal: :math:`A_{ij} = 1/n`.

    Every row is the same, so nothing in the output depends on the row's position
    (the permutation argument; Haviv et al. 2022 contrast). Shape ``(n, n)``, float64.
    """
    n = _checks.positive_int("n", n)
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
    if not isinstance(causal, bool | np.bool_):
        raise ValueError(f"causal must be True or False, got {causal!r}")
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
    if np.any(o <= 0) or np.any(o > 1 + rtol):
        raise ValueError("signal must lie in (0, 1]: a uniform causal head gives 1/(i+1) at position i")
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
    n_layers = _checks.positive_int("n_layers", n_layers)
    nope_every = _checks.positive_int("nope_every", nope_every)
    is_nope = (np.arange(1, n_layers + 1) % nope_every) == 0
    return np.where(is_nope, "nope", "rope").tolist()


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
