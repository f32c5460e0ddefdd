"""Every WebSocket route (homeai.asgi wraps them in sessions, auth and the origin check)."""

from __future__ import annotations

from django.urls import path

from dashboard.chat.consumers import ChatConsumer
from dashboard.documents.consumers import CollectionConsumer
from dashboard.latency.consumers import DashboardConsumer

websocket_urlpatterns = [
    path("ws/chat/", ChatConsumer.as_asgi()),
    path("ws/dashboard/", DashboardConsumer.as_asgi()),
    path("ws/documents/<int:collection_id>/", CollectionConsumer.as_asgi()),
]
