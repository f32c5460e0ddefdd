"""Grammars from schemas and tools (llama-cpp-python's converter, our rules around it)."""

from __future__ import annotations

import time

import pytest

from inference.engine.errors import EngineError
from inference.engine.grammar import CALL_TRIGGER, JSON_CHAR, MAX_GRAMMAR_CHARS, build_grammar
from inference.engine.schema_size import pattern_repeats
from inference.engine.tools import OutputSpec

WEATHER = {
    "name": "get_weather",
    "description": "",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
CLOCK = {"name": "get_time", "description": "", "parameters": {"type": "object", "properties": {}}}


def rules(text: str) -> dict[str, str]:
    return dict(line.split(" ::= ", 1) for line in text.splitlines())


def test_free_text_has_no_grammar():
    assert build_grammar(None) is None


def test_a_schema_is_the_root_and_strings_hold_no_raw_control_characters():
    grammar = build_grammar(OutputSpec(schema={"type": "object", "properties": {"a": {"type": "string"}}}))
    found = rules(grammar.text)
    assert found["root"] == "answer" and grammar.trigger is None
    assert found["char"] == JSON_CHAR and "\\x00-\\x1F" in found["char"]


def test_tools_on_auto_wait_for_the_model_to_open_a_call():
    grammar = build_grammar(OutputSpec(tools=(WEATHER, CLOCK)))
    found = rules(grammar.text)
    assert grammar.trigger == CALL_TRIGGER and found["root"] == "tool-calls"
    assert found["tool-call"] == '"<tool_call>\\n" tool-call-json "\\n</tool_call>"'
    assert found["tool-calls"] == 'tool-call ("\\n" tool-call){0,3}'
    assert '"\\"get_weather\\""' in grammar.text and '"\\"get_time\\""' in grammar.text


def test_a_named_tool_is_the_only_one_and_one_call_when_parallel_is_off():
    grammar = build_grammar(OutputSpec(tools=(WEATHER, CLOCK), tool_choice="get_time", parallel=False))
    found = rules(grammar.text)
    assert grammar.trigger is None and found["tool-calls"] == "tool-call"
    assert "get_weather" not in grammar.text


def test_tools_and_a_schema_together_allow_either():
    grammar = build_grammar(OutputSpec(schema={"type": "object"}, tools=(WEATHER,)))
    assert rules(grammar.text)["root"] == "tool-calls | answer" and grammar.trigger is None


def test_a_schema_the_converter_refuses_is_an_error_the_client_can_act_on():
    with pytest.raises(EngineError) as caught:
        build_grammar(OutputSpec(schema={"$ref": "https://example.com/schema.json"}))
    assert caught.value.code == "invalid_schema" and "cannot be turned into a grammar" in caught.value.message


def test_a_schema_with_a_count_past_the_ceiling_is_refused_before_the_converter_writes_it_out():
    # A path that skipped the web's check (api/checks.py): refused before the converter runs.
    for schema in (
        {"type": "array", "items": {"type": "string"}, "minItems": 300_000_000},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a{1000}){1000}$"}}},
    ):
        started = time.monotonic()
        with pytest.raises(EngineError) as caught:
            build_grammar(OutputSpec(schema=schema))
        assert caught.value.code == "schema_too_large" and "the limit is 10,000" in caught.value.message
        assert time.monotonic() - started < 1
    big_tool = {**WEATHER, "parameters": {"type": "object", "properties": {"city": {"maxLength": 50_000}}}}
    with pytest.raises(EngineError, match="tool 'get_weather'.s parameters.properties.city: maxLength is 50,000"):
        build_grammar(OutputSpec(tools=(big_tool,)))


def test_a_grammar_longer_than_its_cap_is_refused_before_llama_cpp_sees_it():
    # Each count under the ceiling, but five patterns of 10,000 letters, each written out in full.
    properties = {f"p{i}": {"type": "string", "pattern": f"^{i}[a-z]{{10000}}$"} for i in range(5)}
    with pytest.raises(EngineError) as caught:
        build_grammar(OutputSpec(schema={"type": "object", "properties": properties}))
    assert caught.value.code == "schema_too_large" and f"the limit is {MAX_GRAMMAR_CHARS:,}" in caught.value.message


def test_a_schema_with_a_few_repetitions_still_makes_its_grammar():
    schema = {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 3, "maxItems": 4}
    text = build_grammar(OutputSpec(schema=schema)).text
    answer = rules(text)["answer"]
    assert answer.count("answer-item") == 4  # three written out, and one more optional
    assert len(text) < 2_000


@pytest.mark.parametrize(
    ("pattern", "repeats"),
    [("a{300}", 300), ("a{300,}", 300), ("a{2,300}", 300), ("(ab{20}){20}", 400), (r"\{999}", 1), ("[a{999}]", 1)],
)
def test_a_patterns_repetitions_are_its_largest_counts_nested_ones_multiplied(pattern, repeats):
    assert pattern_repeats(pattern) == repeats
