"""Hostile frames on the chat socket: every one gets an answer a person can act on (or nothing,
for a harmless one), none closes the socket, and the chat works afterwards."""

from __future__ import annotations

import json
import random

import pytest

from inference.models import Generation
from tests.support import of_type

pytestmark = [pytest.mark.integration]

FRAMES = 10_000
TYPES = [
    None,
    1,
    2.5,
    True,
    [],
    ["chat.send"],
    {},
    {"type": "chat.send"},
    "",
    "chat.",
    "chat.relay",
    "dashboard.relay",
    "websocket.connect",
    "websocket.disconnect",
    "chat.send",
    "chat.cancel",
    "chat.ttft",
    "chat.regenerate",
    "chat.edit",
    "chat.switch",
    "chat.settings",
    "chat.sync",
    "x" * 500,
    "chat.send\u0000",
    "ｃｈａｔ.send",
]
JUNK = [
    None,
    True,
    False,
    0,
    -1,
    1e308,
    -(2**63),
    2**70,
    "",
    " ",
    "\u202e",
    "<script>",
    "x" * 3000,
    [],
    [1, [2, [3]]],
    [1, 2, 3],
    list(range(500)),
    {},
    {"$gt": ""},
    {"temperature": "hot"},
    {"temperature": 1e9},
    {"stop": [""] * 9},
    {"seed": -(2**40)},
    "NaN",
    "1",
    "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
]
FIELDS = [
    "conversation",
    "generation",
    "generations",
    "message",
    "text",
    "max_tokens",
    "options",
    "settings",
    "preset",
    "ttft_ms",
]
BROKEN = ["", "{", "[1,2", "null", "true", "42", '"chat.send"', "{}" * 100, "\u0000", "[" * 500, "[" * 50_000]
NO_ANSWER = [0, -1, "5", 10**9, [], {}, True]  # every chat.send's max_tokens is refused: nothing is generated


def hostile(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.1:
        return rng.choice(BROKEN)
    frame = {"type": rng.choice(TYPES)}
    for name in rng.sample(FIELDS, rng.randint(0, len(FIELDS))):
        frame[name] = rng.choice(JUNK)
    if frame["type"] in ("chat.send", "chat.edit", "chat.regenerate"):
        frame["max_tokens"] = rng.choice(NO_ANSWER)
    return json.dumps(frame)


def test_random_hostile_frames_never_close_the_socket_and_each_bad_one_is_answered(make_user, connect):
    before = Generation.objects.count()
    sock = connect(make_user())
    rng = random.Random(20261130)
    for _ in range(FRAMES):
        sock.send_raw(hostile(rng))
    sock.send({"type": "chat.end-of-fuzz"})  # answered last, in order: every frame before it was handled
    answers = sock.collect(lambda e: "chat.end-of-fuzz" in e.get("message", ""), timeout=600)
    errors = of_type(answers, "generation.error")
    assert all(e["message"] and e["code"] != "internal_error" for e in errors), [e for e in errors if not e["message"]]
    assert len(errors) > FRAMES // 2  # most frames are refused in words (a harmless chat.ttft is not answered)
    # Every send's max_tokens is refused (NO_ANSWER): nothing was queued, nothing generated.
    assert Generation.objects.count() == before and not of_type(answers, "generation.queued")


def test_the_chat_still_answers_after_the_hostile_frames(worker, make_user, connect):
    sock = connect(make_user())
    rng = random.Random(7)
    for _ in range(200):
        sock.send_raw(hostile(rng))
    sock.send({"type": "chat.end-of-fuzz"})
    sock.collect(lambda e: "chat.end-of-fuzz" in e.get("message", ""), timeout=600)
    events = sock.chat("Say hello.", max_tokens=4)
    assert of_type(events, "generation.done")
