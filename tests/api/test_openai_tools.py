"""Tools and structured output on /v1, end to end with the official `openai` client."""

from __future__ import annotations

import json

import jsonschema
import pytest

from inference.models import Generation
from tests.api.test_openai_api import MODEL, _post

pytestmark = [pytest.mark.integration]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city's name"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "pets": {"type": "array", "items": {"enum": ["cat", "dog", "fish"]}, "maxItems": 3},
    },
    "required": ["name", "age", "pets"],
    "additionalProperties": False,
}


def test_a_weather_tool_round_trip(api):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = api.chat.completions.create(
        model=MODEL, messages=messages, tools=[WEATHER_TOOL], tool_choice="required", temperature=0
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    city = json.loads(call.function.arguments)["city"]

    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": f"18 degrees and sunny in {city}"},
    ]
    second = api.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER_TOOL], temperature=0)
    assert second.choices[0].finish_reason in ("stop", "length") and second.choices[0].message.content
    assert not second.choices[0].message.tool_calls


def test_a_loop_that_sends_the_same_body_back_gets_a_call_then_an_answer(api):
    # An agent loop such as Open WebUI's repeats its settings on every turn; reset_tool_choice
    # forces the call only until a tool result is in the history.
    same = {"tools": [WEATHER_TOOL], "tool_choice": "required", "extra_body": {"reset_tool_choice": True}}
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = api.chat.completions.create(model=MODEL, messages=messages, temperature=0, **same)
    call = first.choices[0].message.tool_calls[0]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "18 degrees and sunny"},
    ]
    second = api.chat.completions.create(model=MODEL, messages=messages, temperature=0, **same)
    assert second.choices[0].finish_reason in ("stop", "length") and not second.choices[0].message.tool_calls
    assert Generation.objects.latest("id").output["tool_choice"] == "auto"


def test_a_named_tool_streams_as_tool_call_deltas(api):
    chunks = list(
        api.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Weather in Oslo?"}],
            tools=[WEATHER_TOOL],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            parallel_tool_calls=False,
            stream=True,
            # Greedy, as the round trips above: sampled, the small model once wrote the city's
            # string on past its closing brace until max_tokens (the grammar bounds no string;
            # test_response_format_... below bounds its schema's), and the call never parsed.
            temperature=0,
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.content or "" for d in deltas) == ""
    calls = [tc for d in deltas for tc in d.tool_calls or ()]
    assert len(calls) == 1 and calls[0].index == 0 and calls[0].function.name == "get_weather"
    assert isinstance(json.loads(calls[0].function.arguments)["city"], str)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_response_format_json_schema_and_json_object_always_parse(api):
    for seed in (1, 2, 3):
        answer = api.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Describe a person and their pets."}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "person", "schema": PERSON, "strict": True},
            },
            temperature=0.9,
            seed=seed,
            max_tokens=300,
        )
        assert answer.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(answer.choices[0].message.content), PERSON)
    # Greedy: a free-form object is unbounded, and sampled, a small model may write one until
    # max_tokens (docs/api.md); the schema's bounds above are what make sampled answers end.
    anything = api.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Say hi."}],
        response_format={"type": "json_object"},
        max_tokens=300,
        temperature=0,
    )
    assert isinstance(json.loads(anything.choices[0].message.content), dict)
    assert Generation.objects.latest("id").output == {"schema": {"type": "object"}}


def test_harmless_fields_are_accepted_and_penalties_are_honoured(api):
    answer = api.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Hi"}],
        max_tokens=3,
        user="ada",
        metadata={"from": "tests"},
        logit_bias={"100": 5},
        presence_penalty=0.5,
        frequency_penalty=0.2,
        extra_body={"repeat_penalty": 1.3},
        tools=[WEATHER_TOOL],
        tool_choice="none",
    )
    assert answer.choices[0].message.content is not None
    generation = Generation.objects.get(id=int(answer.id.split("-")[1]))
    assert generation.output == {}
    sampling = generation.sampling
    assert (sampling["presence_penalty"], sampling["frequency_penalty"], sampling["repeat_penalty"]) == (0.5, 0.2, 1.3)

    # Each penalty changes a greedy answer that repeats itself (a token already written is pushed down).
    def greedy(**penalty) -> str:
        # The base model (raw completions) writing freely repeats common words; ignore_eos: always 32 tokens.
        prompt = "Once upon a time, in a small village by the sea, there lived"
        extra_body = {"ignore_eos": True, **penalty.pop("extra_body", {})}
        reply = api.completions.create(
            model="gemma3:270m", prompt=prompt, max_tokens=32, temperature=0, extra_body=extra_body, **penalty
        )
        return reply.choices[0].text

    plain = greedy()
    words = [w.strip(".,;:!?\"'").lower() for w in plain.split()]
    assert len(set(words)) < len(words), plain  # the plain answer repeats a word: something to penalise
    for penalty in ({"presence_penalty": 2.0}, {"frequency_penalty": 2.0}, {"extra_body": {"repeat_penalty": 2.0}}):
        assert greedy(**penalty) != plain, penalty


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "tools[0].function.name"),
        ({"tools": [WEATHER_TOOL], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
        ({"response_format": {"type": "xml"}}, "response_format"),
        ({"functions": [{"name": "f"}]}, "functions"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"schema": {"$ref": "https://x.test/s"}}}},
            "response_format",
        ),
    ],
)
def test_what_cannot_be_honoured_is_a_400_naming_the_field(api, api_key, live_server_url, body, param):
    response = _post(
        live_server_url, "/v1/chat/completions", api_key, {"messages": [{"role": "user", "content": "Hi"}], **body}
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
