"""One API request's view of its answer: the worker's events, heard on the channel layer.

The request subscribes to the answer's group before the task is sent, so it cannot miss
the first token; pub/sub delivers at most once, so when nothing arrives for a while the
row in the database is asked instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from channels.layers import get_channel_layer

from inference import events
from inference.broadcast import generation_group, pull_group
from inference.models import Generation
from infra.dbthreads import kept_db

log = logging.getLogger(__name__)

IDLE_S = 10.0  # a stream sends a keep-alive comment, and the row is checked, this often


class GenerationEvents:
    """Subscribe with open(), read frames of events with next(), always close()."""

    def __init__(self, generation_id: int):
        self.generation_id = generation_id
        self.group = generation_group(generation_id)
        self.layer = get_channel_layer()
        self.channel: str | None = None
        self._pending: asyncio.Future | None = None

    async def open(self) -> None:
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(self.group, self.channel)

    async def next(self, timeout: float = IDLE_S) -> list[dict] | None:
        """The next frame of events, or None when nothing came for `timeout` seconds."""
        # One receive stays pending across timeouts: cancelling a pub/sub receive would
        # unsubscribe the channel.
        if self._pending is None:
            self._pending = asyncio.ensure_future(self.layer.receive(self.channel))
        done, _ = await asyncio.wait({self._pending}, timeout=timeout)
        if not done:
            return None
        message, self._pending = self._pending.result(), None
        return self._take(message)

    def _take(self, message: dict) -> list[dict]:
        return [e for e in message.get("events", ()) if e.get("generation") in (None, self.generation_id)]

    async def close(self) -> None:
        """Leave the group and drop the channel (it is removed when a receive on it is cancelled)."""
        if self.channel is None:
            return
        try:
            await self.layer.group_discard(self.group, self.channel)
            for _ in range(3):
                task = self._pending or asyncio.ensure_future(self.layer.receive(self.channel))
                self._pending = None
                await asyncio.sleep(0)  # let it start waiting, so its cancellation cleans up
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                    break
        except Exception:
            log.warning("could not unsubscribe from %s", self.group, exc_info=True)
        self.channel = None


class PullLines(GenerationEvents):
    """One model pull's status lines (dispatch/pulls.py), heard on its group as an answer's are."""

    def __init__(self, pull_id: str):
        super().__init__(0)
        self.group = pull_group(pull_id)

    def _take(self, message: dict) -> list[dict]:
        return list(message.get("lines", ()))


def _final_event(generation_id: int) -> dict | None:
    """The end of an answer as its row tells it, or None while it is still queued or running."""
    return events.final(Generation.objects.filter(id=generation_id).select_related("message").first(), generation_id)


final_event = kept_db(_final_event)
