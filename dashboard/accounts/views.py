"""First-run setup (from the one-time link), the throttled sign-in page, and an invite's page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, login, logout
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.views import LoginView
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache

from accounts import services as accounts
from accounts import setup_token
from dashboard.accounts import throttle
from dashboard.accounts.language import apply_language
from infra.errors import ClientError

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
        messages.success(request, _("Welcome, %(name)s. Your admin account is ready.") % {"name": user.username})
        return redirect("chat")
    return render(request, "accounts/setup.html", {"form": form})


class ThrottledLoginView(LoginView):
    """Django's sign-in, refusing to check passwords after too many failures from one address."""

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        if throttle.blocked(request, username):
            form = self.get_form()
            minutes = throttle.WINDOW_S // 60
            context = self.get_context_data(form=form, throttled_minutes=minutes)
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        throttle.failed(self.request, self.request.POST.get("username", ""))
        return super().form_invalid(form)

    def form_valid(self, form):
        throttle.succeeded(self.request, form.get_user().get_username())
        return apply_language(super().form_valid(form), form.get_user())


@never_cache
def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    """An invite's page: the invited person picks a username and password, and is signed in."""
    try:
        invite = accounts.invite_open(token)
    except ClientError as exc:
        return render(request, "accounts/invite_invalid.html", {"error": exc}, status=410)
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = accounts.invite_accept(invite=invite, form=form)
        except ClientError as exc:
            return render(request, "accounts/invite_invalid.html", {"error": exc}, status=410)
        if request.user.is_authenticated:
            logout(request)  # someone else's browser: the invited person signs in as themselves
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, _("Welcome, %(name)s. Your account is ready.") % {"name": user.username})
        return redirect("chat")
    return render(request, "accounts/invite.html", {"form": form, "invite": invite})
