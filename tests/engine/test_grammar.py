"""Grammars from schemas and tools (llama-cpp-python's converter, our rules around it)."""

from __future__ import annotations

import pytest

from inference.engine.errors import EngineError
from inference.engine.grammar import CALL_TRIGGER, JSON_CHAR, build_grammar
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
