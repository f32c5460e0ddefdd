"""First-run setup: the first visitor creates the admin account."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache


@never_cache
def setup(request: HttpRequest) -> HttpResponse:
    """Create the first (admin) account; gone once any account exists."""
    User = get_user_model()
    if User.objects.exists():
        return redirect("login")
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            if User.objects.exists():  # someone else finished setup first
                return redirect("login")
            user = form.save(commit=False)
            user.is_staff = user.is_superuser = True
            user.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}. Your admin account is ready.")
        return redirect("chat")
    return render(request, "accounts/setup.html", {"form": form})
