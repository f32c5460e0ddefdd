"""The OpenAI request parser and error mapping, without a server."""

from __future__ import annotations

import pytest

from api import checks
from api.errors import ApiError, from_client_error
from api.openai.parsing import parse_request
from infra.errors import ClientError

MODELS = {"model.gguf": "model.gguf"}


def test_a_chat_body_becomes_a_request_with_its_sampling_options():
    req = parse_request(
        {
            "messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
            "temperature": 0.2,
            "top_k": 5,
            "speculative": False,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        chat=True,
        models=MODELS,
    )
    assert req.messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert req.options == {"temperature": 0.2, "top_k": 5, "speculative": False}
    assert req.stream and req.include_usage


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, "n"),
        ({"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}, "stream"),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": "5"}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}, "tool_choice"),
    ],
)
def test_a_bad_body_names_its_param(body, param):
    with pytest.raises(ApiError) as caught:
        parse_request(body, chat=True, models=MODELS)
    assert caught.value.status == 400 and caught.value.param == param


def test_a_completion_cannot_draw_on_collections_rather_than_ignoring_them():
    with pytest.raises(ApiError) as caught:
        parse_request({"prompt": "1, 2,", "collections": [3]}, chat=False, models=MODELS)
    assert (caught.value.status, caught.value.param, caught.value.code) == (400, "collections", "unsupported_parameter")
    assert "/v1/chat/completions" in caught.value.message
    assert parse_request({"prompt": "1, 2,"}, chat=False, models=MODELS).collections is None


WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
ASKED = [{"role": "user", "content": "Weather in Paris?"}]
ANSWERED = [
    *ASKED,
    {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


@pytest.mark.parametrize(
    ("messages", "reset", "choice"),
    [
        (ASKED, True, "required"),  # the user asked: the call is still forced
        (ANSWERED, True, "auto"),  # the tool answered: the model may now write its answer
        (ANSWERED, None, "required"),  # without the flag, OpenAI's meaning: a call on every turn
        ([*ANSWERED, {"role": "user", "content": "And in Rome?"}], True, "required"),
    ],
)
def test_reset_tool_choice_frees_the_model_once_its_tools_have_answered(messages, reset, choice):
    body = {"messages": messages, "tools": WEATHER, "tool_choice": "required", "reset_tool_choice": reset}
    assert parse_request(body, chat=True, models=MODELS).output.tool_choice == choice


def test_reset_tool_choice_must_be_a_boolean():
    body = {"messages": ASKED, "tools": WEATHER, "tool_choice": "required", "reset_tool_choice": "yes"}
    with pytest.raises(ApiError) as caught:
        parse_request(body, chat=True, models=MODELS)
    assert (caught.value.status, caught.value.param) == (400, "reset_tool_choice")


def test_a_service_error_keeps_its_field_and_the_text_maps_to_messages_or_prompt():
    chat = parse_request({"messages": [{"role": "user", "content": "hi"}]}, chat=True, models=MODELS)
    plain = parse_request({"prompt": "hi"}, chat=False, models=MODELS)
    top_p = from_client_error(ClientError("bad_request", "top_p must be ...", field="top_p"), chat)
    assert (top_p.status, top_p.param, top_p.code) == (400, "top_p", "invalid_value")
    empty = ClientError("empty_message", "Type a message before sending.", field="text")
    assert from_client_error(empty, chat).param == "messages"
    assert from_client_error(empty, plain).param == "prompt"
    assert from_client_error(ClientError("busy", "Busy."), chat).status == 503


def test_client_names_are_sanitised_and_chat_is_reserved():
    assert checks.client_name({"X-Client-Name": "my<script>app"}) == "myscriptapp"
    assert checks.client_name({"User-Agent": "curl/8.1"}) == "curl"
    assert checks.client_name({"X-Client-Name": "chat"}) == "api-chat"
    assert checks.client_name({}) == "api"


def test_a_request_with_too_many_messages_is_refused_before_any_work(settings):
    settings.HOMEAI_MAX_MESSAGES = 3
    body = {"messages": [{"role": "user", "content": "x"}] * 4}
    with pytest.raises(ApiError) as caught:
        parse_request(body, chat=True, models=MODELS)
    error = caught.value
    assert (error.status, error.param, error.code) == (400, "messages", "too_many_messages")
    assert "4 messages; the limit is 3" in error.message
