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


def test_figures_accept_a_rounded_answer_and_say_how_many_figures_a_close_one_gets():
    """A question that asks for four significant figures accepts 2.470 and 2.4697 for
    2.469716 (within one unit of the fourth figure); 2.5 is not close enough, and the
    message counts the figures it gets right without printing the answer."""
    checks.close("slowing_20", 2.470, 2.4697162, figures=4)
    checks.close("slowing_20", 2.4697, 2.4697162, figures=4)
    checks.close("slowing_20", 2.469, 2.4697162, figures=4)  # cut, not rounded: one unit off
    with fails(r"^slowing_20: close, but not as precise as asked: it agrees with the right value to 3 "
               r"significant figures, and the question asks for 4\. It looks rounded"):
        checks.close("slowing_20", 2.467, 2.4697162, figures=4, show_expected=False)
    with fails(r"^slowing_20: 2\.5 is not the right value\.$"):
        checks.close("slowing_20", 2.5, 2.4697162, figures=4, show_expected=False)
    checks.close("zero", 1e-12, 0.0, figures=4, atol=1e-9)  # atol where the answer is 0


def test_a_failure_prints_the_digits_that_differ():
    """3.428976 against 3.42897593...: six digits would print the same number twice."""
    with fails(r"Expected 3\.4289759, got 3\.428976\.$"):
        checks.close("ntk_closed_form", 3.428976, 16 ** (56 / 126), rtol=1e-9)
    with fails(r"Expected 0\.7071068, got 0\.7071067\.$"):
        checks.close("x", 0.70710669, 2 ** -0.5, rtol=1e-9, atol=0)
    with fails(r"^x: expected 0\.707107, got 0\.75\.$"):
        checks.close("x", 0.75, 2 ** -0.5, rtol=1e-9, atol=0)


def test_float32_is_named_when_it_is_what_costs_the_precision():
    right = 2.0 ** (-np.arange(1, 17) / 2)
    for low in (right.astype(np.float32), torch.tensor(right, dtype=torch.float32)):
        with fails(r"agrees with the right values to 7 significant figures.*Your answer is float32"):
            checks.close("slopes", low, right, rtol=1e-9, atol=0)
    checks.close("slopes", right.astype(np.float32), right, rtol=1e-6)  # where float32 is enough, it passes
    computed_in_float32 = np.float64(np.float32(1 / 3))
    with fails("Look for a small error: a step computed in float32"):
        checks.close("x", computed_in_float32, 1 / 3, rtol=1e-9, atol=0)


def test_without_the_expected_value_a_message_names_the_mistake_only():
    """show_expected=False: what is wrong (a sign, a power of ten, an order, which entry),
    never the right value."""
    cases = [(lambda: checks.close("x", -2.5, 2.5, show_expected=False), "It has the wrong sign", None),
             (lambda: checks.close("x", 71.75, 0.7175, show_expected=False), "a factor of 10^2", "0.7175"),
             (lambda: checks.close("x", [3.0, 2.0, 1.0], [1.0, 2.0, 3.0], show_expected=False),
              "reverse order", None),
             (lambda: checks.close("x", np.degrees(1.2), 1.2, show_expected=False), "degrees and radians", "1.2"),
             (lambda: checks.equal("x", [1, 3, 2], [1, 2, 3], show_expected=False),
              "entry 1 (3) is wrong. It holds the right entries in another order", None),
             (lambda: checks.equal("x", [(0, 1, 2), (1, 2, 0)], [(0, 1, 2)], show_expected=False),
              "has 2 entries, more than the right answer", None),
             (lambda: checks.integer("n", 1, 0, show_expected=False), "1 is not the right answer", None)]
    for run, part, hidden in cases:
        with pytest.raises(CheckFailed) as failure:
            run()
        assert part in str(failure.value), str(failure.value)
        if hidden is not None:
            assert hidden not in str(failure.value).split(":", 1)[1].replace(part, ""), str(failure.value)
    m = sp.Symbol("m", positive=True)
    right = 1 / m - sp.Rational(1, 2) + m / 12
    for wrong, part in ((-right, "wrong sign"), (2 * right, "constant factor"), (right + 1, "constant term"),
                        (1 / m - sp.Rational(1, 2), "does not simplify to the right one")):
        with pytest.raises(CheckFailed) as failure:
            checks.symbolic_equal("mean_expansion", wrong, right, "the expansion", show_expected=False)
        assert part in str(failure.value) and "12" not in str(failure.value), str(failure.value)


def test_whole_numbers_nan_infinity_and_text_fail_with_a_message():
    assert checks.whole_number("n", 3) == 3 and checks.whole_number("n", np.int64(3)) == 3
    assert checks.whole_number("n", 3.0) == 3
    for value, part in (("3", "it is a str"), (True, "it is a bool"), (float("nan"), "got nan"),
                        (float("inf"), "got inf"), (2.5, "got 2.5"), (None, "no value found")):
        with fails(part):
            checks.whole_number("n", value)
    with fails("contains nan or inf"):
        checks.close("mae", float("nan"), 1.14, atol=0.05, rtol=0)
    with fails("holds text"):
        checks.close("mae", "1.14", 1.14, atol=0.05, rtol=0)
    with fails("is infinite"):
        checks.expression("e", sp.oo)
    with fails("is infinite"):
        checks.expression("e", float("inf"))
