"""The tools page: each person's and each chat's tools on or off; only staff register servers
(against the recording MCP server, listed through the SDK)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.test import Client

from inference.models import Conversation, ToolPreference, ToolServer
from inference.tools import catalog

pytestmark = [pytest.mark.django_db]
SERVER = Path(__file__).with_name("mcp_server.py")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_person_turns_tools_off_for_themselves_and_for_one_chat(make_user):
    me = make_user("me")
    client = _client(me)
    assert catalog.chat_tools(me, None) == []  # none on before the person chooses
    page = client.get("/tools/")
    assert page.status_code == 200 and b"calculator" in page.content
    client.post("/tools/", {"on": ["builtin:calculator", "builtin:search_documents"]})
    assert ToolPreference.objects.get(user=me).off == ["builtin:current_time"]
    chat = Conversation.objects.create(user=me, title="t")
    assert f'href="/tools/chat/{chat.id}/"'.encode() in client.get(f"/chat/{chat.id}/").content  # from the chat
    client.post(f"/tools/chat/{chat.id}/", {"on": ["builtin:current_time"]})
    chat.refresh_from_db()
    assert chat.tools_off == ["builtin:calculator", "builtin:search_documents"]
    assert catalog.chat_tools(me, chat) == []
    assert [t["name"] for t in catalog.chat_tools(me, None)] == ["calculator", "search_documents"]
    someone = make_user("someone")
    assert _client(someone).get(f"/tools/chat/{chat.id}/").status_code == 404


def test_only_staff_register_a_server_and_its_tools_are_listed(make_user):
    person = make_user("person")
    assert (
        _client(person).post("/tools/servers/", {"name": "x", "transport": "stdio", "address": "true"}).status_code
        == 302
    )
    assert not ToolServer.objects.exists()
    staff = make_user("staff", is_staff=True)
    client = _client(staff)
    command = f"{sys.executable} {SERVER} stdio"
    client.post("/tools/servers/", {"name": "house", "transport": "stdio", "address": command})
    server = ToolServer.objects.get()
    assert server.error == ""
    acts = {tool["name"]: tool["acts"] for tool in server.tools}
    assert acts == {"switch_light": True, "garage_door": False, "hang": False, "evil": False}
    client.post(f"/tools/servers/{server.id}/", {"action": "save", "enabled": "on", "acts": ["garage_door"]})
    server.refresh_from_db()
    assert {tool["name"]: tool["acts"] for tool in server.tools}["garage_door"] is True
    assert {tool["name"]: tool["acts"] for tool in server.tools}["switch_light"] is False
    page = client.get("/tools/")
    assert b"switch_light" in page.content and b"house" in page.content

    refused = client.post("/tools/servers/", {"name": "web", "transport": "http", "address": "file:///etc/passwd"})
    assert refused.status_code == 302 and ToolServer.objects.count() == 1
