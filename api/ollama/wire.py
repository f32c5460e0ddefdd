"""Ollama's wire format out: NDJSON lines and whole answers with Ollama's field names and
durations, and its errors. Pure functions and data (no database, no I/O).
"""

from __future__ import annotations

import datetime
import json

from django.http import JsonResponse

from api.errors import ApiError
from api.ollama.parsing import OllamaRequest
from api.openai.wire import sources_fields
from inference.engine.tools import answer_calls


def created_at() -> str:
    """Ollama's timestamps: RFC 3339 in UTC."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _ns(ms: float | None) -> int:
    return round((ms or 0.0) * 1_000_000)


def durations(metrics: dict) -> dict:
    """Our measured phases in Ollama's names, in nanoseconds (docs/api.md says which is which):
    total = arrival to last token (queue included); prompt_eval = the prompt tokens evaluated
    (a reused cached prefix is not) and the prefill span; eval = the answer's tokens and the
    time from the end of prefill to the last of them."""
    prompt_n = max((metrics.get("prompt_tokens") or 0) - (metrics.get("cached_tokens") or 0), 0)
    return {
        "total_duration": _ns(metrics.get("e2e_ms")),
        "load_duration": _ns(metrics.get("load_ms")),
        "prompt_eval_count": prompt_n,
        "prompt_eval_duration": _ns(metrics.get("prefill_ms")),
        "eval_count": metrics.get("output_tokens") or 0,
        "eval_duration": _ns((metrics.get("first_token_ms") or 0.0) + (metrics.get("decode_ms") or 0.0)),
    }


def done_reason(done: dict) -> str:
    reason = (done.get("metrics") or {}).get("finish_reason")
    return "length" if reason == "length" else "stop"


def ollama_tool_calls(calls: list[dict]) -> list[dict]:
    return [{"function": {"index": i, "name": c["name"], "arguments": c["arguments"]}} for i, c in enumerate(calls)]


def line(data: dict) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class OllamaWire:
    """An answer in Ollama's shapes: one object, or NDJSON lines ending with "done": true."""

    content_type = "application/x-ndjson"
    keepalive = None  # a blank line is not JSON: Ollama's clients would fail on it

    def __init__(self, req: OllamaRequest):
        self.req = req

    def _piece(self, text: str, *, calls: list[dict] | None = None, done: dict | None = None) -> dict:
        out: dict = {"model": self.req.model, "created_at": created_at()}
        if self.req.chat:
            message: dict = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = ollama_tool_calls(calls)
            out["message"] = message
        else:
            out["response"] = text
        out["done"] = done is not None
        if done is not None:
            out["done_reason"] = done_reason(done)
            out.update(durations(done.get("metrics") or {}))
            if done.get("status") == "cancelled":
                out["homeai_status"] = "cancelled"
            out.update(sources_fields(done))  # the same homeai_sources as /v1's answers
        return out

    def start(self) -> bytes:
        return b""

    def text(self, piece: str) -> bytes:
        return line(self._piece(piece))

    def end(self, done: dict, rest: str, calls: list[dict]) -> bytes:
        out = [line(self._piece(rest))] if rest else []
        if calls:
            out.append(line(self._piece("", calls=calls)))
        out.append(line(self._piece("", done=done)))
        return b"".join(out)

    def error(self, exc: ApiError) -> bytes:
        return line({"error": exc.message})

    def body(self, text: str, done: dict) -> dict:
        content, calls = answer_calls(text, self.req.output, (done.get("metrics") or {}).get("finish_reason"))
        return self._piece(content, calls=calls, done=done)

    def error_response(self, exc: ApiError) -> JsonResponse:
        return error_response(exc)

    def loaded(self) -> dict:
        """The answer to a load (or unload) request: no text, done at once."""
        piece = self._piece("")
        piece.update(done=True, done_reason=self.req.load_only)
        return piece


def error_response(exc: ApiError) -> JsonResponse:
    """Ollama's error shape: {"error": "..."} with the status."""
    response = JsonResponse({"error": exc.message}, status=exc.status)
    if exc.status == 503:
        response["Retry-After"] = "5"
    return response
