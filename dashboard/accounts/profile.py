"""A person's own settings page: name, language, default preset, today's use, password, and
signing out everywhere."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import PasswordChangeView, PasswordResetConfirmView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services as accounts
from accounts.models import Account
from dashboard.accounts.forms import AccountForm
from dashboard.accounts.language import apply_language
from dashboard.accounts.views import throttled
from inference import selectors
from infra import throttle


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def account_settings(request: HttpRequest) -> HttpResponse:
    account = Account.of(request.user)
    initial = {n: getattr(account, n) for n in ("display_name", "language", "default_preset", "auto_read")}
    form = AccountForm(request.POST or None, initial=initial, user=request.user)
    if request.method == "POST" and form.is_valid():
        accounts.account_update(user=request.user, **form.cleaned_data)
        messages.success(request, _("Your settings are saved."))
        return apply_language(redirect("account_settings"), request.user)
    context = {"form": form, "account": account, "today": selectors.usage_today(user=request.user)}
    return render(request, "accounts/settings.html", context, status=400 if form.errors else 200)


class PasswordChange(PasswordChangeView):
    """Django's password change; this browser stays signed in, every other session (and socket) ends."""

    template_name = "accounts/password_change.html"
    success_url = reverse_lazy("account_settings")

    def post(self, request, *args, **kwargs):
        """The old password is checked as a sign-in's is (infra/throttle.py): not at all while the
        account or this client is past its limit (429), and a wrong one counts as a failure."""
        if throttle.blocked(request, request.user.get_username()):
            context = self.get_context_data(throttled_minutes=throttle.WINDOW_S // 60)
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        if "old_password" in form.errors:
            throttle.failed(self.request, self.request.user.get_username())
        return super().form_invalid(form)

    def form_valid(self, form):
        # The sockets of this browser were opened with the session key from before the change
        # (which update_session_auth_hash renews): those stay open, all others close.
        kept = self.request.session.session_key
        response = super().form_valid(form)
        accounts.sign_out_everywhere(
            user=self.request.user, keep_session=self.request.session.session_key, keep_sockets_of=kept
        )
        messages.success(self.request, _("Your password is changed. Your other devices are signed out."))
        return response


class PasswordReset(PasswordResetConfirmView):
    """The link staff give a person to set a new password (every session of theirs ends)."""

    template_name = "accounts/password_reset.html"
    success_url = reverse_lazy("login")
    post_reset_login = False

    def dispatch(self, *args, **kwargs):
        """A link that does not check out counts as a failed sign-in (its token was guessed)."""
        if throttle.blocked(self.request):
            return throttled(self.request)
        response = super().dispatch(*args, **kwargs)
        if not self.validlink and response.status_code == 200:  # the "link not valid" page
            throttle.failed(self.request, self.user.get_username() if self.user else "")
        return response

    def form_valid(self, form):
        response = super().form_valid(form)
        accounts.sign_out_everywhere(user=form.user)
        messages.success(self.request, _("Your new password is set. Sign in with it."))
        return response


@login_required
@require_POST
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    accounts.sign_out_everywhere(user=request.user)
    logout(request)
    messages.success(request, _("You are signed out on every device."))
    return redirect("login")
