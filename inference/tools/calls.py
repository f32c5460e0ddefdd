"""One tool call in a chat answer, run in the worker's task thread: bounded in time, its
failure a result (an error card, and a sentence the model reads), its result cut to
HOMEAI_TOOL_RESULT_CHARS."""

from __future__ import annotations

import time

from django.conf import settings

from inference.models import ToolServer
from inference.tools import builtin, servers

TRUNCATED = "\n[… cut: the result was {n} characters]"


def truncate(text: str) -> str:
    limit = settings.HOMEAI_TOOL_RESULT_CHARS
    return text if len(text) <= limit else text[:limit] + TRUNCATED.format(n=len(text))


def run(user, key: str, name: str, arguments: dict) -> dict:
    """{"status": "done" | "error", "result": text, "ms"}: never raises for the tool's faults."""
    start = time.perf_counter()
    status = "done"
    try:
        result = _call(user, key, name, arguments)
    except builtin.ToolError as exc:
        status, result = "error", str(exc)
    except TimeoutError:
        status, result = "error", f"The tool gave no answer within {settings.HOMEAI_TOOL_TIMEOUT_S:g} s."
    except servers.ServerError as exc:
        status, result = "error", f"The tool's server failed: {exc}"
    except Exception as exc:  # a tool's fault is the card's, never the answer's
        status, result = "error", f"The tool failed: {type(exc).__name__}"
    return {"status": status, "result": truncate(result), "ms": (time.perf_counter() - start) * 1000}


def _call(user, key: str, name: str, arguments: dict) -> str:
    if key.startswith("builtin:"):
        return builtin.RUN[name](user, arguments)
    server_id = int(key.split(":")[1])
    server = ToolServer.objects.filter(id=server_id, enabled=True).first()
    if server is None:
        raise servers.ServerError("the server is no longer registered")
    text, failed = servers.call_tool(server, name, arguments, settings.HOMEAI_TOOL_TIMEOUT_S)
    if failed:
        raise builtin.ToolError(text or "The tool reported an error.")
    return text
