"""Celery wiring (the standard Django recipe, with the task module named rather than discovered).

The web process only sends tasks, by name (inference.dispatch.registry); `imports` is read when a
worker starts, so the task code, and llama.cpp with it, loads in workers alone.
"""

from __future__ import annotations

import os
from functools import cached_property

from celery import Celery
from django.core.exceptions import ImproperlyConfigured

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homeai.settings")


class HomeAICelery(Celery):
    @cached_property
    def backend(self):
        """One result backend for every thread. Celery builds one per thread, since a real one
        need not be thread-safe; HomeAI keeps no results (CELERY_RESULT_BACKEND is None: the
        stateless disabled backend), and the web sends each answer's task from a new thread (one
        per request), so every send built one: a third of its 1.2 ms."""
        if self.conf.result_backend:
            raise ImproperlyConfigured("HomeAI keeps no task results: set no CELERY_RESULT_BACKEND.")
        return self._get_backend()


app = HomeAICelery("homeai")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = ("inference.worker.tasks",)
# Every thread's current app, not only this one's (Celery's is thread-local): the apps below the
# wiring send tasks and control consumers through celery.current_app, from any thread.
app.set_default()
