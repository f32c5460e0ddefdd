"""Ollama's API, end to end: the official `ollama` client and LangChain's ChatOllama -> daphne ->
Celery worker -> llama.cpp (the bundled chat model), on the same keys and path as /v1."""

from __future__ import annotations

import json
from typing import Literal

import httpx
import jsonschema
import ollama
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_ollama import ChatOllama
from pydantic import BaseModel, Field

from inference.models import Generation
from tests.api.test_openai_api import MODEL
from tests.support import wait_until

pytestmark = [pytest.mark.integration]

WEATHER_QUESTION = "What is the weather in Paris?"
STORY = "Write a long story about a lighthouse keeper and the sea."
GREEDY = {"temperature": 0, "num_predict": 8}


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
      city: The city's name, e.g. Paris
    """
    return f"18 degrees and sunny in {city}"


class Person(BaseModel):
    name: str = Field(max_length=20)
    age: int = Field(ge=0, le=120)
    colour: Literal["red", "green", "blue"]


@pytest.fixture
def client(live_server_url, worker, settled, api_key) -> ollama.Client:
    """The official client, pointed at the live server with a real key (as Ollama clients send one)."""
    return ollama.Client(host=live_server_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=180)


@pytest.fixture
def staff_client(live_server_url, worker, settled, staff_api_key) -> ollama.Client:
    """The official client with a staff member's key: loading and unloading models is theirs."""
    return ollama.Client(host=live_server_url, headers={"Authorization": f"Bearer {staff_api_key}"}, timeout=180)


def test_it_streams_a_chat_with_ollamas_fields_and_durations_from_our_phases(client):
    parts = list(client.chat(model=MODEL, messages=[{"role": "user", "content": STORY}], stream=True, options=GREEDY))
    assert all(p.model == MODEL and p.created_at for p in parts)
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
    text = "".join(p.message.content or "" for p in parts)
    last = parts[-1]
    assert last.done_reason == "length" and last.eval_count == 8
    assert last.prompt_eval_count > 5 and last.prompt_eval_duration > 0 and last.eval_duration > 0
    assert last.total_duration >= last.load_duration + last.prompt_eval_duration + last.eval_duration

    generation = Generation.objects.latest("id")
    assert generation.status == "done" and generation.output_tokens == 8 and generation.client == "ollama-python"
    assert generation.conversation.source == "api" and generation.message.content == text
    assert last.eval_duration == round((generation.first_token_ms + generation.decode_ms) * 1e6)
    assert last.prompt_eval_duration == round(generation.prefill_ms * 1e6)


def test_it_answers_a_chat_whole_and_a_generate_streamed_whole_and_raw(client):
    whole = client.chat(model=MODEL + ":latest", messages=[{"role": "user", "content": STORY}], options=GREEDY)
    assert whole.done and whole.message.role == "assistant" and whole.message.content and whole.eval_count == 8

    streamed = list(client.generate(model=MODEL, prompt=STORY, stream=True, options=GREEDY))
    assert streamed[-1].done and streamed[-1].eval_count == 8
    assert "".join(p.response for p in streamed) == Generation.objects.latest("id").message.content

    raw = client.generate(model=MODEL, prompt="1, 2, 3, 4,", raw=True, options={"temperature": 0, "num_predict": 4})
    assert raw.done and raw.response.strip()
    assert Generation.objects.latest("id").raw_prompt


def test_it_lists_its_models_and_tells_what_runs_and_what_a_model_can_do(client, staff_client, live_server_url):
    listed = client.list().models
    assert [m.model for m in listed][0] == MODEL
    assert listed[0].size > 0 and listed[0].details.format == "gguf" and listed[0].details.family == "llama"
    shown = client.show(MODEL)
    assert "tools" in shown.capabilities and "im_start" in shown.template
    assert shown.modelinfo["general.architecture"] == "llama"
    client.chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}], options={"num_predict": 1})
    assert MODEL in [m.model for m in client.ps().models]
    assert httpx.get(live_server_url + "/api/version").json()["version"]
    loaded = staff_client.chat(model=MODEL)  # no messages: Ollama's "load the model"
    assert loaded.done and loaded.done_reason == "load"


def test_a_request_with_nothing_to_answer_loads_the_model_and_keep_alive_0_unloads_it(staff_client):
    client = staff_client

    def held() -> bool:
        return MODEL in [m.model for m in client.ps().models]

    rows = Generation.objects.count()
    client.chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}], options={"num_predict": 1})
    unloaded = client.generate(model=MODEL, keep_alive=0)  # Ollama's "unload the model"
    assert unloaded.done and unloaded.done_reason == "unload"
    assert wait_until(lambda: not held(), timeout=300), "a keep_alive 0 request did not unload the model"
    assert client.generate(model=MODEL, keep_alive="10m").done_reason == "load"
    assert wait_until(held, timeout=300), "a request with nothing to answer did not load the model"
    assert Generation.objects.count() == rows + 1  # the loads and unloads queued no answer


def test_a_weather_tool_round_trip(client):
    messages = [{"role": "user", "content": WEATHER_QUESTION}]
    # Ollama's API has no tool_choice, and a 135M model does not choose to call a tool by itself:
    # HomeAI reads tool_choice from options too, which the official client passes through.
    first = client.chat(
        model=MODEL, messages=messages, tools=[get_weather], options={"temperature": 0, "tool_choice": "required"}
    )
    calls = first.message.tool_calls
    assert first.done_reason == "stop" and len(calls) >= 1 and "<tool_call>" not in (first.message.content or "")
    assert calls[0].function.name == "get_weather" and isinstance(calls[0].function.arguments["city"], str)

    result = get_weather(**calls[0].function.arguments)
    messages += [first.message, {"role": "tool", "content": result, "tool_name": "get_weather"}]
    answer = client.chat(model=MODEL, messages=messages, tools=[get_weather], options={"temperature": 0})
    assert answer.message.content and not answer.message.tool_calls
    # The model read the call and its result, written as the Hermes format's text.
    prompt = [m.content for m in Generation.objects.latest("id").conversation.messages.all()]
    assert any("<tool_call>" in p and '"get_weather"' in p for p in prompt)
    assert any(p.startswith("<tool_response>") and result in p for p in prompt)


def test_a_streamed_tool_call_comes_parsed_never_as_text(client):
    parts = list(
        client.chat(
            model=MODEL,
            messages=[{"role": "user", "content": WEATHER_QUESTION}],
            tools=[get_weather],
            stream=True,
            options={"temperature": 0, "tool_choice": "required"},
        )
    )
    assert "<tool_call>" not in "".join(p.message.content or "" for p in parts)
    calls = [c for p in parts for c in p.message.tool_calls or ()]
    assert calls and calls[0].function.name == "get_weather" and parts[-1].done


def test_json_output_matches_the_schema_asked_for(client):
    schema = Person.model_json_schema()
    answer = client.chat(
        model=MODEL,
        messages=[{"role": "user", "content": "Describe a person."}],
        format=schema,
        options={"temperature": 0.8, "seed": 3, "num_predict": 200},
    )
    jsonschema.validate(json.loads(answer.message.content), schema)
    assert answer.done_reason == "stop"
    # Free-form JSON is greedy: a grammar keeps every token valid, but a sampled open object may
    # run on to num_predict and be cut (docs/api.md); this one closes within it on every run.
    options = {"temperature": 0, "seed": 3, "num_predict": 200}
    free = client.generate(model=MODEL, prompt="Say hello as JSON.", format="json", options=options)
    assert free.done_reason == "stop", free.response[-200:]
    assert isinstance(json.loads(free.response), dict)


def test_bad_requests_get_ollamas_error_shape_and_nothing_is_queued(client, live_server_url):
    before = Generation.objects.count()
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model="llama3", messages=[{"role": "user", "content": "Hi"}])
    assert caught.value.status_code == 404 and "does not exist" in caught.value.error
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}], think=True)
    assert caught.value.status_code == 400 and "think" in caught.value.error
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}], options={"mirostat": 2})
    assert caught.value.status_code == 400 and "mirostat" in caught.value.error
    keyless = ollama.Client(host=live_server_url)
    with pytest.raises(ollama.ResponseError) as caught:
        keyless.list()
    assert caught.value.status_code == 401 and "API key" in caught.value.error
    assert Generation.objects.count() == before


def test_a_client_that_leaves_mid_stream_cancels_its_answer(client):
    stream = client.chat(
        model=MODEL,
        messages=[{"role": "user", "content": "Count to three hundred."}],
        stream=True,
        options={"num_predict": 2000, "ignore_eos": True},  # still writing when the client goes
    )
    next(stream)
    stream.close()
    generation = Generation.objects.latest("id")
    assert wait_until(lambda: Generation.objects.get(id=generation.id).status == "cancelled", timeout=120)
    generation.refresh_from_db()
    assert generation.finish_reason == "cancelled" and 1 <= generation.output_tokens < 2000


@tool
def weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"18 degrees and sunny in {city}"


@pytest.fixture
def chat_ollama(live_server_url, worker, settled, api_key) -> ChatOllama:
    headers = {"Authorization": f"Bearer {api_key}"}
    return ChatOllama(
        model=MODEL, base_url=live_server_url, temperature=0, num_predict=16, client_kwargs={"headers": headers}
    )


def test_langchain_chat_ollama_chats_streams_calls_a_tool_and_gets_structured_output(chat_ollama):
    reply = chat_ollama.invoke(STORY)
    assert reply.content and reply.usage_metadata["output_tokens"] == 16
    assert (
        "".join(chunk.content for chunk in chat_ollama.stream(STORY)) == Generation.objects.latest("id").message.content
    )

    question = HumanMessage(WEATHER_QUESTION)
    called = chat_ollama.bind_tools([weather]).invoke([question], options={"temperature": 0, "tool_choice": "required"})
    assert called.tool_calls and called.tool_calls[0]["name"] == "weather"
    result = ToolMessage(weather.invoke(called.tool_calls[0]["args"]), tool_call_id=called.tool_calls[0]["id"])
    final = chat_ollama.bind_tools([weather]).invoke([question, called, result])
    assert final.content and not final.tool_calls

    structured = chat_ollama.with_structured_output(Person, method="json_schema")
    person = structured.invoke("Describe a person.", options={"temperature": 0, "num_predict": 200})
    assert isinstance(person, Person) and person.colour in ("red", "green", "blue")
