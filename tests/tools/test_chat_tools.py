"""Tools in the chat, end to end: chat socket -> daphne -> worker -> llama.cpp (the bundled
model, its call forced by tool_choice) -> a real MCP server started here -> the second round."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from inference.models import Generation, ToolPreference, ToolServer
from inference.tools import servers
from tests.support import free_port, of_type, wait_until

pytestmark = [pytest.mark.integration]
SERVER = Path(__file__).with_name("mcp_server.py")
DONE_TYPES = ("generation.done", "generation.error")


@pytest.fixture
def recorder(tmp_path):
    """The recording MCP server over streamable HTTP on a spare port, registered with its tools."""
    record = tmp_path / "calls.jsonl"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)], env={"RECORD_FILE": str(record), "PATH": "/usr/bin:/bin"}
    )
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        try:
            httpx.get(url, timeout=1)
        except httpx.HTTPError:
            return False
        return True

    try:
        wait_until(up, timeout=60)
        server = ToolServer.objects.create(name="house", url=url)
        server.tools = servers.list_tools(server, 30)
        server.save()
        yield server, record
    finally:
        process.terminate()
        process.wait(10)


def tools_on(user):
    """Every tool on for this person (none is before they first choose)."""
    ToolPreference.objects.create(user=user, off=[])
    return user


def _calls(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def test_a_read_only_tool_runs_and_the_answer_continues(worker, make_user, connect, recorder):
    server, record = recorder
    sock = connect(tools_on(make_user()))
    events = sock.chat("Is the garage door shut?", tool_choice="garage_door", max_tokens=24)

    cards = of_type(events, "generation.tool")
    assert [c["call"]["status"] for c in cards] == ["running", "done"]
    card = cards[-1]["call"]
    assert card["tool"] == "garage_door" and "pelican" in card["result"] and card["ms"] > 0
    assert _calls(record) == [{"tool": "garage_door", "arguments": {}}]
    done = of_type(events, "generation.done")[0]
    assert done["tool_calls"][0]["status"] == "done"
    assert done["metrics"]["phase_ms"]["tool"] > 0
    generation = Generation.objects.get(id=done["generation"])
    assert generation.tool_ms > 0 and generation.output_tokens > 0
    assert "<tool_call>" not in generation.message.content


def test_an_acting_tool_waits_for_a_yes_and_a_no_tells_the_model(worker, make_user, connect, recorder):
    server, record = recorder
    sock = connect(tools_on(make_user()))
    sock.send(
        {"type": "chat.send", "text": "Turn on the kitchen light.", "tool_choice": "switch_light", "max_tokens": 32}
    )
    events = sock.collect(lambda e: e["type"] == "generation.tool" and e["call"]["status"] == "confirm", timeout=600)
    gid = events[-1]["generation"]
    assert _calls(record) == []  # nothing ran before the person's answer
    sock.send({"type": "chat.tool_confirm", "generation": gid, "call": 0, "allow": True})
    events = sock.collect(lambda e: e["type"] in DONE_TYPES, timeout=600)
    assert of_type(events, "generation.tool")[-1]["call"]["status"] == "done", of_type(events, "generation.tool")[-1]
    assert len(_calls(record)) == 1 and _calls(record)[0]["tool"] == "switch_light"

    sock.send({"type": "chat.send", "text": "Turn it off.", "tool_choice": "switch_light", "max_tokens": 16})
    events = sock.collect(lambda e: e["type"] == "generation.tool" and e["call"]["status"] == "confirm", timeout=600)
    sock.send({"type": "chat.tool_confirm", "generation": events[-1]["generation"], "call": 0, "allow": False})
    events = sock.collect(lambda e: e["type"] in DONE_TYPES, timeout=600)
    refused = of_type(events, "generation.tool")[-1]["call"]
    assert refused["status"] == "refused" and "refused" in refused["result"]
    assert of_type(events, "generation.done")  # the answer went on
    assert len(_calls(record)) == 1


def test_a_hanging_tool_is_an_error_card_and_a_huge_result_is_cut(worker, make_user, connect, recorder, settings):
    sock = connect(tools_on(make_user()))
    events = sock.chat("Wait.", tool_choice="hang", max_tokens=8)
    card = of_type(events, "generation.tool")[-1]["call"]
    assert card["status"] == "error" and "no answer within" in card["result"]
    assert of_type(events, "generation.done")

    events = sock.chat("Markup.", tool_choice="evil", max_tokens=8)
    card = of_type(events, "generation.tool")[-1]["call"]
    assert card["status"] == "done" and card["result"].startswith("<script>")
    assert len(card["result"]) < settings.HOMEAI_TOOL_RESULT_CHARS + 100 and "cut" in card["result"]


def test_the_reference_time_server_over_stdio(worker, make_user, connect):
    server = ToolServer.objects.create(
        name="time", transport="stdio", command=f"{sys.executable} -m mcp_server_time --local-timezone UTC"
    )
    server.tools = servers.list_tools(server, 60)
    server.save()
    assert "get_current_time" in [t["name"] for t in server.tools]
    sock = connect(tools_on(make_user()))
    events = sock.chat("What time is it in Lisbon?", tool_choice="get_current_time", max_tokens=16)
    card = of_type(events, "generation.tool")[-1]["call"]
    assert card["status"] in ("done", "error") and card["tool"] == "get_current_time"
    assert of_type(events, "generation.done")
