"""What every HomeAI socket does first: refuse anonymous users, join one group, watch workers."""

from __future__ import annotations

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from inference import watchdog


class SignedInGroupConsumer(AsyncJsonWebsocketConsumer):
    """A socket for signed-in users only, subscribed to the group group_for(user) names."""

    def group_for(self, user) -> str:
        raise NotImplementedError

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.user = user
        self.group = self.group_for(user)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        # The sweep that turns a dead worker's answers into "interrupted" runs in the web process.
        watchdog.ensure_running()
        await self.on_connected()

    async def on_connected(self) -> None:
        """Hook for subclasses, after the socket is accepted."""

    async def disconnect(self, code) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
