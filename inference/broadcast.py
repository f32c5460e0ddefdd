"""The one place that sends to the channel layer (workers never import consumers).

Senders are plain threads (a worker's answer relays, the web's request threads), so a message
is published straight to the layer's Redis channel with this process's sync client: one round
trip. async_to_sync cost a fresh event loop and connection per call (about 7.5 ms on a 2-core
box), and the loop thread that replaced it woke a second thread for every frame, on cores that
llama.cpp's threads need (docs/performance.md). The channel names and the message encoding are
channels_redis's pub/sub layer's (group_channel; a test receives a message sent this way).
"""

from __future__ import annotations

import logging

from channels.layers import get_channel_layer
from django.conf import settings

from inference import redis_client
from inference.outage import OutageLog

log = logging.getLogger(__name__)
_outage = OutageLog(log, "sending events")

DASHBOARD_GROUP = "dashboard"
RELAY_TYPE = "chat.relay"
DASHBOARD_RELAY_TYPE = "dashboard.relay"
SESSION_ENDED_TYPE = "session.ended"
ACCOUNT_SIGNED_OUT_TYPE = "account.signed_out"


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def session_group(session_key: str) -> str:
    """The sockets opened with one sign-in session (closed when it signs out)."""
    return f"session.{session_key}"


def account_group(user_id: int) -> str:
    """Every socket of one person, whichever page and session opened it."""
    return f"account.{user_id}"


def generation_group(generation_id: int) -> str:
    """One answer's own group: API requests listen here (chat sockets listen per user)."""
    return f"generation.{generation_id}"


def group_channel(group: str) -> str:
    """The Redis channel a group's members listen on (RedisPubSubChannelLayer's naming)."""
    return f"{settings.CHANNEL_LAYERS['default']['CONFIG']['prefix']}__group__{group}"


def _publish(group: str, message: dict) -> None:
    try:
        redis_client.client().publish(group_channel(group), get_channel_layer().serialize(message))
    except Exception:
        # Redis is down: this event is lost (the database keeps the text; pages catch up with
        # chat.sync).
        _outage.failed("events are dropped until Redis answers")
    else:
        _outage.ok()


def publish_for(generation, events: list[dict]) -> None:
    """Send an answer's events where its client listens: the chat sockets, or the API request."""
    if not events:
        return
    group = user_group(generation.user_id) if generation.client == "chat" else generation_group(generation.id)
    _publish(group, {"type": RELAY_TYPE, "events": events})


def publish_dashboard(events: list[dict]) -> None:
    """Send metric events (never message text) to every open dashboard socket."""
    if events:
        _publish(DASHBOARD_GROUP, {"type": DASHBOARD_RELAY_TYPE, "events": events})


def end_session(session_key: str) -> None:
    """Close every socket of a session that signed out (they answer with close code 4401)."""
    _publish(session_group(session_key), {"type": SESSION_ENDED_TYPE})


def end_account_sessions(user_id: int, *, keep_session: str | None = None) -> None:
    """Close every socket of a person (signed out everywhere, password changed, deactivated),
    except those of keep_session: the browser that changed the password stays signed in."""
    _publish(account_group(user_id), {"type": ACCOUNT_SIGNED_OUT_TYPE, "keep": keep_session})
