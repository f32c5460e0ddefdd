"""The OpenAI wire format: request bodies in, completion objects, stream chunks and errors out.

Pure functions (no database, no I/O), so every rule here is testable on its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from django.conf import settings
from django.http import JsonResponse

from inference.engine.sequence import StopStringFilter
from inference.engine.tools import CALL_OPEN, OutputSpec, history_turns, parse_calls
from inference.errors import ClientError

CLIENT_CHARS = 32
_CLIENT_SAFE = re.compile(r"[^A-Za-z0-9._ /:@+()-]")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SCHEMA_CHARS = 64_000  # a JSON schema this long already makes a grammar of thousands of rules

# Sampling fields we pass to the engine: OpenAI's, plus llama.cpp's widely used extensions.
OPENAI_SAMPLING = ("temperature", "top_p", "seed", "stop", "frequency_penalty", "presence_penalty")
EXTENSION_SAMPLING = ("top_k", "min_p", "repeat_penalty", "ignore_eos", "speculative")
# Any other field (user, metadata, store, logit_bias, ...) is accepted and ignored, as OpenAI's
# own models ignore some: what cannot be honoured and would change the answer is refused by name.


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
    output: OutputSpec | None = None  # JSON or tool calls the answer must be

    @property
    def object_id_prefix(self) -> str:
        return "chatcmpl" if self.chat else "cmpl"

    @property
    def tools(self) -> bool:
        """Whether the answer may hold tool calls (they are parsed out of its text)."""
        return bool(self.output and self.output.tools)


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


def bad_request(message: str, param: str | None, code: str = "invalid_value") -> ApiError:
    return ApiError(400, message, code=code, param=param)


def check_model(data: dict, models: dict[str, str], listing: str = "GET /v1/models") -> str:
    """The model asked for, as the client spelled it (models: every accepted spelling -> its
    file, the default first), or the default when none is named (many clients send what they
    were told). Ollama's clients add the tag ":latest" to a name that has none."""
    model = data.get("model")
    if model is None or model == "":
        return next(iter(models))
    if not isinstance(model, str):
        raise bad_request(f"model must be a string: a name from {listing}.", "model", "invalid_type")
    for spelling in (model, model.removesuffix(":latest")):
        if spelling in models:
            return spelling
    runs = ", ".join(dict.fromkeys(models.values()))
    raise ApiError(
        404,
        f"The model {model!r} does not exist here; this server runs {runs} (see {listing}).",
        code="model_not_found",
        param="model",
    )


def _refuse_unsupported(data: dict, chat: bool) -> None:
    """Fields we cannot honour are refused rather than silently ignored (defaults pass)."""
    n = data.get("n")
    if n not in (None, 1):
        raise bad_request("This server writes one choice per request: n must be 1.", "n", "unsupported_value")
    if data.get("logprobs") or data.get("top_logprobs"):
        raise bad_request("Log probabilities are not supported by this server.", "logprobs", "unsupported_parameter")
    if chat:
        if data.get("functions") or data.get("function_call"):
            raise bad_request(
                "The legacy functions field is not supported: send the functions as tools.",
                "functions",
                "unsupported_parameter",
            )
    else:
        if data.get("echo"):
            raise bad_request("echo is not supported by this server.", "echo", "unsupported_parameter")
        if data.get("suffix"):
            raise bad_request("suffix (fill-in-the-middle) is not supported.", "suffix", "unsupported_parameter")
        if data.get("best_of") not in (None, 1):
            raise bad_request("best_of must be 1.", "best_of", "unsupported_value")


def _stream_fields(data: dict) -> tuple[bool, bool]:
    stream = data.get("stream")
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad_request("stream must be true or false.", "stream", "invalid_type")
    options = data.get("stream_options")
    if options is None:
        return stream, False
    if not stream:
        raise bad_request("stream_options is only allowed when stream is true.", "stream_options")
    if not isinstance(options, dict):
        raise bad_request(
            'stream_options must be an object, e.g. {"include_usage": true}.', "stream_options", "invalid_type"
        )
    include_usage = options.get("include_usage", False)
    if not isinstance(include_usage, bool):
        raise bad_request("stream_options.include_usage must be true or false.", "stream_options", "invalid_type")
    return stream, include_usage


def _max_tokens(data: dict) -> tuple[int | None, str]:
    """max_completion_tokens (the current name) wins over max_tokens (the older one)."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = data.get(name)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool):
                raise bad_request(f"{name} must be a whole number.", name, "invalid_type")
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
                raise bad_request(
                    f"messages[{index}].content: only text parts are supported (no images or audio).",
                    f"messages[{index}].content",
                    "unsupported_value",
                )
            texts.append(part["text"])
        return "\n".join(texts)
    raise bad_request(
        f"messages[{index}].content must be a string or a list of text parts.", f"messages[{index}].content"
    )


ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def tool_calls(message: dict, index: int) -> list[dict]:
    """A message's tool calls as [{"name", "arguments"}]: OpenAI's (arguments a JSON string) or
    Ollama's (arguments an object)."""
    calls = message.get("tool_calls")
    if calls is None or calls == []:
        return []
    where = f"messages[{index}].tool_calls"
    if not isinstance(calls, list):
        raise bad_request(f"{where} must be a list of calls.", where, "invalid_type")
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                arguments = None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise bad_request(
                f"Each of {where} needs function.name and function.arguments (a JSON object).", where, "invalid_value"
            )
        out.append({"name": name, "arguments": arguments})
    return out


def parse_messages(data: dict, *, content=None) -> list[dict]:
    """The conversation as stored turns ({role, content}), tool calls and results written as
    text (engine/tools.py). content(value, index) reads one message's text."""
    read = content or _content_text
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list of {role, content} objects.", "messages", "invalid_type")
    limit = settings.HOMEAI_MAX_MESSAGES
    if len(messages) > limit:
        raise bad_request(
            f"This request has {len(messages):,} messages; the limit is {limit:,}. Send the recent part "
            "of the conversation (the model only reads what fits its context anyway).",
            "messages",
            "too_many_messages",
        )
    turns = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise bad_request(
                f"messages[{i}] must be an object with a role and content.", f"messages[{i}]", "invalid_type"
            )
        role = message.get("role")
        if role not in ROLES:
            raise bad_request(
                f"messages[{i}].role must be system, developer, user, assistant or tool.", f"messages[{i}].role"
            )
        text = read(message.get("content"), i)
        calls = tool_calls(message, i) if role == "assistant" else []
        if not text.strip() and not calls and i != len(messages) - 1:
            continue  # an empty turn in the history adds nothing to the prompt
        turns.append({"role": ROLES[role], "content": text, "tool_calls": calls})
    return history_turns(turns)


def check_schema(schema, field: str) -> dict:
    """A JSON schema the answer must match: an object, of a size a grammar can be built from.
    Its meaning is checked where the grammar is built (the worker), which names what it refuses."""
    if not isinstance(schema, dict):
        raise bad_request(f"{field} must be a JSON schema (an object).", field, "invalid_type")
    if len(json.dumps(schema)) > SCHEMA_CHARS:
        raise bad_request(f"{field} is longer than {SCHEMA_CHARS:,} characters.", field, "invalid_value")
    return schema


def parse_tools(data: dict) -> tuple[dict, ...]:
    """The functions offered, each {"name", "description", "parameters"} (OpenAI's and Ollama's shape)."""
    tools = data.get("tools")
    if tools is None or tools == []:
        return ()
    if not isinstance(tools, list):
        raise bad_request("tools must be a list of functions.", "tools", "invalid_type")
    out = []
    for k, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or tool.get("type", "function") != "function":
            raise bad_request(
                f'tools[{k}] must be {{"type": "function", "function": {{"name", "description", "parameters"}}}}.',
                f"tools[{k}]",
                "invalid_value",
            )
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise bad_request(
                f"tools[{k}].function.name must be 1 to 64 letters, digits, '_', '.' or '-'.",
                f"tools[{k}].function.name",
            )
        if any(t["name"] == name for t in out):
            raise bad_request(f"Two tools are named {name!r}.", f"tools[{k}].function.name")
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        description = function.get("description")
        out.append(
            {
                "name": name,
                "description": description if isinstance(description, str) else "",
                "parameters": check_schema(parameters, f"tools[{k}].function.parameters"),
            }
        )
    return tuple(out)


def tool_choice(choice, tools: tuple[dict, ...], *, reset=None, messages=None) -> str | None:
    """auto, required or a tool's name; None for "none" (the tools are then left out).

    reset (the request's reset_tool_choice): a forced choice is "auto" once tool results follow
    the last user message. An agent loop that sends the same body back with the results (Open
    WebUI's) would otherwise be made to call a tool again, forever; this is the OpenAI Agents
    SDK's reset_tool_choice, done by the server for clients that cannot change the body."""
    choice = _tool_choice(choice, tools)
    if reset is not None and not isinstance(reset, bool):
        raise bad_request("reset_tool_choice must be true or false.", "reset_tool_choice", "invalid_type")
    if reset and choice not in (None, "auto") and _tools_answered(messages):
        return "auto"
    return choice


def _tools_answered(messages) -> bool:
    """Whether a tool result comes after the last user message."""
    for message in reversed(messages if isinstance(messages, list) else ()):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            return True
        if role == "user":
            return False
    return False


def _tool_choice(choice, tools: tuple[dict, ...]) -> str | None:
    if choice is None or choice == "auto":
        return "auto"
    if choice == "none":
        return None
    if choice == "required":
        if not tools:
            raise bad_request('tool_choice "required" needs tools, and this request sends none.', "tool_choice")
        return "required"
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        if any(t["name"] == name for t in tools):
            return name
        raise bad_request(f"tool_choice names {name!r}, which is not one of the tools.", "tool_choice")
    raise bad_request(
        'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}.',
        "tool_choice",
    )


def _response_schema(data: dict) -> dict | None:
    """The schema of response_format (json_object: any JSON object), or None for text."""
    response_format = data.get("response_format")
    if response_format is None or response_format == {}:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict):
            raise bad_request(
                'response_format.json_schema must be {"name", "schema"}.', "response_format", "invalid_type"
            )
        schema = spec.get("schema")
        return {"type": "object"} if schema is None else check_schema(schema, "response_format.json_schema.schema")
    raise bad_request('response_format.type must be "text", "json_object" or "json_schema".', "response_format")


def output_spec(schema: dict | None, tools: tuple[dict, ...], choice: str | None, parallel) -> OutputSpec | None:
    if parallel is not None and not isinstance(parallel, bool):
        raise bad_request("parallel_tool_calls must be true or false.", "parallel_tool_calls", "invalid_type")
    if choice is None:
        tools = ()
    if schema is None and not tools:
        return None
    return OutputSpec(schema=schema, tools=tools, tool_choice=choice or "auto", parallel=parallel is not False)


def _prompt(data: dict) -> str:
    prompt = data.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        raise bad_request(
            "Send one prompt per request (this server does not batch prompts).", "prompt", "unsupported_value"
        )
    if isinstance(prompt, list):
        raise bad_request("prompt must be text; token-id prompts are not supported.", "prompt", "unsupported_value")
    if not isinstance(prompt, str):
        raise bad_request("prompt must be a string.", "prompt", "invalid_type")
    return prompt


def parse_request(data: dict, *, chat: bool, models: dict[str, str]) -> CompletionRequest:
    """Check an OpenAI request body; ranges are checked again by the services that store it."""
    model = check_model(data, models)
    _refuse_unsupported(data, chat)
    stream, include_usage = _stream_fields(data)
    max_tokens, _ = _max_tokens(data)
    output = None
    if chat:
        tools = parse_tools(data)
        choice = tool_choice(
            data.get("tool_choice"), tools, reset=data.get("reset_tool_choice"), messages=data.get("messages")
        )
        output = output_spec(_response_schema(data), tools, choice, data.get("parallel_tool_calls"))
    return CompletionRequest(
        chat=chat,
        model=model,
        messages=parse_messages(data) if chat else None,
        prompt=None if chat else _prompt(data),
        max_tokens=max_tokens,
        options=_sampling(data),
        stream=stream,
        include_usage=include_usage,
        output=output,
    )


def from_client_error(exc: ClientError, request: CompletionRequest | None = None) -> ApiError:
    """A service's ClientError as an OpenAI error; its field is the param (the message text is
    the request's messages or prompt)."""
    if exc.code == "busy":
        return ApiError(503, exc.message, code="server_busy")
    if exc.code == "limit_reached":  # the person's daily limit: OpenAI's "out of quota"
        return ApiError(429, exc.message, code="insufficient_quota")
    if exc.code in ("not_found", "model_not_found"):
        return ApiError(404, exc.message, code=exc.code, param=exc.field)
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
    if code == "invalid_schema":
        return ApiError(400, message, code="invalid_schema", param="response_format")
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
        "load_ms": metrics.get("load_ms"),
        "ttft_ms": metrics.get("ttft_ms"),
        "delivery_ms": metrics.get("delivery_ms"),
        "tpot_ms": metrics.get("tpot_ms"),
        "e2e_ms": metrics.get("e2e_ms"),
    }


def finish_reason(done: dict, calls: list | None = None) -> str:
    """OpenAI's finish reasons only: a cancelled answer ends with "stop" (and homeai_status)."""
    if calls:
        return "tool_calls"
    reason = (done.get("metrics") or {}).get("finish_reason")
    return reason if reason in ("stop", "length") else "stop"


def status_fields(done: dict) -> dict:
    """Our own field for an answer stopped before its end (someone cancelled it)."""
    return {"homeai_status": "cancelled"} if done.get("status") == "cancelled" else {}


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
            "function": {"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)},
        }
        out.append({"index": i, **item} if indexed else item)
    return out


def answer_parts(req: CompletionRequest, text: str) -> tuple[str, list[dict]]:
    """The answer's content and its tool calls (none unless tools were offered)."""
    return parse_calls(text) if req.tools else (text, [])


def completion_body(req: CompletionRequest, object_id: str, created: int, *, text: str, done: dict) -> dict:
    """The whole answer, for stream=false."""
    metrics = done.get("metrics") or {}
    content, calls = answer_parts(req, text)
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
    last.update(timings=timings(metrics), **status_fields(done))
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
