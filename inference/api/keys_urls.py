"""/settings/api-keys/: the API keys page."""

from __future__ import annotations

from django.urls import path

from inference.api import keys_views

urlpatterns = [
    path("", keys_views.api_keys, name="api_keys"),
    path("<int:key_id>/revoke/", keys_views.api_key_revoke, name="api_key_revoke"),
]
