"""First-run setup (from the one-time link), the throttled sign-in pages (ours, the admin's), and
an invite's page."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth import get_user_model, login, logout
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.contrib.auth.views import LoginView
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache

from accounts import services as accounts
from accounts import setup_token
from dashboard.accounts.language import apply_language
from infra import throttle
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


def throttled(request: HttpRequest) -> HttpResponse:
    """The sign-in page saying the tries are used up (429): no password is checked."""
    context = {"form": AuthenticationForm(request), "throttled_minutes": throttle.WINDOW_S // 60}
    return render(request, "registration/login.html", context, status=429)


def guarded(view):
    """A view that checks a password (ours, the admin's sign-in), refused while the client or the
    account name it names is past its limit (infra/throttle.py). Failures are counted for every
    such view alike, as Django reports them (dashboard/apps.py)."""

    @wraps(view)
    def check_first(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method == "POST" and throttle.blocked(request, request.POST.get("username", "")):
            return throttled(request)
        return view(request, *args, **kwargs)

    return check_first


class SignInView(LoginView):
    """Django's sign-in, in the person's own language once signed in."""

    def form_valid(self, form):
        return apply_language(super().form_valid(form), form.get_user())


sign_in = guarded(SignInView.as_view())


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
