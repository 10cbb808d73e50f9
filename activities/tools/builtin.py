"""Tools that ship with Stalwart: safe enough to enable anywhere."""

from __future__ import annotations

import ast
import math
import operator

from activities.tools.registry import tool

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {"sqrt": math.sqrt, "abs": abs, "round": round, "min": min, "max": max, "log": math.log, "exp": math.exp}
_CONSTANTS = {"pi": math.pi, "e": math.e}
_MAX_EXPONENT = 10_000


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponent {right} is too large (limit {_MAX_EXPONENT})")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
    allowed = "numbers, + - * / // % **, parentheses, " + ", ".join(sorted(_FUNCTIONS)) + ", pi, e"
    raise ValueError(f"unsupported expression {ast.unparse(node)!r}; use only {allowed}")


@tool
def calculator(expression: str) -> float | int:
    """Evaluate an arithmetic expression exactly as written, without running any code.

    Args:
        expression: Arithmetic such as "(17 * 23) + 4" or "sqrt(2) * pi".
    """
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not an arithmetic expression: {err.msg}") from None
    return _evaluate(tree)


@tool
def echo(text: str) -> str:
    """Return the text unchanged; useful to check that tool calling works.

    Args:
        text: The text to echo back.
    """
    return text
