"""On a phone: the chat installs, opens offline to the chats kept on the device (read-only,
saying so), reconnects by itself, and forgets them at sign-out; in Debian's Chromium."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from playwright.sync_api import expect, sync_playwright

from inference.models import Generation
from tests import factories
from tests.support import CHROMIUM, CHROMIUM_ARGS, session_cookie

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ARTIFACTS = Path(settings.DATA_DIR) / "artifacts"
ROOT = Path(__file__).resolve().parents[3]
# Every cache this origin holds, with the addresses each keeps.
CACHES = """async () => {
    const out = {};
    for (const name of await caches.keys()) out[name] = (await (await caches.open(name)).keys()).map((r) => r.url);
    return out;
}"""


@pytest.fixture
def page(live_server_url, monkeypatch, tmp_path):
    """A phone-sized page in a browser profile on disk: Chromium installs nothing from an
    incognito profile (a plain Playwright context is one), so its check would only say that."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the test's ORM calls beside Playwright's loop
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (make test does).")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            base_url=live_server_url,
            viewport={"width": 412, "height": 860},
        )
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(30_000)
        yield page
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "last-phone-test.png"), full_page=True)
        context.close()


# The worker keeps a page by fetching it, the chat list and the static files again: on a busy
# 2-core box that takes longer than expect()'s default 5 s.
SW_READY_MS = 60_000


def sign_in(page, live_server_url, user) -> None:
    page.context.clear_cookies()
    page.context.add_cookies([{"name": "sessionid", "value": session_cookie(user), "url": live_server_url}])


def kept(page) -> dict[str, list[str]]:
    return page.evaluate(CACHES)


def test_the_chat_installs_opens_offline_read_only_and_reconnects_by_itself(
    page, live_server_url, worker, settled, make_user
):
    alice = make_user("alice")
    lighthouse = factories.finished_generation(alice, prompt="What is a LIGHTHOUSE?", answer="A tower with a LAMP.")
    other = factories.finished_generation(alice, prompt="Tell me about TIDES.", answer="The MOON pulls the sea.")
    sign_in(page, live_server_url, alice)
    page.goto(f"/chat/{lighthouse.conversation_id}/")

    # The manifest is linked and Chromium reads it without an error; the worker controls the page
    # and has kept this chat; and Chromium's own installability check (Lighthouse's) finds nothing missing.
    expect(page.locator("html")).to_have_attribute("data-offline-ready", "true", timeout=SW_READY_MS)
    assert page.evaluate("navigator.serviceWorker.controller.scriptURL") == f"{live_server_url}/sw.js"
    cdp = page.context.new_cdp_session(page)
    manifest = cdp.send("Page.getAppManifest")
    assert manifest["url"] == f"{live_server_url}/manifest.webmanifest"
    assert manifest["errors"] == []
    assert manifest["manifest"]["startUrl"] == f"{live_server_url}/chat/"
    assert manifest["manifest"]["display"] == "kStandalone"
    assert cdp.send("Page.getInstallabilityErrors")["installabilityErrors"] == []
    pages = next(urls for name, urls in kept(page).items() if name.startswith("homeai-person-"))
    chat = f"{live_server_url}/chat/"
    assert sorted(pages) == sorted([f"{chat}{lighthouse.conversation_id}/", chat, f"{live_server_url}/i18n/catalog.js"])
    assert not any("/ws/" in url or "/v1/" in url or "/api/" in url for urls in kept(page).values() for url in urls)

    # Offline, the chat opens from the copy: its messages, read-only, saying it is offline.
    page.context.set_offline(True)
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-offline-copy", "")
    expect(page.locator("#offline-notice")).to_be_visible()
    expect(page.locator("#offline-notice")).to_contain_text("Offline.")
    expect(page.locator("#offline-not-kept")).to_be_hidden()
    expect(page.locator(".message.assistant .message-text")).to_contain_text("A tower with a LAMP.")
    expect(page.locator(".message.assistant .stats-line")).to_be_visible()
    expect(page.locator("#connection-status")).to_have_text("Offline")
    expect(page.locator("#message-input")).to_be_disabled()
    expect(page.locator("#send-button")).to_be_hidden()
    expect(page.locator("#max-tokens")).to_be_hidden()
    expect(page.locator(".conversation-link")).to_have_count(2)  # the list as it was

    # A chat never opened on this device: the list's copy, which says the chat was not kept.
    page.goto(f"/chat/{other.conversation_id}/")
    expect(page.locator("#offline-not-kept")).to_be_visible()
    expect(page.locator(".message")).to_have_count(0)

    # Back online, the page finds the server by itself and the live page replaces the copy.
    page.goto(f"/chat/{lighthouse.conversation_id}/")
    expect(page.locator("#offline-notice")).to_be_visible()
    page.context.set_offline(False)
    expect(page.locator("#connection-status")).to_have_text("Connected", timeout=60_000)
    expect(page.locator("html")).not_to_have_attribute("data-offline-copy", re.compile(".*"))
    expect(page.locator("#offline-notice")).to_be_hidden()

    # And sending works.
    page.fill("#message-input", "And a LAMP?")
    page.fill("#max-tokens", "4")
    page.click("#send-button")
    expect(page.locator(".message.assistant .stats-line")).to_have_count(2, timeout=600_000)
    assert Generation.objects.filter(conversation_id=lighthouse.conversation_id).count() == 2

    # A chat deleted here is no longer kept.
    copy = f"{live_server_url}/chat/{lighthouse.conversation_id}/"
    assert page.evaluate(f"async () => Boolean(await caches.match('{copy}'))")
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator(".delete-form button").click()
    expect(page).to_have_url(f"{live_server_url}/chat/")
    page.wait_for_function(f"async () => !(await caches.match('{copy}'))")
    assert not page.evaluate(f"async () => Boolean(await caches.match('{copy}'))")


def test_signing_out_empties_the_offline_copy_and_another_person_never_reads_it(
    page, live_server_url, make_user, transactional_db
):
    alice, bob = make_user("alice"), make_user("bob")
    secret = factories.finished_generation(alice, prompt="ALICE's SECRET plans", answer="Keep them to yourself.")
    factories.finished_generation(bob, prompt="BOB's shopping list", answer="Bread and milk.")

    sign_in(page, live_server_url, alice)
    page.goto(f"/chat/{secret.conversation_id}/")
    expect(page.locator("html")).to_have_attribute("data-offline-ready", "true", timeout=SW_READY_MS)
    assert any(name.startswith("homeai-person-") for name in kept(page))

    # Sign out (the phone's menu): every copy is gone by the time the sign-in page shows.
    page.click(".menu-toggle")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    assert kept(page) == {}

    # Alice again, and then Bob on the same phone without her signing out (her session ended on
    # the server, say): Bob's page replaces her copy, and offline he reads only his own chats.
    sign_in(page, live_server_url, alice)
    page.goto(f"/chat/{secret.conversation_id}/")
    expect(page.locator("html")).to_have_attribute("data-offline-ready", "true", timeout=SW_READY_MS)
    sign_in(page, live_server_url, bob)
    page.goto("/chat/")
    expect(page.locator("html")).to_have_attribute("data-offline-ready", "true", timeout=SW_READY_MS)
    people = [name for name in kept(page) if name.startswith("homeai-person-")]
    assert len(people) == 1
    assert f"{live_server_url}/chat/{secret.conversation_id}/" not in kept(page)[people[0]]

    page.context.set_offline(True)
    page.goto(f"/chat/{secret.conversation_id}/")
    expect(page.locator("#offline-notice")).to_be_visible()
    expect(page.locator("#offline-not-kept")).to_be_visible()
    expect(page.locator(".conversation-title")).to_have_text(["BOB's shopping list"])
    assert "SECRET" not in page.content()

    # Bob's session ends on the server while the phone is offline: back in reach, the copy does
    # not wait for a socket the server refuses; it goes to the sign-in page, which empties it.
    Session.objects.all().delete()
    page.context.set_offline(False)
    expect(page).to_have_url(re.compile(r"/accounts/login/"), timeout=60_000)
    assert kept(page) == {}


@pytest.mark.skipif(not os.environ.get("HOMEAI_SCREENSHOTS"), reason="set HOMEAI_SCREENSHOTS=1 to refresh docs/")
def test_take_the_offline_phone_screenshot_for_the_docs(page, live_server_url, make_user, transactional_db):
    """HOMEAI_SCREENSHOTS=1 pytest tests/dashboard/offline/test_phone.py -k screenshot."""
    sam = make_user("sam")
    chat = factories.finished_generation(
        sam,
        prompt="Which plants on the balcony need water twice a week?",
        answer="In summer: the **basil**, the **tomatoes** and the *mint*. The rosemary and the succulents "
        "are happier dry; water them when the top of the soil is dry.",
    )
    sign_in(page, live_server_url, sam)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/chat/{chat.conversation_id}/")
    expect(page.locator("html")).to_have_attribute("data-offline-ready", "true", timeout=SW_READY_MS)
    page.context.set_offline(True)
    page.reload()
    expect(page.locator("#offline-notice")).to_be_visible()
    page.screenshot(path=str(ROOT / "docs" / "screenshots" / "chat-offline-phone.png"))
