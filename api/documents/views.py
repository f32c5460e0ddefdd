"""The household's documents for API clients (an API key, as every /v1 endpoint):

GET  /v1/collections                                the collections the key's person may read
POST /v1/collections/{id}/search                    {"query", "limit"} -> ranked chunks
GET  /v1/collections/{id}/documents/{doc}/file      a file of the collection
GET  /v1/collections/{id}/index                     the latest indexing job's progress
POST /v1/collections/{id}/index                     start indexing (the owner; staff for shared ones)
DELETE /v1/collections/{id}/index                   cancel it

A collection the person may not read is a 404, whatever the endpoint (documents.selectors).
The query's vector comes from a worker holding the embedding model, as /v1/embeddings gets it;
with none running the search is full-text alone, and says so ("mode").
"""

from __future__ import annotations

import asyncio
import base64
import time

import numpy as np
import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from api import checks, errors
from api.answers import method_not_allowed, read_body, serving_state
from api.auth import api_user, authenticate
from api.errors import ApiError, bad_request
from documents import folders, selectors
from inference.dispatch import registry
from inference.services import embeddings as embedding_service
from inference.services import indexing
from infra.arrival import arrived_ns
from infra.dbthreads import kept_db
from infra.errors import ClientError

WAIT_S = 60  # how long a search waits for its query's vector before answering from full-text alone
READ_S = 2
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 50


def _api_error(exc: ClientError) -> ApiError:
    return errors.from_client_error(exc)


@csrf_exempt
@never_cache
async def collections(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return method_not_allowed("GET")
    try:
        user = await api_user(request)
    except ApiError as exc:
        return exc.response()
    return JsonResponse({"object": "list", "data": await kept_db(selectors.collections_listing)(user)})


def _parse_search(body: dict) -> tuple[str, int]:
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise bad_request(gettext("Send the question to search for as a non-empty string in query."), "query")
    if len(query) > MAX_QUERY_CHARS:
        raise bad_request(
            gettext("The query is %(n)s characters; send at most %(max)s.")
            % {"n": f"{len(query):,}", "max": f"{MAX_QUERY_CHARS:,}"},
            "query",
        )
    limit = body.get("limit", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise bad_request(gettext("limit is a whole number from 1 to %(max)s.") % {"max": MAX_LIMIT}, "limit")
    return query.strip(), limit


def _accept_search(request: HttpRequest, collection_id: int):
    """Key, body, collection (404 unless readable), and the query's embedding batch sent to a
    worker (None when no worker holds the embedding model)."""
    user = authenticate(request)
    query, limit = _parse_search(read_body(request))
    try:
        selectors.collection_for_reader(user, collection_id)
    except ClientError as exc:
        raise _api_error(exc) from None
    name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    if not serving_state().held(name):
        return user, query, limit, None
    try:
        batch = embedding_service.embedding_batch_create(
            user=user,
            client=checks.client_name(request.headers),
            model_name=name,
            inputs=1,
            t_arrive_ns=arrived_ns(request),
        )
    except ClientError as exc:
        raise _api_error(exc) from None
    registry.send_embedding(batch.id, name, [query], True, expires_s=WAIT_S)
    return user, query, limit, batch


async def _query_vector(batch) -> np.ndarray | None:
    """The query's unit vector from the worker, or None when none came in time."""
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            reply = await asyncio.to_thread(registry.take_embedding_reply, batch.id, READ_S)
            if reply is not None:
                if reply["status"] != 200:
                    return None
                e2e_ms = (time.time_ns() - batch.t_arrive_ns) / 1e6
                await kept_db(embedding_service.embedding_batch_answered)(batch_id=batch.id, e2e_ms=e2e_ms)
                return np.frombuffer(base64.b64decode(reply["vectors"][0]), dtype="<f4")
    except BaseException:
        await kept_db(embedding_service.embedding_batch_interrupt)(batch_id=batch.id)
        raise
    await kept_db(embedding_service.embedding_batch_interrupt)(batch_id=batch.id)
    return None


def _hit(hit: selectors.Hit, collection_id: int) -> dict:
    chunk = hit.chunk
    return {
        "chunk": chunk.id,
        "document": chunk.document_id,
        "path": chunk.document.path,
        "source": chunk.document.source,
        "page": chunk.page,
        "section": chunk.section,
        "position": chunk.position,
        "text": chunk.text,
        "score": round(hit.score, 6),
        "fulltext_rank": hit.fulltext_rank,
        "vector_rank": hit.vector_rank,
        "file": f"/v1/collections/{collection_id}/documents/{chunk.document_id}/file",
    }


@csrf_exempt
@never_cache
async def search(request: HttpRequest, collection_id: int) -> HttpResponse:
    if request.method != "POST":
        return method_not_allowed("POST")
    try:
        user, query, limit, batch = await kept_db(_accept_search)(request, collection_id)
        vector = None if batch is None else await _query_vector(batch)
    except ApiError as exc:
        return exc.response()
    except redis.RedisError:
        return ApiError(
            503, "The message queue (Redis) is unreachable; retry in a moment.", code="unavailable"
        ).response()

    def find() -> list[dict]:
        hits = selectors.search(user, collection_id, query, vector, limit=limit)
        return [_hit(h, collection_id) for h in hits]

    try:
        data = await kept_db(find)()
    except ClientError as exc:  # the collection was unshared meanwhile
        return _api_error(exc).response()
    return JsonResponse({"object": "list", "mode": "fulltext" if vector is None else "hybrid", "data": data})


@csrf_exempt
@never_cache
def document_file(request: HttpRequest, collection_id: int, document_id: int) -> HttpResponse:
    """The file itself, to those who may read its collection (a cited source's link)."""
    if request.method != "GET":
        return method_not_allowed("GET")
    try:
        user = authenticate(request)
        document = selectors.document_for_reader(user, collection_id, document_id)
        path = folders.file_path(document)
        handle = path.open("rb")
    except ApiError as exc:
        return exc.response()
    except ClientError as exc:
        return _api_error(exc).response()
    except OSError:
        return ApiError(404, gettext("The file is no longer where it was indexed."), code="not_found").response()
    return folders.file_response(handle, path)


@csrf_exempt
@never_cache
async def index(request: HttpRequest, collection_id: int) -> HttpResponse:
    """GET: the latest job's progress; POST: start one (or the one under way); DELETE: cancel."""
    if request.method not in ("GET", "POST", "DELETE"):
        return method_not_allowed("GET, POST, DELETE")
    try:
        user = await api_user(request)

        def act() -> tuple[dict, int]:
            if request.method == "GET":
                return selectors.index_state(selectors.collection_for_reader(user, collection_id)), 200
            collection = selectors.collection_for_owner(user, collection_id)
            if request.method == "DELETE":
                indexing.index_cancel(collection=collection)
                return selectors.index_state(collection), 200
            holders = indexing.embedding_holders()
            job, new = indexing.index_start(user=user, collection=collection, holders=holders)
            return selectors.job_progress(job), 202 if new else 200

        body, status = await kept_db(act)()
    except ApiError as exc:
        return exc.response()
    except ClientError as exc:
        return _api_error(exc).response()
    return JsonResponse(body, status=status)
