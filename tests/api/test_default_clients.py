"""Clients as people install them, each with its own request shape and defaults, against the live
server and the bundled chat model (greedy and with a small max_tokens, to stay quick):

- Open WebUI 0.12.4 with its defaults: 36 built-in tools on every chat request (its
  builtin tools, converted as Open WebUI converts them: tests/api/openwebui_tools.json), more
  than the model can use: it is offered the matching ones, says so in X-HomeAI-Tools, and the
  conversation's next message reuses the tool block from the cache;
- the `ollama` client's chat() with tools=, LangChain's ChatOllama with bound tools, and
  LangChain's ChatOpenAI with bound tools (only its connection set), each through a tool
  round trip: the call, the tool's result sent back, an answer in words;
- Home Assistant's Ollama integration (homeassistant/components/ollama/entity.py): a system
  prompt that changes with every request (the time), its Assist tools, stream, keep_alive -1,
  options.num_ctx 8192, think false; and its tool result turn;
- a forced call cut at max_tokens comes back as a call with finish_reason "length" and what
  was written, never as content, through both APIs.

The bundled 135M model does not call a tool by itself (tool_choice "auto"): a call is asked
for as each client can (OpenAI's tool_choice, the options.tool_choice HomeAI reads from Ollama
clients), and the default requests are checked for an answer in words.
"""

from __future__ import annotations

import json

import ollama
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from inference.models import Generation
from tests.api.openwebui_tools import OPENWEBUI_TOOLS, WRITE_NOTE
from tests.api.test_openai_api import MODEL, _post

pytestmark = [pytest.mark.integration]

QUICK = {"temperature": 0, "num_predict": 24}
CALL = "<tool_call>"


def words(text: str | None) -> bool:
    """A greedy answer in words: a few of them, and no tool-call markup."""
    return bool(text) and len(text.split()) >= 3 and CALL not in text


def no_tool_markup(text: str) -> bool:
    """None of the tool-call markup (<tool_call>, <tool_response>, their ends), which the 135M
    model often imitates."""
    return "<tool_" not in text and "</tool_" not in text


def said(text: str | None) -> bool:
    """A sampled answer's shape: some text ("No errors." is an answer: how many words the 135M
    model picks is luck) and no tool-call markup."""
    return bool(text and text.strip()) and no_tool_markup(text)


def answers_the_result(agent, turns: list, **greedy) -> None:
    """The turn after a tool's result: as the client sends it by default (sampled: the 135M
    model's words are luck, so only their shape is asserted: text, no call, none of the tool's
    markup, which it often imitates), then greedy (`greedy`: the client's way to ask), which
    must say something."""
    final = agent.invoke(turns)
    assert isinstance(final.content, str) and not final.tool_calls
    assert no_tool_markup(final.content)
    then = agent.invoke(turns, **greedy)
    assert words(then.content) and not then.tool_calls


@pytest.fixture
def client(live_server_url, worker, settled, api_key) -> ollama.Client:
    return ollama.Client(host=live_server_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=180)


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
      city: The city's name, e.g. Paris
    """
    return f"18 degrees and sunny in {city}"


@tool
def weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"18 degrees and sunny in {city}"


WRITE_NOTE_TOOL = {"type": "function", "function": WRITE_NOTE}


def test_open_webui_defaults_get_the_matching_tools_and_the_next_message_reuses_their_block(
    api, api_key, live_server_url
):
    # Open WebUI's chat request with its defaults: the model, the messages, stream, its 36 tools.
    question = "Search my notes for the plan to back up the NAS."
    chat = api.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[{"role": "user", "content": question}],
        tools=OPENWEBUI_TOOLS,
        stream=True,
        stream_options={"include_usage": True},
        max_tokens=16,
        temperature=0,
    )
    offered = chat.headers["X-HomeAI-Tools"]
    chunks = list(chat.parse())
    answer = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    first = chunks[-1].usage
    count = int(offered.split(" of ")[0])
    assert offered.endswith(" of 36 offered") and 1 <= count < 36
    assert Generation.objects.latest("id").output["tools"][0]["name"] in json.dumps(OPENWEBUI_TOOLS)
    # The block's tokens: the same message without tools, against with them.
    plain = api.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": question}], max_tokens=1, temperature=0
    )
    block = first.prompt_tokens - plain.usage.prompt_tokens
    assert block > 300

    second = api.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "And when did I last change it?"},
        ],
        tools=OPENWEBUI_TOOLS,
        max_tokens=16,
        temperature=0,
    )
    assert second.headers["X-HomeAI-Tools"] == offered  # the conversation keeps its tools
    assert second.parse().usage.prompt_tokens_details.cached_tokens >= 0.95 * block

    # Its Ollama connection sends the same tools to /api/chat: the same tools are offered.
    body = {"model": MODEL, "messages": [{"role": "user", "content": question}], "tools": OPENWEBUI_TOOLS}
    body.update(stream=False, options=QUICK)
    ollama_chat = _post(live_server_url, "/api/chat", api_key, body)
    assert ollama_chat.status_code == 200 and ollama_chat.headers["X-HomeAI-Tools"] == offered


def test_a_forced_call_cut_at_max_tokens_is_a_call_with_finish_reason_length_in_both_apis(api, client):
    ask = [{"role": "user", "content": "Write a long note about the history of bread, with every detail."}]
    named = {"type": "function", "function": {"name": "write_note"}}
    whole = api.chat.completions.create(
        model=MODEL, messages=ask, tools=[WRITE_NOTE_TOOL], tool_choice=named, max_tokens=20, temperature=0
    )
    choice = whole.choices[0]
    assert choice.finish_reason == "length" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.function.name == "write_note" and call.function.arguments.startswith("{")
    with pytest.raises(ValueError):
        json.loads(call.function.arguments)  # what was written: cut, as OpenAI's own API returns it

    chunks = list(
        api.chat.completions.create(
            model=MODEL,
            messages=ask,
            tools=[WRITE_NOTE_TOOL],
            tool_choice="required",
            max_tokens=20,
            temperature=0,
            stream=True,
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.content or "" for d in deltas) == ""
    assert [tc.function.name for d in deltas for tc in d.tool_calls or ()] == ["write_note"]
    assert chunks[-1].choices[0].finish_reason == "length"

    cut = client.chat(
        model=MODEL,
        messages=ask,
        tools=[WRITE_NOTE_TOOL],
        options={**QUICK, "num_predict": 20, "tool_choice": "required"},
    )
    assert cut.done_reason == "length" and not cut.message.content
    assert [c.function.name for c in cut.message.tool_calls] == ["write_note"]
    assert isinstance(cut.message.tool_calls[0].function.arguments, dict)


def test_the_ollama_client_chat_with_tools_answers_in_words_and_reads_a_tool_result(client):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    answer = client.chat(model=MODEL, messages=messages, tools=[get_weather], options=QUICK)
    assert answer.done and words(answer.message.content) and not answer.message.tool_calls

    called = client.chat(
        model=MODEL,
        messages=messages,
        tools=[get_weather],
        options={**QUICK, "num_predict": 48, "tool_choice": "required"},
    )
    call = called.message.tool_calls[0]
    assert called.done_reason == "stop" and call.function.name == "get_weather"
    messages += [
        called.message,
        {"role": "tool", "content": get_weather(**call.function.arguments), "tool_name": call.function.name},
    ]
    final = client.chat(model=MODEL, messages=messages, tools=[get_weather], options=QUICK)
    assert words(final.message.content) and not final.message.tool_calls


@pytest.fixture
def chat_ollama(live_server_url, worker, settled, api_key) -> ChatOllama:
    # As a person writes it: the connection only (base URL and key), every other setting LangChain's.
    return ChatOllama(
        model=MODEL, base_url=live_server_url, client_kwargs={"headers": {"Authorization": f"Bearer {api_key}"}}
    )


def test_a_langchain_chat_ollama_agent_does_a_tool_round_trip(chat_ollama):
    agent = chat_ollama.bind_tools([weather])
    question = HumanMessage("What is the weather in Paris?")
    first = agent.invoke([question])  # sampled, as by default: words, or a call of the tool
    assert said(first.content) or [c["name"] for c in first.tool_calls] == ["weather"]
    # The forced call greedy, as in the Ollama client's test above: the greedy answer below reads
    # its arguments, so a sampled call made that answer luck too (a call for "<location>" got
    # '"Paris, France"', two words, on CI's PostgreSQL run).
    called = agent.invoke([question], options={"tool_choice": "required", "temperature": 0})
    assert isinstance(called, AIMessage) and called.tool_calls[0]["name"] == "weather"
    result = ToolMessage(weather.invoke(called.tool_calls[0]["args"]), tool_call_id=called.tool_calls[0]["id"])
    answers_the_result(agent, [question, called, result], options={"temperature": 0})


@pytest.fixture
def chat_openai(live_server_url, worker, settled, api_key) -> ChatOpenAI:
    # As a person writes it: the connection only (base URL and key), every other setting LangChain's.
    return ChatOpenAI(model=MODEL, base_url=f"{live_server_url}/v1", api_key=api_key)


def test_a_langchain_chat_openai_agent_does_a_tool_round_trip(chat_openai):
    question = HumanMessage("What is the weather in Paris?")
    # tool_choice "any" is LangChain's word for OpenAI's "required": the 135M model would not choose.
    # Greedy, as the forced calls above: sampled, the 135M model's "city" string ran to the
    # 256-token limit about once in fifteen runs (a cut call, which LangChain files under
    # invalid_tool_calls), and the greedy answer below reads the call's arguments.
    called = chat_openai.bind_tools([weather], tool_choice="any").invoke([question], temperature=0)
    assert isinstance(called, AIMessage) and called.tool_calls[0]["name"] == "weather"
    assert called.response_metadata["finish_reason"] == "tool_calls"
    result = ToolMessage(weather.invoke(called.tool_calls[0]["args"]), tool_call_id=called.tool_calls[0]["id"])
    answers_the_result(chat_openai.bind_tools([weather]), [question, called, result], temperature=0)


# Home Assistant's Assist tools, as its Ollama integration formats them (_format_tool: name,
# parameters as OpenAPI from the intent's voluptuous schema, description).
ASSIST_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "area": {"type": "string"},
                    "floor": {"type": "string"},
                    "domain": {"type": "array", "items": {"type": "string", "enum": ["light", "switch", "fan"]}},
                    "device_class": {"type": "array", "items": {"type": "string", "enum": ["outlet", "switch"]}},
                },
                "required": [],
            },
            "description": description,
        },
    }
    for name, description in (
        ("HassTurnOn", "Turns on/opens/presses a device or entity"),
        ("HassTurnOff", "Turns off/closes a device or entity"),
    )
] + [
    {
        "type": "function",
        "function": {
            "name": "GetLiveContext",
            "parameters": {"type": "object", "properties": {}, "required": []},
            "description": "Provides real-time information about the CURRENT state, value, or mode of devices, "
            "sensors, entities, or areas.",
        },
    }
]


def assist_prompt(time: str) -> str:
    return (
        "You are a voice assistant for Home Assistant.\nAnswer questions about the world truthfully.\n"
        "Answer in plain text. Keep it simple and to the point.\n"
        f"Current time is {time}. Today's date is 2026-12-03.\n"
        "Static Context: An overview of the areas and the devices in this smart home:\n"
        "- names: Kitchen light\n  domain: light\n  state: 'off'\n  areas: Kitchen\n"
    )


def test_home_assistants_ollama_request_shape_streams_and_reads_its_tool_result(client):
    request = {"tools": ASSIST_TOOLS, "stream": True, "keep_alive": -1, "options": {"num_ctx": 8192}, "think": False}
    messages = [
        {"role": "system", "content": assist_prompt("18:02:11")},
        {"role": "user", "content": "Is the kitchen light on?"},
    ]
    parts = list(client.chat(model=MODEL, messages=messages, format=None, **request))
    assert parts[-1].done and said("".join(p.message.content or "" for p in parts))

    # Its tool round: the call it ran, then the result as its entity writes it (JSON data/error).
    messages = [
        {"role": "system", "content": assist_prompt("18:02:40")},
        {"role": "user", "content": "Turn on the kitchen light."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "HassTurnOn", "arguments": {"name": "Kitchen light"}}}],
        },
        {
            "role": "tool",
            "content": json.dumps({"data": {"success": [{"name": "Kitchen light"}], "failed": []}, "error": None}),
        },
    ]
    parts = list(client.chat(model=MODEL, messages=messages, format=None, **request))
    last = parts[-1]
    assert last.done and said("".join(p.message.content or "" for p in parts))
    # The system prompt's time changed; the tool block before it did not: it came from the cache.
    generation = Generation.objects.latest("id")
    assert generation.cached_tokens and generation.cached_tokens > 0.5 * generation.prompt_tokens
