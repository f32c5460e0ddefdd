"""API keys: create, revoke, and look up the key a request presents (only hashes are stored)."""

from __future__ import annotations

import datetime
import hashlib
import secrets

from django.utils import timezone

from accounts.models import ApiKey
from infra.errors import ClientError

KEY_PREFIX = "hai_"
SHOWN_CHARS = len(KEY_PREFIX) + 8
NAME_CHARS = 100
# A key's last use is written at most this often: one UPDATE per request would make every
# streamed answer a database write on SQLite.
TOUCH_EVERY = datetime.timedelta(minutes=1)


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def api_key_create(*, user, name: str = "") -> tuple[ApiKey, str]:
    """A new key for the user; the secret is returned once and never stored."""
    name = " ".join((name or "").split())
    if len(name) > NAME_CHARS:
        raise ClientError("bad_request", f"A key's name can be at most {NAME_CHARS} characters.", field="name")
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(user=user, name=name or "API key", prefix=raw[:SHOWN_CHARS], key_hash=hash_key(raw))
    return key, raw


def api_key_revoke(*, user, key_id) -> ApiKey:
    """Revoke one of the user's own keys (revoking twice is harmless)."""
    key = ApiKey.objects.filter(id=key_id, user=user).first() if isinstance(key_id, int) else None
    if key is None:
        raise ClientError("not_found", "That API key does not exist.")
    ApiKey.objects.filter(id=key.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
    key.refresh_from_db()
    return key


def api_keys_for_user(*, user):
    return ApiKey.objects.filter(user=user)


def api_key_check(raw: str) -> ApiKey | None:
    """The active key a presented one is (not revoked, its user active), or None; reads only."""
    if not raw or not raw.startswith(KEY_PREFIX) or len(raw) > 200:
        return None
    key = ApiKey.objects.select_related("user").filter(key_hash=hash_key(raw), revoked_at__isnull=True).first()
    if key is None or not key.user.is_active:
        return None
    return key


def api_key_touch(key: ApiKey) -> None:
    """Note that the key was used (its last_used_at, written at most once a minute)."""
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at >= TOUCH_EVERY:
        ApiKey.objects.filter(id=key.id).update(last_used_at=now)
