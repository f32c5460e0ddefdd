"""Indexing as the pages, the API, the chat's files and the watchdog start and stop it: the job
(documents.services), everyone watching the collection's page told (before the task is sent, so
the worker's news comes after it), and the task sent to a worker holding the embedding model.
A running job's worker tells the watchers the rest (the index task)."""

from __future__ import annotations

from django.conf import settings

from documents import selectors as document_selectors
from documents import services as document_services
from documents.models import Collection, IndexJob
from inference import broadcast, events
from inference.catalog import catalog
from inference.dispatch import registry


def embedding_model() -> str:
    """The name the workers' heartbeats give the embedding model (which holds it: catalog)."""
    return settings.BUNDLED_EMBEDDING_MODEL_PATH.name


def embedding_holders() -> set[str]:
    """The living workers that hold the embedding model (one reading of the heartbeats)."""
    return set(catalog().holders.get(embedding_model(), []))


def tell_watchers(job: IndexJob) -> None:
    """The job as it stands to everyone watching its collection's page."""
    broadcast.publish_collection(job.collection_id, [events.index_progress(document_selectors.job_progress(job))])


def send(job: IndexJob) -> None:
    """A queued job's task to the workers (sent again is harmless: the claim drops a duplicate)."""
    if job.status == IndexJob.Status.QUEUED:
        registry.send_index(job.id, embedding_model())


def index_start(*, user, collection: Collection, holders: set[str]) -> tuple[IndexJob, bool]:
    """The collection's job: the one under way (False) or a new one (True), told and sent
    (documents.services.index_job_start says which; holders: the live workers with the model)."""
    job, new = document_services.index_job_start(user=user, collection=collection, live_workers=holders)
    if new:
        tell_watchers(job)
    send(job)
    return job, new


def index_cancel(*, collection: Collection) -> None:
    """A running job stops after the file it reads (its worker says so); a queued one ends now,
    and its watchers are told here."""
    document_services.index_job_cancel(collection=collection)
    job = document_selectors.latest_job(collection)
    if job is not None and job.status not in IndexJob.ACTIVE:
        tell_watchers(job)
