"""The API keys settings page: each person creates, sees and revokes only their own keys."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import keys
from infra.errors import ClientError


def _page(request: HttpRequest, *, new_key: str | None = None, error: str | None = None, status: int = 200):
    context = {
        "keys": keys.api_keys_for_user(user=request.user),
        "new_key": new_key,
        "error": error,
        "base_url": request.build_absolute_uri("/v1"),
    }
    return render(request, "accounts/api_keys.html", context, status=status)


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def api_keys(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request)
    try:
        _key, raw = keys.api_key_create(user=request.user, name=request.POST.get("name", ""))
    except ClientError as exc:
        return _page(request, error=exc.message, status=400)
    # Shown in this response only: it is never stored, nor put in the session or a message.
    return _page(request, new_key=raw)


@login_required
@require_POST
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    try:
        key = keys.api_key_revoke(user=request.user, key_id=key_id)
    except ClientError:
        raise Http404("No such API key.") from None
    messages.success(request, _("Revoked “%(name)s”. Clients using it now get 401.") % {"name": key.name})
    return redirect("api_keys")
