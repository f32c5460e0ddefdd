"""What every HomeAI socket does first: refuse anonymous users (and those the page's own check
turns away), join one group, watch workers; and what it does last: close when its session signs
out, or its person signs out everywhere."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

from inference import broadcast, events, watchdog

SIGNED_OUT = 4401  # the close code for "sign in again" (the page's reconnect loop stops on it)
TOO_MANY = 4429  # the close code for "this person has as many sockets open as they may"
NOT_FOUND = 4404  # the close code for "no such thing, or not this person's to watch"

_open_sockets: Counter[int] = Counter()  # this process's open sockets, per person


def scope_language(scope) -> str:
    """The language a page's socket speaks: as LocaleMiddleware picks it for the page (the
    language cookie, then Accept-Language, then LANGUAGE_CODE)."""
    headers = dict(scope.get("headers") or [])
    request = SimpleNamespace(
        COOKIES=scope.get("cookies") or {},
        META={"HTTP_ACCEPT_LANGUAGE": headers.get(b"accept-language", b"").decode("latin-1")},
    )
    return translation.get_language_from_request(request)


def _too_many_message(scope) -> str:
    """Why the socket closes, in the page's language."""
    with translation.override(scope_language(scope)):
        return gettext(
            "You have %(n)d HomeAI pages open, as many as one person may: close some tabs, and this one connects again."
        ) % {"n": settings.HOMEAI_MAX_SOCKETS_PER_PERSON}


class SignedInGroupConsumer(AsyncJsonWebsocketConsumer):
    """A socket for signed-in users only, subscribed to the group group_for(user) names."""

    def group_for(self, user) -> str:
        raise NotImplementedError

    async def admitted(self, user) -> bool:
        """Whether this signed-in person may watch what the socket's path names (a collection they
        read, say); one who may not is refused as anonymous users are, before the handshake ends."""
        return True

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=SIGNED_OUT)
            return
        if not await self.admitted(user):
            await self.close(code=NOT_FOUND)
            return
        if _open_sockets[user.id] >= settings.HOMEAI_MAX_SOCKETS_PER_PERSON:
            # Accepted to be told why, then closed: a refused handshake would tell the page
            # nothing (and daphne sends no close reason).
            await self.accept()
            await self.send_json(events.error(None, "too_many_sockets", _too_many_message(self.scope)))
            await self.close(code=TOO_MANY)
            return
        _open_sockets[user.id] += 1
        self.counted_for = user.id
        self.user = user
        self.language = scope_language(self.scope)
        self.group = self.group_for(user)
        session = self.scope.get("session")
        session_key = session.session_key if session else None
        # Only the session's tag is kept and sent: the key itself never reaches Redis.
        self.session_tag = broadcast.session_tag(session_key) if session_key else None
        self.session_group = broadcast.session_group(session_key) if session_key else None
        self.account_group = broadcast.account_group(user.id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.channel_layer.group_add(self.account_group, self.channel_name)
        if self.session_group:
            await self.channel_layer.group_add(self.session_group, self.channel_name)
        await self.accept()
        # The sweep that turns a dead worker's answers into "interrupted" runs in the web process.
        watchdog.ensure_running()
        await self.on_connected()

    async def on_connected(self) -> None:
        """Hook for subclasses, after the socket is accepted."""

    async def session_ended(self, message: dict) -> None:
        """The session this socket signed in with signed out (broadcast.end_session)."""
        await self.close(code=SIGNED_OUT)

    async def account_signed_out(self, message: dict) -> None:
        """The person signed out everywhere, changed their password or was deactivated
        (broadcast.end_account_sessions): every socket closes but the changing session's own."""
        if not message.get("keep") or message["keep"] != self.session_tag:
            await self.close(code=SIGNED_OUT)

    async def disconnect(self, code) -> None:
        if (person := getattr(self, "counted_for", None)) is not None:
            _open_sockets[person] -= 1
            if not _open_sockets[person]:
                del _open_sockets[person]
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(self.account_group, self.channel_name)
            if self.session_group:
                await self.channel_layer.group_discard(self.session_group, self.channel_name)
