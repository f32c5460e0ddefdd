"""A person's own settings: display name, language, default preset, password, sign out everywhere."""

from __future__ import annotations

from django.conf import settings
from django.test import Client

from accounts.models import Account
from inference.models import Conversation
from inference.services import generations
from tests import factories


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=factories.PASSWORD)
    return client


def test_display_name_language_and_default_preset_are_saved(db):
    user = factories.user()
    client = signed_in(user)
    saved = client.post("/settings/", {"display_name": "Alice K.", "language": "ko", "default_preset": "precise"})
    assert saved.url == "/settings/"
    assert saved.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ko"
    account = Account.objects.get(user=user)
    assert (account.display_name, account.language, account.default_preset) == ("Alice K.", "ko", "precise")
    page = client.get("/settings/")
    assert "Alice K." in page.content.decode() and page["Content-Language"] == "ko"


def test_the_language_follows_the_person_to_a_new_browser_and_back_to_the_browsers(db):
    user = factories.user()
    Account.objects.create(user=user, language="pt-br")
    browser = Client(headers={"accept-language": "ko"})
    signed = browser.post("/accounts/login/", {"username": user.username, "password": factories.PASSWORD})
    assert signed.cookies[settings.LANGUAGE_COOKIE_NAME].value == "pt-br"
    assert browser.get("/settings/")["Content-Language"] == "pt-br"
    browser.post("/settings/", {"language": ""})
    assert browser.get("/settings/")["Content-Language"] == "ko"  # the browser's Accept-Language


def test_a_new_chat_starts_with_the_default_preset(db):
    user = factories.user()
    Account.objects.create(user=user, default_preset="creative")
    generation = generations.generation_create(user=user, conversation_id=None, text="Hi")
    conversation = Conversation.objects.get(id=generation.conversation_id)
    assert (conversation.temperature, conversation.top_p) == (1.0, 0.98)
    assert generation.sampling["temperature"] == 1.0


def test_an_unknown_language_or_preset_is_refused(db):
    client = signed_in(factories.user())
    assert client.post("/settings/", {"language": "xx"}).status_code == 400
    assert client.post("/settings/", {"default_preset": "9999"}).status_code == 400


def test_changing_the_password_keeps_this_browser_and_signs_out_the_others(db):
    user = factories.user()
    here, there = signed_in(user), signed_in(user)
    new = "a different long password 9"
    changed = here.post(
        "/settings/password/",
        {"old_password": factories.PASSWORD, "new_password1": new, "new_password2": new},
    )
    assert changed.url == "/settings/"
    assert here.get("/settings/").status_code == 200
    assert there.get("/settings/").status_code == 302


def test_signing_out_everywhere_ends_every_session(db):
    user = factories.user()
    here, there = signed_in(user), signed_in(user)
    assert here.post("/settings/sign-out-everywhere/").url == "/accounts/login/"
    assert here.get("/settings/").status_code == 302
    assert there.get("/settings/").status_code == 302
