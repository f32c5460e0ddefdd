"""Bearer-token checks: API keys for /v1/, the optional scrape token for /metrics."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest

from accounts.keys import api_key_check, api_key_touch
from api.errors import ApiError
from infra.dbthreads import kept_db


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def from_lan(request: HttpRequest) -> bool:
    """Whether the client is on this machine or the home network (behind a reverse proxy, that
    is the proxy: turn keyless access off there)."""
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def keyless_user(request: HttpRequest):
    """The user HOMEAI_OLLAMA_KEYLESS_USER names, for a request from the LAN; else None."""
    name = settings.HOMEAI_OLLAMA_KEYLESS_USER
    if not name or not from_lan(request):
        return None
    return get_user_model().objects.filter(username=name, is_active=True).first()


def authenticate(request: HttpRequest, *, keyless: bool = False, admitted: Callable[[], None] | None = None):
    """The user whose API key the request carries; ApiError 401 otherwise.

    keyless: a request without a key may be the keyless user's (the Ollama API, when the admin
    turned it on); a key that is sent must still be valid. admitted: called once the requester
    is known good, before anything is written: the key's last use is noted after it, since that
    write may wait for the database's write lock behind other requests' rows, and an engine about
    to read prompts waits only for the requests already announced (views.admit)."""
    token = bearer_token(request)
    if token is None and keyless and (user := keyless_user(request)) is not None:
        if admitted is not None:
            admitted()
        return user
    if token is None:
        raise ApiError(
            401,
            "No API key was sent. Send one in the Authorization header as 'Bearer hai_…'; "
            "create a key on the API keys page (/settings/api-keys/).",
            code="missing_api_key",
        )
    key = api_key_check(token)
    if key is None:
        shown = token[:8] + "…" if len(token) > 8 else token
        raise ApiError(
            401,
            f"The API key {shown} is not valid: it may have been revoked. Create a new one on /settings/api-keys/.",
            code="invalid_api_key",
        )
    if admitted is not None:
        admitted()
    api_key_touch(key)
    return key.user


def metrics_token_ok(request: HttpRequest, expected: str) -> bool:
    """No token configured: open (like most exporters on a LAN); else a constant-time compare."""
    if not expected:
        return True
    token = bearer_token(request) or ""
    return hmac.compare_digest(token.encode(), expected.encode())


api_user = kept_db(authenticate)


async def ollama_user(request: HttpRequest):
    return await kept_db(authenticate)(request, keyless=True)
