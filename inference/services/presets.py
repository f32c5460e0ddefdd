"""Writes for a person's own chat presets (the built-in ones are constants: Preset.BUILTIN)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from inference.models import Preset
from inference.services.validation import validate_limited_text, validate_settings
from infra.errors import ClientError

MAX_PRESETS = 50  # per person


def preset_create(*, user, name, settings) -> Preset:
    """A named copy of chat settings (any of system_prompt, temperature, top_p, max_tokens;
    the ones left out stay empty: the server's defaults)."""
    name = validate_limited_text(
        name, field="name", what=gettext("The preset's name"), limit=Preset.NAME_CHARS, one_line=True
    )
    values = validate_settings(settings)
    if name.casefold() in {v["name"].casefold() for v in Preset.BUILTIN.values()}:
        raise ClientError("exists", f"{name} is a built-in preset; choose another name.", field="name")
    exists = ClientError(
        "exists",
        gettext("You already have a preset called %(name)s; choose another name.") % {"name": name},
        field="name",
    )
    if user.presets.filter(name__iexact=name).exists():
        raise exists
    if user.presets.count() >= MAX_PRESETS:
        raise ClientError(
            "too_many",
            gettext("You have %(n)s presets, the most there can be; delete one first.") % {"n": MAX_PRESETS},
        )
    try:
        with transaction.atomic():
            return Preset.objects.create(user=user, name=name, **values)
    except IntegrityError:  # the same name, saved a moment ago
        raise exists from None


def preset_delete(*, user, preset_id) -> None:
    deleted = 0
    if isinstance(preset_id, int) and not isinstance(preset_id, bool):
        deleted, _ = Preset.objects.filter(id=preset_id, user=user).delete()
    if not deleted:
        raise ClientError("not_found", gettext("That preset does not exist."), field="preset")
