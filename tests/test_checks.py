"""companion.checks: answers pass quietly; wrong ones fail with a message a student can act on."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from companion import checks
from companion.checks import CheckFailed


def fails(message_part: str):
    return pytest.raises(CheckFailed, match=message_part)


def test_a_failed_check_is_an_assertion_error_named_after_the_answer():
    assert issubclass(CheckFailed, AssertionError)
    with fails(r"^slopes: expected"):
        checks.close("slopes", 1.0, 2.0)


@pytest.mark.parametrize("value,part", [(None, "no value found"), (Ellipsis, r"still `\.\.\.`")])
def test_placeholders_are_named(value, part):
    with fails(part):
        checks.answer("x", value)
    with fails(part):
        checks.close("x", value, 1.0)
    with fails(part):
        checks.equal("x", value, [1])
    with fails(part):
        checks.function("f", value)
    with fails(part):
        checks.zero("d", value, "a = b")


def test_function_and_result():
    checks.function("f", len)
    with fails("should be a function, but it is a int"):
        checks.function("f", 3)
    assert checks.result("f(1)", 2) == 2
    with fails("returned None. Replace any `...` in the function with your code, and end it with a `return`"):
        checks.result("f(1)", None)
    with fails(r"returned `\.\.\.`"):
        checks.result("f(1)", Ellipsis)


def test_close_accepts_lists_and_tensors_and_reports_shape_and_values():
    checks.close("x", [1.0, 2.0], np.array([1.0, 2.0]))
    checks.close("x", torch.tensor([1.0, 2.0]), [1.0, 2.0], atol=1e-6)
    with fails(r"should have shape \(2, 3\) \(rows, cols\), but has shape \(3, 2\)\. Did you swap the axes\?"):
        checks.close("x", np.zeros((3, 2)), np.zeros((2, 3)), meaning="(rows, cols)")
    with fails(r"At index \(1, 0\) expected 5, got 7 \(1 of 4 entries differ\)"):
        checks.close("x", [[1, 2], [7, 4]], [[1, 2], [5, 4]])
    with fails("contains nan or inf"):
        checks.close("x", [np.nan, 1.0], [0.0, 1.0])
    with fails("should be numbers"):
        checks.close("x", "abc", 1.0)


def test_close_names_the_mistake_it_recognises():
    right = np.array([0.5, 0.25, 0.125])
    late = right / 2
    with fails("the slopes start one head late"):
        checks.close("slopes", late, right, wrong={"the slopes start one head late": late})
    # an unrecognised mistake gets the generic message
    with fails("wrong values"):
        checks.close("slopes", right * 3, right, wrong={"the slopes start one head late": late})


def test_equal_and_integer():
    checks.equal("idx", np.array([0, 2, 1]), [0, 2, 1])
    checks.equal("pair", (1, 2), [1, 2])
    with fails("should have 3 entries, but has 2"):
        checks.equal("idx", [0, 2], [0, 2, 1])
    with fails("entry 1 should be 2, but is 1"):
        checks.equal("idx", [0, 1, 2], [0, 2, 1])
    with fails("the inverse permutation"):
        checks.equal("idx", [2, 0, 1], [1, 2, 0], wrong={"the inverse permutation": [2, 0, 1]})
    checks.integer("n", 14.0, 14)
    checks.integer("n", np.int64(14), 14)
    with fails("should be a whole number, got 14.5"):
        checks.integer("n", 14.5, 14)
    with fails("should be a whole number, but it is a str"):
        checks.integer("n", "14", 14)
    with fails("counts radians"):
        checks.integer("n", 3, 14, wrong={"counts radians": 3})
    with fails("expected 14, got 15"):
        checks.integer("n", 15, 14)


def test_symbolic_checks_name_the_identity():
    a, b = sp.symbols("a b", real=True)
    checks.zero("d", sp.sin(a + b) - sp.sin(a) * sp.cos(b) - sp.cos(a) * sp.sin(b), "the addition formula")
    with fails(r"the addition formula does not hold: the difference simplifies to"):
        checks.zero("d", sp.sin(a + b) - sp.sin(a) * sp.cos(b) + sp.cos(a) * sp.sin(b), "the addition formula")
    checks.zero("M", sp.Matrix([[sp.cos(a) ** 2 + sp.sin(a) ** 2 - 1]]), "cos^2 + sin^2 = 1")
    checks.symbolic_equal("e", (a + b) ** 2, a ** 2 + 2 * a * b + b ** 2)
    with fails(r"should equal a\*\*2 \+ 2\*a\*b \+ b\*\*2.*differs from it by"):
        checks.symbolic_equal("e", (a - b) ** 2, a ** 2 + 2 * a * b + b ** 2)
    with fails("should be a SymPy expression"):
        checks.zero("d", object(), "a = b")
    with fails(r"the factor depends on m \+ n"):
        checks.symbolic_equal("c", a ** (b - a), a ** (a + b), wrong={"the factor depends on m + n": a ** (b - a)})
    checks.symbolic_equal("M", sp.Matrix([[a + a]]), sp.Matrix([[2 * a]]))


def test_holds():
    checks.holds(True, "x", "never shown")
    with fails("^x: the dictionary has no entry for 10000$"):
        checks.holds(False, "x", "the dictionary has no entry for 10000")


def test_answers_become_sympy_from_data_never_from_text(tmp_path):
    """An answer is turned into SymPy from data only: SymPy objects as they are, numbers
    as SymPy numbers; text, in any of the forms SymPy would read as Python (a string, a
    NumPy string, a list or a dict of strings), fails with a message and is never read."""
    m = sp.Symbol("m", positive=True)
    assert checks.expression("e", 1 / (sp.exp(m) - 1)) == 1 / (sp.exp(m) - 1)
    assert checks.expression("e", 3) == sp.Integer(3) and checks.expression("e", np.float64(0.5)) == sp.Float(0.5)
    assert checks.matrix("M", [[1, m], [0, 2]]) == sp.Matrix([[1, m], [0, 2]])
    marker = tmp_path / "ran"
    text = f"open({str(marker)!r}, 'w') and 1"
    for value in (text, np.str_(text), b"1", np.array([text]), [text], {"a": text}):
        with fails("should be a SymPy expression"):
            checks.expression("e", value)
        with fails("should be"):
            checks.symbolic_equal("e", value, m)
        with fails("should be"):
            checks.zero("e", value, "e = 0")
    with fails("it is text"):
        checks.expression("e", text)
    with fails("should be a SymPy matrix"):
        checks.matrix("M", text)
    with fails("should be a SymPy expression"):
        checks.matrix("M", [text, 1])
    with fails("not a number"):
        checks.expression("e", sp.nan)
    assert not marker.exists()


def test_numbers_are_never_read_from_text():
    """A numeric check refuses text (NumPy alone reads "0.5" as 0.5), complex numbers and
    objects, and accepts SymPy numbers."""
    for value in ("0.5", np.array(["0.5"]), [0.5, "1"]):
        with fails("holds text"):
            checks.close("x", value, 0.5)
    with fails("complex"):
        checks.close("x", 0.5 + 1j, 0.5)
    with fails("it is a dict"):
        checks.close("x", {"a": 1}, 0.5)
    checks.close("x", [sp.Rational(1, 2), sp.Float(0.25)], [0.5, 0.25])
