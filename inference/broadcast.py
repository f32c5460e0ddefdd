"""The one place that sends to the channel layer (workers never import consumers).

Senders are plain threads (a worker's answer relays, the web's request threads), so a message
is published straight to the layer's Redis channel with this process's sync client: one round
trip. async_to_sync cost a fresh event loop and connection per call (about 7.5 ms on a 2-core
box), and the loop thread that replaced it woke a second thread for every frame, on cores that
llama.cpp's threads need (docs/bench/journal.md). The channel names and the message encoding are
channels_redis's pub/sub layer's (group_channel; a test receives a message sent this way).
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils.crypto import salted_hmac

from inference import redis_client
from inference.outage import OutageLog

log = logging.getLogger(__name__)
_outage = OutageLog(log, "sending events")

DASHBOARD_GROUP = "dashboard"
RELAY_TYPE = "chat.relay"
DASHBOARD_RELAY_TYPE = "dashboard.relay"
PULL_RELAY_TYPE = "pull.relay"
SESSION_ENDED_TYPE = "session.ended"
ACCOUNT_SIGNED_OUT_TYPE = "account.signed_out"
COLLECTION_RELAY_TYPE = "documents.relay"


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def session_tag(session_key: str) -> str:
    """A sign-in session's name on the bus: a keyed hash of its key (HMAC with SECRET_KEY), never
    the key itself, since whoever can list Redis's channels (PUBSUB CHANNELS) or read its
    messages would hold a live session cookie."""
    return salted_hmac("homeai.session-group", session_key, algorithm="sha256").hexdigest()


def session_group(session_key: str) -> str:
    """The sockets opened with one sign-in session (closed when it signs out)."""
    return f"session.{session_tag(session_key)}"


def account_group(user_id: int) -> str:
    """Every socket of one person, whichever page and session opened it."""
    return f"account.{user_id}"


def generation_group(generation_id: int) -> str:
    """One answer's own group: API requests listen here (chat sockets listen per user)."""
    return f"generation.{generation_id}"


def pull_group(pull_id: str) -> str:
    """One model pull's watchers (the API requests streaming it, the library page)."""
    return f"pull.{pull_id}"


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


def relay_message(events: list[dict]) -> dict:
    """The channel-layer message that carries a frame of an answer's events."""
    return {"type": RELAY_TYPE, "events": events}


def answer_group(generation) -> str:
    """Where an answer's client listens: the chat sockets (per user), or the API request's own group."""
    return user_group(generation.user_id) if generation.client == "chat" else generation_group(generation.id)


def publish_for(generation, events: list[dict]) -> None:
    """Send an answer's events where its client listens: the chat sockets, or the API request."""
    if events:
        _publish(answer_group(generation), relay_message(events))


def publish_user(user_id: int, events: list[dict]) -> None:
    """Events for one person's chat sockets (an answer read aloud: speech.py)."""
    if events:
        _publish(user_group(user_id), relay_message(events))


def publish_pull(pull_id: str, lines: list[dict]) -> None:
    """A pull's status lines, in Ollama's shape (inference/dispatch/pulls.py), to its watchers."""
    if lines:
        _publish(pull_group(pull_id), {"type": PULL_RELAY_TYPE, "lines": lines})


def publish_dashboard(events: list[dict]) -> None:
    """Send metric events (never message text) to every open dashboard socket."""
    if events:
        _publish(DASHBOARD_GROUP, {"type": DASHBOARD_RELAY_TYPE, "events": events})


def collection_group(collection_id: int) -> str:
    """Who watches a collection's indexing (its progress events)."""
    return f"collection.{collection_id}"


def publish_collection(collection_id: int, events: list[dict]) -> None:
    """Send a collection's indexing progress to those watching it."""
    if events:
        _publish(collection_group(collection_id), {"type": COLLECTION_RELAY_TYPE, "events": events})


def end_session(session_key: str) -> None:
    """Close every socket of a session that signed out (they answer with close code 4401)."""
    _publish(session_group(session_key), {"type": SESSION_ENDED_TYPE})


def end_account_sessions(user_id: int, *, keep_session: str | None = None) -> None:
    """Close every socket of a person (signed out everywhere, password changed, deactivated),
    except those of keep_session: the browser that changed the password stays signed in. The
    message names that session by its tag, as the sockets know it."""
    keep = session_tag(keep_session) if keep_session else None
    _publish(account_group(user_id), {"type": ACCOUNT_SIGNED_OUT_TYPE, "keep": keep})


class Outbox:
    """Publishes without waiting for Redis: one connection of this process with its replies
    turned off (`CLIENT REPLY OFF`), so a write is all a PUBLISH costs the sender.

    The engine thread sends a step's API tokens here (send_now: one write for all of the step's
    answers, and never a wait: when the connection is down or busy it returns False and the
    answers' task threads publish as before). Task threads send an answer's end through the same
    connection (send), so the client gets it after the tokens; only they connect it.
    """

    RETRY_S = 5.0  # after a failure, how long before a task thread connects again
    TIMEOUT_S = 1.0  # a write Redis does not take in this long (a stuck server) drops the connection

    def __init__(self, url: str | None = None):
        self._url = url
        self._conn = None
        self._ready = False  # connected, replies off: the engine thread may write
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self._outage = OutageLog(log, "the reply-less Redis connection")

    def send_now(self, messages: list[tuple[str, dict]]) -> bool:
        """Publish (group, message) pairs in one write, or nothing and False, at once."""
        if not self._ready or not self._lock.acquire(blocking=False):
            return False
        try:
            return self._write(messages)
        finally:
            self._lock.release()

    def send(self, messages: list[tuple[str, dict]]) -> bool:
        """Publish, connecting first if need be (may wait); False if Redis could not take them."""
        with self._lock:
            return (self._ready or self._connect()) and self._write(messages)

    def connect(self) -> bool:
        """Whether the connection is up, making it if need be (may wait)."""
        with self._lock:
            return self._ready or self._connect()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _write(self, messages: list[tuple[str, dict]]) -> bool:
        serialize = get_channel_layer().serialize
        commands = [("PUBLISH", group_channel(group), serialize(message)) for group, message in messages]
        try:
            self._conn.send_packed_command(self._conn.pack_commands(commands), check_health=False)
        except Exception:
            _outage.failed("events are dropped until Redis answers")
            self._drop()
            return False
        return True

    def _connect(self) -> bool:
        if time.monotonic() < self._retry_at:
            return False
        try:
            pool = redis.ConnectionPool.from_url(
                self._url or settings.REDIS_URL, socket_timeout=self.TIMEOUT_S, socket_connect_timeout=2
            )
            self._conn = pool.make_connection()
            self._conn.connect()
            # OFF answers nothing; if it was refused (an ACL), its error comes before ON's OK.
            self._conn.send_packed_command(
                self._conn.pack_commands([("CLIENT", "REPLY", "OFF"), ("CLIENT", "REPLY", "ON")])
            )
            if self._conn.read_response() not in (b"OK", "OK"):
                raise redis.ResponseError("CLIENT REPLY OFF was refused")
            self._conn.send_command("CLIENT", "REPLY", "OFF")
        except Exception:
            self._outage.failed("API answers' task threads publish their tokens until it connects")
            self._drop()
            return False
        self._outage.ok()
        self._ready = True
        return True

    def _drop(self) -> None:
        self._ready = False
        self._retry_at = time.monotonic() + self.RETRY_S
        if self._conn is not None:
            self._conn.disconnect()
            self._conn = None
