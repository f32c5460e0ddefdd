"""/v1/: the OpenAI-compatible API."""

from __future__ import annotations

from django.urls import path

from inference.api import embedding_views, views

urlpatterns = [
    path("models", views.models, name="api_models"),
    path("models/<path:model_id>", views.model_detail, name="api_model"),
    path("chat/completions", views.chat_completions, name="api_chat_completions"),
    path("completions", views.completions, name="api_completions"),
    path("embeddings", embedding_views.openai_embeddings, name="api_embeddings"),
]
