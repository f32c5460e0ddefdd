"""A person's first visit, in Debian's Chromium driven by Playwright."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from playwright.sync_api import expect, sync_playwright

from accounts import setup_token
from inference import redis_client
from inference.models import Generation
from tests.support import launch_chromium, markdown_html, session_cookie, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ARTIFACTS = Path(settings.DATA_DIR) / "artifacts"


@pytest.fixture
def page(live_server_url, monkeypatch):

    # Playwright's sync API keeps an event loop in this thread; the test's own ORM reads are
    # still plain blocking calls, which Django would otherwise refuse.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = launch_chromium(p)
        context = browser.new_context(base_url=live_server_url, viewport={"width": 1280, "height": 860})
        page = context.new_page()
        page.set_default_timeout(30_000)
        yield page
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "last-browser-test.png"), full_page=True)
        browser.close()


def test_a_new_user_creates_the_admin_account_and_watches_an_answer_stream(page, worker, settled):

    page.goto("/")
    expect(page).to_have_url(re.compile(r"/setup/$"))
    expect(page.locator("h1")).to_contain_text("setup link")  # the first visitor alone cannot
    page.goto(f"/setup/?token={setup_token.token()}")  # the link `make run` prints
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password1]", "a long home password 42")
    page.fill("input[name=password2]", "a long home password 42")
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/chat/$"))
    assert get_user_model().objects.get(username="admin").is_superuser
    expect(page.locator("#connection-status")).to_contain_text(re.compile("connected", re.I))

    # Record how much of the answer was drawn at each change: a streamed answer shows part of
    # its text before the whole (the page draws the first tokens at once, then a few times a second).
    page.evaluate(
        """() => {
            window.__drawn = [];
            new MutationObserver(() => {
                const texts = document.querySelectorAll('.message.assistant .message-text');
                if (texts.length) window.__drawn.push(texts[texts.length - 1].textContent.trim().length);
            }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
        }"""
    )
    page.fill("#message-input", "Tell me about the sea.")
    page.fill("#max-tokens", "32")
    page.click("#send-button")

    answer = page.locator(".message.assistant").last
    expect(answer.locator(".message-text")).not_to_be_empty(timeout=600_000)
    expect(answer.locator(".stats-line")).to_be_visible(timeout=600_000)
    expect(page).to_have_url(re.compile(r"/chat/\d+/$"))

    generation = Generation.objects.get()
    assert generation.status == "done" and generation.output_tokens >= 2
    drawn = page.evaluate("window.__drawn")
    final = len(answer.locator(".message-text").inner_text().strip())
    assert any(0 < n < final for n in drawn), (drawn, final)  # streamed, not all at once
    # The answer is drawn as markdown: the streamed text ends as the stored text draws.
    assert answer.locator(".message-text").inner_html() == markdown_html(page, generation.message.content)

    stats = answer.locator(".stats-line").inner_text()
    assert "TTFT" in stats and "tok/s" in stats
    segments = answer.locator(".phase-bar .seg")
    expect(segments).to_have_count(4)
    widths = [float(w.rstrip("%") or 0) for w in segments.evaluate_all("els => els.map(e => e.style.width)")]
    assert sum(widths) == pytest.approx(100, abs=0.5)
    # The browser measured its own TTFT and the server stored it beside its own.
    assert wait_until(lambda: Generation.objects.get().client_ttft_ms is not None, timeout=10)
    generation.refresh_from_db()
    assert generation.client_ttft_ms >= generation.ttft_ms * 0.5

    # After a reload the history shows the same answer with its stats.
    page.reload()
    expect(page.locator(".message.assistant .stats-line")).to_have_count(1)
    expect(page.locator(".conversation-link")).to_have_count(1)


def test_the_chat_shows_its_queue_position_then_the_prompts_reading_progress(
    page, live_server_url, worker, settled, make_user, connect, health
):

    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("root", password="x" * 12))
    staff.post("/engine/policy/", {"policy": "serial"})  # one answer at a time: the next one queues
    assert wait_until(lambda: health()["workers"]["items"][0]["policy"] == "serial", timeout=15)
    try:
        other = connect(make_user("busy"))
        story = {"type": "chat.send", "conversation": None, "text": "Tell me a long story.", "max_tokens": 150}
        other.send({**story, "options": {"ignore_eos": True}})  # still writing when the next one arrives
        other.collect(lambda e: e["type"] == "generation.token", timeout=600)

        me = make_user("reader")
        page.context.add_cookies([{"name": "sessionid", "value": session_cookie(me), "url": live_server_url}])
        page.goto("/chat/")
        document = "Summarise this report:\n" + "\n".join(
            f"Line {i}: the harbour lights were checked and logged." for i in range(150)
        )
        page.fill("#message-input", document)
        page.fill("#max-tokens", "4")
        page.click("#send-button")
        status = page.locator(".message.assistant .message-status").last
        expect(status).to_contain_text("Queued (position 1)", timeout=30_000)
        progress = page.locator(".message.assistant .prefill-progress").last
        expect(progress).to_be_visible(timeout=600_000)
        assert 0 < float(progress.get_attribute("value")) <= float(progress.get_attribute("max"))
        expect(status).to_contain_text("Reading prompt")
        expect(page.locator(".message.assistant .stats-line").last).to_be_visible(timeout=600_000)
        other.collect(lambda e: e["type"] == "generation.done", timeout=600)
    finally:
        staff.post("/engine/policy/", {"policy": "chunked"})
        assert wait_until(lambda: health()["workers"]["items"][0]["policy"] == "chunked", timeout=15)
        redis_client.client().delete(redis_client.POLICY_KEY)
