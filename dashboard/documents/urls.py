"""/documents/: the household's documents (collections, uploads, indexing)."""

from __future__ import annotations

from django.urls import path

from dashboard.documents import views

urlpatterns = [
    path("", views.collections, name="documents"),
    path("<int:collection_id>/", views.collection, name="documents_collection"),
    path("<int:collection_id>/upload/", views.upload, name="documents_upload"),
    path("<int:collection_id>/index/", views.index, name="documents_index"),
    path("<int:collection_id>/cancel/", views.cancel, name="documents_cancel"),
    path("<int:collection_id>/files/<int:document_id>/", views.document_file, name="documents_file"),
]
