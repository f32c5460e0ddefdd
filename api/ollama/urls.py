"""/api/: Ollama's API."""

from __future__ import annotations

from django.urls import path

from api.embeddings import views as embedding_views
from api.ollama import pulls as pull_views
from api.ollama import views as ollama_views

urlpatterns = [
    path("chat", ollama_views.chat, name="ollama_chat"),
    path("generate", ollama_views.generate, name="ollama_generate"),
    path("embed", embedding_views.ollama_embed, name="ollama_embed"),
    path("embeddings", embedding_views.ollama_embeddings, name="ollama_embeddings"),
    path("tags", ollama_views.tags, name="ollama_tags"),
    path("ps", ollama_views.ps, name="ollama_ps"),
    path("show", ollama_views.show, name="ollama_show"),
    path("version", ollama_views.version, name="ollama_version"),
    path("pull", pull_views.pull, name="ollama_pull"),
    path("delete", pull_views.delete, name="ollama_delete"),
    path("copy", pull_views.copy, name="ollama_copy"),
]
