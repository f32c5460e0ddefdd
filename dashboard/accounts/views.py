"""First-run setup: the first visitor creates the admin account."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from dashboard.accounts import setup_token

SETUP_SESSION_KEY = "homeai-setup"


@never_cache
def setup(request: HttpRequest) -> HttpResponse:
    """Create the first (admin) account; gone once any account exists. It needs the one-time
    link from the server's log (setup_token): the first visitor of a LAN page is not enough."""
    User = get_user_model()
    if User.objects.exists():
        return redirect("login")
    if setup_token.matches(request.GET.get("token")):
        request.session[SETUP_SESSION_KEY] = True
    if not request.session.get(SETUP_SESSION_KEY):
        return render(request, "accounts/setup_locked.html", status=403)
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            if User.objects.exists():  # someone else finished setup first
                return redirect("login")
            user = form.save(commit=False)
            user.is_staff = user.is_superuser = True
            user.save()
        setup_token.discard()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}. Your admin account is ready.")
        return redirect("chat")
    return render(request, "accounts/setup.html", {"form": form})
