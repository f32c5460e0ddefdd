"""The Ollama request parser and response shapes, without a server."""

from __future__ import annotations

import json

import ollama
import pytest

from api.errors import ApiError
from api.ollama import wire as ollama_wire
from api.ollama.parsing import parse_chat, parse_generate
from api.ollama.wire import OllamaWire
from api.openai.parsing import parse_request
from api.openai.wire import VisibleText, finish_reason, sources_fields, status_fields

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


ASK = [{"role": "user", "content": "How much was the deposit?"}]
SOURCE = {
    "n": 1,
    "collection": 3,
    "document": 17,
    "chunk": 42,
    "path": "lease.pdf",
    "page": 3,
    "section": "Parties",
    "text": "The deposit is 1200 euros, paid in May.",
    "file": "/documents/3/files/17#page=3",  # the Documents page's link, as stored
}


def test_collections_are_read_from_the_body_or_from_options_as_ollama_clients_pass_them():
    assert parse_chat({"messages": ASK, "collections": [3, 4]}, models=MODELS).collections == [3, 4]
    from_options = parse_chat({"messages": ASK, "options": {"collections": [5], "temperature": 0}}, models=MODELS)
    assert from_options.collections == [5] and from_options.options == {"temperature": 0}
    both = parse_chat({"messages": ASK, "collections": [3], "options": {"collections": [5]}}, models=MODELS)
    assert both.collections == [3]  # the body's own field wins
    assert parse_chat({"messages": ASK}, models=MODELS).collections is None
    assert parse_generate({"prompt": "Deposit?", "collections": [3]}, models=MODELS).collections == [3]
    assert parse_generate({"prompt": "1, 2,", "raw": True, "collections": []}, models=MODELS).collections == []


@pytest.mark.parametrize(
    "body",
    [{"collections": "all"}, {"collections": [3, "4"]}, {"collections": [True]}, {"options": {"collections": 3}}],
)
def test_a_bad_collections_value_is_refused_as_on_the_openai_api(body):
    with pytest.raises(ApiError) as ollama_side:
        parse_chat({"messages": ASK, **body}, models=MODELS)
    with pytest.raises(ApiError) as generate_side:
        parse_generate({"prompt": "Deposit?", **body}, models=MODELS)
    openai_body = {"collections": body.get("collections", body.get("options", {}).get("collections"))}
    with pytest.raises(ApiError) as openai_side:
        parse_request({"messages": ASK, **openai_body}, chat=True, models=MODELS)
    for caught in (ollama_side, generate_side, openai_side):
        assert (caught.value.status, caught.value.param, caught.value.code) == (400, "collections", "invalid_type")
        assert caught.value.message == "collections must be a list of collection ids (integers)."
    response = ollama_wire.error_response(ollama_side.value)
    assert json.loads(response.content) == {"error": "collections must be a list of collection ids (integers)."}


def test_a_raw_generate_cannot_draw_on_collections():
    with pytest.raises(ApiError) as caught:
        parse_generate({"prompt": "1, 2,", "raw": True, "collections": [3]}, models=MODELS)
    assert (caught.value.status, caught.value.param) == (400, "collections") and "raw" in caught.value.message


def test_the_done_line_carries_the_same_sources_as_the_openai_answer_and_the_ollama_client_reads_it():
    done = {"status": "done", "metrics": METRICS, "sources": [SOURCE]}
    expected = sources_fields(done)["homeai_sources"]
    assert expected[0]["file"] == "/v1/collections/3/documents/17/file"  # the file through the API
    chat = OllamaWire(parse_chat({"messages": ASK, "collections": [3]}, models=MODELS))
    body = chat.body("1200 euros [1].", done)
    assert body["homeai_sources"] == expected
    assert ollama.ChatResponse(**body).message.content == "1200 euros [1]."

    lines = [json.loads(line) for line in chat.end(done, "1200 euros", []).splitlines()]
    assert [("homeai_sources" in line, line["done"]) for line in lines] == [(False, False), (True, True)]
    assert lines[-1]["homeai_sources"] == expected
    assert [ollama.ChatResponse(**line).done for line in lines] == [False, True]
    assert b"homeai_sources" not in chat.text("1200")

    generate = OllamaWire(parse_generate({"prompt": "Deposit?", "collections": [3]}, models=MODELS))
    answered = generate.body("1200 euros [1].", done)
    assert answered["homeai_sources"] == expected and ollama.GenerateResponse(**answered).done
    assert "homeai_sources" not in chat.body("Hello", {"status": "done", "metrics": METRICS, "sources": []})
