"""Tools in the chat: staff's MCP servers (register, refresh their tools, switch, remove, mark a
tool as acting) and each person's and each chat's tools turned off."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from inference.models import Conversation, ToolPreference, ToolServer
from inference.services.conversations import own_conversation
from inference.tools import catalog, servers
from infra.errors import ClientError

MAX_OFF = 500


def server_create(*, name: str, transport: str, address: str) -> ToolServer:
    """Register a server (its tools listed at once: a server that does not answer is kept, with
    its error shown, so staff can start it and refresh)."""
    name = (name or "").strip()
    if not name or len(name) > 60:
        raise ClientError("bad_request", gettext("Give the server a name of at most 60 characters."), field="name")
    address = (address or "").strip()
    if transport == ToolServer.Transport.HTTP:
        parts = urlsplit(address)
        if parts.scheme not in ("http", "https") or not parts.netloc or len(address) > 500:
            raise ClientError("bad_request", gettext("Give the server's http:// or https:// address."), field="address")
        fields = {"url": address}
    elif transport == ToolServer.Transport.STDIO:
        if not address or len(address) > 500:
            raise ClientError("bad_request", gettext("Give the command that starts the server."), field="address")
        fields = {"command": address}
    else:
        raise ClientError("bad_request", gettext("Pick how HomeAI talks to the server."), field="transport")
    try:
        with transaction.atomic():
            server = ToolServer.objects.create(name=name, transport=transport, **fields)
    except IntegrityError:
        raise ClientError("bad_request", gettext("A server of that name is registered."), field="name") from None
    return server_refresh(server=server)


def server_refresh(*, server: ToolServer) -> ToolServer:
    """Its tools from the server's list_tools; staff's acting marks kept for tools it still has."""
    before = {tool["name"]: tool.get("acts") for tool in server.tools}
    try:
        tools = servers.list_tools(server, settings.HOMEAI_TOOL_TIMEOUT_S)
    except TimeoutError:
        limit = f"{settings.HOMEAI_TOOL_TIMEOUT_S:g}"
        server.error = gettext("The server gave no answer within %(s)s s.") % {"s": limit}
    except servers.ServerError as exc:
        server.error = gettext("The server could not be reached: %(error)s") % {"error": str(exc)[:300]}
    else:
        for tool in tools:
            if before.get(tool["name"]) is not None:
                tool["acts"] = before[tool["name"]]
        server.tools, server.error, server.refreshed_at = tools, "", timezone.now()
    server.save()
    return server


def server_set(*, server_id: int, enabled: bool | None = None, acting: dict[str, bool] | None = None) -> ToolServer:
    server = ToolServer.objects.filter(id=server_id).first()
    if server is None:
        raise ClientError("not_found", gettext("No such server."))
    if enabled is not None:
        server.enabled = enabled
    for tool in server.tools:
        if acting is not None and tool["name"] in acting:
            tool["acts"] = acting[tool["name"]]
    server.save()
    return server


def _checked_off(off) -> list[str]:
    if not isinstance(off, list) or len(off) > MAX_OFF or not all(isinstance(key, str) for key in off):
        raise ClientError("bad_request", gettext("off must be a list of tools."), field="off")
    known = {tool["key"] for tool in catalog.all_tools()}
    return sorted(set(off) & known)


def person_tools_set(*, user, off) -> list[str]:
    """The tools this person turns off in all their chats."""
    off = _checked_off(off)
    ToolPreference.objects.update_or_create(user=user, defaults={"off": off})
    return off


def conversation_tools_set(*, user, conversation_id, off) -> Conversation:
    """The tools this chat turns off (over the person's own choice), from its next answer on."""
    off = _checked_off(off)
    conversation = own_conversation(user=user, conversation_id=conversation_id)
    conversation.tools_off = off
    conversation.save(update_fields=["tools_off", "updated_at"])
    return conversation
