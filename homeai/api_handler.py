"""Django for the machine APIs (OpenAI's /v1/, Ollama's /api/), with only the middleware they use.

Their views take a bearer key, never a session, a cookie or a CSRF token, so the browser
middleware (sessions, CSRF, authentication, messages, the first-run redirect) does nothing for
them. It still cost: under ASGI, Django runs each hook of a MiddlewareMixin
middleware in a thread (sync_to_async), two thread hops per middleware per request, about 2 ms
before an answer is even stored (docs/performance.md). This handler keeps what sets the
responses' headers and language and what CommonMiddleware does for every response
(Content-Length, slash redirects), with the hooks run inline: they only read the request and
set headers, so they need no thread.
"""

from __future__ import annotations

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.locale import LocaleMiddleware
from django.middleware.security import SecurityMiddleware

API_PREFIXES = ("/v1/", "/api/")


class InlineHooks:
    """A Django middleware whose hooks neither block nor touch the database, run in the
    request's own coroutine rather than a thread each."""

    async def __acall__(self, request):
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class ApiSecurityMiddleware(InlineHooks, SecurityMiddleware):
    """nosniff, the referrer and opener policies, HSTS and the HTTPS redirect when configured."""


class ApiLocaleMiddleware(InlineHooks, LocaleMiddleware):
    """Messages in the language the client asks for (Accept-Language), Content-Language set."""


class ApiCommonMiddleware(InlineHooks, CommonMiddleware):
    """Content-Length on whole responses; APPEND_SLASH's redirects."""


class ApiXFrameOptionsMiddleware(InlineHooks, XFrameOptionsMiddleware):
    """X-Frame-Options on every response."""


# In settings.MIDDLEWARE's order, outermost first.
API_MIDDLEWARE = (ApiSecurityMiddleware, ApiLocaleMiddleware, ApiCommonMiddleware, ApiXFrameOptionsMiddleware)


class ApiHandler(ASGIHandler):
    """Django's ASGI handler with API_MIDDLEWARE in place of settings.MIDDLEWARE."""

    def load_middleware(self, is_async=True):
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        handler = convert_exception_to_response(self._get_response_async)
        for middleware in reversed(API_MIDDLEWARE):
            handler = convert_exception_to_response(middleware(handler))
        self._middleware_chain = handler


def is_api(scope) -> bool:
    """Whether an HTTP request is for a machine API (its path under the app's root path)."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.startswith(API_PREFIXES)


def split_by_path(site, api):
    """One ASGI app: requests for a machine API to `api`, every other one to `site`."""

    async def app(scope, receive, send):
        return await (api if is_api(scope) else site)(scope, receive, send)

    return app
