r"""SymPy objects the chapters reuse in their proofs.

The chapters prove identities by building both sides symbolically and asserting that
their difference simplifies to zero, and disprove non-identities by a numeric witness:
exact rational values for the symbols at which the difference is clearly not zero. The
building blocks live here so that every chapter uses the same definitions as the
numerical code in :mod:`companion.attention`, :mod:`companion.absolute` and
:mod:`companion.relative`.
"""
from __future__ import annotations

from collections.abc import Callable
from itertools import permutations
from typing import Annotated, NamedTuple

import numpy as np
import sympy as sp

from . import rope
from ._contracts import (
    Anything,
    Count,
    Integer,
    Kind,
    Positive,
    Seed,
    Text,
    WholeNumbers,
    contract,
    permutation,
    rule,
    same_shape,
)
from .rope import Layout

__all__ = [
    "symbol_matrix",
    "permutation_matrix",
    "all_permutation_matrices",
    "causal_mask",
    "softmax_rows",
    "self_attention",
    "is_zero_matrix",
    "is_zero",
    "Witness",
    "nonzero_witness",
    "expand_trig_full",
    "sinusoid_vector",
    "sinusoid_vector_exp",
    "shift_matrix",
    "clip",
    "shaw_score",
    "rotation_matrix",
]



# ---------------------------------------------------------------------------
# The kinds of SymPy arguments: built from data, never from text
# ---------------------------------------------------------------------------

def sympy_from_data(value):
    """``value`` as a SymPy object built from data, never from text; ``TypeError`` otherwise.

    SymPy's own conversion, ``sympify``, reads a string by evaluating it as Python
    (``parse_expr`` runs ``eval``), and reaches strings inside lists, dicts, NumPy arrays
    and any object with ``flat`` and ``shape`` even with ``strict=True`` (a dict's
    values are read as text). A value that may come from someone else's code (an
    answer being graded) must never reach it. This accepts a SymPy object as it is,
    and Python's and NumPy's numbers as the SymPy number of the same value; a SymPy
    matrix is returned unchanged. Anything else, text above all, raises ``TypeError``.
    """
    import fractions

    import sympy as sp

    if isinstance(value, (sp.Basic, sp.MatrixBase)):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"a {type(value).__name__} is not a SymPy expression")
    if isinstance(value, (int, np.integer)):
        return sp.Integer(int(value))
    if isinstance(value, fractions.Fraction):
        return sp.Rational(value.numerator, value.denominator)
    if isinstance(value, (float, np.floating)):
        return sp.Float(float(value))
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        raise TypeError("text is not read as a SymPy expression (build it with SymPy: sp.Symbol, sp.Rational, ...)")
    raise TypeError(f"a {type(value).__name__} is not a SymPy expression")


class SymbolicNumber(Kind):
    """A finite SymPy expression: a symbol, a number or a formula (never text: :func:`sympy_from_data`)."""

    def __call__(self, name, value):
        import sympy as sp

        try:
            expr = sympy_from_data(value)
        except TypeError as err:
            raise ValueError(f"{name} must be SymPy expressions or numbers, got {value!r}") from err
        if not isinstance(expr, sp.Expr):
            raise ValueError(f"{name} must be SymPy expressions or numbers, got {value!r}")
        if expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            raise ValueError(f"{name} must be finite (no nan or infinity), got {value!r}")
        return expr


class SymbolicExpression(Kind):
    """Any SymPy expression, matrix or number, as SymPy's own functions take them; never
    text (:func:`sympy_from_data`)."""

    def __call__(self, name, value):
        try:
            return sympy_from_data(value)
        except TypeError as err:
            raise ValueError(f"{name} must be a SymPy expression, matrix or number, got {value!r} ({err})") from err


class SymbolicNumbers(Kind):
    """A non-empty sequence of finite SymPy expressions, one per pair; returned as a list."""

    def __call__(self, name, value):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) == 0:
            raise ValueError(f"{name} must be a non-empty sequence (one frequency per pair), got {value!r}")
        return [SymbolicNumber()(name, v) for v in value]


class SymbolicMatrix(Kind):
    """A SymPy matrix, nested lists or a numeric NumPy array, each entry a SymPy
    expression or a number (:func:`sympy_from_data`: never text)."""

    def __call__(self, name, value):
        import sympy as sp

        if isinstance(value, sp.MatrixBase):
            return sp.Matrix(value)
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            value = value.tolist()
        rows = value if isinstance(value, (list, tuple)) else None
        try:
            if rows is None or not rows:
                raise TypeError("not a matrix")
            if all(isinstance(row, (list, tuple)) for row in rows):
                return sp.Matrix([[sympy_from_data(entry) for entry in row] for row in rows])
            return sp.Matrix([sympy_from_data(entry) for entry in rows])
        except (TypeError, ValueError, sp.ShapeError) as err:
            raise ValueError(f"{name} must be a matrix (a SymPy matrix or nested lists), got {value!r}") from err


#: A SymPy matrix.
Matrix = Annotated[sp.Matrix, SymbolicMatrix()]
#: The size of a SymPy matrix (one of thousands of entries already takes seconds).
Rows = Annotated[int, Integer(1, 256, why="SymPy builds a larger matrix entry by entry for minutes")]
#: Any SymPy expression, matrix or number (what SymPy's own functions accept), never text.
Expression = Annotated[object, SymbolicExpression()]
#: A position or frequency: a finite SymPy expression or number.
Number = Annotated[object, SymbolicNumber()]
#: Frequencies, one per pair: a non-empty sequence of finite SymPy expressions or numbers.
Numbers = Annotated[list, SymbolicNumbers()]


@contract
def symbol_matrix(name: Annotated[str, Text()], rows: Rows, cols: Rows, **assumptions) -> sp.Matrix:
    r"""A ``rows x cols`` matrix of independent symbols ``name_{ij}`` (0-based)."""
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}", **assumptions))


@contract(permutation)
def permutation_matrix(perm: Annotated[np.ndarray, WholeNumbers(signed=True, floats=False)]) -> sp.Matrix:
    r"""SymPy permutation matrix with ``(P X)[i] = X[perm[i]]``, i.e. ``P[i, perm[i]] = 1``.

    The same convention as :func:`companion.attention.permutation_matrix`.
    """
    n = perm.size
    # P[i, perm[i]] = 1
    return sp.Matrix(n, n, lambda i, j: 1 if j == perm[i] else 0)


@contract
def all_permutation_matrices(n: Annotated[int, Integer(1, 6, why="n! symbolic checks grow fast")]
                             ) -> list[tuple[tuple[int, ...], sp.Matrix]]:
    r"""Every ``(perm, P)`` for the ``n!`` permutations of ``0..n-1``."""
    return [(p, permutation_matrix(np.array(p))) for p in permutations(range(n))]


@contract
def causal_mask(n: Rows) -> sp.Matrix:
    r"""The ``n x n`` causal mask as a 0/1 matrix: ``mask[i, j] = 1`` when ``j <= i``."""
    # mask[i, j] = 1 when j <= i
    return sp.Matrix(n, n, lambda i, j: 1 if j <= i else 0)


def _rows_kept(mask) -> None:
    for i in range(0 if mask is None else mask.rows):
        if all(mask[i, k] == 0 for k in range(mask.cols)):
            raise ValueError(f"mask must keep an entry in every row: row {i} keeps none (nothing to attend to)")


@contract(rule(("S", "mask"), lambda S, mask: mask is None or same_shape("S", "mask")(S, mask)), _rows_kept)
def softmax_rows(S: Matrix, mask: Matrix | None = None) -> sp.Matrix:
    r"""Row-wise softmax of a symbolic matrix: :math:`A_{ij} = e^{S_{ij}} / \sum_k e^{S_{ik}}`.

    With a 0/1 ``mask``, entries where ``mask[i, j] = 0`` get weight 0 and are left out
    of the row's sum (the symbolic counterpart of setting the score to :math:`-\infty`).
    """
    keep = sp.ones(S.rows, S.cols) if mask is None else mask
    out = sp.zeros(S.rows, S.cols)
    for i in range(S.rows):
        # sum_k mask_ik e^{S_ik}
        denominator = sum(keep[i, k] * sp.exp(S[i, k]) for k in range(S.cols))
        for j in range(S.cols):
            # A_ij = mask_ij e^{S_ij} / sum_k mask_ik e^{S_ik}
            out[i, j] = keep[i, j] * sp.exp(S[i, j]) / denominator
    return out


@contract
def self_attention(X: Matrix, W_Q: Matrix, W_K: Matrix, W_V: Matrix, mask: Matrix | None = None) -> sp.Matrix:
    r"""Symbolic single-head self-attention (unmasked unless a 0/1 ``mask`` is given):

    .. math::

        \operatorname{Attn}(X) = \operatorname{softmax}\!\left(\frac{X W_Q (X W_K)^{\mathsf T}}{\sqrt{d_k}}\right)
                                 X W_V

    (Vaswani et al., 2017), the same formula as :func:`companion.attention.self_attention`.
    """
    # Q = X W_Q, K = X W_K, V = X W_V
    Q, K, V = X * W_Q, X * W_K, X * W_V
    # S = Q K^T / sqrt(d_k)
    S = Q * K.T / sp.sqrt(W_K.cols)
    # softmax(S) V
    return softmax_rows(S, mask) * V


@contract
def is_zero_matrix(M: Matrix) -> bool:
    r"""True when every entry of ``M`` simplifies to exactly 0."""
    return all(is_zero(entry) for entry in M)


@contract
def is_zero(expr: Expression) -> bool:
    r"""True when ``expr`` (an expression or a matrix) simplifies to exactly 0.

    Tries the cheap exact rewritings first: multiplying out (``expand``), which
    settles polynomial identities, and multiplying out after writing sines and cosines
    as exponentials (``rewrite(exp)``), which settles every identity between
    trigonometric polynomials in integer multiples of one angle, since both sides
    become the same polynomial in :math:`e^{i\varphi}`; then the same over a common
    denominator (``cancel``), which settles identities between rational functions of
    exponentials such as softmax weights (multiplying out has split :math:`e^{s+m}`
    into :math:`e^s e^m`). Then, for a difference that is not an identity, three
    points of :func:`nonzero_witness`: where one gives a clearly non-zero value the
    answer is ``False`` at once, with no simplification. Then ``sympy.simplify``, then
    the two expansions (``expand_trig``, ``rewrite(exp)``) simplified, for identities
    that ``simplify`` leaves in another form. Each step rewrites ``expr`` into an equal
    expression, so a 0 from any of them is a proof. A ``False`` means SymPy found no
    proof, not that the identity is false; the chapters assert ``True``.
    """
    if isinstance(expr, sp.MatrixBase):
        return is_zero_matrix(expr)
    # a polynomial identity, multiplied out
    if sp.expand(expr) == 0:
        return True
    # a trigonometric one: cos x = (e^{ix} + e^{-ix}) / 2, sin x = (e^{ix} - e^{-ix}) / 2i, multiplied out
    exponentials = sp.expand(expr.rewrite(sp.exp))
    if exponentials == 0:
        return True
    # a rational one: over a common denominator (exp(a + b) = exp(a) exp(b) after expand), the numerator is 0
    if sp.cancel(exponentials) == 0:
        return True
    # not an identity: a point where it is clearly not 0 settles it, before any simplification
    if _clearly_not_zero(expr):
        return False
    if sp.simplify(expr) == 0:
        return True
    if sp.simplify(sp.expand(sp.expand_trig(expr))) == 0:
        return True
    return sp.simplify(sp.expand(expr.rewrite(sp.exp))) == 0


class Witness(NamedTuple):
    """Exact values for the free symbols at which an expression is not zero.

    ``values`` maps each symbol to a rational number, ``entry`` is the ``(row, column)``
    of the non-zero entry of a matrix (``None`` for a plain expression) and ``value``
    is that entry evaluated to 30 significant digits.
    """


    values: dict
    entry: tuple | None
    value: sp.Float


@contract
def nonzero_witness(expr: Expression, seed: Seed = 0, tries: Count = 20, tolerance: Positive = 1e-12) -> Witness | None:
    r"""Rational values for the symbols of ``expr`` at which it is clearly not zero.

    A non-identity is disproved by one counterexample. For each of ``tries`` draws,
    every free symbol gets a rational number ``p/q`` with ``|p| <= 9`` and ``q <= 4``
    (positive when SymPy knows the symbol to be non-negative, an integer when it is an
    integer symbol), the expression is evaluated to 30 digits by SymPy's ``evalf``
    with the numbers put in as it evaluates (``subs=``), which tracks its own error,
    and the first value larger than ``tolerance`` in size is returned. For a matrix,
    the entries are tried in order. ``None`` means that no draw found a non-zero
    value: it proves nothing either way (the expression may be zero, or zero only on
    the points tried).
    """
    entries = list(sp.Matrix(expr)) if isinstance(expr, sp.MatrixBase) else [expr]
    shape = expr.shape if isinstance(expr, sp.MatrixBase) else None
    symbols = sorted(set().union(*(e.free_symbols for e in entries)), key=str)
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        values = {}
        for symbol in symbols:
            sign = 1 if symbol.is_nonnegative else int(rng.choice([-1, 1]))
            numerator = int(rng.integers(1, 10)) * sign
            denominator = 1 if symbol.is_integer else int(rng.integers(1, 5))
            values[symbol] = sp.Rational(numerator, denominator)
        for index, entry in enumerate(entries):
            # evaluated as the numbers are put in: substituting first would rebuild the whole expression
            value = entry.evalf(30, subs=values)
            if value.is_number and abs(complex(value)) > tolerance:
                where = None if shape is None else divmod(index, shape[1])
                return Witness(values, where, value)
    return None


def _clearly_not_zero(expr) -> bool:
    """Whether a few points of :func:`nonzero_witness` find ``expr`` clearly not 0 (an
    expression that cannot be evaluated there counts as not found)."""
    try:
        return nonzero_witness(expr, seed=0, tries=3) is not None
    except (TypeError, ValueError, ArithmeticError):
        return False


def _is_cos_power(e) -> bool:
    return e.is_Pow and isinstance(e.base, sp.cos) and e.exp.is_Integer and e.exp >= 2


def _sin_squared(e):
    (angle,) = e.base.args
    return (1 - sp.sin(angle) ** 2) * sp.cos(angle) ** (e.exp - 2)


@contract
def expand_trig_full(expr: Expression):
    r"""Multiply out, apply the addition formulas everywhere, multiply out again.

    ``expand``, then ``expand_trig`` (:math:`\sin(a+b) = \sin a\cos b + \cos a\sin b`
    and its relatives), then ``expand``; finally every :math:`\cos^2 a` is replaced by
    :math:`1 - \sin^2 a` and the result multiplied out once more, entry by entry for a
    matrix. A difference of trigonometric polynomials that becomes literally 0 this way
    is 0.
    """
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(expand_trig_full)
    out = sp.expand(sp.expand_trig(sp.expand(expr)))
    while out.has(sp.cos) and any(_is_cos_power(e) for e in sp.preorder_traversal(out)):
        out = sp.expand(out.replace(_is_cos_power, _sin_squared))
    return out


@contract
def sinusoid_vector(position: Number, thetas: Numbers) -> sp.Matrix:
    r"""The sinusoidal vector of ``position`` as a SymPy column, ``2 len(thetas)`` long.

    Pair ``i`` is :math:`(\sin\theta_i p, \cos\theta_i p)`, the order of
    :func:`companion.absolute.sinusoidal` (Vaswani et al., 2017, section 3.5). With a
    position it is :math:`\mathrm{PE}(p)`; with a distance ``i - j`` it is
    Transformer-XL's :math:`R_{i-j}` (Dai et al., 2019). ``position`` and ``thetas``
    may be symbols or numbers.
    """
    # (sin theta_i p, cos theta_i p) for each pair
    return sp.Matrix([f(theta * position) for theta in thetas for f in (sp.sin, sp.cos)])


@contract
def sinusoid_vector_exp(position: Annotated[int, Integer()],
                        powers: Annotated[np.ndarray, WholeNumbers(signed=True, floats=False)],
                        w: Expression) -> sp.Matrix:
    r"""The sinusoidal vector written as a Laurent polynomial in one symbol ``w``.

    With :math:`w = e^{\mathrm{i}\varphi}` and pair ``i`` turning at
    :math:`\theta_i = k_i\varphi` (``powers`` holds the integers :math:`k_i`), Euler's
    formula gives pair ``i`` of the vector of ``position`` :math:`p` as
    :math:`\bigl((z - z^{-1})/2\mathrm{i},\ (z + z^{-1})/2\bigr)`, :math:`z = w^{k_i p}`.
    Equal to :func:`sinusoid_vector` at :math:`w = e^{\mathrm{i}\varphi}`; with ``w`` a
    symbol or a rational point, identities become polynomial algebra that SymPy does
    exactly and fast.
    """
    out = []
    for k in powers:
        # z = w^{k_i p}
        z = w ** (int(k) * position)
        # ((z - 1/z) / 2i, (z + 1/z) / 2)
        out += [(z - 1 / z) / (2 * sp.I), (z + 1 / z) / 2]
    return sp.Matrix(out)


@contract
def shift_matrix(offset: Number, thetas: Numbers) -> sp.Matrix:
    r"""The shift :math:`R_k` with :math:`\mathrm{PE}(p + k) = R_k\,\mathrm{PE}(p)`, as SymPy.

    Block-diagonal with one block
    :math:`\begin{pmatrix}\cos\theta_i k & \sin\theta_i k\\ -\sin\theta_i k & \cos\theta_i k\end{pmatrix}`
    per pair, the symbolic twin of :func:`companion.absolute.rotation_for_offset`.
    """
    # one block [[cos theta_i k, sin theta_i k], [-sin theta_i k, cos theta_i k]] per pair
    blocks = [sp.Matrix([[sp.cos(t * offset), sp.sin(t * offset)],
                         [-sp.sin(t * offset), sp.cos(t * offset)]]) for t in thetas]
    return sp.diag(*blocks)


@contract
def clip(t: Expression, c: Expression):
    r"""Shaw et al.'s clipped distance :math:`\operatorname{clip}(t, c) = \max(-c, \min(c, t))`."""
    # max(-c, min(c, t))
    return sp.Max(-c, sp.Min(c, t))


def _columns_fit(q, k, key_table, i, j, c) -> None:
    if q.shape != k.shape or q.cols != 1:
        raise ValueError(f"q and k must be columns of the same height, got shapes {q.shape} and {k.shape}")
    row = sp.Matrix(key_table(clip(j - i, c)))
    if row.shape != q.shape:
        raise ValueError(f"key_table must return a column of height {q.rows}, got shape {row.shape}")


@contract(_columns_fit)
def shaw_score(q: Matrix, k: Matrix, key_table: Annotated[Callable, Anything()], i: Expression, j: Expression,
               c: Expression):
    r"""Shaw et al.'s score :math:`e_{ij} = q\cdot(k + w^K_{\operatorname{clip}(j-i, c)})/\sqrt{d}`.

    ``q`` and ``k`` are SymPy columns of height ``d``; ``key_table`` is a function of the
    clipped distance that returns a column of height ``d`` (a table of undetermined
    functions, or of numbers). The symbolic twin of :func:`companion.relative.shaw_scores`
    (Shaw, Uszkoreit and Vaswani, 2018).
    """
    # w^K_{clip(j - i, c)}
    row = sp.Matrix(key_table(clip(j - i, c)))
    # q . (k + w^K) / sqrt(d)
    return (q.T * (k + row))[0, 0] / sp.sqrt(q.rows)


@contract
def rotation_matrix(position: Number, thetas: Numbers, layout: Layout = "adjacent") -> sp.Matrix:
    r"""The rotation ``R_m`` as a SymPy matrix, for proofs: shape ``(d, d)``, ``d = 2 len(thetas)``.

    The same block-diagonal matrix as :func:`companion.rope.rotation_matrices`, with entries
    ``cos(position * theta_i)`` and ``sin(position * theta_i)`` left symbolic: the
    ``2 x 2`` block ``[[cos, -sin], [sin, cos]]`` of pair ``i`` sits on the rows and
    columns ``(a_i, b_i)`` of :func:`companion.rope.pair_indices` (Su et al. 2021, eq. (15)).
    ``position``: any SymPy expression or number (a symbol ``m``, ``n - m``, ``7``);
    ``thetas``: a non-empty sequence of SymPy expressions or numbers, one per pair.
    ``rotation_matrix(a, [1])`` is the plane rotation by the angle ``a``. The SymPy
    twin of :func:`companion.rope.rotation_matrices`.
    """
    d = 2 * len(thetas)
    a, b = rope.pair_indices(d, layout)
    R = sp.zeros(d, d)
    for i, theta in enumerate(thetas):
        phi = position * theta
        # [[cos, -sin], [sin, cos]] of position * theta_i on rows and columns (a_i, b_i)
        R[int(a[i]), int(a[i])], R[int(a[i]), int(b[i])] = sp.cos(phi), -sp.sin(phi)
        R[int(b[i]), int(a[i])], R[int(b[i]), int(b[i])] = sp.sin(phi), sp.cos(phi)
    return R

