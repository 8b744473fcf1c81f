"""companion.symbolic: the SymPy building blocks agree with the numerical code."""
import numpy as np
import pytest
import sympy as sp

from companion import attention, symbolic


def test_permutation_matrix_matches_numeric_convention():
    for perm, P in symbolic.all_permutation_matrices(3):
        assert np.array_equal(np.array(P, dtype=float), attention.permutation_matrix(list(perm)))


def test_all_permutation_matrices_counts():
    assert len(symbolic.all_permutation_matrices(4)) == 24
    with pytest.raises(ValueError, match="n must be at most 6"):
        symbolic.all_permutation_matrices(7)


def test_symbolic_attention_evaluates_to_numeric_attention():
    X = symbolic.symbol_matrix("x", 3, 2)
    W = [symbolic.symbol_matrix(name, 2, 2) for name in ("a", "b", "c")]
    rng = np.random.default_rng(0)
    x_val = rng.normal(size=(3, 2))
    w_vals = [rng.normal(size=(2, 2)) for _ in range(3)]
    subs = {X[i, j]: x_val[i, j] for i in range(3) for j in range(2)}
    for M, m_val in zip(W, w_vals):
        subs.update({M[i, j]: m_val[i, j] for i in range(2) for j in range(2)})
    for mask_sym, mask_num in ((None, None), (symbolic.causal_mask(3), attention.causal_mask(3))):
        sym = symbolic.self_attention(X, *W, mask=mask_sym).subs(subs).evalf()
        num, _ = attention.self_attention(x_val, *w_vals, mask=mask_num)
        assert np.allclose(np.array(sym, dtype=float), num, atol=1e-12)


def test_softmax_identity_holds_and_a_wrong_one_fails():
    S = symbolic.symbol_matrix("s", 3, 3)
    for _, P in symbolic.all_permutation_matrices(3):
        assert symbolic.is_zero_matrix(symbolic.softmax_rows(P * S * P.T) - P * symbolic.softmax_rows(S) * P.T)
    # permuting rows only is not the same thing: the check must be able to fail
    P = symbolic.permutation_matrix([1, 0, 2])
    assert not symbolic.is_zero_matrix(symbolic.softmax_rows(P * S) - P * symbolic.softmax_rows(S) * P.T)


def test_softmax_rows_rejects_bad_masks():
    S = symbolic.symbol_matrix("s", 2, 2)
    with pytest.raises(ValueError, match="mask must have the shape"):
        symbolic.softmax_rows(S, sp.ones(3, 3))
    with pytest.raises(ValueError, match="mask row 0 keeps no entry"):
        symbolic.softmax_rows(S, sp.Matrix([[0, 0], [1, 1]]))


def test_symbol_matrix_and_permutation_validation():
    with pytest.raises(ValueError, match="rows"):
        symbolic.symbol_matrix("x", 0, 2)
    with pytest.raises(ValueError, match="perm"):
        symbolic.permutation_matrix([0, 2])


def test_is_zero_proves_trigonometric_identities_and_rejects_false_ones():
    a, b = sp.symbols("a b", real=True)
    assert symbolic.is_zero(sp.sin(a + b) - (sp.sin(a) * sp.cos(b) + sp.cos(a) * sp.sin(b)))
    assert symbolic.is_zero(sp.cos(a - b) - (sp.cos(a) * sp.cos(b) + sp.sin(a) * sp.sin(b)))
    assert symbolic.is_zero(sp.re(sp.exp(sp.I * a)) - sp.cos(a))
    assert not symbolic.is_zero(sp.sin(a + b) - sp.sin(a) * sp.cos(b))
    assert symbolic.is_zero(sp.Matrix([[sp.sin(a) ** 2 + sp.cos(a) ** 2 - 1]]))
