from __future__ import annotations

from django.urls import path

from dashboard.consumers import ChatConsumer
from dashboard.live import DashboardConsumer

websocket_urlpatterns = [
    path("ws/chat/", ChatConsumer.as_asgi()),
    path("ws/dashboard/", DashboardConsumer.as_asgi()),
]
