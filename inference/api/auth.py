"""Bearer-token checks: API keys for /v1/, the optional scrape token for /metrics."""

from __future__ import annotations

import hmac

from channels.db import database_sync_to_async
from django.http import HttpRequest

from inference.api.keys import api_key_authenticate
from inference.api.protocol import ApiError


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticate(request: HttpRequest):
    """The user whose API key the request carries; ApiError 401 otherwise."""
    token = bearer_token(request)
    if token is None:
        raise ApiError(
            401,
            "No API key was sent. Send one in the Authorization header as 'Bearer hai_…'; "
            "create a key on the API keys page (/settings/api-keys/).",
            code="missing_api_key",
        )
    user = api_key_authenticate(token)
    if user is None:
        shown = token[:8] + "…" if len(token) > 8 else token
        raise ApiError(
            401,
            f"The API key {shown} is not valid: it may have been revoked. Create a new one on /settings/api-keys/.",
            code="invalid_api_key",
        )
    return user


def metrics_token_ok(request: HttpRequest, expected: str) -> bool:
    """No token configured: open (like most exporters on a LAN); else a constant-time compare."""
    if not expected:
        return True
    token = bearer_token(request) or ""
    return hmac.compare_digest(token.encode(), expected.encode())


api_user = database_sync_to_async(authenticate)
