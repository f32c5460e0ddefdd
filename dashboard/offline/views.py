"""On phones: the web app manifest (the chat installs to a home screen) and the service worker
that keeps a person's chat pages for reading offline (templates/offline/sw.js says how).

Both are public, as browsers fetch them without asking anyone to sign in; neither holds anything
of a person. What the worker keeps is tied to the person the page was rendered for
(`offline_page`), so one person's copy is never shown to another on a shared phone."""

from __future__ import annotations

import json
from functools import wraps

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.utils.crypto import salted_hmac
from django.utils.safestring import mark_safe
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_GET

# The response header that names, without saying who, the person a kept page belongs to.
PERSON_HEADER = "X-HomeAI-Person"
THEME_COLOR = "#1f2937"  # the icon's ground


def person_key(user) -> str:
    """An opaque, stable name for a person's offline copy (their id, signed with the secret key)."""
    return salted_hmac("homeai.offline.person", str(user.pk)).hexdigest()[:32]


def offline_page(view):
    """A page the service worker may keep for offline reading: its response names its person."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code == 200 and request.user.is_authenticated:
            response[PERSON_HEADER] = person_key(request.user)
        return response

    return wrapper


@require_GET
def manifest(request: HttpRequest) -> JsonResponse:
    start = reverse("chat")
    body = {
        "id": start,
        "name": "HomeAI",
        "short_name": "HomeAI",
        "description": gettext("Chat with the household's own assistant, on this home server."),
        "lang": get_language(),
        "start_url": start,
        "scope": "/",
        "display": "standalone",
        "background_color": THEME_COLOR,
        "theme_color": THEME_COLOR,
        "icons": [
            {"src": static("icons/icon-192.png"), "sizes": "192x192", "type": "image/png", "purpose": "any"},
            {"src": static("icons/icon-512.png"), "sizes": "512x512", "type": "image/png", "purpose": "any"},
            {"src": static("icons/icon.svg"), "sizes": "any", "type": "image/svg+xml", "purpose": "any"},
            {
                "src": static("icons/icon-maskable-512.png"),
                "sizes": "512x512",
                "type": "image/png",
                "purpose": "maskable",
            },
        ],
    }
    response = JsonResponse(body, content_type="application/manifest+json", json_dumps_params={"ensure_ascii": False})
    response["Cache-Control"] = "no-cache"
    response["Vary"] = "Cookie, Accept-Language"  # the description is in the person's language
    return response


@require_GET
def service_worker(request: HttpRequest) -> HttpResponse:
    config = {
        "chat": reverse("chat"),
        "deleteChat": reverse("conversation_delete", args=[0]),  # the worker reads the 0 as any id
        "signIn": reverse(settings.LOGIN_URL),
        "static": settings.STATIC_URL if settings.STATIC_URL.startswith("/") else "/" + settings.STATIC_URL,
        "catalog": reverse("javascript_catalog"),
        "personHeader": PERSON_HEADER,
    }
    source = render_to_string("offline/sw.js", {"config": mark_safe(json.dumps(config))})
    response = HttpResponse(source, content_type="text/javascript; charset=utf-8")
    # Browsers look for a new worker at most daily whatever this says; no-cache makes it every visit.
    response["Cache-Control"] = "no-cache"
    response["Service-Worker-Allowed"] = "/"
    return response
