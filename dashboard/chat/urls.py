"""/chat/: the chat pages (the chat's socket is routed in homeai.routing)."""

from __future__ import annotations

from django.urls import path

from dashboard.chat import views

urlpatterns = [
    path("", views.chat, name="chat"),
    path("<int:conversation_id>/", views.chat, name="chat_conversation"),
    path("<int:conversation_id>/delete/", views.conversation_delete, name="conversation_delete"),
]
