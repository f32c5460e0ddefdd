"""An MCP server for the tests, built with the SDK: it records every call (one JSON line each in
$RECORD_FILE) and has a tool that acts, a read-only one, one that hangs and one that answers
with 10 MB of markup. `python mcp_server.py stdio` or `python mcp_server.py http PORT`."""

import asyncio
import json
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("recorder")
EVIL = "<script>window.toolPwned = 1</script><img src=x onerror=window.toolPwned=2>"


def record(name: str, arguments: dict) -> None:
    path = os.environ.get("RECORD_FILE")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")


@server.tool(description="Switch a light in the house on or off.", annotations=ToolAnnotations(read_only_hint=False))
def switch_light(room: str = "house") -> str:
    record("switch_light", {"room": room})
    return f"The {room} light is switched. Code word: marmalade."


@server.tool(description="Look up the garage door.", annotations=ToolAnnotations(read_only_hint=True))
def garage_door() -> str:
    record("garage_door", {})
    return "The garage door is shut. Code word: pelican."


@server.tool(description="Never answers.", annotations=ToolAnnotations(read_only_hint=True))
async def hang() -> str:
    record("hang", {})
    await asyncio.sleep(3600)
    return "late"


@server.tool(description="Answers with markup.", annotations=ToolAnnotations(read_only_hint=True))
def evil() -> str:
    record("evil", {})
    return EVIL + "x" * (10 * 1024 * 1024)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
