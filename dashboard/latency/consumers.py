"""The dashboard socket: the engine's live feed out, plus a system-status frame every few seconds.

Workers publish request and engine-step events to the "dashboard" group (inference.broadcast);
they carry metrics and user names but never message text, so every signed-in viewer may have them.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.utils import translation

from dashboard.latency import payload
from dashboard.sockets import SignedInGroupConsumer
from inference import broadcast, events

log = logging.getLogger(__name__)

SYSTEM_INTERVAL_S = 2.0


class DashboardConsumer(SignedInGroupConsumer):
    def group_for(self, user) -> str:
        return broadcast.DASHBOARD_GROUP

    async def on_connected(self) -> None:
        self.ticker = asyncio.create_task(self._send_system_status())

    async def disconnect(self, code) -> None:
        ticker = getattr(self, "ticker", None)
        if ticker is not None:
            ticker.cancel()
        await super().disconnect(code)

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        """The dashboard only listens; anything a client sends is ignored rather than closing the socket."""

    async def dashboard_relay(self, message: dict) -> None:
        """Events published by workers: request.update, request.done, engine.steps."""
        for event in message["events"]:
            await self.send_json(event)

    def _system_snapshot(self) -> dict:
        with translation.override(self.language):  # its sentences, in the page's language
            return payload.system_snapshot()

    async def _send_system_status(self) -> None:
        # Pushed from here rather than polled by the page; psutil and the Redis scan are blocking calls.
        snapshot = sync_to_async(self._system_snapshot, thread_sensitive=False)
        while True:
            try:
                await self.send_json(events.system_status(await snapshot()))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("dashboard system status failed", exc_info=True)
            await asyncio.sleep(SYSTEM_INTERVAL_S)
