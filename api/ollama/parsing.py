"""Ollama's request bodies in: /api/chat and /api/generate checked into an OllamaRequest, with
Ollama's option names and keep_alive durations. Pure functions (no database, no I/O); the checks
both APIs share are api/checks.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings

from api import checks
from api.checks import check_model, check_schema, output_spec, parse_messages, parse_tools, tool_choice
from api.errors import bad_request
from inference.engine.tools import OutputSpec

# What /api/version answers: the Ollama release whose API (docs/api.md) this server speaks.
# Clients compare it to the version a feature needs (structured outputs came in 0.5.0).
VERSION = "0.12.0"
LISTING = "GET /api/tags"
# Ollama's sampling options, and HomeAI's extensions the OpenAI path takes too: speculative, and
# ignore_eos (write exactly num_predict tokens, as benchmarks and tests need).
SAMPLING = ("temperature", "top_p", "top_k", "min_p", "seed", "stop", "repeat_penalty", "speculative", "ignore_eos")
PENALTIES = ("frequency_penalty", "presence_penalty")
# Options that set up the runner (context, threads, GPU, memory) rather than the answer: this
# server's own settings decide those, and the options are ignored, as Ollama ignores unknown ones.
# repeat_last_n and penalize_newline tune penalties slightly; tfs_z is gone from llama.cpp.
IGNORED_OPTIONS = frozenset(
    {
        "num_ctx",
        "num_batch",
        "num_gpu",
        "main_gpu",
        "low_vram",
        "f16_kv",
        "logits_all",
        "vocab_only",
        "use_mmap",
        "use_mlock",
        "embedding_only",
        "num_thread",
        "numa",
        "num_keep",
        "repeat_last_n",
        "penalize_newline",
        "tfs_z",
    }
)
# Options that would change the answer and that this server cannot honour: refused by name.
REFUSED_OPTIONS = {"mirostat": 0, "typical_p": 1.0}


@dataclass
class OllamaRequest:
    """A validated /api/chat or /api/generate body."""

    chat: bool
    model: str
    messages: list[dict] | None = None
    prompt: str | None = None  # /api/generate with raw=true: the text as is, no chat template
    max_tokens: int | None = None
    options: dict = field(default_factory=dict)
    stream: bool = True
    output: OutputSpec | None = None
    collections: list[int] | None = None  # document collections the answer is drawn from (HomeAI's extension)
    tools_note: str = ""  # "5 of 36 offered" when the tools were more than the model can use (answers.fit_tools)
    # No messages, or an empty prompt: Ollama's way to load (keep_alive=0: unload) a model.
    load_only: str | None = None
    keep_alive_s: float | None = None  # how long the model stays loaded after this answer (None: default)

    @property
    def tools(self) -> bool:
        return bool(self.output and self.output.tools)


def _options(data: dict) -> tuple[dict, int | None]:
    """Sampling options for the engine, and num_predict as max_tokens."""
    options = data.get("options")
    if options is None:
        return {}, None
    if not isinstance(options, dict):
        raise bad_request('options must be an object, e.g. {"temperature": 0.2}.', "options", "invalid_type")
    out = {}
    for name, value in options.items():
        if value is None or name in IGNORED_OPTIONS or name == "tool_choice":
            continue
        if name in REFUSED_OPTIONS:
            if value != REFUSED_OPTIONS[name]:
                raise bad_request(f"options.{name} is not supported by this server.", name, "unsupported_parameter")
            continue
        if name in SAMPLING or (name in PENALTIES and value != 0):
            out[name] = value
    return out, _num_predict(options.get("num_predict"))


def _num_predict(value) -> int | None:
    """num_predict: -1 (no limit) and -2 (fill the context) are this server's limit, as is any
    larger number (clients send their own defaults, and the server's limit is the last word)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value == 0 or value < -2:
        raise bad_request("options.num_predict must be a positive whole number, -1 or -2.", "num_predict")
    return settings.HOMEAI_MAX_TOKENS_LIMIT if value < 0 else min(value, settings.HOMEAI_MAX_TOKENS_LIMIT)


def _format(data: dict) -> dict | None:
    value = data.get("format")
    if value is None or value == "":
        return None
    if value == "json":
        return {"type": "object"}
    if isinstance(value, dict):
        return check_schema(value, "format")
    raise bad_request('format must be "json" or a JSON schema.', "format")


def _refuse(data: dict, names: tuple[str, ...]) -> None:
    """Fields that would change the answer and cannot be honoured, when set."""
    reasons = {
        "think": "This model does not think before answering: think must be false or left out.",
        "logprobs": "Log probabilities are not supported by this server.",
        "images": "This model reads text only: images are not supported.",
        "suffix": "suffix (fill-in-the-middle) is not supported.",
        "template": "A prompt template of the request's own is not supported: the model's chat template is used.",
        "context": "context (the deprecated token history) is not supported: send the conversation to /api/chat.",
    }
    for name in names:
        if data.get(name):
            raise bad_request(reasons[name], name, "unsupported_parameter")


def _collections(data: dict) -> list[int] | None:
    """HomeAI's `collections`, as on /v1/chat/completions: from the body, or from options, which
    Ollama's clients pass through as they are (ollama.chat(..., options={"collections": [3]}))
    where they have no field of their own to send. Called once options is known to be an object."""
    ids = data.get("collections")
    if ids is None:
        ids = (data.get("options") or {}).get("collections")
    return checks.check_collections(ids)


def _stream(data: dict) -> bool:
    stream = data.get("stream", True)
    if stream is None:
        return True
    if not isinstance(stream, bool):
        raise bad_request("stream must be true or false.", "stream", "invalid_type")
    return stream


def _content(value, index: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise bad_request(f"messages[{index}].content must be a string.", f"messages[{index}].content")
    return value


_DURATION_PART = re.compile(r"(-?\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_keep_alive(data: dict) -> float | None:
    """Ollama's keep_alive: seconds as a number, or a Go duration ("5m", "1h30m", "-1"); a
    negative one keeps the model loaded until another needs its place."""
    value = data.get("keep_alive")
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        value = None
    elif isinstance(value, int | float):
        return float(value) if value >= 0 else -1.0
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            parts = _DURATION_PART.findall(text)
            if parts and "".join(number + unit for number, unit in parts) == text:
                seconds = sum(float(number) * _UNIT_S[unit] for number, unit in parts)
            else:
                seconds = None
        if seconds is not None:
            return seconds if seconds >= 0 and not text.startswith("-") else -1.0
    raise bad_request(
        'keep_alive must be a duration such as "5m" or "1h", or a number of seconds (negative: keep it loaded).',
        "keep_alive",
        "invalid_value",
    )


def _load_only(chat: bool, model: str, stream: bool, data: dict) -> OllamaRequest:
    """A request with nothing to answer: Ollama's way to load a model now (for keep_alive, else
    the default) or, with keep_alive 0, to unload it."""
    keep_alive_s = parse_keep_alive(data)
    action = "unload" if keep_alive_s == 0 else "load"
    return OllamaRequest(chat=chat, model=model, stream=stream, load_only=action, keep_alive_s=keep_alive_s)


def parse_chat(data: dict, *, models: dict[str, str]) -> OllamaRequest:
    """Check an /api/chat body (HomeAI also reads tool_choice and reset_tool_choice, from the body
    or options: Ollama's API has none, and a small model rarely calls a tool unless made to)."""
    model = check_model(data, models, LISTING)
    _refuse(data, ("think", "logprobs"))
    stream = _stream(data)
    options, max_tokens = _options(data)
    messages = data.get("messages")
    if messages is None or messages == []:
        return _load_only(True, model, stream, data)
    for i, message in enumerate(messages if isinstance(messages, list) else ()):
        if isinstance(message, dict) and message.get("images"):
            raise bad_request("This model reads text only: images are not supported.", f"messages[{i}].images")
    tools = parse_tools(data)
    raw_options = data.get("options") or {}
    choice = data.get("tool_choice") or raw_options.get("tool_choice")
    reset = data.get("reset_tool_choice", raw_options.get("reset_tool_choice"))
    return OllamaRequest(
        chat=True,
        model=model,
        messages=parse_messages(data, content=_content),
        max_tokens=max_tokens,
        options=options,
        stream=stream,
        output=output_spec(_format(data), tools, tool_choice(choice, tools, reset=reset, messages=messages), None),
        collections=_collections(data),
        keep_alive_s=parse_keep_alive(data),
    )


def parse_generate(data: dict, *, models: dict[str, str]) -> OllamaRequest:
    """Check an /api/generate body: a prompt (and system), through the chat template unless raw."""
    model = check_model(data, models, LISTING)
    _refuse(data, ("think", "logprobs", "images", "suffix", "template", "context"))
    stream = _stream(data)
    options, max_tokens = _options(data)
    prompt, system = data.get("prompt"), data.get("system")
    if prompt is None or prompt == "":
        return _load_only(False, model, stream, data)
    if not isinstance(prompt, str):
        raise bad_request("prompt must be a string.", "prompt", "invalid_type")
    if system is not None and not isinstance(system, str):
        raise bad_request("system must be a string.", "system", "invalid_type")
    raw = data.get("raw") is True
    collections = _collections(data)
    if raw and collections:
        raise bad_request(
            "collections cannot be used with raw: a raw prompt is sent as it is, and an answer from "
            "collections has its sources written into the question.",
            "collections",
            "unsupported_parameter",
        )
    messages = None
    if not raw:
        messages = ([{"role": "system", "content": system}] if system and system.strip() else []) + [
            {"role": "user", "content": prompt}
        ]
    return OllamaRequest(
        chat=False,
        model=model,
        messages=messages,
        prompt=prompt if raw else None,
        max_tokens=max_tokens,
        options=options,
        stream=stream,
        output=output_spec(_format(data), (), "auto", None),
        collections=collections,
        keep_alive_s=parse_keep_alive(data),
    )
