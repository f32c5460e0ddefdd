"""Durations in the page's language: "850 ms", "12.5 s", "4 min", "2.1 h" (numbers per locale)."""

from __future__ import annotations

from django import template
from django.utils import formats
from django.utils.translation import gettext

register = template.Library()


@register.filter
def duration_ms(value) -> str:
    ms = float(value or 0)
    if ms < 1000:
        return gettext("%(n)s ms") % {"n": formats.number_format(round(ms))}
    if ms < 60_000:
        return gettext("%(n)s s") % {"n": formats.number_format(ms / 1000, 1)}
    if ms < 3_600_000:
        return gettext("%(n)s min") % {"n": formats.number_format(ms / 60_000, 1)}
    return gettext("%(n)s h") % {"n": formats.number_format(ms / 3_600_000, 1, force_grouping=True)}
