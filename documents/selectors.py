"""Reads, with the one access check: a person reads a collection they own, one shared with the
household, or one shared with them by name. Everything else reads as missing (404, not 403:
a collection one may not read is not admitted to exist)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, Q, QuerySet
from django.utils.translation import gettext

from documents import fulltext, vectors
from documents.models import Chunk, Collection, Document, IndexJob
from infra.errors import ClientError

RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.): 1 / (60 + rank) from each list
CANDIDATES = 50  # how many each search hands to the fusion


def readable_collections(user) -> QuerySet[Collection]:
    if user is None or not user.is_authenticated or not user.is_active:
        return Collection.objects.none()
    return Collection.objects.filter(
        Q(owner=user) | Q(visibility=Collection.Visibility.HOUSEHOLD) | Q(visibility="people", readers=user)
    ).distinct()


def _missing() -> ClientError:
    return ClientError("not_found", gettext("No such collection, or it is not shared with you."))


def collection_for_reader(user, collection_id: int) -> Collection:
    """The collection, if this person may read it; ClientError not_found otherwise."""
    found = readable_collections(user).filter(id=collection_id).first()
    if found is None:
        raise _missing()
    return found


def collection_for_owner(user, collection_id: int) -> Collection:
    """The collection, if this person may change it (its owner, or staff for one shared with the
    household); ClientError not_found otherwise, and for one they may only read."""
    collection = collection_for_reader(user, collection_id)
    if collection.owner_id != user.id and not (user.is_staff and collection.visibility == "household"):
        raise _missing()
    return collection


def document_for_reader(user, collection_id: int, document_id: int) -> Document:
    collection = collection_for_reader(user, collection_id)
    document = Document.objects.filter(collection=collection, id=document_id).select_related("collection").first()
    if document is None:
        raise ClientError("not_found", gettext("No such file in this collection."))
    return document


def collections_listing(user) -> list[dict]:
    """The person's readable collections with their sizes, for the API and the page."""
    rows = readable_collections(user).select_related("owner").annotate(n_documents=Count("documents", distinct=True))
    return [
        {
            "id": c.id,
            "name": c.name,
            "owner": c.owner.username,
            "visibility": c.visibility,
            "folder": c.folder,
            "documents": c.n_documents,
            "chunks": Chunk.objects.filter(collection=c).count(),
            "created": int(c.created_at.timestamp()),
        }
        for c in rows
    ]


def latest_job(collection: Collection) -> IndexJob | None:
    return collection.jobs.order_by("-id").first()


def job_progress(job: IndexJob) -> dict:
    """What watchers see of a job (the API's and the page's shape too)."""
    return {
        "job": job.id,
        "collection": job.collection_id,
        "status": job.status,
        "files_total": job.files_total,
        "files_done": job.files_done,
        "bytes_total": job.bytes_total,
        "bytes_done": job.bytes_done,
        "files_embedded": job.files_embedded,
        "files_removed": job.files_removed,
        "chunks": job.chunks,
        "current_file": job.current_file,
        "errors": job.errors,
        "message": job.message,
        "started": job.started_at.timestamp() if job.started_at else None,
        "ended": job.ended_at.timestamp() if job.ended_at else None,
    }


def index_state(collection: Collection) -> dict:
    """The collection's latest job's progress, or status "never" before its first."""
    job = latest_job(collection)
    return job_progress(job) if job else {"job": None, "status": "never"}


_NEIGHBOURS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="homeai-vectors")


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float  # the fused score: the sum of 1 / (RRF_K + rank) over the lists it is in
    fulltext_rank: int | None  # 1-based, or None when full-text did not find it
    vector_rank: int | None


def search(user, collection_id: int, query: str, query_vector: np.ndarray | None, *, limit: int = 5) -> list[Hit]:
    """The chunks of one readable collection that best answer the query: full-text and vector
    similarity, fused by reciprocal rank; full-text alone when no vector is given (no worker)."""
    collection = collection_for_reader(user, collection_id)
    return search_collections([collection], query, query_vector, limit=limit)


def search_collections(
    collections: list[Collection], query: str, query_vector: np.ndarray | None, *, limit: int = 5
) -> list[Hit]:
    """search over several collections at once (the caller has checked that their reader may
    read each: readable_collections)."""
    ids = [c.id for c in collections]
    if query_vector is None:
        return fuse(fulltext.search(query, ids, CANDIDATES), [], ids, limit)
    held = vectors.in_database(collections)
    if held:  # both searches are the database's, one after the other
        text_ids = fulltext.search(query, ids, CANDIDATES)
        vector_ids = [i for i, _ in vectors.search(query_vector, collections, CANDIDATES, held=held)]
        return fuse(text_ids, vector_ids, ids, limit)
    # The vectors' dot products run in a thread of their own while the database ranks the
    # words (both let go of the GIL); their matrices are read here, in this thread's connection.
    neighbours = _NEIGHBOURS.submit(vectors.nearest, query_vector, vectors.matrices(collections), CANDIDATES)
    text_ids = fulltext.search(query, ids, CANDIDATES)
    return fuse(text_ids, [i for i, _ in neighbours.result()], ids, limit)


def fuse(text_ids: list[int], vector_ids: list[int], collection_ids: list[int], limit: int) -> list[Hit]:
    """Reciprocal rank fusion of two best-first lists of chunk ids, read back only from these
    collections (a second guard: both lists were already drawn from them)."""
    scores: dict[int, float] = {}
    text_rank = {cid: rank for rank, cid in enumerate(text_ids, 1)}
    vector_rank = {cid: rank for rank, cid in enumerate(vector_ids, 1)}
    for ranks in (text_rank, vector_rank):
        for cid, rank in ranks.items():
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank)
    best = sorted(scores, key=lambda cid: (-scores[cid], cid))[:limit]
    chunks = Chunk.objects.filter(id__in=best, collection_id__in=collection_ids).select_related("document")
    by_id = {c.id: c for c in chunks}
    return [Hit(by_id[cid], scores[cid], text_rank.get(cid), vector_rank.get(cid)) for cid in best if cid in by_id]
