"""The chat socket: `chat.*` messages in, `generation.*` events out (see README, WebSocket contract)."""

from __future__ import annotations

import json
import logging

from channels.db import database_sync_to_async

from homeai.sockets import SignedInGroupConsumer
from inference import broadcast, events, selectors
from inference.errors import ClientError
from inference.services import generations

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 1_000_000


class ChatConsumer(SignedInGroupConsumer):
    def group_for(self, user) -> str:
        return broadcast.user_group(user.id)

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        # Parsed here rather than in decode_json so bad input gets an answer, not a closed socket.
        try:
            content = self._parse(text_data, bytes_data)
            handler = self._handlers().get(content.get("type"))
            if handler is None:
                raise ClientError(
                    "unknown_type",
                    f"Unknown message type {content.get('type')!r}; expected chat.send, chat.cancel or chat.ttft.",
                )
            await handler(content)
        except ClientError as exc:
            await self.send_json(events.client_error(exc))

    def _parse(self, text_data, bytes_data) -> dict:
        if text_data is None:
            raise ClientError("bad_request", "Send JSON text frames, not binary ones.")
        if len(text_data) > MAX_FRAME_BYTES:
            raise ClientError("too_long", "That message is too large to accept.")
        try:
            content = json.loads(text_data)
        except ValueError:
            raise ClientError("bad_json", "That message is not valid JSON.") from None
        if not isinstance(content, dict):
            raise ClientError("bad_request", 'Each message must be a JSON object with a "type".')
        return content

    def _handlers(self) -> dict:
        return {"chat.send": self.chat_send, "chat.cancel": self.chat_cancel, "chat.ttft": self.chat_ttft}

    async def chat_send(self, content: dict) -> None:
        generation = await database_sync_to_async(generations.generation_create)(
            user=self.user,
            conversation_id=content.get("conversation"),
            text=content.get("text"),
            max_tokens=content.get("max_tokens"),
            options=content.get("options"),
        )
        position, title = await database_sync_to_async(self._queued_info)(generation)
        await self.send_json(events.queued(generation, position=position, title=title))
        await database_sync_to_async(generations.generation_enqueue)(generation=generation)

    @staticmethod
    def _queued_info(generation) -> tuple[int, str]:
        return selectors.queue_position(generation=generation), generation.conversation.title

    async def chat_cancel(self, content: dict) -> None:
        cancel = database_sync_to_async(generations.generation_cancel)
        await cancel(user=self.user, generation_id=content.get("generation"))

    async def chat_ttft(self, content: dict) -> None:
        await database_sync_to_async(generations.generation_set_client_ttft)(
            user=self.user, generation_id=content.get("generation"), ttft_ms=content.get("ttft_ms")
        )

    async def chat_relay(self, message: dict) -> None:
        """Events published by workers (and the watchdog) for this user."""
        for event in message["events"]:
            await self.send_json(event)
