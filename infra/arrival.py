"""When a request arrived: stamped on the ASGI scope as the web server hands it over, before
Django's middleware, body parsing and the view, so an answer's clock starts where its client's
does (the API's time to first token runs from here to the first token's bytes on the socket)."""

from __future__ import annotations

import time

SCOPE_KEY = "homeai.arrived_ns"


class ArrivalStampMiddleware:
    """Puts time.time_ns() of the request's arrival in its scope."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        return await self.app({**scope, SCOPE_KEY: time.time_ns()}, receive, send)


def arrived_ns(request) -> int:
    """The request's arrival (wall clock, ns): its stamp, or now where nothing stamped it (a WSGI test client)."""
    scope = getattr(request, "scope", None) or {}
    return scope.get(SCOPE_KEY) or time.time_ns()
