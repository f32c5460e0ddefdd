"""Sign-in throttling: after a few failed passwords from one address, no more are checked."""

from __future__ import annotations

import pytest
from django.test import Client

from infra import throttle
from tests import factories


@pytest.fixture
def clean_counts(db, no_failed_sign_ins):
    """The database, and no failed sign-in counted."""


def sign_in(client: Client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_guessing_stops_after_a_few_failures_even_with_the_right_password(clean_counts):
    factories.user("alice")
    client = Client()
    for _ in range(throttle.PER_CLIENT_ACCOUNT):
        assert sign_in(client, "alice", "wrong").status_code == 200  # the form again, with its error
    refused = sign_in(client, "alice", factories.PASSWORD)
    assert refused.status_code == 429 and b"Too many failed sign-ins" in refused.content
    assert "_auth_user_id" not in client.session


def test_a_successful_sign_in_clears_the_accounts_count(clean_counts):
    factories.user("bob")
    client = Client()
    for _ in range(throttle.PER_CLIENT_ACCOUNT - 1):
        sign_in(client, "bob", "wrong")
    assert sign_in(client, "bob", factories.PASSWORD).status_code == 302
    Client().post("/accounts/logout/")
    for _ in range(throttle.PER_CLIENT_ACCOUNT - 1):
        assert sign_in(Client(), "bob", "wrong").status_code == 200  # counting starts again
