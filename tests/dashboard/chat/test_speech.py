"""Answers read aloud through the live stack: the chat socket asks, the worker reads sentence by
sentence while the answer is written, the person's page fetches each WAV (no one else can), and
Chromium decodes and plays them."""

from __future__ import annotations

import io
import os
import re
import wave
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import expect, sync_playwright

from accounts.models import Account
from inference.models import Generation
from tests import factories
from tests.support import forget_speech, launch_chromium, session_cookie, wait_until

pytestmark = [pytest.mark.integration]


@pytest.fixture(autouse=True)
def _no_kept_speech():
    forget_speech()
    yield
    forget_speech()


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_answer_is_read_while_it_is_written_and_only_its_owner_hears_it(worker, make_user, connect):
    me = make_user()
    sock = connect(me)
    sock.send({"type": "chat.send", "conversation": None, "text": "Tell me about the sea.", "max_tokens": 96})
    queued = sock.collect(lambda e: e["type"] == "generation.queued", timeout=60)[-1]
    gid = queued["generation"]
    sock.send({"type": "chat.speak", "generation": gid})
    events = sock.collect(lambda e: e["type"] == "speech.end", timeout=600)

    end = events[-1]
    assert end["generation"] == gid and end["code"] == "", end
    audio = of_type(events, "speech.audio")
    assert [a["index"] for a in audio] == list(range(end["count"])) and end["count"] >= 1
    mine, theirs = signed_in(me), signed_in(make_user("bob"))
    for a in audio:
        response = mine.get(f"/chat/speech/{gid}/{a['index']}/")
        assert response.status_code == 200 and response["Content-Type"] == "audio/wav"
        wav = wave.open(io.BytesIO(response.content), "rb")
        assert wav.getnframes() > 0 and wav.getframerate() == 22050
        assert theirs.get(f"/chat/speech/{gid}/{a['index']}/").status_code == 404
    assert Client().get(f"/chat/speech/{gid}/0/").status_code == 302  # to the sign-in page
    assert Generation.objects.get(id=gid).speech_first_ms > 0


def test_someone_elses_answer_is_refused(worker, make_user, connect):
    other = factories.finished_generation(make_user("bob"), prompt="Hi", answer="Secret words.")
    sock = connect(make_user())
    sock.send({"type": "chat.speak", "generation": other.id})
    reply = sock.recv(timeout=30)
    assert reply["type"] == "generation.error" and reply["code"] == "not_found", reply


def test_the_auto_read_setting_is_saved(make_user):
    me = make_user()
    client = signed_in(me)
    response = client.post("/settings/", {"display_name": "", "language": "", "default_preset": "", "auto_read": "on"})
    assert response.status_code == 302
    assert Account.of(me).auto_read


def _open_listening(p, me, answer, live_server_url: str, viewport: dict | None = None):
    """Chromium on the answer's chat, recording each sentence the page plays."""
    browser = launch_chromium(p, "--autoplay-policy=no-user-gesture-required")
    context = browser.new_context(base_url=live_server_url, **({"viewport": viewport} if viewport else {}))
    context.add_cookies([{"name": "sessionid", "value": session_cookie(me), "url": live_server_url}])
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"/chat/{answer.conversation_id}/")
    expect(page.locator("#connection-status")).to_contain_text(re.compile("connected", re.I))
    page.evaluate(
        """() => {
            window.__played = [];
            document.addEventListener('homeai:speech-played', e => window.__played.push(e.detail));
        }"""
    )
    return browser, page


@pytest.mark.browser
def test_the_speaker_button_plays_the_answer_in_chromium(worker, make_user, live_server_url, monkeypatch, settled):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    me = make_user()
    answer = factories.finished_generation(me, prompt="Hi", answer="Hello there. The lights are off now.")
    with sync_playwright() as p:
        browser, page = _open_listening(p, me, answer, live_server_url)
        button = page.locator(".message.assistant .speak-button")
        expect(button).to_have_text("Read aloud")
        button.click()
        expect(button).to_have_attribute("aria-pressed", "true")
        # Both sentences fetched, decoded by Web Audio (decodeAudioData rejects what it cannot
        # play) and scheduled in order; then the button comes back when the last one ends.
        assert wait_until(lambda: len(page.evaluate("window.__played")) == 2, timeout=120)
        played = page.evaluate("window.__played")
        assert [p["index"] for p in played] == [0, 1] and all(p["duration"] > 0.3 for p in played)
        expect(button).to_have_attribute("aria-pressed", "false", timeout=60_000)
        expect(page.locator("#error-banner")).to_be_hidden()
        browser.close()


@pytest.mark.browser
@pytest.mark.skipif(not os.environ.get("HOMEAI_SCREENSHOTS"), reason="set HOMEAI_SCREENSHOTS=1 to refresh docs/")
def test_take_read_aloud_screenshot_for_the_docs(worker, make_user, live_server_url, monkeypatch, settled):
    """HOMEAI_SCREENSHOTS=1 pytest tests/dashboard/chat/test_speech.py -k screenshot: an answer
    being read aloud (its speaker button pressed)."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    me = make_user("sam")
    text = (
        "The kitchen light is on. The living-room lights have been off since half past ten, "
        "and the garage door is shut. Good night!"
    )
    answer = factories.finished_generation(me, prompt="Is the house ready for the night?", answer=text)
    with sync_playwright() as p:
        browser, page = _open_listening(p, me, answer, live_server_url, {"width": 1280, "height": 800})
        button = page.locator(".message.assistant .speak-button")
        button.click()
        assert wait_until(lambda: len(page.evaluate("window.__played")) >= 1, timeout=120)
        expect(button).to_have_attribute("aria-pressed", "true")
        out = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
        out.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out / "chat-read-aloud.png"))
        browser.close()
