"""The built-in tools, alone: the calculator reaches nothing of Python but arithmetic."""

import pytest

from inference.tools import builtin


@pytest.mark.parametrize(
    ("expression", "value"),
    [("(2 + 3) * 4.5", "22.5"), ("2 ** 10", "1024"), ("sqrt(16) + pi - pi", "4.0"), ("-7 // 2", "-4")],
)
def test_the_calculator_computes_arithmetic(expression, value):
    assert builtin.calculator(None, {"expression": expression}) == value


@pytest.mark.parametrize(
    "expression",
    ["__import__('os').system('true')", "().__class__", "2 ** 10 ** 10", "1 / 0", "open('x')", "[1] * 9", ""],
)
def test_the_calculator_refuses_anything_else_with_a_sentence(expression):
    with pytest.raises(builtin.ToolError):
        builtin.calculator(None, {"expression": expression})
