"""Tools in the chat: everyone's on/off page (their own, one chat's), staff's MCP servers."""

from __future__ import annotations

from django.urls import path

from dashboard.tools import views

urlpatterns = [
    path("", views.tools_page, name="tools"),
    path("chat/<int:conversation_id>/", views.tools_page, name="tools_chat"),
    path("servers/", views.server_add, name="tool_server_add"),
    path("servers/<int:server_id>/", views.server_change, name="tool_server_change"),
]
