"""Strict helpers that read settings from the environment.

A bad value raises ImproperlyConfigured naming the variable, so a typo in a
compose file fails loudly at start instead of silently using a default.
"""

from __future__ import annotations

import os
from pathlib import Path

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
