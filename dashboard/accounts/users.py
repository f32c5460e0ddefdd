"""Staff's people page: everyone's usage and limits, invites, deactivate and reset."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services as accounts
from accounts.models import Account, Invite
from dashboard.accounts.forms import InviteForm, LimitsForm
from inference import selectors
from infra.errors import ClientError

USAGE_DAYS = 30


def _people(request: HttpRequest) -> list[dict]:
    users = list(get_user_model().objects.order_by("username"))
    ids = [u.id for u in users]
    limits = {a.user_id: a for a in Account.objects.filter(user_id__in=ids)}
    today = selectors.usage_by_user(since=selectors.day_start(), user_ids=ids)
    month = selectors.usage_by_user(since=timezone.now() - timedelta(days=USAGE_DAYS), user_ids=ids)
    people = []
    for user in users:
        account = limits.get(user.id) or Account(user=user)
        people.append(
            {
                "user": user,
                "account": account,
                "manageable": accounts.may_manage(actor=request.user, person=user),
                "today": today.get(user.id, selectors.EMPTY_USAGE),
                "month": month.get(user.id, selectors.EMPTY_USAGE),
                "limits_form": LimitsForm(
                    initial={"answers_per_day": account.answers_per_day, "tokens_per_day": account.tokens_per_day},
                    prefix=f"u{user.id}",
                ),
            }
        )
    return people


def _page(request: HttpRequest, *, invite_form=None, new_link=None, reset_link=None, status=200) -> HttpResponse:
    context = {
        "people": _people(request),
        "invites": [
            {"invite": invite, "link": _invite_link(request, invite)}
            for invite in Invite.objects.filter(used_at__isnull=True, expires_at__gt=timezone.now())
        ],
        "invite_form": invite_form or InviteForm(),
        "new_link": new_link,
        "reset_link": reset_link,
        "usage_days": USAGE_DAYS,
    }
    return render(request, "accounts/users.html", context, status=status)


@staff_member_required
@never_cache
@require_http_methods(["GET", "POST"])
def users(request: HttpRequest) -> HttpResponse:
    """The page; a POST creates an invite and shows its link once."""
    if request.method == "GET":
        return _page(request)
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _page(request, invite_form=form, status=400)
    invite = accounts.invite_create(created_by=request.user, **form.cleaned_data)
    return _page(request, new_link=_invite_link(request, invite))


def _refused(request: HttpRequest, exc: ClientError) -> HttpResponse:
    """The page again, 403, with why the action was refused."""
    messages.error(request, exc.message)
    return _page(request, status=403)


def _invite_link(request: HttpRequest, invite: Invite) -> str:
    return request.build_absolute_uri(reverse("invite_accept", args=[accounts.invite_token(invite)]))


@staff_member_required
@require_POST
def invite_revoke(request: HttpRequest, invite_id: int) -> HttpResponse:
    accounts.invite_revoke(invite_id=invite_id)
    messages.success(request, _("The invite link no longer works."))
    return redirect("users")


@staff_member_required
@require_POST
def user_active(request: HttpRequest, user_id: int) -> HttpResponse:
    person = get_object_or_404(get_user_model(), pk=user_id)
    active = request.POST.get("active") == "1"
    if person == request.user and not active:
        messages.error(request, _("You cannot deactivate your own account."))
        return redirect("users")
    try:
        accounts.user_set_active(actor=request.user, user=person, active=active)
    except ClientError as exc:
        return _refused(request, exc)
    done = _("%(name)s can sign in again.") if active else _("%(name)s is signed out and can no longer sign in.")
    messages.success(request, done % {"name": person.get_username()})
    return redirect("users")


@staff_member_required
@require_POST
def user_limits(request: HttpRequest, user_id: int) -> HttpResponse:
    person = get_object_or_404(get_user_model(), pk=user_id)
    form = LimitsForm(request.POST, prefix=f"u{user_id}")
    if not form.is_valid():
        messages.error(request, _("Limits are whole numbers of 0 or more, or empty for no limit."))
        return redirect("users")
    try:
        accounts.user_set_limits(actor=request.user, user=person, **form.cleaned_data)
    except ClientError as exc:
        return _refused(request, exc)
    messages.success(request, _("Saved the limits of %(name)s.") % {"name": person.get_username()})
    return redirect("users")


@staff_member_required
@never_cache
@require_POST
def user_reset(request: HttpRequest, user_id: int) -> HttpResponse:
    """A link with which the person sets a new password, shown once for staff to pass on."""
    person = get_object_or_404(get_user_model(), pk=user_id)
    try:
        uid, token = accounts.password_reset_token(actor=request.user, user=person)
    except ClientError as exc:
        return _refused(request, exc)
    link = request.build_absolute_uri(reverse("password_reset_confirm", args=[uid, token]))
    return _page(request, reset_link={"user": person, "link": link})
