"""The services' input checks, as pure functions: every refusal names its field."""

from __future__ import annotations

import math

import pytest
from django.test import override_settings

from inference.services.validation import (
    is_number,
    validate_max_tokens,
    validate_sampling,
    validate_text,
    validate_ttft_ms,
)
from infra.errors import ClientError


def refused(fn, *args, **kwargs) -> ClientError:
    with pytest.raises(ClientError) as caught:
        fn(*args, **kwargs)
    return caught.value


@override_settings(HOMEAI_MAX_PROMPT_CHARS=10)
def test_text_must_be_a_non_blank_string_within_the_limit():
    assert validate_text("hello") == "hello"
    assert refused(validate_text, None).field == "text"
    assert refused(validate_text, "   ").code == "empty_message"
    too_long = refused(validate_text, "x" * 11)
    assert too_long.code == "too_long" and "11 characters; the limit is 10" in too_long.message


@override_settings(HOMEAI_MAX_TOKENS=256, HOMEAI_MAX_TOKENS_LIMIT=2048)
def test_max_tokens_defaults_and_is_bounded():
    assert validate_max_tokens(None) == 256
    assert validate_max_tokens(2048) == 2048
    for bad in (0, 2049, "5", True, 1.5):
        assert refused(validate_max_tokens, bad).field == "max_tokens"


def test_sampling_keeps_known_numbers_in_range_and_names_the_bad_field():
    clean = validate_sampling(
        {"temperature": 1, "top_k": 40.0, "stop": "END", "ignore_eos": True, "speculative": False}
    )
    assert clean == {"temperature": 1.0, "top_k": 40, "stop": ["END"], "ignore_eos": True, "speculative": False}
    assert isinstance(clean["temperature"], float) and isinstance(clean["top_k"], int)
    assert validate_sampling(None) == {}
    cases = {
        "top_p": {"top_p": 1.5},
        "temperature": {"temperature": "hot"},
        "top_k": {"top_k": 2.5},
        "seed": {"seed": math.inf},
        "stop": {"stop": ["a", "b", "c", "d", "e"]},
        "ignore_eos": {"ignore_eos": 1},
        "speculative": {"speculative": "no"},
        "mirostat": {"mirostat": 2},
        "options": ["temperature"],
    }
    for field, options in cases.items():
        error = refused(validate_sampling, options)
        assert (error.code, error.field) == ("bad_request", field), options


def test_numbers_exclude_booleans_and_infinities():
    assert is_number(1) and is_number(0.5)
    assert not any(is_number(v) for v in (True, math.nan, math.inf, "1", None))


def test_ttft_is_milliseconds_within_a_day():
    assert validate_ttft_ms(12) == 12.0
    for bad in (-1, 86_400_001, "12", False):
        assert refused(validate_ttft_ms, bad).field == "ttft_ms"
