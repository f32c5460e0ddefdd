"""First run: until an account exists, every page leads to the admin-account setup."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import redirect

EXEMPT_PREFIXES = ("/setup/", "/static/", "/healthz")


class FirstRunMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # One indexed EXISTS per request: cheap, and right again if every account is deleted.
        if not request.path.startswith(EXEMPT_PREFIXES) and not get_user_model().objects.exists():
            return redirect("setup")
        return self.get_response(request)
