"""Sign-in throttling: a password cannot be guessed at speed from one address.

Failed sign-ins are counted in Redis (so every web process shares them) per address and account
name and per address alone, for WINDOW_S; past the limits the form refuses to check passwords
until the window passes. A successful sign-in clears its account's count.
"""

from __future__ import annotations

from django.http import HttpRequest

from inference import redis_client

WINDOW_S = 15 * 60
PER_ACCOUNT = 5  # failures from one address for one account name
PER_ADDRESS = 20  # failures from one address, any names


def _keys(request: HttpRequest, username: str) -> tuple[str, str]:
    address = request.META.get("REMOTE_ADDR", "")
    return (
        f"homeai:login-failures:{address}:{username.strip().lower()[:150]}",
        f"homeai:login-failures:{address}",
    )


def blocked(request: HttpRequest, username: str) -> bool:
    per_account, per_address = _keys(request, username)
    counts = redis_client.client().mget(per_account, per_address)
    account, address = (int(c or 0) for c in counts)
    return account >= PER_ACCOUNT or address >= PER_ADDRESS


def failed(request: HttpRequest, username: str) -> None:
    pipe = redis_client.client().pipeline(transaction=False)
    for key in _keys(request, username):
        pipe.incr(key)
        pipe.expire(key, WINDOW_S)
    pipe.execute()


def succeeded(request: HttpRequest, username: str) -> None:
    redis_client.client().delete(_keys(request, username)[0])
