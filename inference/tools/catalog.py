"""Which tools a person's chat offers: the built-in ones and the tools of enabled MCP servers,
less those the person turned off (ToolPreference; none is on before they first choose) and those the chat turned off
(Conversation.tools_off). A tool's key names it across servers: "builtin:NAME", "server:ID:NAME"."""

from __future__ import annotations

from inference.engine.tools import OutputSpec
from inference.models import Conversation, ToolPreference, ToolServer
from inference.tools import builtin


def builtin_key(name: str) -> str:
    return f"builtin:{name}"


def server_key(server_id: int, name: str) -> str:
    return f"server:{server_id}:{name}"


def all_tools() -> list[dict]:
    """Every tool there is: {"key", "name", "description", "parameters", "acts", "server", "server_id"}.
    A server tool whose name an earlier one took is left out (the model calls tools by name)."""
    out = [
        {"key": builtin_key(name), "name": name, **spec, "acts": False, "server": "", "server_id": None}
        for name, spec in builtin.TOOLS.items()
    ]
    taken = set(builtin.TOOLS)
    for server in ToolServer.objects.filter(enabled=True):
        for tool in server.tools:
            if tool["name"] in taken:
                continue
            taken.add(tool["name"])
            out.append(
                {
                    "key": server_key(server.id, tool["name"]),
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                    "acts": bool(tool.get("acts", True)),
                    "server": server.name,
                    "server_id": server.id,
                }
            )
    return out


def person_off(user) -> list[str]:
    """The tools the person turned off: all of them until they first choose on the tools page (a
    chat's answers are offered no tools, and their prompts carry no tools block, until then);
    after that, a tool registered later is on."""
    preference = ToolPreference.objects.filter(user=user).first()
    return list(preference.off) if preference else [tool["key"] for tool in all_tools()]


def chat_tools(user, conversation: Conversation | None) -> list[dict]:
    off = set(person_off(user)) | set(conversation.tools_off if conversation else ())
    return [tool for tool in all_tools() if tool["key"] not in off]


def chat_output(user, conversation: Conversation, tool_choice: str) -> dict:
    """A chat answer's Generation.output: the tools offered (OutputSpec) and, under "chat_tools",
    what the worker needs to run a call (key, acts); {} with no tool on, or tool_choice "none"."""
    tools = chat_tools(user, conversation) if tool_choice != "none" else []
    if not tools:
        return {}
    offered = tuple({"name": t["name"], "description": t["description"], "parameters": t["parameters"]} for t in tools)
    spec = OutputSpec(tools=offered, tool_choice=tool_choice, parallel=False)
    return {**spec.as_dict(), "chat_tools": [{"key": t["key"], "name": t["name"], "acts": t["acts"]} for t in tools]}
