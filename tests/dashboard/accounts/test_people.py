"""Staff's people page: usage, limits, deactivating and a password-reset link."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Account
from tests import factories
from tests.dashboard.accounts.test_invites import staff_client


def kid_with_an_answer():
    """A person with one answer today: 120 prompt and 8 output tokens."""
    kid = factories.user("kid")
    factories.finished_generation(kid, prompt="Hi", answer="Hi there", prompt_tokens=120, output_tokens=8, attempts=1)
    return kid


def test_the_page_lists_everyone_with_todays_and_the_months_use(db):
    client = staff_client()
    kid_with_an_answer()
    page = client.get("/people/").content.decode()
    row = re.search(r'<tr data-user="kid".*?</tr>', page, re.S).group(0)
    assert "1 answer" in row and "128 tokens" in row and "model time" in row


def test_staff_set_and_clear_a_persons_daily_limits(db):
    client = staff_client()
    kid = factories.user("kid")
    client.post(f"/people/{kid.id}/limits/", {f"u{kid.id}-answers_per_day": "20", f"u{kid.id}-tokens_per_day": ""})
    account = Account.objects.get(user=kid)
    assert (account.answers_per_day, account.tokens_per_day) == (20, None)
    client.post(f"/people/{kid.id}/limits/", {f"u{kid.id}-answers_per_day": "-1"})
    assert Account.objects.get(user=kid).answers_per_day == 20  # refused: not 0 or more


def test_a_deactivated_person_is_signed_out_and_cannot_sign_in(db):
    client = staff_client()
    kid = factories.user("kid")
    theirs = Client()
    theirs.force_login(kid)
    client.post(f"/people/{kid.id}/active/", {"active": "0"})
    assert theirs.get("/chat/").status_code == 302
    assert not Client().login(username="kid", password=factories.PASSWORD)
    client.post(f"/people/{kid.id}/active/", {"active": "1"})
    assert Client().login(username="kid", password=factories.PASSWORD)


def test_staff_cannot_deactivate_themselves(db):
    client = staff_client()
    admin = get_user_model().objects.get(username="admin")
    client.post(f"/people/{admin.id}/active/", {"active": "0"})
    admin.refresh_from_db()
    assert admin.is_active


def test_a_reset_link_lets_the_person_set_a_new_password_once(db):
    client = staff_client()
    kid = factories.user("kid")
    page = client.post(f"/people/{kid.id}/reset/").content.decode()
    link = re.search(r'id="reset-link".*?value="http://testserver([^"]+)"', page, re.S).group(1)
    theirs = Client()
    form_url = theirs.get(link).url  # Django swaps the token for a session-held one
    new = "another long password 7"
    assert theirs.post(form_url, {"new_password1": new, "new_password2": new}).url == "/accounts/login/"
    assert Client().login(username="kid", password=new)
    assert b"no longer works" in Client().get(link, follow=True).content


def test_staff_see_todays_use_per_person_on_the_dashboard_and_others_do_not(db):
    client, kid = staff_client(), kid_with_an_answer()
    page = client.get("/dashboard/").content.decode()
    table = re.search(r'<table class="data-table" id="usage-table">.*?</table>', page, re.S).group(0)
    assert "kid" in table and "128" in table
    theirs = Client()
    theirs.force_login(kid)
    assert 'id="usage-table"' not in theirs.get("/dashboard/").content.decode()
