"""The built-in tools: the time in the home's time zone, a calculator, the household's documents.

Each is a plain function of its arguments (and the person asking) returning text; bad
arguments raise ToolError with a sentence the model (and the person, on the card) can read."""

from __future__ import annotations

import ast
import math
import operator
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings

from documents import selectors as documents


class ToolError(Exception):
    """A call that could not run: its message goes back to the model and onto the card."""


TOOLS = {
    "current_time": {
        "description": "The current date, time and weekday in the home's time zone.",
        "parameters": {"type": "object", "properties": {}},
    },
    "calculator": {
        "description": "Evaluate an arithmetic expression (+ - * / // % **, parentheses, sqrt, round, pi).",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "for example (2 + 3) * 4.5"}},
            "required": ["expression"],
        },
    },
    "search_documents": {
        "description": "Search the household's documents for passages about a question.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to look for"}},
            "required": ["query"],
        },
    },
}


def current_time(user, arguments: dict) -> str:
    zone = ZoneInfo(settings.TIME_ZONE)
    now = datetime.now(zone)
    return f"{now:%A %Y-%m-%d %H:%M:%S} ({settings.TIME_ZONE}, UTC{now:%z})"


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
_FUNCTIONS = {"sqrt": math.sqrt, "round": round, "abs": abs}
_NAMES = {"pi": math.pi, "e": math.e}
MAX_EXPRESSION = 200
MAX_POWER = 1000  # 2 ** 10 ** 10 would hold the worker's thread for ever
MAX_NUMBER = 10**300


def calculator(user, arguments: dict) -> str:
    expression = arguments.get("expression")
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError("Give an arithmetic expression as text.")
    if len(expression) > MAX_EXPRESSION:
        raise ToolError(f"That expression is longer than {MAX_EXPRESSION} characters.")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ToolError(f"{expression!r} is not an arithmetic expression.") from None
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("Division by zero.") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise ToolError(f"Cannot compute that: {exc}.") from None
    return repr(value) if isinstance(value, float) else str(value)


def _evaluate(node: ast.AST) -> float | int:
    """Numbers, the operators above, and a few functions: nothing else of Python is reachable."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_POWER:
            raise ToolError(f"Powers above {MAX_POWER} are not computed.")
        value = _BINARY[type(node.op)](left, right)
        if isinstance(value, complex) or abs(value) > MAX_NUMBER:
            raise ToolError("The result is too large or not a real number.")
        return value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
        and 1 <= len(node.args) <= 2
    ):
        return _FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
    raise ToolError("Only numbers, + - * / // % **, parentheses, sqrt, round, abs, pi and e are allowed.")


SEARCH_HITS = 3


def search_documents(user, arguments: dict) -> str:
    """Full-text search over every collection the person may read (documents.selectors.search)."""
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("Give the words to look for.")
    hits = []
    for collection in documents.readable_collections(user):
        hits += [
            (hit, collection.name) for hit in documents.search(user, collection.id, query, None, limit=SEARCH_HITS)
        ]
    if not hits:
        return "No passage of the household's documents matches."
    hits.sort(key=lambda pair: -pair[0].score)
    parts = []
    for hit, collection in hits[:SEARCH_HITS]:
        chunk = hit.chunk
        where = f", page {chunk.page}" if chunk.page else ""
        parts.append(f"[{collection} / {chunk.document.path}{where}]\n{chunk.text}")
    return "\n\n".join(parts)


RUN = {"current_time": current_time, "calculator": calculator, "search_documents": search_documents}
