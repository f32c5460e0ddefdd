"""Checks on what a client sends, shared by the chat socket and the APIs: pure functions of
their input and the settings, each refusal a ClientError naming the field it is about."""

from __future__ import annotations

import math

from django.conf import settings
from django.utils import formats
from django.utils.translation import gettext

from inference.catalog import model_for_answer
from inference.models import ChatSettings, Conversation
from infra.errors import ClientError

# name -> (type, lowest, highest)
SAMPLING_RANGES = {
    "temperature": (float, 0.0, 5.0),
    "top_p": (float, 0.0, 1.0),
    "top_k": (int, 0, 1000),
    "min_p": (float, 0.0, 1.0),
    "repeat_penalty": (float, 0.5, 2.0),
    "frequency_penalty": (float, -2.0, 2.0),
    "presence_penalty": (float, -2.0, 2.0),
    "seed": (int, -1, 2**31 - 1),
}
# Switches: ignore_eos (benchmarks: write exactly max_tokens, as vLLM's ignore_eos) and
# speculative (false: no speculative decoding for this answer, whatever the server's policy).
BOOLEAN_OPTIONS = ("ignore_eos", "speculative")
MAX_STOPS = 4
SYSTEM_PROMPT_CHARS = 4000
TITLE_CHARS = Conversation._meta.get_field("title").max_length
SETTINGS = ChatSettings.FIELDS


def validate_text(text, *, field: str = "text") -> str:
    if not isinstance(text, str):
        raise ClientError("bad_request", gettext("The message text must be a string."), field=field)
    if not text.strip():
        raise ClientError("empty_message", gettext("Type a message before sending."), field=field)
    limit = settings.HOMEAI_MAX_PROMPT_CHARS
    if len(text) > limit:
        raise ClientError(
            "too_long",
            gettext("Your message is %(n)s characters; the limit is %(limit)s.")
            % {"n": _count(len(text)), "limit": _count(limit)},
            field=field,
        )
    return text


def validate_max_tokens(value) -> int:
    if value is None:
        return settings.HOMEAI_MAX_TOKENS
    limit = settings.HOMEAI_MAX_TOKENS_LIMIT
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit:
        raise ClientError(
            "bad_request",
            gettext("max_tokens must be a whole number from 1 to %(limit)s.") % {"limit": _count(limit)},
            field="max_tokens",
        )
    return value


def validate_limited_text(
    value, *, field: str, what: str, limit: int, required: bool = True, one_line: bool = False
) -> str:
    """A string of at most `limit` characters (surrounding whitespace dropped; one_line: runs
    of whitespace made one space); `what` names it in the sentences."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ClientError("bad_request", gettext("%(what)s must be a string.") % {"what": what}, field=field)
    value = " ".join(value.split()) if one_line else value.strip()
    if required and not value:
        raise ClientError("bad_request", gettext("%(what)s cannot be empty.") % {"what": what}, field=field)
    if len(value) > limit:
        raise ClientError(
            "too_long",
            gettext("%(what)s is %(n)s characters; the limit is %(limit)s.")
            % {"what": what, "n": _count(len(value)), "limit": _count(limit)},
            field=field,
        )
    return value


def _count(n: int) -> str:
    return formats.number_format(n, force_grouping=True)


def validate_title(value) -> str:
    """A conversation's title, on one line."""
    return validate_limited_text(value, field="title", what=gettext("The title"), limit=TITLE_CHARS, one_line=True)


def validate_settings(values) -> dict:
    """Chat settings (system_prompt, temperature, top_p, max_tokens), any subset of them.

    null resets one to the server's default (for system_prompt: none)."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ClientError(
            "bad_request", 'settings must be an object, e.g. {"temperature": 0.2, "top_p": 0.9}.', field="settings"
        )
    clean: dict = {}
    for name, value in values.items():
        if name not in SETTINGS:
            known = ", ".join(SETTINGS)
            raise ClientError("bad_request", f"Unknown setting {name!r}; known settings: {known}.", field=name)
        if name == "model":
            clean[name] = _model(value)
        elif name == "system_prompt":
            clean[name] = validate_limited_text(
                value, field=name, what=gettext("The system prompt"), limit=SYSTEM_PROMPT_CHARS, required=False
            )
        elif value is None:
            clean[name] = None
        elif name == "max_tokens":
            clean[name] = validate_max_tokens(value)
        else:
            clean[name] = validate_sampling({name: value})[name]
    return clean


def _model(value) -> str:
    """A model's file name from any spelling a person or client uses ("smollm2:135m"); "" (or
    null) for the server's default."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > 255:
        raise ClientError("bad_request", gettext("The model must be a model's name."), field="model")
    return model_for_answer(value)


def is_number(value) -> bool:
    """A finite int or float (JSON's true and false are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def validate_sampling(options) -> dict:
    """Per-request sampling overrides, checked: a dict of known names with numbers in range."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ClientError("bad_request", 'options must be an object, e.g. {"temperature": 0.2}.', field="options")
    clean: dict = {}
    for name, value in options.items():
        if name in BOOLEAN_OPTIONS:
            if not isinstance(value, bool):
                raise ClientError("bad_request", f"{name} must be true or false.", field=name)
            clean[name] = value
            continue
        if name == "stop":
            stops = [value] if isinstance(value, str) else value
            if (
                not isinstance(stops, list)
                or len(stops) > MAX_STOPS
                or not all(isinstance(s, str) and s for s in stops)
            ):
                raise ClientError(
                    "bad_request",
                    f"stop must be a string or a list of up to {MAX_STOPS} non-empty strings.",
                    field=name,
                )
            clean["stop"] = stops
            continue
        if name not in SAMPLING_RANGES:
            known = ", ".join([*SAMPLING_RANGES, "stop", *BOOLEAN_OPTIONS])
            raise ClientError("bad_request", f"Unknown option {name!r}; known options: {known}.", field=name)
        kind, low, high = SAMPLING_RANGES[name]
        if not is_number(value) or (kind is int and value != int(value)) or not low <= value <= high:
            what = "a whole number" if kind is int else "a number"
            raise ClientError("bad_request", f"{name} must be {what} from {low} to {high}.", field=name)
        clean[name] = kind(value)
    return clean


def validate_ttft_ms(value) -> float:
    """The time to first token a browser measured, in milliseconds (at most a day)."""
    if not is_number(value) or not 0 <= value <= 86_400_000:
        raise ClientError("bad_request", "ttft_ms must be a number of milliseconds.", field="ttft_ms")
    return float(value)
