"""A JSON schema that asks for a grammar of gigabytes: each API that takes one (Ollama's format and
tools, OpenAI's response_format and tools) refuses it with 400 in the web process, naming the keyword, the
value and the limit, and nothing reaches a worker."""

from __future__ import annotations

import httpx

from accounts.keys import api_key_create
from inference.models import Generation
from tests import factories

HUGE = 300_000_000
ARRAY = {"type": "array", "items": {"type": "string"}, "minItems": HUGE}
MESSAGES = [{"role": "user", "content": "List everything."}]


def tool(parameters: dict) -> list[dict]:
    return [{"type": "function", "function": {"name": "save", "description": "", "parameters": parameters}}]


def response_format(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "list", "schema": schema}}


# (path, body, what the refusal names)
ATTACKS = [
    ("/api/chat", {"messages": MESSAGES, "format": ARRAY}, f"format: minItems is {HUGE:,}"),
    ("/api/generate", {"prompt": "Say a.", "format": {"type": "string", "pattern": "^a{300000000}$"}}, "pattern"),
    (
        "/api/chat",
        {"messages": MESSAGES, "tools": tool({"type": "object", "properties": {"x": {"maxLength": HUGE}}})},
        f"tools[0].function.parameters.properties.x: maxLength is {HUGE:,}",
    ),
    (
        "/v1/chat/completions",
        {"messages": MESSAGES, "response_format": response_format({"$defs": {"big": ARRAY}, "$ref": "#/$defs/big"})},
        f"response_format.json_schema.schema.$defs.big: minItems is {HUGE:,}",
    ),
    (
        "/v1/chat/completions",
        {
            "messages": MESSAGES,
            "tools": tool({"anyOf": [{"type": "string", "pattern": "(ab{20000}){20000}"}]}),
        },
        "tools[0].function.parameters.anyOf[0].pattern: a part repeats 400,000,000 times",
    ),
    (
        "/v1/chat/completions",
        {"messages": MESSAGES, "response_format": response_format({"type": "object", "minProperties": HUGE})},
        f"minProperties is {HUGE:,}",
    ),
]


def error_text(answer: httpx.Response) -> str:
    error = answer.json()["error"]
    return error if isinstance(error, str) else error["message"]


def test_a_schema_asking_for_millions_of_repetitions_is_refused_on_every_api_before_a_worker(start_web):
    _, key = api_key_create(user=factories.user("ada"))
    web = start_web()
    before = Generation.objects.count()
    with httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        for path, body, named in ATTACKS:
            answer = client.post(path, json={**body, "stream": False})
            assert answer.status_code == 400, (path, named, answer.status_code, answer.text[:300])
            assert named in error_text(answer) and "the limit is 256" in error_text(answer), error_text(answer)
        assert Generation.objects.count() == before  # nothing was queued for a worker
        # A schema of ordinary counts passes every check: it waits for a worker (503 when none
        # runs) or is answered, never refused.
        fine = {"type": "array", "items": {"type": "string", "maxLength": 40}, "minItems": 3, "maxItems": 5}
        normal = client.post("/api/chat", json={"messages": MESSAGES, "format": fine, "stream": False})
        assert normal.status_code in (200, 503), (normal.status_code, normal.text[:300])
