"""Redis restarts and outages, with real processes on a Redis of the test's own.

Redis carries the task queue, the heartbeats and every live event; the database keeps the text.
So an outage may cost live events but never an answer: the worker keeps writing (and saving)
through it, the page asks where its answers are when they fall silent (chat.sync), queued
answers are sent again once Redis is back, and nobody's answer is marked interrupted because
the heartbeats were lost with Redis's memory.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect, sync_playwright

from inference.models import Conversation, Generation
from tests.support import DONE_TYPES, launch_chromium, session_cookie, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.faults]
MS = 1000

WAIT = 600  # seconds: an upper bound on an event on a busy box, never a measurement
COUNTING = "Count from 1 to 500, one number per line, and nothing else."
# Greedy, this one runs to max tokens (400 of them measured with SmolLM2, the bundled model).
STORY = "Write a long story about a lighthouse keeper and a storm, in ten paragraphs."
LONG = {"max_tokens": 300, "options": {"ignore_eos": True, "temperature": 0}}


def follow(sock, generation_id: int, timeout: float = WAIT) -> tuple[dict, list[dict]]:
    """Read an answer's events as the page does: after SILENT_S without one, ask chat.sync.
    Returns the end event and every event seen."""
    deadline = time.monotonic() + timeout
    seen: list[dict] = []
    while time.monotonic() < deadline:
        try:
            event = sock.recv(timeout=3)
        except TimeoutError:
            sock.send({"type": "chat.sync", "generations": [generation_id]})
            continue
        seen.append(event)
        if event["type"] in DONE_TYPES and event.get("generation") == generation_id:
            return event, seen
    raise TimeoutError(f"answer {generation_id} did not end within {timeout} s: {seen[-5:]}")


def start_answer(sock, text: str = COUNTING, **extra) -> int:
    sock.send({"type": "chat.send", "conversation": None, "text": text, **LONG, **extra})
    queued = sock.collect(lambda e: e["type"] == "generation.queued", timeout=WAIT)[-1]
    return queued["generation"]


def first_token(sock, generation_id: int) -> None:
    sock.collect(lambda e: e["type"] == "generation.token" and e["generation"] == generation_id, timeout=WAIT)


def test_a_redis_restart_mid_answer_loses_no_answer_and_the_next_message_is_answered(
    stack, fault_worker, make_user, settled
):
    user = make_user()
    sock = stack.socket(user)
    gid = start_answer(sock)
    first_token(sock, gid)
    assert Generation.objects.get(id=gid).status == "running"

    stack.restart_redis()
    end, _ = follow(sock, gid)

    generation = Generation.objects.select_related("message").get(id=gid)
    assert end["type"] == "generation.done" and end["status"] == "done", end
    assert generation.status == "done" and generation.output_tokens == LONG["max_tokens"]
    assert end["text"] == generation.message.content and len(end["text"]) > 100
    assert fault_worker.alive(), "the worker must survive a Redis restart"
    # The next message, on the same socket, is answered.
    events = sock.chat("Name a colour.", max_tokens=8)
    assert events[-1]["type"] == "generation.done", events[-1]


def test_thirty_seconds_without_redis_lose_nothing_and_health_says_why(stack, fault_worker, make_user, settled):
    user = make_user()
    sock = stack.socket(user)
    gid = start_answer(sock)
    first_token(sock, gid)

    stack.redis.stop()
    down_at = time.monotonic()
    status, body = stack.health()
    assert status == 503 and any("Redis does not answer" in r for r in body["reasons"]), body
    assert "error" not in body["redis"], "exception text is for staff only"
    # The answer goes on through the outage, saved to the database, and the page learns its end.
    end, _ = follow(sock, gid)
    assert end["type"] == "generation.done" and len(end["text"]) > 100, end
    # A message sent now is kept, and the sender is told why it waits.
    sock.send({"type": "chat.send", "conversation": None, "text": "Name a fruit.", "max_tokens": 8})
    events = sock.collect(lambda e: e["type"] == "generation.phase" and e.get("phase") == "notice", timeout=WAIT)
    waiting = [e for e in events if e["type"] == "generation.queued"][-1]["generation"]
    assert "unreachable" in events[-1]["message"]
    time.sleep(max(0.0, 30 - (time.monotonic() - down_at)))  # the outage lasts 30 s

    stack.redis.start()
    end, _ = follow(sock, waiting)
    assert end["type"] == "generation.done", end
    assert Generation.objects.get(id=gid).status == "done"
    assert fault_worker.alive(), "the worker must survive 30 s without Redis"
    assert wait_until(lambda: stack.health()[0] == 200, timeout=WAIT)
    assert not Generation.objects.filter(status="interrupted").exists()


def test_after_a_redis_restart_the_streaming_answer_ends_on_screen(
    stack, fault_worker, make_user, settled, monkeypatch
):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop; the ORM calls block
    user = make_user()
    # Greedy sampling: the answer is the same long one on every run, so the restart lands while
    # it streams (a sampled counting answer once stopped after 38 tokens, before the test looked).
    chat = Conversation.objects.create(user=user, title="A story", temperature=0)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        context = browser.new_context(base_url=stack.url)
        context.add_cookies([{"name": "sessionid", "value": session_cookie(user), "url": stack.url}])
        page = context.new_page()
        page.goto(f"/chat/{chat.id}/")
        expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT * MS)
        page.fill("#max-tokens", "400")
        page.fill("#message-input", STORY)
        page.click("#send-button")
        answer = page.locator(".message.assistant").last
        expect(answer).to_have_class(re.compile(r"\bstreaming\b"), timeout=WAIT * MS)
        gid = int(answer.get_attribute("data-generation"))
        assert Generation.objects.get(id=gid).status == "running", "the restart must land while it streams"

        stack.restart_redis()
        back = time.monotonic()
        expect(answer).to_have_attribute("data-status", "done", timeout=WAIT * MS)
        ended_s = time.monotonic() - back
        generation = Generation.objects.select_related("message").get(id=gid)
        assert answer.locator(".message-text").inner_text().strip()
        assert generation.status == "done" and generation.message.content.strip()
        print(f"answer {gid} ({generation.output_tokens} tokens) ended on screen {ended_s:.1f} s after Redis came back")

        page.fill("#max-tokens", "8")
        page.fill("#message-input", "Name a colour.")
        page.click("#send-button")
        expect(page.locator(".message.assistant")).to_have_count(2, timeout=WAIT * MS)
        expect(page.locator(".message.assistant").last).to_have_attribute("data-status", "done", timeout=WAIT * MS)
        browser.close()
