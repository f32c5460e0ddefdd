"""/v1/: the OpenAI-compatible API."""

from __future__ import annotations

from django.urls import path

from api.documents import views as document_views
from api.embeddings import views as embedding_views
from api.openai import views as openai_views

urlpatterns = [
    path("models", openai_views.models, name="api_models"),
    path("models/<path:model_id>", openai_views.model_detail, name="api_model"),
    path("chat/completions", openai_views.chat_completions, name="api_chat_completions"),
    path("completions", openai_views.completions, name="api_completions"),
    path("embeddings", embedding_views.openai_embeddings, name="api_embeddings"),
    path("collections", document_views.collections, name="api_collections"),
    path("collections/<int:collection_id>/search", document_views.search, name="api_collection_search"),
    path("collections/<int:collection_id>/index", document_views.index, name="api_collection_index"),
    path(
        "collections/<int:collection_id>/documents/<int:document_id>/file",
        document_views.document_file,
        name="api_collection_file",
    ),
]
