"""Writes: collections (make, share), uploads, and indexing jobs (start, cancel)."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone
from django.utils.translation import gettext

from documents import folders
from documents.kinds import supported
from documents.models import Collection, IndexJob
from infra.errors import ClientError


def collection_create(
    *, owner, name: str, visibility: str = Collection.Visibility.PRIVATE, folder: str = "", readers: list[str] = ()
) -> Collection:
    """A new collection. Sharing with the household is for staff (it reaches everyone); named
    readers must be people of this server; the folder must lie inside the documents folder."""
    name = name.strip()
    if not name:
        raise ClientError("bad_request", gettext("Give the collection a name."), field="name")
    if visibility not in Collection.Visibility.values:
        raise ClientError(
            "bad_request", gettext("Choose who reads it: private, household or people."), field="visibility"
        )
    if visibility == Collection.Visibility.HOUSEHOLD and not owner.is_staff:
        raise ClientError(
            "forbidden", gettext("Only staff share a collection with the whole household."), field="visibility"
        )
    if folder.strip():
        path = folders.folder_path(folder)
        if not path.is_dir():
            raise ClientError(
                "bad_request",
                gettext("There is no folder %(folder)s in the documents folder.") % {"folder": folder},
                field="folder",
            )
    people = list(get_user_model().objects.filter(username__in=list(readers), is_active=True))
    if missing := sorted(set(readers) - {p.username for p in people}):
        raise ClientError(
            "bad_request", gettext("No such person: %(names)s.") % {"names": ", ".join(missing)}, field="readers"
        )
    with transaction.atomic():
        collection = Collection.objects.create(
            owner=owner, name=name[:200], visibility=visibility, folder=folder.strip().strip("/")
        )
        collection.readers.set(people)
    # A new collection starts empty, whatever an earlier database left under its id.
    shutil.rmtree(folders.uploads_path(collection), ignore_errors=True)
    return collection


def _upload_name(name: str) -> str:
    """An uploaded file's name as kept: its last path part, no hidden or empty names."""
    base = Path(name.replace("\\", "/")).name.strip()
    if not base or base.startswith(".") or base in ("..",):
        raise ClientError("bad_request", gettext("The file has no usable name."), field="file")
    return base[:200]


def upload_add(*, collection: Collection, name: str, chunks) -> str:
    """Keep an uploaded file in the collection's uploads (replacing one of the same name); its
    chunks are an iterable of bytes. The size limit is checked as it is written."""
    base = _upload_name(name)
    if not supported(base):
        raise ClientError(
            "unsupported",
            gettext("Files like %(name)s are not read: send txt, md, pdf, docx, html, csv or source code.")
            % {"name": base},
            field="file",
        )
    limit = settings.HOMEAI_DOCUMENT_MAX_MB * 1_000_000
    folder = folders.uploads_path(collection)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{base}.part"
    written = 0
    try:
        with partial.open("wb") as out:
            for piece in chunks:
                written += len(piece)
                if written > limit:
                    raise ClientError(
                        "too_large",
                        gettext("Files up to %(limit)s MB are read (HOMEAI_DOCUMENT_MAX_MB).")
                        % {"limit": settings.HOMEAI_DOCUMENT_MAX_MB},
                        field="file",
                    )
                out.write(piece)
        os.replace(partial, folder / base)
    finally:
        partial.unlink(missing_ok=True)
    return base


def index_job_start(*, user, collection: Collection, live_workers: set[str]) -> tuple[IndexJob, bool]:
    """The collection's indexing job: the one under way (False), or a new queued one (True).
    The caller sends a task for a job that is queued, new or not (its task may have been lost
    with a worker or a Redis restart; a duplicate is dropped by the claim).
    A job whose worker is gone (not in live_workers) ends as interrupted and a new one starts:
    it goes on from the files already committed, so nothing is indexed twice. Two callers at
    once get one job (the database holds one active job per collection)."""
    with transaction.atomic():
        for job in IndexJob.objects.select_for_update().filter(collection=collection, status__in=IndexJob.ACTIVE):
            running_on_live = job.status == IndexJob.Status.RUNNING and job.worker in live_workers
            waiting_for_live = job.status == IndexJob.Status.QUEUED and bool(live_workers)
            if running_on_live or waiting_for_live:
                return job, False
            IndexJob.objects.filter(id=job.id, status=job.status).update(
                status=IndexJob.Status.INTERRUPTED, ended_at=timezone.now(), current_file=""
            )
        try:
            with transaction.atomic():
                return IndexJob.objects.create(collection=collection, requested_by=user), True
        except IntegrityError:  # another process started one meanwhile
            return IndexJob.objects.get(collection=collection, status__in=IndexJob.ACTIVE), False


def collections_due_for_rescan(*, minutes: int) -> list[Collection]:
    """Collections with a folder whose last indexing ended at least `minutes` ago, was never
    indexed, or has a job under way (which index_job_start keeps if its worker lives)."""
    since = timezone.now() - timedelta(minutes=minutes)
    last_end = IndexJob.objects.filter(collection=OuterRef("pk")).order_by("-id").values("ended_at")[:1]
    folders_only = Collection.objects.exclude(folder="").annotate(last_end=Subquery(last_end))
    return list(folders_only.filter(Q(last_end__isnull=True) | Q(last_end__lte=since)))


def index_jobs_rescan(*, minutes: int, live_workers: set[str]) -> list[IndexJob]:
    """The periodic re-scan: a job for each collection due (none while no worker holding the
    embedding model runs: they would only wait), new or still queued. The caller sends their
    tasks."""
    if minutes <= 0 or not live_workers:
        return []
    waiting = []
    for collection in collections_due_for_rescan(minutes=minutes):
        job, _new = index_job_start(user=None, collection=collection, live_workers=live_workers)
        if job.status == IndexJob.Status.QUEUED:
            waiting.append(job)
    return waiting


def index_job_cancel(*, collection: Collection) -> int:
    """Ask the collection's running job to stop (after the file it reads); a queued one ends now."""
    IndexJob.objects.filter(collection=collection, status=IndexJob.Status.QUEUED).update(
        status=IndexJob.Status.CANCELLED, ended_at=timezone.now()
    )
    return IndexJob.objects.filter(collection=collection, status=IndexJob.Status.RUNNING).update(cancel_requested=True)
