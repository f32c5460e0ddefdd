"""Bearer-token checks: API keys for /v1/ and /api/, the keyless LAN user, the scrape token for /metrics."""

from __future__ import annotations

import hmac
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest

from accounts.keys import api_key_check, api_key_touch
from api.errors import ApiError
from infra import addresses, throttle
from infra.dbthreads import kept_db
from infra.origin import origin_allowed


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def from_lan(request: HttpRequest) -> bool:
    """Whether the client is on this machine or the home network (infra.addresses.LAN_NETWORKS;
    behind the reverse proxy, the client it names: infra/forwarded.py)."""
    return addresses.is_lan(request.META.get("REMOTE_ADDR", ""))


# Bodies a web page may send to another site with no CORS preflight, that no Ollama client sends.
# (application/x-www-form-urlencoded is what `curl -d` sends: a browser sends Origin with it.)
BROWSER_ONLY_TYPES = ("text/plain", "multipart/form-data")


def cross_site(request: HttpRequest) -> str | None:
    """Why a request looks sent by a web page of another site, else None. A keyless request is
    the household's, answered with no secret: any page a household member opens could send it."""
    origin = request.headers.get("Origin")
    if origin is not None and not origin_allowed(origin, request.headers.get("Host", "")):
        return f"it comes from a web page at {origin[:100]}"
    if request.headers.get("Sec-Fetch-Site") in ("cross-site", "same-site"):
        return "a browser says it comes from another site"
    if request.content_type in BROWSER_ONLY_TYPES:
        return f"its body is {request.content_type}, which only browsers send; send application/json"
    return None


def keyless_user(request: HttpRequest):
    """The user HOMEAI_OLLAMA_KEYLESS_USER names, for a request from the LAN; else None. ApiError
    403 for one a web page of another site sent (cross_site)."""
    name = settings.HOMEAI_OLLAMA_KEYLESS_USER
    if not name or not from_lan(request):
        return None
    if reason := cross_site(request):
        raise ApiError(
            403,
            f"Refused without an API key: {reason}. Web pages cannot use the keyless Ollama API; "
            "send an API key (Authorization: Bearer hai_…) instead.",
            code="cross_site",
        )
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
        # Counted with failed passwords (infra/throttle.py). Checked after the key, so a good
        # key costs no Redis round trip; past the limit a bad one is answered 429, not 401.
        if throttle.blocked(request):
            raise ApiError(
                429,
                f"Too many failed sign-ins and API keys from this address: wait {throttle.WINDOW_S // 60} minutes, "
                "then try again with a valid key.",
                code="too_many_failures",
            )
        throttle.failed(request)
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


def metrics_allowed(request: HttpRequest, token: str) -> bool:
    """/metrics is for signed-in staff, or a scraper sending the configured token (compared in
    constant time); with no token configured, for staff only (the counters show the household's use)."""
    if getattr(request, "user", None) is not None and request.user.is_active and request.user.is_staff:
        return True
    sent = bearer_token(request) or ""
    return bool(token) and hmac.compare_digest(sent.encode(), token.encode())


api_user = kept_db(authenticate)


async def ollama_user(request: HttpRequest):
    return await kept_db(authenticate)(request, keyless=True)
