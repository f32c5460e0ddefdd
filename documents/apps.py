from __future__ import annotations

import logging

from django.apps import AppConfig
from django.db.models.signals import post_migrate

from documents import pgvector

log = logging.getLogger(__name__)


def _vectors_in_database(sender, using, **kwargs) -> None:
    """After every migrate: the chunks' vector column where the database is PostgreSQL with
    pgvector (documents/pgvector.py), or why not."""
    state = pgvector.enable(using)
    if state == "on":
        log.info("documents: chunk vectors are searched in the database (pgvector)")
    elif state not in ("not PostgreSQL", "no chunks table"):
        log.warning("documents: chunk vectors are searched in each process (numpy): %s", state)


class DocumentsConfig(AppConfig):
    name = "documents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_vectors_in_database, sender=self, dispatch_uid="homeai-vectors-in-database")
