"""OpenAI's request bodies in: /v1/chat/completions and /v1/completions checked into a
CompletionRequest. Pure functions (no database, no I/O).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from api import checks
from api.checks import check_model, check_schema, output_spec, parse_messages, parse_tools, tool_choice
from api.errors import bad_request
from inference.engine.tools import OutputSpec

# Sampling fields we pass to the engine: OpenAI's, plus llama.cpp's widely used extensions.
OPENAI_SAMPLING = ("temperature", "top_p", "seed", "stop", "frequency_penalty", "presence_penalty")
EXTENSION_SAMPLING = ("top_k", "min_p", "repeat_penalty", "ignore_eos", "speculative")


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
    collections: list[int] | None = None  # document collections the answer is drawn from (our extension)
    tools_note: str = ""  # "5 of 36 offered" when the tools were more than the model can use (answers.fit_tools)

    @property
    def object_id_prefix(self) -> str:
        return "chatcmpl" if self.chat else "cmpl"

    @property
    def tools(self) -> bool:
        """Whether the answer may hold tool calls (they are parsed out of its text)."""
        return bool(self.output and self.output.tools)


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
        if data.get("collections"):
            # As Ollama's raw /api/generate: a completion's prompt is sent as it is, and an answer
            # from collections has its sources written into the question.
            raise bad_request(
                "collections works with /v1/chat/completions: a completion's prompt is sent as it is, "
                "and an answer from collections has its sources written into the question.",
                "collections",
                "unsupported_parameter",
            )


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
        collections=checks.check_collections(data.get("collections")) if chat else None,
    )
