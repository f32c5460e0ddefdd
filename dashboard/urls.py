"""Dashboard pages (live latency dashboard, request detail, export)."""

from __future__ import annotations

urlpatterns: list = []
