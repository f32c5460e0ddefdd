"""A collection's indexing socket (/ws/documents/<id>/): its job's progress, live, for those who
read the collection.

Workers publish every progress update to the collection's group (inference.broadcast); the socket
sends the job as it stands on connecting (a page opened mid-job, or reconnected, is right at
once), then each update as it comes. Anyone who may not read the collection is refused, as the
page answers them 404.
"""

from __future__ import annotations

from channels.db import database_sync_to_async

from dashboard.sockets import SignedInGroupConsumer
from documents import selectors
from inference import broadcast, events
from infra.errors import ClientError


class CollectionConsumer(SignedInGroupConsumer):
    @property
    def collection_id(self) -> int:
        return self.scope["url_route"]["kwargs"]["collection_id"]

    def group_for(self, user) -> str:
        return broadcast.collection_group(self.collection_id)

    async def admitted(self, user) -> bool:
        self.collection = await database_sync_to_async(self._readable)(user)
        return self.collection is not None

    def _readable(self, user):
        """The collection, if this person reads it (the page's own check); None otherwise."""
        try:
            return selectors.collection_for_reader(user, self.collection_id)
        except ClientError:
            return None

    async def on_connected(self) -> None:
        state = await database_sync_to_async(selectors.index_state)(self.collection)
        await self.send_json(events.index_progress(state))

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        """The page only listens; anything a client sends is ignored rather than closing the socket."""

    async def documents_relay(self, message: dict) -> None:
        """index.progress events, published by the worker that runs the job (and by the page's
        views for a job they queued or cancelled)."""
        for event in message["events"]:
            await self.send_json(event)
