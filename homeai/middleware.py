"""First run: until an account exists, every page leads to the admin-account setup."""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.contrib.auth import get_user_model
from django.shortcuts import redirect

# Machine clients (API, Prometheus, health checks) get their own answers, never a redirect; so do
# the files a browser fetches by itself (the app's manifest and service worker).
EXEMPT_PREFIXES = ("/setup/", "/static/", "/i18n/", "/health", "/v1/", "/api/", "/props", "/slots", "/metrics")
EXEMPT_PREFIXES += ("/sw.js", "/manifest.webmanifest")


class FirstRunMiddleware:
    """Sync and async capable, so API requests under daphne need no thread hop for it."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self._acall(request)
        # One indexed EXISTS per request: cheap, and right again if every account is deleted.
        if not request.path.startswith(EXEMPT_PREFIXES) and not get_user_model().objects.exists():
            return redirect("setup")
        return self.get_response(request)

    async def _acall(self, request):
        if not request.path.startswith(EXEMPT_PREFIXES) and not await get_user_model().objects.aexists():
            return redirect("setup")
        return await self.get_response(request)
