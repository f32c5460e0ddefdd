"""/chat/: the chat pages and their JSON endpoints (the chat's socket is routed in homeai.routing)."""

from __future__ import annotations

from django.urls import path

from dashboard.chat import views

urlpatterns = [
    path("", views.chat, name="chat"),
    path("search/", views.conversation_search, name="conversation_search"),
    path("presets/", views.preset_index, name="presets"),
    path("presets/<int:preset_id>/delete/", views.preset_delete, name="preset_delete"),
    path("export/", views.conversation_export, name="chats_export"),
    path("import/", views.conversation_import, name="chats_import"),
    path("attach/", views.chat_attach, name="chat_attach"),
    path("speech/<int:generation_id>/<int:index>/", views.speech_audio, name="speech_audio"),
    path("shared/<slug:token>/", views.shared_chat, name="chat_shared"),
    path("<int:conversation_id>/", views.chat, name="chat_conversation"),
    path("<int:conversation_id>/rename/", views.conversation_rename, name="conversation_rename"),
    path("<int:conversation_id>/delete/", views.conversation_delete, name="conversation_delete"),
    path("<int:conversation_id>/export/", views.conversation_export, name="conversation_export"),
    path("<int:conversation_id>/share/", views.conversation_share, name="conversation_share"),
    path("<int:conversation_id>/share/revoke/", views.conversation_unshare, name="conversation_unshare"),
]
