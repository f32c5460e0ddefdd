"""First-run setup opens only from the one-time link the server prints."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from accounts import setup_token

FORM = {"username": "admin", "password1": "a long home password 42", "password2": "a long home password 42"}


def test_without_the_link_the_first_visitor_cannot_create_the_admin(db):
    client = Client()
    assert client.get("/").url == "/setup/"
    locked = client.get("/setup/")
    assert locked.status_code == 403 and b"setup link" in locked.content
    assert client.get("/setup/?token=guess").status_code == 403
    assert client.post("/setup/", FORM).status_code == 403
    assert not get_user_model().objects.exists()


def test_the_link_opens_setup_once_and_then_stops_working(db):
    client = Client()
    link = f"/setup/?token={setup_token.token()}"
    assert client.get(link).status_code == 200
    assert client.post("/setup/", FORM).url == "/chat/"  # the session that opened the link
    assert get_user_model().objects.get(username="admin").is_superuser
    assert Client().get(link).url == "/accounts/login/"  # an account exists: setup is gone
    assert not (setup_token._path()).exists()


def test_setup_link_prints_the_link_only_while_no_account_exists(db, capsys):
    call_command("setup_link", base_url="http://nas.local:8000")
    assert f"http://nas.local:8000/setup/?token={setup_token.token()}" in capsys.readouterr().out
    get_user_model().objects.create_user("someone", password="x" * 12)
    call_command("setup_link")
    assert capsys.readouterr().out == ""
