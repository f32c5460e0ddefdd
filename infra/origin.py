"""WebSocket origin check: the page that opens a socket must come from this very server.

Channels' AllowedHostsOriginValidator accepts any origin when ALLOWED_HOSTS is "*" (what
Django sees while infra/hosts.py's rule is in force); a malicious page elsewhere could then
open a socket with the user's cookie (cross-site WebSocket hijacking). So we compare Origin
with the Host the browser connected to, as Django's CSRF check does for forms, and accept
CSRF_TRUSTED_ORIGINS for proxies.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

from infra.hosts import answers_to


def origin_allowed(origin: str, host: str) -> bool:
    if not origin or not host:
        return False
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    if not answers_to(host):
        return False
    return urlsplit(origin).netloc.lower() == host.lower()


class SameOriginMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            headers = dict(scope.get("headers", []))
            origin = headers.get(b"origin", b"").decode("latin1")
            host = headers.get(b"host", b"").decode("latin1")
            if not origin_allowed(origin, host):
                return await WebsocketDenier()(scope, receive, send)
        return await self.app(scope, receive, send)
