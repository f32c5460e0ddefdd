"""Failed sign-ins, one count for every way in: the sign-in page, the admin's, a password-reset
link and API keys that fail.

Failures are counted in Redis (every web process shares them) for WINDOW_S, three ways:
- per client and account name (PER_CLIENT_ACCOUNT): one device guessing one password;
- per account name, from any address (PER_ACCOUNT): spraying one account from many addresses,
  or through a proxy whose X-Forwarded-For is rotated;
- per client, any names (PER_CLIENT): one device trying many accounts, or many API keys. Not for
  the TLS proxy's own address (infra/forwarded.py): where the proxy does not say who its client
  is, every person comes from it, and one guest could lock out the house.
A client is an IPv4 address or an IPv6 /64 (a host picks any address in its /64). Past a limit,
no password or key is checked until the window passes. A lock-out is that account's or that
client's alone; a sign-in that succeeds clears its account's counts. An account name is counted
as Django reads it (account_key: NFKC, as UsernameField), whichever spelling a form sent.
"""

from __future__ import annotations

import unicodedata

import redis
from django.conf import settings
from django.http import HttpRequest

from infra import addresses, forwarded

WINDOW_S = 15 * 60
PER_CLIENT_ACCOUNT = 5  # failures from one client for one account name
PER_ACCOUNT = 10  # failures for one account name, from anywhere
PER_CLIENT = 20  # failures from one client, any names and keys
PREFIX = "homeai:login-failures"


def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=2)


def account_key(username: str) -> str:
    """The name an account is counted under: NFKC-normalized as Django's UsernameField reads a
    sign-in form's name (so "ａdmin" and "𝐚dmin" are "admin", whose password they check), then
    stripped and lowercased. Counting and checking both use it: a spelling is the account's."""
    return unicodedata.normalize("NFKC", username).strip().lower()[:150]


def _account_limits(request: HttpRequest, username: str) -> dict[str, int]:
    """The counts for one account name (none without a name), keys to limits."""
    name = account_key(username)
    if not name:
        return {}
    client = addresses.client_key(request.META.get("REMOTE_ADDR", ""))
    return {f"{PREFIX}:{client}:{name}": PER_CLIENT_ACCOUNT, f"{PREFIX}:account:{name}": PER_ACCOUNT}


def _limits(request: HttpRequest, username: str) -> dict[str, int]:
    """Every count this request adds to, keys to limits."""
    limits = _account_limits(request, username)
    address = request.META.get("REMOTE_ADDR", "")
    if not forwarded.is_proxy(address):
        limits[f"{PREFIX}:{addresses.client_key(address)}"] = PER_CLIENT
    return limits


def blocked(request: HttpRequest, username: str = "") -> bool:
    """Whether this client, or this account name, has failed too often to be checked now."""
    limits = _limits(request, username)
    if not limits:
        return False
    counts = _redis().mget(list(limits))
    return any(int(count or 0) >= limit for count, limit in zip(counts, limits.values(), strict=True))


def failed(request: HttpRequest, username: str = "") -> None:
    pipe = _redis().pipeline(transaction=False)
    for key in _limits(request, username):
        pipe.incr(key)
        pipe.expire(key, WINDOW_S)
    pipe.execute()


def succeeded(request: HttpRequest, username: str) -> None:
    """The account's counts cleared (its owner knows the password); the client's stay."""
    if keys := list(_account_limits(request, username)):
        _redis().delete(*keys)
