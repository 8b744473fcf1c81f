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
    with pytest.raises(ValueError, match="n must be an integer in 1..6"):
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
    with pytest.raises(ValueError, match="mask must keep an entry in every row: row 0 keeps none"):
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


def test_is_zero_proves_rational_identities_in_exponentials_and_rejects_a_near_miss():
    # ALiBi's bias as a reweighting of the softmax (chapter 4), a row of three keys
    m = sp.Symbol("m", positive=True)
    s = symbolic.symbol_matrix("s", 1, 3, real=True)
    penalty = sp.Matrix([[-2 * m, -m, 0]])
    reweighted = symbolic.softmax_rows(s).multiply_elementwise(penalty.applyfunc(sp.exp))
    assert symbolic.is_zero(symbolic.softmax_rows(s + penalty) - reweighted / sum(reweighted))
    # a geometric sum over a common denominator; one term short of it is not
    r = sp.exp(-m)
    assert symbolic.is_zero(1 + r + r ** 2 - (1 - sp.exp(-3 * m)) / (1 - r))
    assert not symbolic.is_zero(1 + r - (1 - sp.exp(-3 * m)) / (1 - r))


def test_nonzero_witness_evaluates_conditions_and_long_expressions():
    x = sp.Symbol("x", positive=True)
    step = sp.Piecewise((0, x < 100), (x, True)) + sp.Piecewise((1, x < 3), (0, True))
    witness = symbolic.nonzero_witness(step)
    assert witness is not None and witness.values[x] < 3 and abs(witness.value - 1) < 1e-25
    # a long sum, the size the chapters' shift-invariance checks produce
    a = sp.symbols("a0:40", real=True)
    long_sum = sum(sp.sin(v) * sp.cos(w) for v, w in zip(a, a[1:]))
    witness = symbolic.nonzero_witness(long_sum)
    assert abs(witness.value - long_sum.subs(witness.values).evalf(30)) < 1e-25


def test_nonzero_witness_disproves_a_false_identity_and_finds_none_for_a_true_one():
    a, b = sp.symbols("a b", real=True)
    false_identity = sp.sin(a + b) - sp.sin(a) * sp.cos(b)
    witness = symbolic.nonzero_witness(false_identity)
    assert witness is not None and witness.entry is None
    assert set(witness.values) == {a, b} and all(v.is_Rational for v in witness.values.values())
    assert abs(float(false_identity.subs(witness.values))) > 1e-12      # the witness is real
    assert symbolic.nonzero_witness(sp.sin(a) ** 2 + sp.cos(a) ** 2 - 1) is None
    assert symbolic.nonzero_witness(sp.Integer(0)) is None


def test_nonzero_witness_names_the_entry_and_respects_assumptions():
    x = sp.Symbol("x", positive=True)
    j = sp.Symbol("j", integer=True)
    M = sp.Matrix([[0, sp.sqrt(x) ** 2 - x], [0, x ** 2 + j ** 2 + x * j]])
    witness = symbolic.nonzero_witness(M)
    assert witness.entry == (1, 1)
    assert witness.values[x] > 0 and witness.values[j].is_integer


def test_nonzero_witness_rejects_bad_arguments():
    a = sp.Symbol("a")
    with pytest.raises(ValueError, match="tries"):
        symbolic.nonzero_witness(a, tries=0)
    with pytest.raises(ValueError, match="seed"):
        symbolic.nonzero_witness(a, seed=1.5)
    with pytest.raises(ValueError, match="tolerance"):
        symbolic.nonzero_witness(a, tolerance=-1)


def test_sinusoid_vector_and_shift_matrix_match_companion_absolute():
    from companion import absolute
    thetas = [sp.Integer(10000) ** sp.Rational(-2 * i, 6) for i in range(3)]
    exact = np.array(symbolic.sinusoid_vector(7, thetas).evalf(30), dtype=float).ravel()
    assert np.allclose(exact, absolute.sinusoidal([7], 6)[0], atol=1e-14)
    shift = np.array(symbolic.shift_matrix(5, thetas).evalf(30), dtype=float)
    assert np.allclose(shift, absolute.rotation_for_offset(5, 6), atol=1e-14)
    with pytest.raises(ValueError, match="thetas"):
        symbolic.sinusoid_vector(1, [])


def test_expand_trig_full_proves_the_shift_lemma_and_not_a_wrong_one():
    p, k = sp.symbols("p k", real=True)
    thetas = sp.symbols("theta_0:2", positive=True)
    moved = symbolic.shift_matrix(k, thetas) * symbolic.sinusoid_vector(p, thetas)
    assert symbolic.expand_trig_full(moved - symbolic.sinusoid_vector(p + k, thetas)) == sp.zeros(4, 1)
    wrong = symbolic.shift_matrix(-k, thetas) * symbolic.sinusoid_vector(p, thetas)
    assert symbolic.nonzero_witness(symbolic.expand_trig_full(wrong - symbolic.sinusoid_vector(p + k, thetas)))


def test_sinusoid_vector_exp_is_the_sinusoid_on_the_unit_circle():
    w = sp.Symbol("w")
    phi = sp.Rational(1, 10)
    as_polynomial = symbolic.sinusoid_vector_exp(3, [10, 1], w).subs(w, sp.exp(sp.I * phi))
    direct = symbolic.sinusoid_vector(3, [10 * phi, phi])
    assert np.allclose(np.array(sp.N(as_polynomial - direct, 30), dtype=complex), 0, atol=1e-25)
    with pytest.raises(ValueError, match="position"):
        symbolic.sinusoid_vector_exp(1.5, [1], w)
    with pytest.raises(ValueError, match="powers"):
        symbolic.sinusoid_vector_exp(1, [0.5], w)


def test_clip_and_shaw_score_match_companion_relative():
    from companion import relative
    assert [symbolic.clip(t, 2) for t in (-5, -2, 0, 1, 7)] == [-2, -2, 0, 1, 2]
    rng = np.random.default_rng(3)
    q, k, table = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    expected = relative.shaw_scores(q, k, table)
    def key_table(t):
        return sp.Matrix(table[int(t) + 2])
    got = np.array([[float(symbolic.shaw_score(sp.Matrix(q[i]), sp.Matrix(k[j]), key_table, i, j, 2))
                     for j in range(4)] for i in range(4)])
    assert np.allclose(got, expected, atol=1e-12)
    with pytest.raises(ValueError, match="same height"):
        symbolic.shaw_score(sp.Matrix([1, 2]), sp.Matrix([1]), key_table, 0, 0, 2)


def test_expand_trig_full_uses_the_pythagorean_identity():
    a, b = sp.symbols("a b", real=True)
    # sin(a + b) cos(b) + ... needs sin^2 + cos^2 = 1 after the addition formulas
    identity = sp.sin(a + b) * sp.sin(b) + sp.cos(a + b) * sp.cos(b) - sp.cos(a)
    assert symbolic.expand_trig_full(identity) == 0
    assert symbolic.expand_trig_full(sp.cos(a) ** 4 - (1 - sp.sin(a) ** 2) ** 2) == 0
    assert symbolic.expand_trig_full(sp.cos(a) ** 2 - sp.sin(a) ** 2) != 0


# --- the argument kinds, the witnesses' draws, and each step of is_zero ---------------------


def test_numbers_must_be_finite_at_either_infinity():
    for bad in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        with pytest.raises(ValueError, match=r"^position must be finite \(no nan or infinity\)"):
            symbolic.sinusoid_vector(bad, [1])


def test_a_matrix_may_be_nested_lists_or_a_numeric_array_but_not_empty():
    expected = np.array(symbolic.softmax_rows(sp.Matrix([[1, 2], [3, 4]])).evalf(), dtype=float)
    for spelled in ([[1, 2], [3, 4]], ((1, 2), (3, 4)), np.array([[1, 2], [3, 4]]), np.array([[1.0, 2.0], [3.0, 4.0]])):
        np.testing.assert_allclose(np.array(symbolic.softmax_rows(spelled).evalf(), dtype=float), expected, rtol=1e-14)
    assert symbolic.softmax_rows([1, 2]).shape == (2, 1)   # a flat list is a column
    for bad in ([], (), "[[1, 2]]", 3):
        with pytest.raises(ValueError, match=r"^S must be a matrix \(a SymPy matrix or nested lists\)"):
            symbolic.softmax_rows(bad)


def test_values_from_data_become_sympy_numbers_and_text_is_refused_with_the_reason():
    assert symbolic.sympy_from_data(np.float64(1.5)) == sp.Float(1.5) and symbolic.sympy_from_data(2.5) == sp.Float(2.5)
    with pytest.raises(TypeError, match=r"^a bool is not a SymPy expression$"):
        symbolic.sympy_from_data(True)
    with pytest.raises(TypeError, match=r"^text is not read as a SymPy expression \(build it with SymPy: sp.Symbol, "
                                        r"sp.Rational, \.\.\.\)$"):
        symbolic.sympy_from_data("x + 1")
    with pytest.raises(TypeError, match=r"^a dict is not a SymPy expression$"):
        symbolic.sympy_from_data({})


def test_symbols_carry_their_assumptions_and_the_causal_mask_is_zeros_and_ones():
    assert symbolic.symbol_matrix("x", 1, 2, positive=True)[0, 1].is_positive
    assert symbolic.symbol_matrix("x", 1, 2)[0, 1].is_positive is None
    assert np.array_equal(np.array(symbolic.causal_mask(3), dtype=int), attention.causal_mask(3).astype(int))


def test_softmax_rows_of_a_matrix_that_is_not_square():
    S = symbolic.symbol_matrix("s", 3, 2)
    A = symbolic.softmax_rows(S)
    assert A.shape == (3, 2) and symbolic.is_zero(A[2, 0] - sp.exp(S[2, 0]) / (sp.exp(S[2, 0]) + sp.exp(S[2, 1])))


def test_witness_values_are_drawn_as_documented():
    """Each symbol gets p/q with 1 <= |p| <= 9 and 1 <= q <= 4, positive for a non-negative symbol, an
    integer for an integer one: over 200 seeds every bound is met and reached, and both signs occur."""
    x, y, j = sp.Symbol("x", real=True), sp.Symbol("y", nonnegative=True), sp.Symbol("j", integer=True)
    drawn = {x: [], y: [], j: []}
    for seed in range(200):
        witness = symbolic.nonzero_witness(1 + x**2 + y**2 + j**2, seed=seed)   # never 0: the first draw
        for symbol in drawn:
            drawn[symbol].append(witness.values[symbol])
    for symbol, values in drawn.items():
        p = [abs(v.p) for v in values]
        q = [v.q for v in values]
        assert min(p) == 1 and max(p) == 9 and min(q) == 1 and max(q) <= 4, symbol
    assert max(v.q for v in drawn[x]) == 4 and max(v.q for v in drawn[y]) == 4
    assert all(v.q == 1 for v in drawn[j])
    assert all(v > 0 for v in drawn[y])
    assert any(v < 0 for v in drawn[x]) and any(v > 0 for v in drawn[x]) and any(v < 0 for v in drawn[j])


def test_a_value_as_small_as_the_tolerance_is_no_witness():
    assert symbolic.nonzero_witness(sp.Rational(1, 10**12)) is None
    assert symbolic.nonzero_witness(sp.Rational(2, 10**12)) is not None


def test_is_zero_of_what_expands_to_one_is_false_and_an_identity_only_simplify_proves_is_true():
    a, x = sp.Symbol("a", real=True), sp.Symbol("x", positive=True)
    assert symbolic.is_zero(1) is False
    assert symbolic.is_zero(sp.cos(a) ** 2 + sp.sin(a) ** 2) is False
    assert symbolic.is_zero(sp.exp(a) / (sp.exp(a) + 1) + 1 / (sp.exp(a) + 1)) is False   # its cancel is 1
    assert symbolic.is_zero(sp.gamma(x + 1) - x * sp.gamma(x)) is True
