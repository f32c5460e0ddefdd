"""Signing out ends that session's sockets; another session of the same person keeps its own."""

from __future__ import annotations

import pytest
from django.test import Client
from websockets.exceptions import ConnectionClosed

from tests import factories
from tests.support import ChatSocket

pytestmark = [pytest.mark.integration]


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=factories.PASSWORD)
    return client


def test_signing_out_closes_the_sessions_sockets_and_only_those(live_server_url, settled):
    user = factories.user()
    laptop, phone = signed_in(user), signed_in(user)
    on_laptop = ChatSocket(live_server_url, laptop.cookies["sessionid"].value)
    on_phone = ChatSocket(live_server_url, phone.cookies["sessionid"].value)
    try:
        laptop.post("/accounts/logout/")
        with pytest.raises(ConnectionClosed) as closed:
            on_laptop.recv(timeout=60)
        assert closed.value.rcvd.code == 4401
        on_phone.send({"type": "chat.cancel", "generation": -1})  # still open: answered in words
        assert on_phone.recv(timeout=60)["code"] == "not_found"
    finally:
        on_laptop.close()
        on_phone.close()
