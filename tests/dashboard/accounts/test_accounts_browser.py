"""Accounts in Debian's Chromium: an invited person joins and chats, a spent invite is refused,
a password change closes the other session's socket, and a daily limit stops an answer."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect, sync_playwright

from accounts import services as accounts
from accounts.models import Account, Invite
from inference.models import Generation
from tests import factories
from tests.support import launch_chromium, session_cookie

pytestmark = [pytest.mark.integration, pytest.mark.browser]

WAIT = 600_000  # a busy 2-core machine: wait on what the page shows, not on the clock
NEW_PASSWORD = "a long home password 42"


@pytest.fixture
def browser(live_server_url, monkeypatch):
    """new_page(user=None) -> a page in a fresh context (its own cookies), signed in as user."""

    # Playwright's sync API keeps an event loop in this thread; the test's ORM calls are blocking.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        chromium = launch_chromium(p)

        def new_page(user=None, context=None, locale="en-US"):
            if context is None:
                context = chromium.new_context(
                    base_url=live_server_url, viewport={"width": 1280, "height": 860}, locale=locale
                )
                if user is not None:
                    context.add_cookies([{"name": "sessionid", "value": session_cookie(user), "url": live_server_url}])
            page = context.new_page()
            page.set_default_timeout(30_000)
            return page

        yield new_page
        chromium.close()


def send(page, text: str) -> None:
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
    page.fill("#max-tokens", "4")
    page.fill("#message-input", text)
    page.click("#send-button")


def test_an_invited_person_joins_in_a_fresh_browser_and_chats(browser, worker, settled):
    staff = browser(factories.user("admin", is_staff=True))
    staff.goto("/people/")
    staff.fill("input[name=note]", "Mina")
    staff.get_by_label("Staff").uncheck()
    staff.click("text=Create invite link")
    link = staff.locator("#new-invite").input_value()

    guest = browser()  # another browser: no cookies at all
    guest.goto(link)
    expect(guest.locator("h1")).to_have_text("Create your HomeAI account")
    guest.fill("input[name=username]", "mina")
    guest.fill("input[name=password1]", NEW_PASSWORD)
    guest.fill("input[name=password2]", NEW_PASSWORD)
    guest.click("button[type=submit]")
    expect(guest).to_have_url(re.compile(r"/chat/$"))
    send(guest, "Hello!")
    expect(guest.locator(".message.assistant .stats-line").last).to_be_visible(timeout=WAIT)
    mina = get_user_model().objects.get(username="mina")
    assert Generation.objects.get().user == mina and Invite.objects.get().used_by == mina

    staff.goto("/people/")  # the invite is used: no longer listed as open
    expect(staff.locator(f"[data-invite='{Invite.objects.get().id}']")).to_have_count(0)


def test_a_used_or_expired_invite_is_refused_with_a_clear_page(browser, transactional_db):
    admin = factories.user("admin", is_staff=True)
    used = accounts.invite_create(created_by=admin)
    Invite.objects.filter(id=used.id).update(used_at=used.created_at)
    expired = accounts.invite_create(created_by=admin, days=1)
    Invite.objects.filter(id=expired.id).update(expires_at=expired.created_at)
    page = browser()
    page.goto(f"/invite/{accounts.invite_token(used)}/")
    expect(page.locator("h1")).to_have_text("This invite link has already been used to create an account.")
    expect(page.locator("input[name=password1]")).to_have_count(0)
    page.goto(f"/invite/{accounts.invite_token(expired)}/")
    expect(page.locator("h1")).to_have_text("This invite link has expired.")
    expect(page.get_by_role("link", name="Go to sign-in")).to_be_visible()


def test_a_password_change_closes_the_other_sessions_socket_but_not_this_ones(browser, transactional_db):
    user = factories.user()
    laptop = browser(user)
    laptop.goto("/chat/")
    phone_chat = browser(user)
    phone_chat.goto("/chat/")
    for page in (laptop, phone_chat):
        expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)

    phone = browser(context=phone_chat.context)  # a second tab of the phone's session
    phone.goto("/settings/password/")
    phone.fill("input[name=old_password]", factories.PASSWORD)
    phone.fill("input[name=new_password1]", NEW_PASSWORD)
    phone.fill("input[name=new_password2]", NEW_PASSWORD)
    phone.click("button[type=submit]")
    expect(phone).to_have_url(re.compile(r"/settings/$"))

    expect(laptop).to_have_url(re.compile(r"/accounts/login/"), timeout=WAIT)  # its socket closed with 4401
    expect(phone_chat).to_have_url(re.compile(r"/chat/$"))
    expect(phone_chat.locator("#connection-status")).to_have_attribute("data-state", "connected")


@pytest.mark.parametrize(
    ("locale", "message"),
    [("en-US", "You have used today's 1 answer."), ("ko-KR", "오늘의 답변 1개를 모두 사용했습니다.")],
)
def test_a_person_over_their_daily_limit_gets_the_message_and_no_answer_starts(
    browser, locale, message, transactional_db
):
    user = factories.user()
    Account.objects.create(user=user, answers_per_day=1)
    factories.finished_generation(user, prompt="Earlier", answer="Earlier answer", attempts=1)
    page = browser(user, locale=locale)  # the socket's refusal comes in the page's language
    page.goto("/chat/")
    send(page, "One more, please?")
    expect(page.locator("#error-banner")).to_contain_text(message)
    expect(page.locator("#message-input")).to_have_value("One more, please?")  # given back to send tomorrow
    assert Generation.objects.count() == 1
