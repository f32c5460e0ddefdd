"""Small number formats for the model library: file sizes and parameter counts."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def bytes(value: int) -> str:  # noqa: A001 - the filter's name in templates
    size = float(value or 0)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit in ("B", "KB") else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


@register.filter
def params(value: int) -> str:
    n = float(value or 0)
    if n >= 1e9:
        return f"{n / 1e9:.1f} B"
    if n >= 1e6:
        return f"{n / 1e6:.0f} M"
    return f"{n:,.0f}"
