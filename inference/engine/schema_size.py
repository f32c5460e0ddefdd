"""How often a JSON schema asks for something to repeat, found before a grammar is built from it.

llama.cpp's schema-to-grammar converter writes every repetition out in full: `minItems: N` is N
copies of the item's rule, `maxLength: N` N nested optional characters, a pattern's `a{N}` N
copies of `a` (and `(a{N}){M}` N times M). A schema of a few dozen characters can so ask for a
grammar of gigabytes. The web refuses a count above HOMEAI_SCHEMA_MAX_REPEAT (api/checks.py);
the engine refuses one above REPEAT_CEILING, the most that setting may be, for any path that
did not pass the web's check (grammar.py). Pure Python: the web imports it without llama.cpp.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REPEAT_CEILING = 10_000  # the most HOMEAI_SCHEMA_MAX_REPEAT may be
COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
COUNTS += ("minContains", "maxContains")
_QUANTIFIER = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")


@dataclass(frozen=True)
class Repeat:
    """One count over the limit: where in the schema, the keyword, and its value."""

    where: str
    keyword: str
    value: int | float

    def sentence(self, field: str, limit: int) -> str:
        place = field + self.where
        if self.keyword == "pattern":
            return (
                f"{place}.pattern: a part repeats {self.value:,} times (its {{n}} counts, nested ones "
                f"multiplied); the limit is {limit:,}. Use * or + instead of large counts."
            )
        return (
            f"{place}: {self.keyword} is {self.value:,}; the limit is {limit:,} (a grammar writes "
            "every repetition out). Leave it out or use a smaller number."
        )


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def pattern_repeats(pattern: str) -> int:
    """The most times a pattern repeats one part: each quantifier's count ({n}, {n,}, {n,m}: its
    largest number), multiplied by those of the groups around it. One pass, however long."""
    inside = [1]  # per open group (the pattern itself first): the most it repeats a part within
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            inside.append(1)
        elif c == ")" and len(inside) > 1:
            group = inside.pop()
            if match := _QUANTIFIER.match(pattern, i + 1):
                group *= _count(match)
                i = match.end() - 1
            inside[-1] = max(inside[-1], group)
        elif c == "{" and (match := _QUANTIFIER.match(pattern, i)):
            inside[-1] = max(inside[-1], _count(match))
            i = match.end()
            continue
        i += 1
    return max(inside)


def _count(match: re.Match) -> int:
    """A quantifier's largest number ({,} alone: 1); a number of more than 12 digits as 10**12."""
    numbers = [int(n) if len(n) <= 12 else 10**12 for n in match.groups() if n]
    return max(numbers, default=1)


def first_repeat_over(schema, limit: int, where: str = "") -> Repeat | None:
    """The first repetition count anywhere in the schema (every nested object and list: items,
    prefixItems, properties, additionalProperties, anyOf, oneOf, allOf, $defs, definitions, ...)
    above limit, else None."""
    if isinstance(schema, list):
        for k, item in enumerate(schema):
            if found := first_repeat_over(item, limit, f"{where}[{k}]"):
                return found
        return None
    if not isinstance(schema, dict):
        return None
    for key, value in schema.items():
        if key in COUNTS and _number(value) and value > limit:
            return Repeat(where, key, value)
        if key == "pattern" and isinstance(value, str) and (times := pattern_repeats(value)) > limit:
            return Repeat(where, "pattern", times)
        if found := first_repeat_over(value, limit, f"{where}.{key}"):
            return found
    return None
