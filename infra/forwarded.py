"""The reverse proxy's headers, believed only from the proxy itself.

Behind a TLS proxy (HOMEAI_BEHIND_TLS_PROXY), a connection from one of HOMEAI_TRUSTED_PROXIES
(default: this machine) carries the client's address in X-Forwarded-For and the scheme in
X-Forwarded-Proto. Only the rightmost hop is the proxy's own word: everything left of it was
written by the client. From any other peer the headers are a client's claim. Either way they are
taken out of the scope, so nothing further in (Django's SECURE_PROXY_SSL_HEADER included) can
read a client's claim. Daphne's own --proxy-headers takes the leftmost hop from any peer: it is
not used.
"""

from __future__ import annotations

from django.conf import settings

from infra import addresses

FORWARDED_FOR = b"x-forwarded-for"
FORWARDED_PROTO = b"x-forwarded-proto"


def is_proxy(address: str) -> bool:
    """Whether a peer is the TLS proxy the admin said is in front (its headers are believed)."""
    return settings.HOMEAI_BEHIND_TLS_PROXY and addresses.within(address, settings.HOMEAI_TRUSTED_PROXIES)


def _rightmost(values: list[bytes]) -> str:
    return b",".join(values).decode("latin-1").rsplit(",", 1)[-1].strip()


def from_proxy(scope: dict) -> dict:
    """The scope with the client and scheme the trusted proxy reports, its headers removed."""
    headers = scope.get("headers") or []
    claimed = {FORWARDED_FOR: [], FORWARDED_PROTO: []}
    kept = []
    for name, value in headers:
        if name in claimed:
            claimed[name].append(value)
        else:
            kept.append((name, value))
    if not claimed[FORWARDED_FOR] and not claimed[FORWARDED_PROTO]:
        return scope
    scope = {**scope, "headers": kept}
    peer = (scope.get("client") or ("", 0))[0]
    if not is_proxy(peer):
        return scope
    if claimed[FORWARDED_FOR] and addresses.parse(hop := _rightmost(claimed[FORWARDED_FOR])) is not None:
        scope["client"] = (str(addresses.parse(hop)), 0)
    proto = _rightmost(claimed[FORWARDED_PROTO]).lower() if claimed[FORWARDED_PROTO] else ""
    if proto in ("http", "https"):
        secure = proto == "https"
        scope["scheme"] = ("wss" if secure else "ws") if scope["type"] == "websocket" else proto
    return scope


class ProxyHeadersMiddleware:
    """ASGI: applies from_proxy to every HTTP request and WebSocket."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            scope = from_proxy(scope)
        return await self.app(scope, receive, send)
