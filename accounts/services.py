"""Writes for people's accounts: invites, a person's own settings, signing out everywhere, and
what staff do to an account (deactivate, limits, a password-reset link)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.contrib.sessions.models import Session
from django.core import signing
from django.db import transaction
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext

from accounts.models import Account, Invite
from accounts.signals import account_signed_out
from infra.errors import ClientError

INVITE_SALT = "homeai.invite"
INVITE_DAYS = (1, 3, 7, 30)


def invite_create(*, created_by, days: int = 7, is_staff: bool = False, note: str = "") -> Invite:
    if days not in INVITE_DAYS:
        raise ClientError("bad_request", gettext("Pick how long the link stays valid."), field="days")
    return Invite.objects.create(
        created_by=created_by,
        is_staff=is_staff,
        note=note.strip()[: Invite._meta.get_field("note").max_length],
        expires_at=timezone.now() + timedelta(days=days),
    )


def invite_token(invite: Invite) -> str:
    """What the invite's link carries: its id, signed, so no id can be guessed into a link."""
    return signing.dumps(invite.id, salt=INVITE_SALT)


def invite_open(token: str) -> Invite:
    """The invite a link names, while it can still be used; else ClientError with why not
    (invite_invalid, invite_used, invite_expired)."""
    try:
        invite_id = signing.loads(token, salt=INVITE_SALT)
    except signing.BadSignature:
        invite_id = None
    invite = Invite.objects.filter(id=invite_id).first() if isinstance(invite_id, int) else None
    if invite is None:
        raise ClientError("invite_invalid", gettext("This invite link is not valid: check that it was copied whole."))
    if invite.used_at is not None:
        raise ClientError("invite_used", gettext("This invite link has already been used to create an account."))
    if invite.expires_at <= timezone.now():
        raise ClientError("invite_expired", gettext("This invite link has expired."))
    return invite


def invite_accept(*, invite: Invite, form) -> object:
    """Create the account from a valid UserCreationForm, using the invite up (once, even when
    two browsers submit at the same moment)."""
    with transaction.atomic():
        now = timezone.now()
        taken = Invite.objects.filter(id=invite.id, used_at__isnull=True, expires_at__gt=now).update(used_at=now)
        if taken != 1:
            raise ClientError("invite_used", gettext("This invite link has already been used to create an account."))
        user = form.save(commit=False)
        user.is_staff = invite.is_staff
        user.save()
        Invite.objects.filter(id=invite.id).update(used_by=user)
        Account.objects.create(user=user)
    return user


def invite_revoke(*, invite_id: int) -> None:
    Invite.objects.filter(id=invite_id, used_at__isnull=True).delete()


def account_update(*, user, display_name: str, language: str, default_preset: str, auto_read: bool = False) -> Account:
    account = Account.of(user)
    account.auto_read = auto_read
    account.display_name = display_name
    account.language = language
    account.default_preset = default_preset
    account.save()
    return account


def sign_out_everywhere(*, user, keep_session: str | None = None, keep_sockets_of: str | None = None) -> None:
    """End every session of a person but keep_session, and close their sockets but those opened
    with keep_sockets_of (default: keep_session; a password change renews the key of the session
    it keeps, and that browser's sockets still carry the old one).

    Sessions live in the database (Django's default engine): each is decoded to find its owner,
    which costs one pass over the household's few sessions."""
    owned = []
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator():
        if session.session_key != keep_session and session.get_decoded().get("_auth_user_id") == str(user.pk):
            owned.append(session.session_key)
    Session.objects.filter(session_key__in=owned).delete()
    keep = keep_sockets_of or keep_session
    transaction.on_commit(lambda: account_signed_out.send(sender=Account, user_id=user.pk, keep_session=keep))


def may_manage(*, actor, person) -> bool:
    """Whether actor may reset the password of, deactivate, activate or demote person: staff
    manage everyone who is not staff, and themselves; only a superuser manages staff and
    superusers (a reset link for the superuser would make a staff member the superuser)."""
    return actor.is_superuser or actor.pk == person.pk or not (person.is_staff or person.is_superuser)


def _check_may_manage(actor, person) -> None:
    if not may_manage(actor=actor, person=person):
        raise ClientError(
            "forbidden",
            gettext("Only a superuser can reset the password of, deactivate or change a staff account."),
        )


def user_set_active(*, actor, user, active: bool) -> None:
    """Deactivate (no sign-in, every session and socket ended) or activate an account."""
    _check_may_manage(actor, user)
    get_user_model().objects.filter(pk=user.pk).update(is_active=active)
    if not active:
        sign_out_everywhere(user=user)


def user_set_limits(*, actor, user, answers_per_day: int | None, tokens_per_day: int | None) -> Account:
    """A person's daily limits; staff's and the superuser's are set by a superuser only."""
    _check_may_manage(actor, user)
    account = Account.of(user)
    account.answers_per_day = answers_per_day
    account.tokens_per_day = tokens_per_day
    account.save(update_fields=["answers_per_day", "tokens_per_day"])
    return account


def password_reset_token(*, actor, user) -> tuple[str, str]:
    """The (uidb64, token) of a link with which the person sets a new password (Django's reset
    token: it works until the password changes or PASSWORD_RESET_TIMEOUT passes)."""
    _check_may_manage(actor, user)
    return urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)
