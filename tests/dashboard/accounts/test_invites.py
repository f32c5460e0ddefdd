"""Invites: staff make a one-time link; whoever opens it picks a username and password, once."""

from __future__ import annotations

import re
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from accounts import services as accounts
from accounts.models import Invite
from tests import factories

NEW = {"username": "mina", "password1": "a long home password 42", "password2": "a long home password 42"}


def staff_client() -> Client:
    client = Client()
    client.force_login(factories.user("admin", is_staff=True))
    return client


def invite_link(client: Client, **fields) -> str:
    page = client.post("/people/", {"days": 7, **fields})
    assert page.status_code == 200
    return re.search(r'id="new-invite"[^>]*value="http://testserver([^"]+)"', page.content.decode()).group(1)


def test_an_invite_creates_one_account_and_signs_its_person_in(db):
    link = invite_link(staff_client(), note="Mina, my niece")
    guest = Client()
    form = guest.get(link)
    assert form.status_code == 200 and b"Create your HomeAI account" in form.content
    assert guest.post(link, NEW).url == "/chat/"
    mina = get_user_model().objects.get(username="mina")
    assert not mina.is_staff and guest.session["_auth_user_id"] == str(mina.pk)
    invite = Invite.objects.get()
    assert invite.used_by == mina and invite.used_at is not None


def test_a_used_invite_is_refused_with_a_page_that_says_so(db):
    link = invite_link(staff_client())
    Client().post(link, NEW)
    again = Client().get(link)
    assert again.status_code == 410 and b"already been used" in again.content
    late = Client().post(link, {**NEW, "username": "second"})
    assert late.status_code == 410 and not get_user_model().objects.filter(username="second").exists()


def test_an_expired_invite_is_refused(db):
    link = invite_link(staff_client())
    Invite.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    page = Client().get(link)
    assert page.status_code == 410 and b"expired" in page.content


def test_a_made_up_or_altered_link_is_refused(db):
    invite = accounts.invite_create(created_by=factories.user("admin", is_staff=True))
    token = accounts.invite_token(invite)
    for bad in ("1", token[:-2] + "xx", accounts.invite_token(Invite(id=invite.id + 1))):
        page = Client().get(f"/invite/{bad}/")
        assert page.status_code == 410, bad
    assert b"not valid" in Client().get("/invite/1/").content


def test_a_staff_invite_makes_a_staff_account_and_the_password_rules_apply(db):
    link = invite_link(staff_client(), is_staff="on")
    weak = Client().post(link, {**NEW, "password1": "12345678", "password2": "12345678"})
    assert weak.status_code == 200 and b"too common" in weak.content  # Django's validators
    Client().post(link, NEW)
    assert get_user_model().objects.get(username="mina").is_staff


def test_only_staff_reach_the_people_page(db):
    client = Client()
    client.force_login(factories.user("kid"))
    assert client.get("/people/").status_code == 302
    assert client.post("/people/", {"days": 7}).status_code == 302
    assert not Invite.objects.exists()
