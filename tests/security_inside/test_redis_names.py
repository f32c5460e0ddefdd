"""What Redis shows of a signed-in socket: channel names, group keys and the messages on the
bus name a session by a keyed hash of its key, never by the key (whoever can list Redis's
channels or read its messages would otherwise hold a live session cookie)."""

from __future__ import annotations

import pytest
from django.conf import settings

from inference import broadcast, redis_client
from tests import factories
from tests.dashboard.accounts.test_sign_out import signed_in
from tests.support import ChatSocket

pytestmark = [pytest.mark.integration]


def test_redis_lists_no_session_key_while_a_signed_in_socket_is_open(live_server_url, settled):
    user = factories.user()
    browser = signed_in(user)
    key = browser.cookies["sessionid"].value
    prefix = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    redis = redis_client.client()
    sock = ChatSocket(live_server_url, key)
    try:
        # The socket is accepted only once its groups are subscribed (dashboard.sockets).
        channels = [name.decode() for name in redis.pubsub_channels(f"{prefix}*")]
        assert broadcast.group_channel(broadcast.account_group(user.id)) in channels  # the socket's own
        assert broadcast.group_channel(broadcast.session_group(key)) in channels
        assert not [name for name in channels if key in name], channels
        keys = [name.decode() for name in redis.keys(f"{prefix}*")]
        assert not [name for name in keys if key in name], keys
    finally:
        sock.close()


def test_the_bus_carries_no_session_key_when_sessions_end(live_server_url, settled):
    """PSUBSCRIBE reads every message: a password change (which names the session it keeps) and
    a sign-out (sent to the session's group) leave no session key in a channel or a message."""
    user = factories.user()
    laptop, phone = signed_in(user), signed_in(user)
    keys = [laptop.cookies["sessionid"].value, phone.cookies["sessionid"].value]
    prefix = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    listener = redis_client.client().pubsub()
    listener.psubscribe(f"{prefix}*")
    assert listener.get_message(timeout=10)["type"] == "psubscribe"
    sockets = [ChatSocket(live_server_url, key) for key in keys]
    try:
        phone.post("/accounts/logout/")
        new = "another long password 7"
        laptop.post(
            "/settings/password/",
            {"old_password": factories.PASSWORD, "new_password1": new, "new_password2": new},
        )
        sent = []
        while not all(any(kind in m["data"] for m in sent) for kind in (b"account.signed_out", b"session.ended")):
            message = listener.get_message(timeout=60)
            assert message is not None, f"no sign-out message came; saw {sent}"
            if message["type"] == "pmessage":
                sent.append(message)
        for message in sent:
            for key in keys + [laptop.cookies["sessionid"].value]:
                assert key.encode() not in message["channel"] and key.encode() not in message["data"]
    finally:
        listener.close()
        for sock in sockets:
            sock.close()
