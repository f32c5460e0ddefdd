"""Celery wiring (the standard Django recipe)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homeai.settings")

app = Celery("homeai")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
