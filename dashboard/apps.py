from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed

from accounts.signals import account_signed_out
from inference import broadcast
from infra import throttle


def _close_sockets(sender, request, user, **kwargs) -> None:
    """Signing out ends the session's sockets too: a shared screen stops streaming at once."""
    if request is not None and request.session.session_key:
        broadcast.end_session(request.session.session_key)


def _close_account_sockets(sender, user_id, keep_session, **kwargs) -> None:
    """Signed out everywhere (or the password changed, or staff deactivated the person): every
    socket of theirs closes, but those of keep_session."""
    broadcast.end_account_sessions(user_id, keep_session=keep_session)


def _count_failure(sender, credentials, request=None, **kwargs) -> None:
    """A password that failed, on any sign-in form (ours, the admin's): one count for all."""
    if request is not None:
        throttle.failed(request, credentials.get("username") or "")


def _clear_failures(sender, request, user, **kwargs) -> None:
    if request is not None:
        throttle.succeeded(request, user.get_username())


class DashboardConfig(AppConfig):
    name = "dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        user_login_failed.connect(_count_failure, dispatch_uid="homeai-count-sign-in-failure")
        user_logged_in.connect(_clear_failures, dispatch_uid="homeai-clear-sign-in-failures")
        user_logged_out.connect(_close_sockets, dispatch_uid="homeai-close-sockets")
        account_signed_out.connect(_close_account_sockets, dispatch_uid="homeai-close-account-sockets")
