"""/settings/api-keys/: a user's own API keys."""

from __future__ import annotations

from django.urls import path

from dashboard.accounts import api_keys

urlpatterns = [
    path("", api_keys.api_keys, name="api_keys"),
    path("<int:key_id>/revoke/", api_keys.api_key_revoke, name="api_key_revoke"),
]
