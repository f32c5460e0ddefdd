"""Grammars that make an answer parse: JSON matching a schema, or Hermes tool calls (tools.py).

llama-cpp-python's JSON-schema-to-GBNF converter (llama.cpp's json_schema_to_grammar, ported)
writes the rules; the Runner puts the grammar first in the sequence's sampler chain, so every
token that would break the format is masked out before the others sample.

Loads llama.cpp (the converter lives in its package): the worker's engine alone imports this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llama_cpp.llama_grammar import RESERVED_NAMES, SchemaConverter

from inference.engine.errors import EngineError
from inference.engine.schema_size import REPEAT_CEILING, first_repeat_over
from inference.engine.tools import CALL_CLOSE, CALL_OPEN, MAX_PARALLEL_CALLS, OutputSpec

# JSON strings may not hold raw control characters (json.loads refuses them); the converter's own
# `char` allows them, llama.cpp's current one does not: this is llama.cpp's.
JSON_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
JSON_DOT = r"[^\x00-\x1F\x7F]"  # a pattern's "any character", inside a JSON string

# A lazy grammar waits for this pattern (a whole-text match) and constrains the text from its
# first group on: the model writes freely until it opens a tool call.
CALL_TRIGGER = r"[\s\S]*?(" + CALL_OPEN + r")[\s\S]*"


MAX_DIGITS = 16  # the converter's own bound on an integer's length
# The longest grammar llama.cpp is handed: Open WebUI's 36 tools make about 40,000 characters.
MAX_GRAMMAR_CHARS = 256 * 1024


def _same_length(lo: str, hi: str) -> str:
    """Numbers of len(lo) digits from lo to hi (equal lengths, lo <= hi), as GBNF."""
    if len(lo) == 1:
        return f"[{lo}-{hi}]"
    if lo[0] == hi[0]:
        return f'"{lo[0]}" ({_same_length(lo[1:], hi[1:])})'
    rest = len(lo) - 1
    if lo[1:] == "0" * rest and hi[1:] == "9" * rest:
        return f"[{lo[0]}-{hi[0]}] [0-9]{{{rest}}}"
    parts = [f'"{lo[0]}" ({_same_length(lo[1:], "9" * rest)})']
    if int(hi[0]) - int(lo[0]) > 1:
        parts.append(f"[{int(lo[0]) + 1}-{int(hi[0]) - 1}] [0-9]{{{rest}}}")
    parts.append(f'"{hi[0]}" ({_same_length("0" * rest, hi[1:])})')
    return " | ".join(parts)


def _natural_range(lo: int, hi: int | None) -> list[str]:
    """Alternatives for the whole numbers lo..hi (0 <= lo; hi None: no upper bound), no sign."""
    out = []
    top = hi if hi is not None else 10**MAX_DIGITS - 1
    for length in range(len(str(lo)), len(str(top)) + 1):
        first = max(lo, 10 ** (length - 1) if length > 1 else 0)
        last = min(top, 10**length - 1)
        if first > last:
            continue
        if hi is None and first == 10 ** (length - 1) and length > len(str(lo)):
            out.append(f"[1-9] [0-9]{{{length - 1},{MAX_DIGITS - 1}}}")  # every longer number
            break
        out.append(_same_length(str(first), str(last)))
    return out


def integer_range(lo: int | None, hi: int | None) -> str:
    """The integers lo..hi (either may be None: unbounded) as a GBNF expression."""
    parts = []
    if hi is None or hi >= 0:
        parts += _natural_range(max(lo or 0, 0) if lo is not None else 0, hi)
    if lo is None or lo < 0:
        negative = _natural_range(max(-hi, 1) if hi is not None and hi < 0 else 1, None if lo is None else -lo)
        parts.append(f'"-" ({" | ".join(negative)})')
    return " | ".join(f"({p})" for p in parts)


def _bounds(schema: dict) -> tuple[int | None, int | None]:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), int | float) and not isinstance(schema["exclusiveMinimum"], bool):
        lo = schema["exclusiveMinimum"] + 1 if lo is None else max(lo, schema["exclusiveMinimum"] + 1)
    if isinstance(schema.get("exclusiveMaximum"), int | float) and not isinstance(schema["exclusiveMaximum"], bool):
        hi = schema["exclusiveMaximum"] - 1 if hi is None else min(hi, schema["exclusiveMaximum"] - 1)
    return (None if lo is None else math.ceil(lo)), (None if hi is None else math.floor(hi))


class _Converter(SchemaConverter):
    """llama-cpp-python's converter, with integer bounds kept (its port predates llama.cpp's)."""

    def visit(self, schema, name):
        if isinstance(schema, dict) and schema.get("type") == "integer" and INT_BOUNDS & schema.keys():
            lo, hi = _bounds(schema)
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"no integer is both >= {lo} and <= {hi}")
            rule_name = name + "-" if name in RESERVED_NAMES else name or "root"
            return self._add_rule(rule_name, f"({integer_range(lo, hi)}) space")
        return super().visit(schema, name)


INT_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


@dataclass(frozen=True)
class Grammar:
    text: str  # GBNF, with a `root` rule
    trigger: str | None = None  # lazy: constrain only from this pattern's match on


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def call_schema(tools: tuple[dict, ...]) -> dict:
    """One call's JSON: {"name": one of the tools, "arguments": that tool's parameters}."""
    options = [
        {
            "type": "object",
            "properties": {"name": {"const": tool["name"]}, "arguments": tool["parameters"]},
            "required": ["name", "arguments"],
        }
        for tool in tools
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def build_grammar(spec: OutputSpec | None) -> Grammar | None:
    """The answer's grammar, or None for free text.

    1. Tools: `tool-call` is <tool_call>, a call's JSON, </tool_call>; `tool-calls` one of them,
       or up to MAX_PARALLEL_CALLS when parallel calls are allowed.
    2. A schema: `answer` is JSON matching it.
    3. root: the calls, the answer, or either. With tool_choice "auto" and no schema the grammar
       is lazy: free text, constrained once the model opens a call.
    """
    if spec is None:
        return None
    _check_repeats(spec)
    converter = _Converter(prop_order={"name": 0, "arguments": 1}, allow_fetch=False, dotall=False, raw_pattern=False)
    alternatives = []
    try:
        if spec.tools:
            call = converter.visit(converter.resolve_refs(call_schema(spec.offered_tools), "tools"), "tool-call-json")
            converter._add_rule("tool-call", f"{_literal(CALL_OPEN + chr(10))} {call} {_literal(chr(10) + CALL_CLOSE)}")
            more = f" ({_literal(chr(10))} tool-call){{0,{MAX_PARALLEL_CALLS - 1}}}" if spec.parallel else ""
            alternatives.append(converter._add_rule("tool-calls", "tool-call" + more))
        if spec.schema is not None:
            alternatives.append(converter.visit(converter.resolve_refs(spec.schema, "schema"), "answer"))
    except Exception as exc:  # the converter's refusals: unsupported keywords, bad $ref, ...
        raise EngineError("invalid_schema", f"The JSON schema cannot be turned into a grammar: {exc}") from exc
    for name, rule in (("char", JSON_CHAR), ("dot", JSON_DOT)):
        if name in converter._rules:
            converter._rules[name] = rule
    converter._add_rule("root", " | ".join(alternatives))
    text = converter.format_grammar()
    if len(text) > MAX_GRAMMAR_CHARS:
        raise EngineError(
            "schema_too_large",
            f"The JSON schema makes a grammar of {len(text):,} characters; the limit is {MAX_GRAMMAR_CHARS:,}. "
            "Ask for fewer repetitions, properties or tools.",
        )
    lazy = bool(spec.tools) and spec.schema is None and spec.tool_choice == "auto"
    return Grammar(text=text, trigger=CALL_TRIGGER if lazy else None)


def _check_repeats(spec: OutputSpec) -> None:
    """Refused before the converter runs, which would write out (and hold in memory) every
    repetition a schema asks: a schema or tool that did not pass the web's check (api/checks.py)."""
    places = [("the schema", spec.schema)] + [(f"tool {t['name']!r}'s parameters", t["parameters"]) for t in spec.tools]
    for place, schema in places:
        if repeat := first_repeat_over(schema, REPEAT_CEILING):
            raise EngineError("schema_too_large", repeat.sentence(place, REPEAT_CEILING))
