"""The first-run setup link's one-time token (as Jupyter's): whoever reaches /setup/ first on a
LAN, or through DNS rebinding, must also have read the server's log to create the admin account.

The token is kept in the data directory (every web process of an install shares it) until the
first account exists; `manage.py setup_link` prints the link, and `make run` and the container's
web role call it at start.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from django.conf import settings

TOKEN_FILE = "setup-token"


def _path() -> Path:
    return Path(settings.DATA_DIR) / TOKEN_FILE


def token() -> str:
    """The install's setup token, made on first use (readable by its owner only)."""
    path = _path()
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        value = secrets.token_urlsafe(24)
        path.touch(mode=0o600)
        path.write_text(value)
        return value


def matches(candidate) -> bool:
    return isinstance(candidate, str) and bool(candidate) and hmac.compare_digest(candidate, token())


def discard() -> None:
    """Setup is done: the link stops working."""
    _path().unlink(missing_ok=True)
