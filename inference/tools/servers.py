"""MCP servers through the official SDK's client (`mcp`): their tools listed, one tool called.

Each use opens its own session (a stdio server is started and stopped with it) on an event
loop of its own, in a thread of its own: the caller (a worker's task thread, a staff page's
view) waits at most the timeout, and a server that hangs or ignores cancellation costs a
parked thread, never the answer."""

from __future__ import annotations

import asyncio
import shlex
import threading
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from inference.models import ToolServer

CLEANUP_GRACE_S = 5.0


class ServerError(Exception):
    """The server could not be reached or answered with an error: a sentence to show."""


def _target(server: ToolServer) -> str | StdioServerParameters:
    if server.transport == ToolServer.Transport.STDIO:
        words = shlex.split(server.command)
        if not words:
            raise ServerError("This server has no command to start.")
        return StdioServerParameters(command=words[0], args=words[1:])
    return server.url


def _in_thread(work, timeout_s: float) -> Any:
    """Run the coroutine function on its own loop in a daemon thread; wait at most timeout_s."""
    box: dict = {}

    def main() -> None:
        async def bounded():
            return await asyncio.wait_for(work(), timeout_s)

        try:
            box["value"] = asyncio.run(bounded())
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=main, name="mcp-call", daemon=True)
    thread.start()
    thread.join(timeout_s + CLEANUP_GRACE_S)
    if thread.is_alive() or isinstance(box.get("error"), TimeoutError):
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _error_text(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _session(server: ToolServer, timeout_s: float, use) -> Any:
    """use(client) in a session of its own; TimeoutError past timeout_s, ServerError for the rest."""
    target = _target(server)

    async def work():
        async with Client(target) as client:
            return await use(client)

    try:
        return _in_thread(work, timeout_s)
    except TimeoutError:
        raise
    except Exception as exc:
        raise ServerError(_error_text(exc)) from None


def list_tools(server: ToolServer, timeout_s: float) -> list[dict]:
    """The server's tools: {"name", "description", "parameters", "acts"} (acts: not marked read-only)."""

    async def use(client):
        return (await client.list_tools()).tools

    tools = _session(server, timeout_s, use)
    out = []
    for tool in tools:
        read_only = bool(tool.annotations and tool.annotations.read_only_hint)
        out.append(
            {
                "name": tool.name,
                "description": (tool.description or "")[:1000],
                "parameters": tool.input_schema or {"type": "object", "properties": {}},
                "acts": not read_only,
            }
        )
    return out


def call_tool(server: ToolServer, name: str, arguments: dict, timeout_s: float) -> tuple[str, bool]:
    """The tool's result as text, and whether the server said it failed (isError)."""

    async def use(client):
        return await client.call_tool(name, arguments)

    result = _session(server, timeout_s, use)
    parts = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    if not parts and result.structured_content is not None:
        parts.append(str(result.structured_content))
    return "\n".join(parts), bool(result.is_error)
