"""A person's chosen language follows them: Django's language cookie (which LocaleMiddleware
reads before Accept-Language) is set from their account when they sign in or save it."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse

from accounts.models import Account


def apply_language(response: HttpResponse, user) -> HttpResponse:
    """Set the language cookie to the person's setting, or drop it (the browser's language)."""
    language = Account.objects.filter(user=user).values_list("language", flat=True).first() or ""
    if language:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            language,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
            secure=settings.LANGUAGE_COOKIE_SECURE,
            httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        )
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, samesite=settings.LANGUAGE_COOKIE_SAMESITE)
    return response
