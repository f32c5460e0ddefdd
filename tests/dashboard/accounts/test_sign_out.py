"""Signing out ends that session's sockets (another session of the same person keeps its own);
signing out everywhere and a deactivation end them all."""

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


def test_signing_out_everywhere_closes_every_sessions_sockets(live_server_url, settled):
    user = factories.user()
    laptop, phone = signed_in(user), signed_in(user)
    sockets = [ChatSocket(live_server_url, client.cookies["sessionid"].value) for client in (laptop, phone)]
    try:
        laptop.post("/settings/sign-out-everywhere/")
        for sock in sockets:
            with pytest.raises(ConnectionClosed) as closed:
                sock.recv(timeout=60)
            assert closed.value.rcvd.code == 4401
        assert phone.get("/settings/").status_code == 302  # its session is gone too
    finally:
        for sock in sockets:
            sock.close()


def test_a_deactivated_persons_sockets_close(live_server_url, settled):
    user = factories.user()
    staff = Client()
    staff.force_login(factories.user("admin", is_staff=True))
    sock = ChatSocket(live_server_url, signed_in(user).cookies["sessionid"].value)
    try:
        staff.post(f"/people/{user.id}/active/", {"active": "0"})
        with pytest.raises(ConnectionClosed) as closed:
            sock.recv(timeout=60)
        assert closed.value.rcvd.code == 4401
    finally:
        sock.close()
