"""companion.attention: softmax, masks, permutations, attention."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import attention


def reference_attention(q, k, v, mask=None, bias=None):
    """Literal loops over queries and keys: an independent reference."""
    n_q, n_k = q.shape[0], k.shape[0]
    out = np.zeros((n_q, v.shape[1]))
    weights = np.zeros((n_q, n_k))
    for i in range(n_q):
        scores = []
        for j in range(n_k):
            allowed = True if mask is None else bool(mask[i, j])
            s = float(q[i] @ k[j]) / np.sqrt(q.shape[1]) + (0.0 if bias is None else bias[i, j])
            scores.append(s if allowed else None)
        top = max(s for s in scores if s is not None)
        exps = [0.0 if s is None else np.exp(s - top) for s in scores]
        total = sum(exps)
        for j in range(n_k):
            weights[i, j] = exps[j] / total
            out[i] += weights[i, j] * v[j]
    return out, weights


def test_softmax_rows_sum_to_one_and_match_definition():
    s = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    p = attention.softmax(s)
    assert np.allclose(p.sum(axis=-1), 1.0)
    assert np.allclose(p[0], np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    assert np.allclose(p[1], 1 / 3)


def test_softmax_is_stable_for_huge_scores():
    p = attention.softmax(np.array([1000.0, 1001.0, -1000.0]))
    assert np.all(np.isfinite(p))
    assert np.allclose(p[:2], [1 / (1 + np.e), np.e / (1 + np.e)])


def test_softmax_gives_masked_entries_zero_weight():
    p = attention.softmax(np.array([[0.0, -np.inf, 0.0]]))
    assert p.tolist() == [[0.5, 0.0, 0.5]]


@pytest.mark.parametrize(
    "scores, match",
    [
        (np.array([-np.inf, -np.inf]), "entirely -inf"),
        (np.array([np.nan, 1.0]), "nan"),
        (np.array([np.inf, 1.0]), r"\+inf"),
        (np.float64(1.0), "scalar"),
    ],
)
def test_softmax_rejects_bad_scores(scores, match):
    with pytest.raises(ValueError, match=match):
        attention.softmax(scores)


def test_softmax_rejects_bad_axis():
    with pytest.raises(ValueError, match="axis"):
        attention.softmax(np.zeros((2, 2)), axis=2)


def test_softmax_names_the_axes_it_accepts():
    with pytest.raises(ValueError, match=r"^axis must be an integer in \[-2, 1\] for scores of shape \(3, 4\), got 2$"):
        attention.softmax(np.zeros((3, 4)), axis=2)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_refuses_one_slice_with_nothing_to_attend_to(axis):
    """One row (or column) entirely -inf is refused even when every other slice keeps a finite entry."""
    scores = np.array([[0.0, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf], [2.0, 0.0, 1.0]])
    scores = scores if axis == -1 else scores.T
    with pytest.raises(ValueError, match="a slice that is entirely -inf leaves nothing to attend to"):
        attention.softmax(scores, axis=axis)


def test_self_attention_adds_the_bias_it_is_given():
    rng = np.random.default_rng(4)
    x, w_q, w_k, w_v = rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    bias = rng.normal(size=(5, 5))
    out, weights = attention.self_attention(x, w_q, w_k, w_v, bias=bias)
    ref_out, ref_weights = reference_attention(x @ w_q, x @ w_k, x @ w_v, bias=bias)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, atol=1e-12)


def test_causal_mask_square_and_with_cached_keys():
    assert attention.causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    # two new queries after three cached keys: the queries are positions 3 and 4
    assert attention.causal_mask(2, 5).tolist() == [
        [True, True, True, True, False],
        [True, True, True, True, True],
    ]


@pytest.mark.parametrize("args, match", [((0,), "n_queries"), ((2.5,), "n_queries"), ((3, 2), "n_keys"), ((True,), "n_queries")])
def test_causal_mask_rejects_bad_sizes(args, match):
    with pytest.raises(ValueError, match=match):
        attention.causal_mask(*args)


def test_permutation_matrix_reorders_rows_and_is_orthogonal():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    P = attention.permutation_matrix([2, 0, 1])
    assert np.array_equal(P @ X, X[[2, 0, 1]])
    assert np.array_equal(P.T @ P, np.eye(3))


@pytest.mark.parametrize("perm", [[0, 0, 1], [1, 2, 3], [], [[0, 1]], [0.0, 1.0]])
def test_permutation_matrix_rejects_non_permutations(perm):
    with pytest.raises(ValueError, match="perm"):
        attention.permutation_matrix(perm)


def test_attention_matches_reference_with_mask_and_bias():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    mask = attention.causal_mask(4, 6)
    bias = rng.normal(size=(4, 6))
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    ref_out, ref_weights = reference_attention(q, k, v, mask=mask, bias=bias)
    assert np.allclose(out, ref_out, atol=1e-14)
    assert np.allclose(weights, ref_weights, atol=1e-14)
    assert np.all(weights[~mask] == 0.0)
    assert np.allclose(weights.sum(axis=-1), 1.0)


def test_attention_broadcasts_over_leading_dimensions():
    rng = np.random.default_rng(4)
    q, k, v = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 5, 4))
    out, _ = attention.scaled_dot_product_attention(q, k, v, mask=attention.causal_mask(5))
    ref, _ = reference_attention(q[1, 2], k[1, 2], v[1, 2], mask=attention.causal_mask(5))
    assert out.shape == (2, 3, 5, 4)
    assert np.allclose(out[1, 2], ref, atol=1e-14)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(q=np.zeros((2, 3)), k=np.zeros((2, 4)), v=np.zeros((2, 4))), "d_k"),
        (dict(q=np.zeros((2, 3)), k=np.zeros((2, 3)), v=np.zeros((3, 4))), "n_keys"),
        (dict(q=np.zeros(3), k=np.zeros((2, 3)), v=np.zeros((2, 3))), "q must have at least 2"),
        (dict(q=np.zeros((2, 3)), k=np.zeros((2, 3)), v=np.zeros((2, 3)), mask=np.ones((2, 2))), "boolean"),
        (dict(q=np.zeros((2, 3)), k=np.zeros((2, 3)), v=np.zeros((2, 3)), mask=np.ones((3, 3), bool)), "mask of shape"),
        (dict(q=np.zeros((2, 3)), k=np.zeros((2, 3)), v=np.zeros((2, 3)), mask=np.zeros((2, 2), bool)), "mask must leave every query a key"),
        (dict(q=np.zeros((2, 3)), k=np.zeros((2, 3)), v=np.zeros((2, 3)), bias=np.zeros(3)), "bias of shape \\(3,\\) must broadcast"),
        (dict(q=np.full((2, 3), np.nan), k=np.zeros((2, 3)), v=np.zeros((2, 3))), "q must contain only finite"),
        (dict(q="abc", k=np.zeros((2, 3)), v=np.zeros((2, 3))), "q must be an array"),
    ],
)
def test_attention_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        attention.scaled_dot_product_attention(**kwargs)


def test_bias_may_add_a_head_dimension():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    per_head = rng.normal(size=(2, 4, 4))
    out, weights = attention.scaled_dot_product_attention(q, k, v, bias=per_head)
    assert out.shape == (2, 4, 2) and weights.shape == (2, 4, 4)
    for h in range(2):
        ref, _ = reference_attention(q, k, v, bias=per_head[h])
        assert np.allclose(out[h], ref, atol=1e-14)


def test_bias_may_mask_with_minus_infinity():
    q = k = v = np.eye(3)
    bias = np.where(attention.causal_mask(3), 0.0, -np.inf)
    out_bias, w_bias = attention.scaled_dot_product_attention(q, k, v, bias=bias)
    out_mask, w_mask = attention.scaled_dot_product_attention(q, k, v, mask=attention.causal_mask(3))
    assert np.array_equal(w_bias, w_mask) and np.array_equal(out_bias, out_mask)
    for bad, match in ((np.full((3, 3), np.nan), "bias must not contain nan"), (np.full((3, 3), np.inf), r"\+inf")):
        with pytest.raises(ValueError, match=match):
            attention.scaled_dot_product_attention(q, k, v, bias=bad)
    with pytest.raises(ValueError, match="bias must leave every query a key|entirely masked or -inf"):
        attention.scaled_dot_product_attention(q, k, v, bias=np.full((3, 3), -np.inf))


def test_self_attention_rejects_mismatched_weights():
    with pytest.raises(ValueError, match="w_k must be a matrix with 3 rows"):
        attention.self_attention(np.zeros((2, 3)), np.zeros((3, 3)), np.zeros((4, 3)), np.zeros((3, 3)))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 9),
    d=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_unmasked_self_attention_is_permutation_equivariant(n, d, seed):
    """Attn(PX) = P Attn(X) for every X, weights and permutation (chapter 0's theorem)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 3
    Ws = [rng.normal(size=(d, d)) for _ in range(3)]
    P = attention.permutation_matrix(rng.permutation(n))
    lhs, lhs_weights = attention.self_attention(P @ X, *Ws)
    rhs, rhs_weights = attention.self_attention(X, *Ws)
    assert np.allclose(lhs, P @ rhs, atol=1e-12)
    assert np.allclose(lhs_weights, P @ rhs_weights @ P.T, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 8), seed=st.integers(0, 2**32 - 1))
def test_masked_self_attention_equals_unmasked_with_permuted_mask(n, seed):
    """Attn_M(PX) = P Attn_{P^T M P}(X): the mask is what carries position."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Ws = [rng.normal(size=(3, 3)) for _ in range(3)]
    perm = rng.permutation(n)
    P = attention.permutation_matrix(perm)
    M = attention.causal_mask(n)
    moved = (P.T @ M @ P).astype(bool)
    lhs, _ = attention.self_attention(P @ X, *Ws, mask=M)
    rhs, _ = attention.self_attention(X, *Ws, mask=moved)
    assert np.allclose(lhs, P @ rhs, atol=1e-12)
    if not np.array_equal(perm, np.arange(n)):
        # and the fixed mask does break equivariance (for generic inputs; by far more than
        # rounding, though a nearly saturated softmax can make the gap small in relative terms)
        plain, _ = attention.self_attention(X, *Ws, mask=M)
        assert np.max(np.abs(lhs - P @ plain)) > 1e-12


def test_self_attention_of_a_batch_is_the_attention_of_each_sequence():
    rng = np.random.default_rng(21)
    x = rng.normal(size=(2, 3, 5, 4))  # (batch, heads, n, d_model)
    w_q, w_k, w_v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    mask = attention.causal_mask(5)
    out, weights = attention.self_attention(x, w_q, w_k, w_v, mask=mask)
    assert out.shape == (2, 3, 5, 2) and weights.shape == (2, 3, 5, 5)
    for b in range(2):
        for h in range(3):
            ref_out, ref_w = reference_attention(x[b, h] @ w_q, x[b, h] @ w_k, x[b, h] @ w_v, mask=mask)
            assert np.allclose(out[b, h], ref_out, atol=1e-13) and np.allclose(weights[b, h], ref_w, atol=1e-13)
