"""Tool calls as text (the Hermes format): the system block, history turns, parsing answers back."""

from __future__ import annotations

import json

from inference.engine.tools import (
    OutputSpec,
    call_text,
    history_turns,
    parse_calls,
    tools_system_text,
    with_tools_in_system,
)

WEATHER = {
    "name": "get_weather",
    "description": "Get the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_the_tools_block_lists_each_function_as_openai_writes_it_and_shows_the_call_format():
    text = tools_system_text([WEATHER])
    listed = text.split("<tools>\n")[1].split("\n</tools>")[0]
    assert json.loads(listed) == {"type": "function", "function": WEATHER}
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in text


def test_the_tools_go_at_the_end_of_the_system_message_or_in_a_new_one():
    with_system = with_tools_in_system(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], [WEATHER]
    )
    assert with_system[0]["content"].startswith("Be brief.\n\n# Tools") and len(with_system) == 2
    without = with_tools_in_system([{"role": "user", "content": "Hi"}], [WEATHER])
    assert without[0]["role"] == "system" and without[0]["content"].startswith("# Tools") and len(without) == 2


def test_history_writes_calls_after_the_text_and_a_run_of_results_as_one_user_turn():
    turns = history_turns(
        [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {"name": "get_weather", "arguments": {"city": "Paris"}},
                    {"name": "get_weather", "arguments": {"city": "Rome"}},
                ],
            },
            {"role": "tool", "content": "18 C"},
            {"role": "tool", "content": "24 C"},
        ]
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == "Checking.\n" + call_text("get_weather", {"city": "Paris"}) + "\n" + call_text(
        "get_weather", {"city": "Rome"}
    )
    assert turns[2]["content"] == "<tool_response>\n18 C\n</tool_response>\n<tool_response>\n24 C\n</tool_response>"


def test_an_answer_parses_into_its_text_and_its_calls():
    text = 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert parse_calls(text) == ("Let me look.", [{"name": "get_weather", "arguments": {"city": "Paris"}}])
    two = call_text("a", {}) + "\n" + call_text("b", {"x": 1})
    assert parse_calls(two) == ("", [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}])
    stringly = '<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>'
    assert parse_calls(stringly)[1] == [{"name": "a", "arguments": {"x": 1}}]


def test_a_close_tag_inside_an_argument_string_does_not_end_the_call():
    # A grammar-valid call that the 135M model wrote (seen through Open WebUI's Ollama connection).
    text = '<tool_call>\n{"name": "get_weather", "arguments": { "city" : "Paris }}</tool_call>  # Returns `{"} }'
    text += "\n</tool_call>"
    city = "Paris }}</tool_call>  # Returns `{"
    assert parse_calls(text) == ("", [{"name": "get_weather", "arguments": {"city": city}}])
    assert parse_calls(text + "\n" + call_text("b", {}))[1][1] == {"name": "b", "arguments": {}}


def test_text_without_a_whole_call_is_all_content():
    assert parse_calls("Just words.") == ("Just words.", [])
    cut = '<tool_call>\n{"name": "get_weather", "argum'  # cut at max_tokens
    assert parse_calls(cut) == (cut, [])
    assert parse_calls('<tool_call>{"name": 3, "arguments": {}}</tool_call>')[1] == []
    assert parse_calls('<tool_call>{"name": "a", "arguments": {}} and more</tool_call>')[1] == []


def test_an_output_spec_survives_the_database_round_trip():
    spec = OutputSpec(schema={"type": "object"}, tools=(WEATHER,), tool_choice="get_weather", parallel=False)
    assert OutputSpec.from_dict(spec.as_dict()) == spec
    assert OutputSpec.from_dict({}) is None
    assert spec.forced_tool == "get_weather" and spec.offered_tools == (WEATHER,)
    assert OutputSpec(tools=(WEATHER,), tool_choice="required").forced_tool is None
