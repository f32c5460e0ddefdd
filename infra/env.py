"""Strict helpers that read settings from the environment.

A bad value raises ImproperlyConfigured naming the variable, so a typo in a
compose file fails loudly at start instead of silently using a default.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """A string from NAME, or from the file named by NAME_FILE (Docker secrets)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def private_file(path: Path, make: Callable[[], str]) -> str:
    """The text kept in path; when there is none, make()'s, written there first. The file is
    created 0600 with O_EXCL: never readable by another account, not even for a moment, and when
    processes start together the first writer wins and the others read its text."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    text = make()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return text


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum of {minimum}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum of {maximum}.")
    return value


def env_auto_int(name: str, *, minimum: int | None = None, maximum: int | None = None) -> int | None:
    """A whole number from NAME, or None for "auto" (and unset): the app works it out."""
    raw = os.environ.get(name)
    if raw is None or raw.strip().lower() in ("", "auto"):
        return None
    try:
        int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is neither a whole number nor auto.") from None
    return env_int(name, 0, minimum=minimum, maximum=maximum)


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum of {minimum}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of: {', '.join(choices)}.")
    return value


# The databases HomeAI runs on; others may work, but the suite runs on these two. SQLite runs on
# Django's backend with a finer wait for the write lock (infra/sqlite/base.py).
SQLITE_ENGINE = "infra.sqlite"
DATABASE_ENGINES = {
    SQLITE_ENGINE: "SQLite",
    "django.db.backends.sqlite3": "SQLite",
    "django.db.backends.postgresql": "PostgreSQL",
}


def database_config(url: str, name: str = "DATABASE_URL") -> dict:
    """Django's DATABASES entry for a database URL: sqlite:////path/to/file.sqlite3 or
    postgres://user:password@host:5432/name. A bad URL raises ImproperlyConfigured naming NAME."""
    try:
        config = dj_database_url.parse(url, conn_max_age=0)
    except ValueError:  # not a URL, or a scheme of no database
        config = {"ENGINE": None}
    if config["ENGINE"] not in DATABASE_ENGINES:
        raise ImproperlyConfigured(
            f"{name}={redact_url(url)!r}: HomeAI runs on SQLite (sqlite:////path/to/file.sqlite3) or "
            "PostgreSQL (postgres://user:password@host:5432/name)."
        )
    if config["ENGINE"] in (SQLITE_ENGINE, "django.db.backends.sqlite3"):
        # Web, worker and tests write the same file: WAL lets readers run beside one writer, and
        # IMMEDIATE transactions wait for the lock (timeout) instead of failing with "database is locked".
        config["ENGINE"] = SQLITE_ENGINE
        config["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
    return config


def redact_url(url: str) -> str:
    """url with its password replaced by ***, fit for a log line or an error message."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _url_password(parts) -> str:
    return parts.password or parse_qs(parts.query).get("password", [""])[0]


def redis_url(url: str, password: str) -> str:
    """A Redis URL with password added when it carries none; a password in the URL wins."""
    parts = urlsplit(url)
    if not password or _url_password(parts):
        return url
    user, _, hostport = parts.netloc.rpartition("@")
    return parts._replace(netloc=f"{user.partition(':')[0]}:{quote(password, safe='')}@{hostport}").geturl()


def redis_exposed_host(url: str) -> str | None:
    """The host of a Redis URL that carries no password and is not this machine (a name other
    than localhost, or an address other than loopback), else None: anyone who reaches that host
    can read and send what HomeAI keeps there."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    if _url_password(parts) or parts.scheme == "unix" or host in ("", "localhost") or host.endswith(".localhost"):
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    return host
