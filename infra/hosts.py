"""The Host names this server answers to, checked once for every HTTP request and WebSocket.

A DNS-rebinding page (a site on the internet whose name the attacker points at this box's LAN
address) reaches the server with its own name in Host, so a request whose Host is a public DNS
name this server was not given is refused. What a household types is accepted without any
setting: the setup link's host (HOMEAI_PUBLIC_URL), this machine's own names and addresses, any
address literal (http://192.168.1.10:8000: a page there is this server's own origin, nothing to
rebind), a single-label name (http://nas:8000) and names under the suffixes only a home network
resolves (.local, .lan, .home, .home.arpa, .internal, .localdomain). In a container the machine's
own names are the container's, so this is what keeps the NAS's address working by default.

An ALLOWED_HOSTS setting replaces the rule with Django's own check of that list.
"""

from __future__ import annotations

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from infra import addresses

HOME_SUFFIXES = (".local", ".lan", ".home", ".home.arpa", ".internal", ".localdomain")


def is_home_name(domain: str) -> bool:
    """Whether a Host's domain is one no site on the internet can point here: an address
    literal, a single-label name, or a name under a home-network suffix."""
    domain = domain.strip("[]").rstrip(".").lower()
    if not domain:
        return False
    if addresses.parse(domain) is not None:
        return True
    return "." not in domain or domain.endswith(HOME_SUFFIXES)


def answers_to(host: str) -> bool:
    """Whether this server answers to a Host header: by the rule above, or by ALLOWED_HOSTS
    when that is set."""
    domain, _port = split_domain_port(host.lower())
    if not domain:
        return False
    if settings.HOMEAI_KNOWN_HOSTS is None:
        return validate_host(domain, settings.ALLOWED_HOSTS)
    return validate_host(domain, settings.HOMEAI_KNOWN_HOSTS) or is_home_name(domain)


REFUSED = (
    b"This server does not answer to that name. Open it by its address or its .local name, "
    b"or set HOMEAI_PUBLIC_URL (or ALLOWED_HOSTS) to the address people open.\n"
)


class HostCheckMiddleware:
    """ASGI: refuses (400, or a denied WebSocket) a Host this server does not answer to, before
    anything else reads the request (with the rule in force Django's ALLOWED_HOSTS is *)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket") and settings.HOMEAI_KNOWN_HOSTS is not None:
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not answers_to(host):
                return await _refuse(scope, receive, send)
        return await self.app(scope, receive, send)


async def _refuse(scope, receive, send) -> None:
    if scope["type"] == "websocket":
        return await WebsocketDenier()(scope, receive, send)
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(REFUSED)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": REFUSED})
