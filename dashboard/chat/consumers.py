"""The chat socket: `chat.*` messages in, `generation.*` and `conversation.*` events out (see README,
WebSocket contract)."""

from __future__ import annotations

import asyncio
import json
import logging

from channels.db import database_sync_to_async
from django.utils import translation
from django.utils.translation import gettext_lazy

from dashboard.sockets import SignedInGroupConsumer
from inference import broadcast, events, selectors
from inference.services import conversations, generations, speech
from infra.errors import ClientError

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 1_000_000
MAX_SYNC_IDS = 100
OTHER_TABS_TIMEOUT_S = 2.0
INTERNAL_ERROR_MESSAGE = gettext_lazy("Something went wrong with that message on the server; please try again.")


class ChatConsumer(SignedInGroupConsumer):
    def group_for(self, user) -> str:
        return broadcast.user_group(user.id)

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        # Parsed here rather than in decode_json so bad input gets an answer, not a closed socket.
        try:
            content = self._parse(text_data, bytes_data)
            handlers = self._handlers()
            kind = content.get("type")
            handler = handlers.get(kind) if isinstance(kind, str) else None
            if handler is None:
                shown = kind if isinstance(kind, str) else type(kind).__name__
                raise ClientError(
                    "unknown_type",
                    f"Unknown message type {str(shown)[:40]!r}; expected one of {', '.join(handlers)}.",
                    field="type",
                )
            with translation.override(self.language):  # the sentences a refusal carries
                await handler(content)
        except ClientError as exc:  # a service's sentence is in the socket's language (the override above)
            await self.send_json(events.client_error(exc))
        except Exception:
            # A socket is never closed over one message: the person gets a sentence, the log the rest.
            log.exception("chat message failed")
            with translation.override(self.language):
                await self.send_json(events.error(None, "internal_error", str(INTERNAL_ERROR_MESSAGE)))

    def _parse(self, text_data, bytes_data) -> dict:
        if text_data is None:
            raise ClientError("bad_request", "Send JSON text frames, not binary ones.")
        if len(text_data) > MAX_FRAME_BYTES:
            raise ClientError("too_long", "That message is too large to accept.")
        try:
            content = json.loads(text_data)
        except ValueError:
            raise ClientError("bad_json", "That message is not valid JSON.") from None
        except RecursionError:
            raise ClientError("bad_json", "That message is nested too deeply.") from None
        if not isinstance(content, dict):
            raise ClientError("bad_request", 'Each message must be a JSON object with a "type".')
        return content

    def _handlers(self) -> dict:
        return {
            "chat.send": self.chat_send,
            "chat.cancel": self.chat_cancel,
            "chat.ttft": self.chat_ttft,
            "chat.regenerate": self.chat_regenerate,
            "chat.edit": self.chat_edit,
            "chat.switch": self.chat_switch,
            "chat.settings": self.chat_settings,
            "chat.sync": self.chat_sync,
            "chat.speak": self.chat_speak,
            "chat.tool_confirm": self.chat_tool_confirm,
        }

    async def chat_send(self, content: dict) -> None:
        generation = await database_sync_to_async(generations.generation_create)(
            user=self.user,
            conversation_id=content.get("conversation"),
            text=content.get("text"),
            max_tokens=content.get("max_tokens"),
            options=content.get("options"),
            settings=content.get("settings"),
            preset=content.get("preset"),
            collections=content.get("collections"),
            attachments=content.get("attachments"),
            tool_choice=content.get("tool_choice"),
        )
        changed = content.get("settings") is not None or content.get("preset") is not None
        await self._answer_queued(generation, settings=changed)

    async def chat_sync(self, content: dict) -> None:
        """Where these answers are now, from the database: the page asks after a reconnect, or
        when an answer it shows has been silent a while (events sent while Redis or the socket
        was down are gone; the text is not, the worker saves it as it streams)."""
        ids = content.get("generations")
        if (
            not isinstance(ids, list)
            or len(ids) > MAX_SYNC_IDS
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
        ):
            raise ClientError(
                "bad_request", f"generations must be a list of at most {MAX_SYNC_IDS} answer ids.", field="generations"
            )
        for event in await database_sync_to_async(self._sync_events)(ids):
            await self.send_json(event)

    def _sync_events(self, ids: list[int]) -> list[dict]:
        found = selectors.generations_for_user(user=self.user, generation_ids=ids)
        out = []
        for gid in dict.fromkeys(ids):
            generation = found.get(gid)
            out.append(events.final(generation, gid) or events.sync(generation))
        return out

    async def chat_regenerate(self, content: dict) -> None:
        await self._new_branch(generations.generation_regenerate, content)

    async def chat_edit(self, content: dict) -> None:
        await self._new_branch(generations.generation_edit, content, text=content.get("text"))

    async def _new_branch(self, create, content: dict, **fields) -> None:
        """A new answer on a new branch (regenerate, edit): the branch, then the answer's events."""
        generation = await database_sync_to_async(create)(
            user=self.user,
            message_id=content.get("message"),
            max_tokens=content.get("max_tokens"),
            options=content.get("options"),
            **fields,
        )
        await self._answer_queued(generation, branch=True)

    async def _answer_queued(self, generation, *, branch: bool = False, settings: bool = False) -> None:
        """Tell the socket the answer is queued (after the branch it is on, if that changed), and
        the person's other tabs what is now on show, then send it to a worker."""
        mine, theirs = await database_sync_to_async(self._queued_events)(generation, branch, settings)
        for event in mine:
            await self.send_json(event)
        await self._tell_other_tabs(theirs)
        if not await database_sync_to_async(generations.generation_enqueue)(generation=generation):
            await self.send_json(events.phase(generation.id, "notice", message=str(generations.QUEUE_DOWN_MESSAGE)))

    def _queued_events(self, generation, branch: bool, settings: bool) -> tuple[list[dict], list[dict]]:
        """The events for this socket, and those for the user's other sockets: a tab showing the
        same conversation draws the new turn from the branch event, then follows the answer."""
        conversation = generation.conversation
        position = selectors.queue_position(generation=generation)
        queued = events.queued(generation, position=position, title=conversation.title)
        shown = self._branch_event(conversation)
        mine = [shown, queued] if branch else [queued]
        if settings:
            mine.append(events.settings(conversation))
        return mine, [shown, queued]

    async def _tell_other_tabs(self, tab_events: list[dict]) -> None:
        """Best effort: with Redis down the other tabs learn of the answer when they next load."""
        message = {"type": broadcast.RELAY_TYPE, "events": tab_events, "skip": self.channel_name}
        try:
            await asyncio.wait_for(self.channel_layer.group_send(self.group, message), OTHER_TABS_TIMEOUT_S)
        except Exception as exc:  # the sender's own answer must not fail over this
            log.info("could not tell the other tabs about a new answer: %s", exc)

    async def chat_switch(self, content: dict) -> None:
        conversation = await database_sync_to_async(conversations.conversation_switch)(
            user=self.user, message_id=content.get("message")
        )
        await self.send_json(await database_sync_to_async(self._branch_event)(conversation))

    @staticmethod
    def _branch_event(conversation) -> dict:
        return events.branch(conversation, selectors.conversation_history(conversation=conversation))

    async def chat_settings(self, content: dict) -> None:
        conversation = await database_sync_to_async(conversations.conversation_settings_update)(
            user=self.user,
            conversation_id=content.get("conversation"),
            settings=content.get("settings"),
            preset=content.get("preset"),
        )
        await self.send_json(events.settings(conversation))

    async def chat_cancel(self, content: dict) -> None:
        cancel = database_sync_to_async(generations.generation_cancel)
        await cancel(user=self.user, generation_id=content.get("generation"))

    async def chat_speak(self, content: dict) -> None:
        """Read an answer aloud: a worker sends speech.audio events as its sentences are made."""
        await database_sync_to_async(speech.speech_request)(user=self.user, generation_id=content.get("generation"))

    async def chat_tool_confirm(self, content: dict) -> None:
        """The person's yes or no to a tool call that acts on the world (the worker waits for it)."""
        await database_sync_to_async(generations.generation_tool_confirm)(
            user=self.user,
            generation_id=content.get("generation"),
            call=content.get("call"),
            allow=content.get("allow"),
        )

    async def chat_ttft(self, content: dict) -> None:
        await database_sync_to_async(generations.generation_set_client_ttft)(
            user=self.user, generation_id=content.get("generation"), ttft_ms=content.get("ttft_ms")
        )

    async def chat_relay(self, message: dict) -> None:
        """Events published by workers (and the watchdog, and the user's other tabs) for this user."""
        if message.get("skip") == self.channel_name:
            return  # this socket's own news, already sent to it
        for event in message["events"]:
            await self.send_json(event)
