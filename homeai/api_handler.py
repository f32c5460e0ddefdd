"""Django for the machine APIs (OpenAI's /v1/, Ollama's /api/), with only the middleware they use.

Their views take a bearer key, never a session, a cookie or a CSRF token, so the browser
middleware (sessions, CSRF, authentication, messages, the first-run redirect) does nothing for
them. It still cost: under ASGI, Django runs each hook of a MiddlewareMixin
middleware in a thread (sync_to_async), two thread hops per middleware per request, about 2 ms
before an answer is even stored (docs/bench/journal.md). This handler keeps what sets the
responses' headers and language and what CommonMiddleware does for every response
(Content-Length, slash redirects), with the hooks run inline: they only read the request and
set headers, so they need no thread.

Nor does a request of theirs need a thread of its own. Django's handler gives each request a
ThreadSensitiveContext and sends request_started through sync_to_async in it, so every API
request started a thread to run two receivers that have nothing to do for it (reset_queries,
close_old_connections: the API's database work runs on kept_db's threads, which check their own
connections before each use): about 0.9 ms between a request's arrival and its view on a busy
2-core box (docs/bench/journal.md). ApiHandler.handle is Django's, without that context and signal.
"""

from __future__ import annotations

import asyncio

from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.locale import LocaleMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import set_script_prefix

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
    """Django's ASGI handler with API_MIDDLEWARE in place of settings.MIDDLEWARE, run in the
    request's own coroutine (no thread started for it)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"The API handler serves HTTP, not {scope['type']}.")
        await self.handle(scope, receive, send)

    async def handle(self, scope, receive, send):
        """Django 5.2's ASGIHandler.handle without request_started (see the module's docstring):
        the body read, the view run while a disconnect is listened for (a client that goes away
        cancels it: its answer is cancelled), the response sent and closed."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            error_response.close()
            return

        async def process_request():
            response = await self.run_get_response(request)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client went away while the response was sent
            return response

        listen = asyncio.create_task(self.listen_for_disconnect(receive))
        serve = asyncio.create_task(process_request())
        try:
            await asyncio.wait((listen, serve), return_when=asyncio.FIRST_COMPLETED)
            for task in (listen, serve):  # the listener first: a disconnect cancels the view
                if task.done():
                    try:
                        task.result()
                    except RequestAborted:
                        pass
                else:
                    task.cancel()
                    try:
                        await task
                    except asyncio.CancelledError:
                        pass
            # Closing sends request_finished: close_old_connections finds no connection on this
            # thread (kept_db's threads hold the API's), so it runs inline rather than in a thread.
            if serve.cancelled():
                signals.request_finished.send(sender=self.__class__)
            elif serve.exception() is None:
                serve.result().close()
        finally:
            body_file.close()

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
