"""The Ollama request parser and response shapes, without a server."""

from __future__ import annotations

import pytest

from api.errors import ApiError
from api.ollama import wire as ollama_wire
from api.ollama.parsing import parse_chat, parse_generate
from api.ollama.wire import OllamaWire
from api.openai.wire import VisibleText, finish_reason, status_fields

MODELS = {"model.gguf": "model.gguf"}
METRICS = {
    "prompt_tokens": 30,
    "cached_tokens": 10,
    "prefill_ms": 2.5,
    "output_tokens": 4,
    "first_token_ms": 1.0,
    "decode_ms": 3.0,
    "load_ms": 0.0,
    "e2e_ms": 9.0,
    "finish_reason": "length",
}


def test_a_chat_body_maps_options_format_and_tools():
    req = parse_chat(
        {
            "model": "model.gguf:latest",
            "messages": [{"role": "user", "content": "Hi"}],
            "format": "json",
            "options": {
                "temperature": 0.1,
                "num_predict": 10**6,
                "num_ctx": 8192,
                "top_k": 5,
                "seed": None,
                "speculative": False,
                "ignore_eos": True,
            },
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "keep_alive": "5m",
        },
        models=MODELS,
    )
    assert req.model == "model.gguf" and req.stream  # Ollama streams unless told not to
    assert req.options == {"temperature": 0.1, "top_k": 5, "speculative": False, "ignore_eos": True}
    assert req.max_tokens == 2048  # the server's limit: a client's default may be larger
    assert req.output.schema == {"type": "object"} and req.output.tools[0]["name"] == "f"
    assert req.output.tool_choice == "auto"


def test_tool_calls_and_results_in_the_history_become_text_turns():
    req = parse_chat(
        {
            "messages": [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"function": {"name": "w", "arguments": {"c": 1}}}],
                },
                {"role": "tool", "content": "sunny", "tool_name": "w"},
            ],
            "options": {"tool_choice": "required"},
            "tools": [{"type": "function", "function": {"name": "w"}}],
        },
        models=MODELS,
    )
    assert [t["role"] for t in req.messages] == ["user", "assistant", "user"]
    assert req.messages[1]["content"].startswith("<tool_call>") and "sunny" in req.messages[2]["content"]
    assert req.output.tool_choice == "required"


def test_reset_tool_choice_is_read_from_options_and_frees_the_model_after_a_tool_result():
    tools = [{"type": "function", "function": {"name": "w"}}]
    options = {"tool_choice": "required", "reset_tool_choice": True}
    asked = [{"role": "user", "content": "Weather?"}]
    answered = [
        *asked,
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "w", "arguments": {}}}]},
        {"role": "tool", "content": "sunny", "tool_name": "w"},
    ]
    first = parse_chat({"messages": asked, "tools": tools, "options": options}, models=MODELS)
    then = parse_chat({"messages": answered, "tools": tools, "options": options}, models=MODELS)
    assert (first.output.tool_choice, then.output.tool_choice) == ("required", "auto")


def test_no_messages_or_an_empty_prompt_only_loads_the_model():
    assert parse_chat({"model": "model.gguf"}, models=MODELS).load_only == "load"
    assert parse_generate({"prompt": "", "keep_alive": 0}, models=MODELS).load_only == "unload"


def test_generate_uses_the_chat_template_unless_raw():
    req = parse_generate({"prompt": "Hi", "system": "Be brief.", "stream": False}, models=MODELS)
    assert req.messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert req.prompt is None and not req.stream
    raw = parse_generate({"prompt": "1, 2,", "raw": True}, models=MODELS)
    assert raw.prompt == "1, 2," and raw.messages is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "Hi", "images": ["abc"]}]}, "messages[0].images"),
        ({"messages": [{"role": "user", "content": "Hi"}], "think": True}, "think"),
        ({"messages": [{"role": "user", "content": "Hi"}], "options": {"mirostat": 2}}, "mirostat"),
        ({"messages": [{"role": "user", "content": "Hi"}], "format": "yaml"}, "format"),
        ({"messages": [{"role": "user", "content": "Hi"}], "options": {"num_predict": 0}}, "num_predict"),
    ],
)
def test_what_would_change_the_answer_and_cannot_be_honoured_is_refused(body, param):
    with pytest.raises(ApiError) as caught:
        parse_chat(body, models=MODELS)
    assert caught.value.status == 400 and caught.value.param == param


def test_an_unknown_model_is_a_404_that_points_at_the_tags():
    with pytest.raises(ApiError) as caught:
        parse_generate({"model": "llama3", "prompt": "Hi"}, models=MODELS)
    assert caught.value.status == 404 and "GET /api/tags" in caught.value.message


def test_durations_are_our_phases_in_nanoseconds():
    assert ollama_wire.durations(METRICS) == {
        "total_duration": 9_000_000,
        "load_duration": 0,
        "prompt_eval_count": 20,
        "prompt_eval_duration": 2_500_000,
        "eval_count": 4,
        "eval_duration": 4_000_000,
    }


def test_the_last_line_says_done_and_a_cancelled_answer_stops_with_our_status():
    wire = OllamaWire(parse_chat({"messages": [{"role": "user", "content": "Hi"}]}, models=MODELS))
    body = wire.body("Hello", {"status": "cancelled", "metrics": {**METRICS, "finish_reason": "cancelled"}})
    assert body["done"] and body["done_reason"] == "stop" and body["homeai_status"] == "cancelled"
    assert body["message"] == {"role": "assistant", "content": "Hello"}
    assert finish_reason({"status": "cancelled", "metrics": {"finish_reason": "cancelled"}}) == "stop"
    assert status_fields({"status": "cancelled"}) == {"homeai_status": "cancelled"}


def test_streamed_text_stops_at_a_tool_call_and_the_rest_is_sent_at_the_end():
    visible = VisibleText(tools=True)
    sent = "".join(visible.feed(piece) for piece in ["Sure", ". <tool", "_call>\n{", '"name"'])
    assert sent == "Sure. "
    call = 'Sure. <tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert visible.rest(call, [{"name": "f", "arguments": {}}]) == ""
    plain = VisibleText(tools=True)
    plain.feed("a <tool")
    assert plain.rest("a <tool_c", []) == "<tool_c"  # not a call after all: all of it is content
