"""The one place that sends to the channel layer (workers never import consumers).

Sending from a plain thread with async_to_sync costs a fresh event loop and Redis
connection per call (about 7.5 ms on a 2-core box, a third of a decode step). So each process
keeps one long-lived loop thread; publish() only hands the message over and returns, and
one pump coroutine sends in order.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from channels.layers import get_channel_layer

from inference.outage import OutageLog

log = logging.getLogger(__name__)

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


class _Relay:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue | None = None

    def _start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._queue = asyncio.Queue()
            self._loop = loop
            ready.set()
            loop.run_until_complete(self._pump())

        threading.Thread(target=run, name="homeai-relay", daemon=True).start()
        ready.wait()

    async def _pump(self) -> None:
        layer = get_channel_layer()
        outage = OutageLog(log, "sending events")
        while True:
            group, message = await self._queue.get()
            try:
                await layer.group_send(group, message)
            except Exception:
                # Redis is down: this event is lost (the database keeps the text; pages catch up
                # with chat.sync).
                outage.failed("events are dropped until Redis answers")
            else:
                outage.ok()

    def publish(self, group: str, message: dict) -> None:
        with self._lock:
            if self._loop is None:
                self._start()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (group, message))


_relay = _Relay()


def publish_for(generation, events: list[dict]) -> None:
    """Send an answer's events where its client listens: the chat sockets, or the API request."""
    if not events:
        return
    group = user_group(generation.user_id) if generation.client == "chat" else generation_group(generation.id)
    _relay.publish(group, {"type": RELAY_TYPE, "events": events})


def publish_dashboard(events: list[dict]) -> None:
    """Send metric events (never message text) to every open dashboard socket."""
    if events:
        _relay.publish(DASHBOARD_GROUP, {"type": DASHBOARD_RELAY_TYPE, "events": events})


def end_session(session_key: str) -> None:
    """Close every socket of a session that signed out (they answer with close code 4401)."""
    _relay.publish(session_group(session_key), {"type": SESSION_ENDED_TYPE})


def end_account_sessions(user_id: int, *, keep_session: str | None = None) -> None:
    """Close every socket of a person (signed out everywhere, password changed, deactivated),
    except those of keep_session: the browser that changed the password stays signed in."""
    _relay.publish(account_group(user_id), {"type": ACCOUNT_SIGNED_OUT_TYPE, "keep": keep_session})
