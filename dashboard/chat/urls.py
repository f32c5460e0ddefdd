"""/chat/: the chat pages and their JSON endpoints (the chat's socket is routed in homeai.routing)."""

from __future__ import annotations

from django.urls import path

from dashboard.chat import views

urlpatterns = [
    path("", views.chat, name="chat"),
    path("search/", views.conversation_search, name="conversation_search"),
    path("presets/", views.preset_index, name="presets"),
    path("presets/<int:preset_id>/delete/", views.preset_delete, name="preset_delete"),
    path("<int:conversation_id>/", views.chat, name="chat_conversation"),
    path("<int:conversation_id>/rename/", views.conversation_rename, name="conversation_rename"),
    path("<int:conversation_id>/delete/", views.conversation_delete, name="conversation_delete"),
]
