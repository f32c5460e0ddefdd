"""Hostile API bodies: 2,000 seeded random ones get a 4xx with an OpenAI error object (never a
5xx), and the 600 KB body of 20,000 messages is refused at once while a chat streams beside it."""

from __future__ import annotations

import json
import random
import threading
import time

import httpx
import pytest

from inference.models import Generation
from tests.api.test_openai_api import MODEL, _post
from tests.support import of_type

pytestmark = [pytest.mark.integration]

BODIES = 2000
PATHS = ["/v1/chat/completions", "/v1/completions"]
JUNK = [
    None,
    True,
    0,
    -1,
    1.5,
    1e308,
    2**70,
    "",
    "x" * 2000,
    "\u0000",
    "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
    [],
    [None],
    [{}],
    {},
    {"role": "user"},
    {"$ne": 1},
    "NaN",
    "Infinity",
]
ROLES = ["user", "assistant", "system", "tool", "developer", "", None, 3, "USER", "user\u0000"]


def message(rng: random.Random):
    if rng.random() < 0.2:
        return rng.choice(JUNK)
    out = {
        "role": rng.choice(ROLES),
        "content": rng.choice(["Hi", "", None, 5, ["Hi"], [{"type": "text", "text": "Hi"}]]),
    }
    if rng.random() < 0.2:
        out[rng.choice(["name", "tool_calls", "extra"])] = rng.choice(JUNK)
    return out


def hostile_body(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.1:
        return rng.choice([b"", b"{", b"[]", b"null", b"\xff\xfe", b'{"model":', b"{}" * 300, b"[" * 5000])
    body: dict = {}
    if rng.random() < 0.8:
        body["messages"] = [message(rng) for _ in range(rng.randint(0, 4))] if rng.random() < 0.8 else rng.choice(JUNK)
    if rng.random() < 0.5:
        body["prompt"] = rng.choice(["Hi", *JUNK])
    for name in rng.sample(
        [
            "model",
            "stream",
            "temperature",
            "top_p",
            "top_k",
            "seed",
            "stop",
            "n",
            "logprobs",
            "tools",
            "response_format",
            "stream_options",
            "user",
        ],
        rng.randint(0, 6),
    ):
        body[name] = rng.choice(JUNK)
    # Whatever else it holds, no body asks for an answer the engine would write.
    body["max_tokens"] = rng.choice([0, -1, "5", 10**9, [], {}, True, 1.5, "NaN"])
    return json.dumps(body).encode()


def test_random_hostile_bodies_get_a_4xx_error_object_and_never_a_5xx(api, api_key, live_server_url):
    rng = random.Random(20261130)
    statuses: dict[int, int] = {}
    with httpx.Client(base_url=live_server_url, timeout=180) as client:
        for _ in range(BODIES):
            path = rng.choice(PATHS)
            response = client.post(
                path,
                content=hostile_body(rng),
                headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            )
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert response.status_code < 500, (path, response.status_code, response.text[:300])
            error = response.json().get("error")
            assert error and error["message"] and error["type"], (path, response.status_code, response.text[:300])
    assert statuses.get(400, 0) > BODIES // 2, statuses
    # And the service still answers.
    done = api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert done.choices[0].message.content is not None


def test_a_body_of_twenty_thousand_messages_is_refused_at_once_and_the_chat_beside_it_flows(
    api,
    api_key,
    live_server_url,
    make_user,
    connect,
):
    sock = connect(make_user("bea"))
    sock.send(
        {
            "type": "chat.send",
            "conversation": None,
            "text": "Count to 300.",
            "max_tokens": 400,
            "options": {"ignore_eos": True},
        }
    )
    sock.collect(lambda e: e["type"] == "generation.token", timeout=600)

    replies: list[httpx.Response] = []
    replied_at: list[float] = []  # when each reply came, and (first) when the fitted one was sent
    huge = {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "a"}] * 20_000}
    fitted = {"model": MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": "word " * 100}] * 999}

    def post_both() -> None:
        # A full context's prefill on a busy 2-core box can take minutes: wait on the reply.
        for body in (huge, fitted):
            replies.append(_post(live_server_url, "/v1/chat/completions", api_key, body, timeout=600))
            replied_at.append(time.monotonic())

    poster = threading.Thread(target=post_both)
    poster.start()
    arrivals = []
    events = []
    while True:
        event = sock.recv(timeout=600)
        events.append(event)
        if event["type"] == "generation.token":
            arrivals.append(time.monotonic())
        if event["type"] in ("generation.done", "generation.error"):
            break
    poster.join(timeout=1200)
    assert len(replies) == 2, "a request failed: see the captured exception above"

    assert events[-1]["type"] == "generation.done" and events[-1]["metrics"]["output_tokens"] == 400
    refused, answered = replies
    assert refused.status_code == 400 and "the limit is" in refused.json()["error"]["message"], refused.text[:300]
    assert answered.status_code == 200, answered.text[:300]  # 999 long turns: fitted to the context, answered
    # At once: the refusal came back while the chat beside it was still writing (it is refused
    # before anything is stored or queued, not after a worker read it).
    assert replied_at[0] < arrivals[-1], "the 20,000-message body was refused only after the chat ended"
    # Flows: while the fitted request's prompt (a full context) was read, the chat kept writing:
    # its largest gap in that time is well under the time the request took, which an unchunked
    # prefill would have filled with one stall. A ratio within one run, not a clock bound.
    during = [t for t in arrivals if replied_at[0] <= t <= replied_at[1]]
    assert len(during) >= 2, "the chat ended before the fitted request was read: make it longer"
    gaps = [b - a for a, b in zip(during, during[1:], strict=False)]
    assert max(gaps) < 0.5 * (replied_at[1] - replied_at[0]), (max(gaps), replied_at[1] - replied_at[0])
    # The largest gap itself is printed: under 2 s on a quiet box (the bar), 3.7 s once
    # with two other suites running beside this one (docs/reliability.md).
    print(f"largest chat gap {max(gaps):.2f} s over {len(of_type(events, 'generation.token'))} tokens")


def ollama_body(rng: random.Random) -> bytes:
    """A hostile /api/chat or /api/generate body; its num_predict is always refused, so none is answered."""
    base = hostile_body(rng) if rng.random() < 0.9 else b"{}"
    try:
        raw = json.loads(base)
    except (ValueError, RecursionError):
        return base  # not JSON at all, or nested too deeply to read
    if not isinstance(raw, dict):
        return base
    for name in rng.sample(["format", "tools", "tool_choice", "think", "images", "raw", "system", "keep_alive"], 3):
        raw[name] = rng.choice(JUNK)
    options = rng.choice([{}, *(j for j in JUNK if j is not None and j != {})]) if rng.random() < 0.3 else {}
    if isinstance(options, dict):
        options["num_predict"] = rng.choice([0, -5, "5", [], {}, True, 1.5])
    raw["options"] = options  # a dict with a bad num_predict, or not a dict: refused either way
    return json.dumps(raw).encode()


def test_random_hostile_bodies_on_the_ollama_api_never_get_a_5xx_nor_an_answer(api, api_key, live_server_url):
    rng = random.Random(20261201)
    before = Generation.objects.count()
    with httpx.Client(base_url=live_server_url, timeout=180) as client:
        for _ in range(BODIES // 4):
            path = rng.choice(["/api/chat", "/api/generate"])
            response = client.post(path, content=ollama_body(rng), headers={"Authorization": f"Bearer {api_key}"})
            assert response.status_code < 500, (path, response.status_code, response.text[:300])
            body = response.json()
            assert response.status_code == 200 or isinstance(body["error"], str), (path, response.text[:300])
    assert Generation.objects.count() == before
