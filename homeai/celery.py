"""Celery wiring (the standard Django recipe, with the task module named rather than discovered).

The web process only sends tasks, by name (inference.worker.registry); `imports` is read when a
worker starts, so the task code, and llama.cpp with it, loads in workers alone.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homeai.settings")

app = Celery("homeai")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = ("inference.worker.tasks",)
