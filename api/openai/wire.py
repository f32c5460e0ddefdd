"""OpenAI's wire format out: completion objects, stream chunks (SSE), usage and llama.cpp's
timings. Pure functions and data (no database, no I/O).
"""

from __future__ import annotations

import json

from django.http import JsonResponse

from api.errors import ApiError
from api.openai.parsing import CompletionRequest
from inference.engine.sequence import StopStringFilter
from inference.engine.tools import CALL_OPEN, answer_calls


def usage(metrics: dict) -> dict:
    prompt = metrics.get("prompt_tokens") or 0
    completion = metrics.get("output_tokens") or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": metrics.get("cached_tokens") or 0},
    }


def _rate(n: int, ms: float | None) -> float | None:
    return n / ms * 1000.0 if ms else None


def timings(metrics: dict) -> dict:
    """llama.cpp's `timings` object (same names and meanings as llama-server), plus our phases.

    ttft_ms: from the request's arrival at the web server to the first token's bytes handed to
    the client's socket when streamed (delivery_ms of it after the worker had the token), to the
    worker's first token when not.

    prompt_n counts evaluated prompt tokens and cache_n the reused prefix, as llama-server
    does; predicted_ms runs from the end of prefill to the last token, so it covers all
    predicted_n tokens.
    """
    prompt_n = max((metrics.get("prompt_tokens") or 0) - (metrics.get("cached_tokens") or 0), 0)
    predicted_n = metrics.get("output_tokens") or 0
    prompt_ms = metrics.get("prefill_ms")
    predicted_ms = None
    if predicted_n and metrics.get("first_token_ms") is not None:
        predicted_ms = metrics["first_token_ms"] + (metrics.get("decode_ms") or 0.0)
    return {
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_second": metrics.get("prompt_tps") or _rate(prompt_n, prompt_ms),
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_second": _rate(predicted_n, predicted_ms),
        "cache_n": metrics.get("cached_tokens") or 0,
        "queue_ms": metrics.get("queue_ms"),
        "retrieve_ms": metrics.get("retrieve_ms"),
        "load_ms": metrics.get("load_ms"),
        "ttft_ms": metrics.get("ttft_ms"),
        "delivery_ms": metrics.get("delivery_ms"),
        "tpot_ms": metrics.get("tpot_ms"),
        "e2e_ms": metrics.get("e2e_ms"),
    }


def finish_reason(done: dict, calls: list | None = None) -> str:
    """OpenAI's finish reasons only: a cancelled answer ends with "stop" (and homeai_status);
    calls cut at max_tokens with "length", as OpenAI's own."""
    reason = (done.get("metrics") or {}).get("finish_reason")
    if reason == "length":
        return reason
    return "tool_calls" if calls else "stop"


def status_fields(done: dict) -> dict:
    """Our own field for an answer stopped before its end (someone cancelled it)."""
    return {"homeai_status": "cancelled"} if done.get("status") == "cancelled" else {}


def sources_fields(done: dict) -> dict:
    """Our own field for an answer drawn from document collections (the request's
    `collections`): its numbered sources, each chunk's text and its file through this API."""
    sources = done.get("sources") or []
    if not sources:
        return {}
    return {
        "homeai_sources": [
            {
                **{k: s[k] for k in ("n", "collection", "document", "chunk", "path", "page", "section", "text")},
                "file": f"/v1/collections/{s['collection']}/documents/{s['document']}/file",
            }
            for s in sources
        ]
    }


def _header(req: CompletionRequest, object_id: str, created: int, chunk: bool) -> dict:
    if req.chat:
        kind = "chat.completion.chunk" if chunk else "chat.completion"
    else:
        kind = "text_completion"
    return {"id": object_id, "object": kind, "created": created, "model": req.model, "system_fingerprint": None}


def openai_tool_calls(object_id: str, calls: list[dict], *, indexed: bool = False) -> list[dict]:
    """Parsed calls as OpenAI writes them: arguments as a JSON string, ids unique per answer."""
    out = []
    for i, call in enumerate(calls):
        item = {
            "id": f"call_{object_id.rsplit('-', 1)[-1]}_{i}",
            "type": "function",
            "function": {"name": call["name"], "arguments": _arguments(call)},
        }
        out.append({"index": i, **item} if indexed else item)
    return out


def _arguments(call: dict) -> str:
    """A call's arguments as OpenAI writes them, a JSON string: as far as they were written
    when the call was cut at max_tokens (tools.answer_calls)."""
    written = call.get("written")
    return written if written is not None else json.dumps(call["arguments"], ensure_ascii=False)


def answer_parts(req: CompletionRequest, text: str, done: dict) -> tuple[str, list[dict]]:
    """The answer's content and its tool calls (none unless tools were offered)."""
    return answer_calls(text, req.output, (done.get("metrics") or {}).get("finish_reason"))


def completion_body(req: CompletionRequest, object_id: str, created: int, *, text: str, done: dict) -> dict:
    """The whole answer, for stream=false."""
    metrics = done.get("metrics") or {}
    content, calls = answer_parts(req, text, done)
    reason = finish_reason(done, calls)
    if req.chat:
        message: dict = {"role": "assistant", "content": content or (None if calls else ""), "refusal": None}
        if calls:
            message["tool_calls"] = openai_tool_calls(object_id, calls)
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": reason}
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": reason}
    return {
        **_header(req, object_id, created, chunk=False),
        "choices": [choice],
        "usage": usage(metrics),
        "timings": timings(metrics),
        **status_fields(done),
        **sources_fields(done),
    }


def chunk(
    req: CompletionRequest,
    object_id: str,
    created: int,
    *,
    text: str | None = None,
    first: bool = False,
    reason: str | None = None,
    calls: list[dict] | None = None,
) -> dict:
    """One stream chunk with a piece of text (or the role, the tool calls, or the finish reason)."""
    if req.chat:
        delta: dict = {}
        if first:
            delta = {"role": "assistant", "content": ""}
        elif calls:
            delta = {"tool_calls": openai_tool_calls(object_id, calls, indexed=True)}
        elif text is not None:
            delta = {"content": text}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
    else:
        choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": reason}
    body = {**_header(req, object_id, created, chunk=True), "choices": [choice]}
    if req.include_usage:
        body["usage"] = None  # as OpenAI: null on every chunk but the last
    return body


def final_chunks(req: CompletionRequest, object_id: str, created: int, done: dict, calls: list[dict]) -> list[dict]:
    """The tool calls' chunk, the finish-reason chunk, then (with include_usage) the usage chunk;
    the last carries timings."""
    metrics = done.get("metrics") or {}
    out = [chunk(req, object_id, created, calls=calls)] if calls else []
    last = chunk(req, object_id, created, reason=finish_reason(done, calls))
    last.update(timings=timings(metrics), **status_fields(done), **sources_fields(done))
    out.append(last)
    if req.include_usage:
        out.append(
            {
                **_header(req, object_id, created, chunk=True),
                "choices": [],
                "usage": usage(metrics),
                "timings": timings(metrics),
            }
        )
    return out


class VisibleText:
    """What of an answer its client sees as it streams: with tools offered, the text before the
    first tool call (the calls are sent parsed, at the end); otherwise all of it."""

    def __init__(self, tools: bool):
        self._filter = StopStringFilter((CALL_OPEN,)) if tools else None
        self.sent = ""

    def feed(self, text: str) -> str:
        if self._filter is not None:
            text = "" if self._filter.stopped else self._filter.feed(text.encode())
        self.sent += text
        return text

    def rest(self, final_text: str, calls: list[dict]) -> str:
        """The visible part of the final text not sent yet (what a stop string or the tool-call
        filter held back; all of a call that did not parse)."""
        visible = final_text[: final_text.find(CALL_OPEN)].rstrip() if calls else final_text
        if len(visible) > len(self.sent) and visible.startswith(self.sent):
            return visible[len(self.sent) :]
        return ""


def sse(data: dict | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"data: {payload}\n\n".encode()


SSE_DONE = sse("[DONE]")
SSE_KEEPALIVE = b": keep-alive\n\n"


class OpenAIWire:
    """An answer in OpenAI's shapes: a completion object, or SSE chunks ending with [DONE]."""

    content_type = "text/event-stream; charset=utf-8"
    keepalive = SSE_KEEPALIVE

    def __init__(self, req: CompletionRequest, object_id: str, created: int):
        self.req, self.object_id, self.created = req, object_id, created

    def _chunk(self, **fields) -> bytes:
        return sse(chunk(self.req, self.object_id, self.created, **fields))

    def start(self) -> bytes:
        return self._chunk(first=True) if self.req.chat else b""

    def text(self, piece: str) -> bytes:
        return self._chunk(text=piece)

    def end(self, done: dict, rest: str, calls: list[dict]) -> bytes:
        out = [self._chunk(text=rest)] if rest else []
        out += [sse(c) for c in final_chunks(self.req, self.object_id, self.created, done, calls)]
        out.append(SSE_DONE)
        return b"".join(out)

    def error(self, exc: ApiError) -> bytes:
        return sse(exc.body())

    def body(self, text: str, done: dict) -> dict:
        return completion_body(self.req, self.object_id, self.created, text=text, done=done)

    def error_response(self, exc: ApiError) -> JsonResponse:
        return exc.response()
