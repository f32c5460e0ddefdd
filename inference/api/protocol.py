"""The OpenAI wire format: request bodies in, completion objects, stream chunks and errors out.

Pure functions (no database, no I/O), so every rule here is testable on its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from django.conf import settings
from django.http import JsonResponse

from inference.errors import ClientError

CLIENT_CHARS = 32
_CLIENT_SAFE = re.compile(r"[^A-Za-z0-9._ /:@+()-]")

# Sampling fields we pass to the engine: OpenAI's, plus llama.cpp's widely used extensions.
OPENAI_SAMPLING = ("temperature", "top_p", "seed", "stop")
EXTENSION_SAMPLING = ("top_k", "min_p", "repeat_penalty", "ignore_eos")


class ApiError(Exception):
    """An error answered as OpenAI does: an HTTP status and {"error": {message, type, param, code}}."""

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param

    @property
    def type(self) -> str:
        # OpenAI's own choice: every client error (a bad key included) is an invalid request.
        return "server_error" if self.status >= 500 else "invalid_request_error"

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JsonResponse:
        response = JsonResponse(self.body(), status=self.status)
        if self.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="HomeAI"'
        if self.status == 503:
            response["Retry-After"] = "5"
        return response


@dataclass
class CompletionRequest:
    """A validated /v1/chat/completions or /v1/completions body."""

    chat: bool
    model: str
    messages: list[dict] | None = None
    prompt: str | None = None
    max_tokens: int | None = None
    options: dict = field(default_factory=dict)
    stream: bool = False
    include_usage: bool = False

    @property
    def object_id_prefix(self) -> str:
        return "chatcmpl" if self.chat else "cmpl"


def parse_body(raw: bytes) -> dict:
    try:
        data = json.loads(raw or b"null")
    except ValueError:
        raise ApiError(400, "The request body is not valid JSON.", code="invalid_json") from None
    except RecursionError:
        raise ApiError(400, "The request body is nested too deeply.", code="invalid_json") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.", code="invalid_json")
    return data


def _bad(message: str, param: str | None, code: str = "invalid_value") -> ApiError:
    return ApiError(400, message, code=code, param=param)


def _check_model(data: dict, models: list[str]) -> str:
    """Accept the model we serve, or no model at all (many clients send what they were told)."""
    model = data.get("model")
    if model is None or model == "":
        return models[0]
    if not isinstance(model, str):
        raise _bad("model must be a string: the id from GET /v1/models.", "model", "invalid_type")
    if model not in models:
        raise ApiError(
            404,
            f"The model {model!r} does not exist here; this server runs {', '.join(models)} (see GET /v1/models).",
            code="model_not_found",
            param="model",
        )
    return model


def _refuse_unsupported(data: dict, chat: bool) -> None:
    """Fields we cannot honour are refused rather than silently ignored (defaults pass)."""
    n = data.get("n")
    if n not in (None, 1):
        raise _bad("This server writes one choice per request: n must be 1.", "n", "unsupported_value")
    if data.get("logprobs") or data.get("top_logprobs"):
        raise _bad("Log probabilities are not supported by this server.", "logprobs", "unsupported_parameter")
    for name in ("frequency_penalty", "presence_penalty"):
        if data.get(name) not in (None, 0, 0.0):
            raise _bad(
                f"{name} is not supported; use repeat_penalty (1.0 = off) instead.", name, "unsupported_parameter"
            )
    if data.get("logit_bias"):
        raise _bad("logit_bias is not supported by this server.", "logit_bias", "unsupported_parameter")
    if chat:
        if data.get("tools") or data.get("functions"):
            raise _bad("Tool and function calls are not supported by this server.", "tools", "unsupported_parameter")
        response_format = data.get("response_format")
        if response_format not in (None, {}) and (
            not isinstance(response_format, dict) or response_format.get("type") != "text"
        ):
            raise _bad("Only text responses are supported.", "response_format", "unsupported_value")
    else:
        if data.get("echo"):
            raise _bad("echo is not supported by this server.", "echo", "unsupported_parameter")
        if data.get("suffix"):
            raise _bad("suffix (fill-in-the-middle) is not supported.", "suffix", "unsupported_parameter")
        if data.get("best_of") not in (None, 1):
            raise _bad("best_of must be 1.", "best_of", "unsupported_value")


def _stream_fields(data: dict) -> tuple[bool, bool]:
    stream = data.get("stream")
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _bad("stream must be true or false.", "stream", "invalid_type")
    options = data.get("stream_options")
    if options is None:
        return stream, False
    if not stream:
        raise _bad("stream_options is only allowed when stream is true.", "stream_options")
    if not isinstance(options, dict):
        raise _bad('stream_options must be an object, e.g. {"include_usage": true}.', "stream_options", "invalid_type")
    include_usage = options.get("include_usage", False)
    if not isinstance(include_usage, bool):
        raise _bad("stream_options.include_usage must be true or false.", "stream_options", "invalid_type")
    return stream, include_usage


def _max_tokens(data: dict) -> tuple[int | None, str]:
    """max_completion_tokens (the current name) wins over max_tokens (the older one)."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = data.get(name)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool):
                raise _bad(f"{name} must be a whole number.", name, "invalid_type")
            return value, name
    return None, "max_tokens"


def _sampling(data: dict) -> dict:
    options = {}
    for name in OPENAI_SAMPLING + EXTENSION_SAMPLING:
        value = data.get(name)
        if value is None:
            continue
        if name == "stop" and value == []:
            continue
        options[name] = value
    return options


def _content_text(content, index: int) -> str:
    """A message's text: a string, or OpenAI's list of content parts (text parts only)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise _bad(
                    f"messages[{index}].content: only text parts are supported (no images or audio).",
                    f"messages[{index}].content",
                    "unsupported_value",
                )
            texts.append(part["text"])
        return "\n".join(texts)
    raise _bad(f"messages[{index}].content must be a string or a list of text parts.", f"messages[{index}].content")


ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def _messages(data: dict) -> list[dict]:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list of {role, content} objects.", "messages", "invalid_type")
    limit = settings.HOMEAI_MAX_MESSAGES
    if len(messages) > limit:
        raise _bad(
            f"This request has {len(messages):,} messages; the limit is {limit:,}. Send the recent part "
            "of the conversation (the model only reads what fits its context anyway).",
            "messages",
            "too_many_messages",
        )
    turns = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _bad(f"messages[{i}] must be an object with a role and content.", f"messages[{i}]", "invalid_type")
        role = message.get("role")
        if role not in ROLES:
            raise _bad(
                f"messages[{i}].role must be system, developer, user or assistant (tool messages are not supported).",
                f"messages[{i}].role",
            )
        text = _content_text(message.get("content"), i)
        if not text.strip() and i != len(messages) - 1:
            continue  # an empty turn in the history adds nothing to the prompt
        turns.append({"role": ROLES[role], "content": text})
    return turns


def _prompt(data: dict) -> str:
    prompt = data.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        raise _bad("Send one prompt per request (this server does not batch prompts).", "prompt", "unsupported_value")
    if isinstance(prompt, list):
        raise _bad("prompt must be text; token-id prompts are not supported.", "prompt", "unsupported_value")
    if not isinstance(prompt, str):
        raise _bad("prompt must be a string.", "prompt", "invalid_type")
    return prompt


def parse_request(data: dict, *, chat: bool, models: list[str]) -> CompletionRequest:
    """Check an OpenAI request body; ranges are checked again by the services that store it."""
    model = _check_model(data, models)
    _refuse_unsupported(data, chat)
    stream, include_usage = _stream_fields(data)
    max_tokens, _ = _max_tokens(data)
    return CompletionRequest(
        chat=chat,
        model=model,
        messages=_messages(data) if chat else None,
        prompt=None if chat else _prompt(data),
        max_tokens=max_tokens,
        options=_sampling(data),
        stream=stream,
        include_usage=include_usage,
    )


def from_client_error(exc: ClientError, request: CompletionRequest | None = None) -> ApiError:
    """A service's ClientError as an OpenAI error; its field is the param (the message text is
    the request's messages or prompt)."""
    if exc.code == "busy":
        return ApiError(503, exc.message, code="server_busy")
    if exc.code == "limit_reached":  # the person's daily limit: OpenAI's "out of quota"
        return ApiError(429, exc.message, code="insufficient_quota")
    if exc.code == "not_found":
        return ApiError(404, exc.message, code="not_found")
    param = exc.field
    if param in (None, "text") and request is not None:
        param = "messages" if request.chat else "prompt"
    if exc.code == "empty_message":
        what = "The last message" if request is None or request.chat else "The prompt"
        return ApiError(400, f"{what} is empty: send some text.", code="empty_message", param=param)
    return ApiError(400, exc.message, code=exc.code if exc.code != "bad_request" else "invalid_value", param=param)


def from_engine_error(code: str, message: str) -> ApiError:
    """An error event from the worker (the request was valid, the answer could not be written)."""
    if code == "context_overflow":
        return ApiError(400, message, code="context_length_exceeded", param="messages")
    if code in ("interrupted", "model_missing", "model_unusable"):
        return ApiError(503, message, code=code)
    return ApiError(500, message, code=code)


def client_name(headers) -> str:
    """The dashboard's tag for a request: X-Client-Name, else the User-Agent's product, else "api".

    "chat" is reserved: the worker routes chat answers to the user's sockets, not this request.
    """
    name = (headers.get("X-Client-Name") or "").strip()
    if not name:
        agent = (headers.get("User-Agent") or "").strip()
        name = agent.split(" ", 1)[0].split("/", 1)[0] if agent else ""
    name = _CLIENT_SAFE.sub("", name).strip()[:CLIENT_CHARS]
    if not name or name.lower() == "chat":
        return "api" if not name else "api-chat"
    return name


# --- responses --------------------------------------------------------------------------------


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
        "load_ms": metrics.get("load_ms"),
        "ttft_ms": metrics.get("ttft_ms"),
        "tpot_ms": metrics.get("tpot_ms"),
        "e2e_ms": metrics.get("e2e_ms"),
    }


def finish_reason(status: str, metrics: dict) -> str:
    if status == "cancelled":
        return "cancelled"  # not an OpenAI value, and only seen when someone else stopped the answer
    return metrics.get("finish_reason") or "stop"


def _header(req: CompletionRequest, object_id: str, created: int, chunk: bool) -> dict:
    if req.chat:
        kind = "chat.completion.chunk" if chunk else "chat.completion"
    else:
        kind = "text_completion"
    return {"id": object_id, "object": kind, "created": created, "model": req.model, "system_fingerprint": None}


def completion_body(req: CompletionRequest, object_id: str, created: int, *, text: str, done: dict) -> dict:
    """The whole answer, for stream=false."""
    metrics = done.get("metrics") or {}
    reason = finish_reason(done.get("status", "done"), metrics)
    if req.chat:
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": None},
            "logprobs": None,
            "finish_reason": reason,
        }
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": reason}
    return {
        **_header(req, object_id, created, chunk=False),
        "choices": [choice],
        "usage": usage(metrics),
        "timings": timings(metrics),
    }


def chunk(
    req: CompletionRequest,
    object_id: str,
    created: int,
    *,
    text: str | None = None,
    first: bool = False,
    reason: str | None = None,
) -> dict:
    """One stream chunk with a piece of text (or the role, or the finish reason)."""
    if req.chat:
        delta: dict = {}
        if first:
            delta = {"role": "assistant", "content": ""}
        elif text is not None:
            delta = {"content": text}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
    else:
        choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": reason}
    body = {**_header(req, object_id, created, chunk=True), "choices": [choice]}
    if req.include_usage:
        body["usage"] = None  # as OpenAI: null on every chunk but the last
    return body


def final_chunks(req: CompletionRequest, object_id: str, created: int, done: dict) -> list[dict]:
    """The finish-reason chunk, then (with include_usage) the usage chunk; the last carries timings."""
    metrics = done.get("metrics") or {}
    last = chunk(req, object_id, created, reason=finish_reason(done.get("status", "done"), metrics))
    last["timings"] = timings(metrics)
    out = [last]
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


def sse(data: dict | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"data: {payload}\n\n".encode()


SSE_DONE = sse("[DONE]")
SSE_KEEPALIVE = b": keep-alive\n\n"
