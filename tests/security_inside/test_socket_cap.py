"""One person may hold HOMEAI_MAX_SOCKETS_PER_PERSON sockets open (each dashboard socket reads
the database every 2 s); one more is closed with code 4429 and a reason a person understands,
while others still connect, and a place frees when a socket closes."""

from __future__ import annotations

import contextlib

import pytest
from django.conf import settings
from websockets.exceptions import ConnectionClosed

from tests import factories
from tests.support import ChatSocket, session_cookie, wait_until

pytestmark = [pytest.mark.integration]


def refused(base: str, cookie: str) -> tuple[dict, ConnectionClosed] | None:
    """What a socket the server refused said, and its close; None when it stays open (it is
    closed then)."""
    sock = ChatSocket(base, cookie)
    try:
        with contextlib.suppress(ConnectionClosed):  # a refused socket may be closed already
            sock.send({"type": "chat.cancel", "generation": -1})  # an open one answers not_found
        said = sock.collect(lambda event: event.get("code") in ("too_many_sockets", "not_found"))[-1]
        if said["code"] == "not_found":
            return None
        with pytest.raises(ConnectionClosed) as closed:
            sock.recv(timeout=60)
        return said, closed.value
    finally:
        sock.close()


def test_one_socket_over_the_cap_is_closed_with_a_reason(live_server_url, settled):
    cap = settings.HOMEAI_MAX_SOCKETS_PER_PERSON
    cookie = session_cookie(factories.user())
    sockets = [ChatSocket(live_server_url, cookie) for _ in range(cap)]
    try:
        said, closed = refused(live_server_url, cookie)
        assert closed.rcvd.code == 4429
        assert said["type"] == "generation.error" and f"You have {cap} HomeAI pages open" in said["message"]
        assert refused(live_server_url, session_cookie(factories.user("sibling"))) is None  # others still may
        sockets.pop().close()
        assert wait_until(lambda: refused(live_server_url, cookie) is None, timeout=60), "no place freed"
    finally:
        for sock in sockets:
            sock.close()
