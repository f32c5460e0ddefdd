"""ASGI entry point: Django views over HTTP, Channels consumers over WebSocket, behind the
proxy-header check (infra/forwarded.py) and the Host check (infra/hosts.py), with request
bodies capped as daphne reads them (homeai/bodylimit.py)."""

from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homeai.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from homeai.api_handler import ApiHandler, split_by_path  # noqa: E402
from homeai.bodylimit import limit_request_bodies  # noqa: E402
from homeai.routing import websocket_urlpatterns  # noqa: E402
from infra.arrival import ArrivalStampMiddleware  # noqa: E402
from infra.forwarded import ProxyHeadersMiddleware  # noqa: E402
from infra.hosts import HostCheckMiddleware  # noqa: E402
from infra.origin import SameOriginMiddleware  # noqa: E402

limit_request_bodies()
application = ProxyHeadersMiddleware(
    HostCheckMiddleware(
        ProtocolTypeRouter(
            {
                # The machine APIs skip the browser middleware (api_handler.py says why).
                "http": ArrivalStampMiddleware(split_by_path(django_asgi_app, ApiHandler())),
                "websocket": SameOriginMiddleware(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
            }
        )
    )
)

# Everything loaded so far lives as long as the process: out of the cyclic collector's way, so
# a full collection scans only what came after. Without this, one took 90-110 ms of daphne's
# interpreter now and then, and held four requests that arrived together (docs/bench/journal.md).
gc.freeze()
