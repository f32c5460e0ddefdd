"""Tool calls as text (the Hermes format): the system block, history turns, parsing answers back."""

from __future__ import annotations

import json

from inference.engine.tools import (
    OutputSpec,
    answer_calls,
    call_text,
    history_turns,
    matching_tools,
    parse_calls,
    tool_tokens,
    tools_system_text,
    with_tools_in_system,
)
from tests.api.openwebui_tools import FUNCTIONS, WRITE_NOTE

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


def test_the_tools_go_at_the_start_of_the_system_message_or_in_a_new_one():
    # First: the client's system text (a date, a time) changes per request; the block must not.
    with_system = with_tools_in_system(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], [WEATHER]
    )
    assert with_system[0]["content"].startswith("# Tools") and with_system[0]["content"].endswith("\n\nBe brief.")
    assert len(with_system) == 2
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


def test_the_same_tools_in_any_order_render_the_same_block():
    assert tools_system_text([WEATHER, WRITE_NOTE]) == tools_system_text([WRITE_NOTE, WEATHER])


def test_the_tools_matching_the_question_are_offered_within_the_budget_in_the_order_sent():
    budget = 1024
    assert tool_tokens(FUNCTIONS) > 7 * budget  # Open WebUI's 36 default tools
    offered = matching_tools(FUNCTIONS, "Remind me to take the bins out tomorrow at 7am.", budget)
    names = [t["name"] for t in offered]
    assert "create_calendar_event" in names and tool_tokens(offered) <= budget
    assert names == [t["name"] for t in FUNCTIONS if t["name"] in names]
    assert "search_chats" in [t["name"] for t in matching_tools(FUNCTIONS, "Search my earlier chats", budget)]
    assert matching_tools(FUNCTIONS, "Why is the sky blue?", budget) == ()


def test_a_forced_call_cut_at_max_tokens_is_a_call_with_what_was_written():
    spec = OutputSpec(tools=(WEATHER, WRITE_NOTE), tool_choice="required")
    cut = '<tool_call>\n{"name": "write_note", "arguments": {"title": "Bins", "content": "Take the bins out, then'
    assert answer_calls(cut, spec, "length") == (
        "",
        [
            {
                "name": "write_note",
                "arguments": {"title": "Bins", "content": "Take the bins out, then"},
                "written": '{"title": "Bins", "content": "Take the bins out, then',
            }
        ],
    )
    # A key without its value is left out; a name cut short is the offered tool it begins.
    assert answer_calls('<tool_call>\n{"name": "write_note", "arguments": {"title": "B", "con', spec, "length")[1] == [
        {"name": "write_note", "arguments": {"title": "B"}, "written": '{"title": "B", "con'}
    ]
    assert answer_calls('<tool_call>\n{"name": "get_wea', spec, "length")[1][0]["name"] == "get_weather"
    # Whole calls before the cut one are kept as they are.
    whole = call_text("get_weather", {"city": "Oslo"})
    assert answer_calls(whole + '\n<tool_call>\n{"name": "write_note", "arguments": {"ti', spec, "length")[1] == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
        {"name": "write_note", "arguments": {}, "written": '{"ti'},
    ]
    # Not cut, or no tools: as parse_calls reads it.
    assert answer_calls(cut, spec, "stop") == (cut, [])
    assert answer_calls(cut, None, "length") == (cut, [])
