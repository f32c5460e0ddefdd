"""Who may call the APIs (keys, and the keyless LAN option of the Ollama API), and the
llama.cpp-style /props and /slots, without a worker process."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from accounts.keys import api_key_create
from accounts.models import ApiKey
from api.auth import authenticate
from api.errors import ApiError
from inference.dispatch import registry
from tests import factories

WORKER = {
    "box:1": {
        "model": "m.gguf",
        "loaded": True,
        "running": 1,
        "slots": 2,
        "cells": {"total": 8192, "per_request": 8192},
    }
}


@pytest.fixture
def ada(db, settings, no_failed_sign_ins):
    settings.HOMEAI_OLLAMA_KEYLESS_USER = "ada"
    return factories.user("ada")


def _request(address: str, key: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return RequestFactory().post("/api/chat", "{}", "application/json", REMOTE_ADDR=address, **headers)


@pytest.mark.parametrize("address", ["127.0.0.1", "192.168.1.20", "10.0.0.3", "fd00::5"])
def test_a_keyless_request_from_the_lan_is_the_keyless_user_s_when_the_admin_allows_it(ada, address):
    assert authenticate(_request(address), keyless=True) == ada


@pytest.mark.parametrize("outside", ["8.8.8.8", "2001::1", "2002:c0a8:114::1", "2001:db8::1", "::ffff:8.8.8.8"])
def test_keyless_access_stops_at_the_lan_at_the_other_apis_and_when_off(ada, settings, outside):
    # Teredo, 6to4 (of 192.168.1.20) and documentation addresses count as private to Python, not here.
    for request, keyless in ((_request(outside), True), (_request("192.168.1.20"), False)):
        with pytest.raises(ApiError) as caught:
            authenticate(request, keyless=keyless)
        assert caught.value.status == 401
    settings.HOMEAI_OLLAMA_KEYLESS_USER = ""
    with pytest.raises(ApiError):
        authenticate(_request("192.168.1.20"), keyless=True)


def test_a_key_that_is_sent_must_be_valid_even_from_the_lan(ada):
    with pytest.raises(ApiError) as caught:
        authenticate(_request("192.168.1.20", "hai_revoked-or-wrong"), keyless=True)
    assert caught.value.code == "invalid_api_key"
    _, raw = api_key_create(user=factories.user("bob"))
    assert authenticate(_request("192.168.1.20", raw), keyless=True).username == "bob"


def test_a_good_key_is_admitted_before_its_use_is_written_and_a_bad_one_never(ada):
    """The request is announced (admitted) before the key's last use is written: that write may
    wait for the database behind other requests' rows."""
    key, raw = api_key_create(user=factories.user("bob"))
    seen = []
    admitted = lambda: seen.append(ApiKey.objects.get(id=key.id).last_used_at)  # noqa: E731
    assert authenticate(_request("192.168.1.20", raw), admitted=admitted).username == "bob"
    assert seen == [None] and ApiKey.objects.get(id=key.id).last_used_at is not None
    with pytest.raises(ApiError):
        authenticate(_request("192.168.1.20", "hai_revoked-or-wrong"), admitted=admitted)
    authenticate(_request("192.168.1.20"), keyless=True, admitted=admitted)  # the keyless user, no key
    assert len(seen) == 2


def test_props_and_slots_answer_as_llama_cpps_server_with_a_key(transactional_db, monkeypatch):
    monkeypatch.setattr(registry, "live_workers", lambda: WORKER)
    _, raw = api_key_create(user=factories.user("cy"))
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    props = client.get("/props").json()
    assert props["total_slots"] >= 2 and props["default_generation_settings"]["n_ctx"] > 0
    slots = client.get("/slots").json()
    assert [s["is_processing"] for s in slots] == [True, False] and slots[0]["model"] == "m.gguf"
    # A slot's n_ctx is what one request may fill (the loaded engine's word), not its share.
    assert [s["n_ctx"] for s in slots] == [8192, 8192]
    assert Client().get("/slots").status_code == 401


def test_before_the_first_account_exists_the_apis_still_answer_in_their_own_shapes(db):
    assert Client().get("/api/version").json()["version"]
    tags = Client().get("/api/tags")
    assert tags.status_code == 401 and "API key" in tags.json()["error"]
    assert Client().get("/props").status_code == 401
