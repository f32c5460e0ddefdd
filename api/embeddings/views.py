"""Embeddings: /v1/embeddings, /api/embed and /api/embeddings.

A request is checked and recorded (an EmbeddingBatch) in one trip to a thread, its texts go to
a worker holding the embedding model (a Celery task on the model's queue), and the view waits
for the worker's reply on a Redis list of its own, a short blocking read at a time in a thread,
so the event loop is never blocked and a client that goes away ends the wait.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from api import checks, errors
from api.answers import patient, read_body, serving_state
from api.auth import authenticate
from api.checks import check_model
from api.embeddings import parsing, wire
from api.embeddings.parsing import EmbeddingRequest
from api.errors import ApiError
from api.ollama import parsing as ollama_parsing
from api.ollama import wire as ollama_wire
from inference.catalog import Catalog
from inference.dispatch import registry
from inference.services import embeddings as embedding_service
from infra.arrival import arrived_ns
from infra.dbthreads import kept_db
from infra.errors import ClientError

WAIT_S = 300  # how long a request waits for a worker's vectors before its 504
READ_S = 2  # one blocking read of the reply (below the Redis client's 5 s socket timeout)


@dataclass(frozen=True)
class Embedded:
    req: EmbeddingRequest
    model: str  # as the response names it: the client's spelling, or the default's alias
    vectors: list[str]  # little-endian float32, base64, one per input
    prompt_tokens: int
    total_ms: float
    load_ms: float


def embedding_model(state: Catalog, spelling: str | None, listing: str) -> tuple[str, str]:
    """The embedding model's file and the name a response gives it: the one asked for, or the
    bundled one. A chat model is refused by name (this server embeds with embedding models only)."""
    if spelling is None:
        name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
        return name, state.alias(name) or name
    name = state.spellings[check_model({"model": spelling}, state.spellings, listing)]
    if not state.embeds(name):
        raise ApiError(
            400,
            f"{spelling} is a chat model, which gives text, not embeddings; name an embedding model "
            f"such as {state.alias(settings.BUNDLED_EMBEDDING_MODEL_PATH.name) or 'all-minilm'}.",
            code="not_an_embedding_model",
            param="model",
        )
    return name, spelling


def _accept(request: HttpRequest, parse, listing: str, keyless: bool):
    """Key, body, model, row and task, in the order of the other endpoints: a bad key is a 401
    whatever the body, a bad body a 400, an unknown model a 404, no worker a 503."""
    user = authenticate(request, keyless=keyless)
    req = parse(read_body(request))
    state = serving_state()
    name, shown = embedding_model(state, req.model, listing)
    parsing.check_dimensions(req, name, state.described.get(name, {}).get("embedding_length") or 0)
    if not state.held(name):
        raise ApiError(
            503, f"No worker that holds {name} is running right now; retry once one has started.", code="no_worker"
        )
    try:
        batch = embedding_service.embedding_batch_create(
            user=user,
            client=checks.client_name(request.headers),
            model_name=name,
            inputs=len(req.texts),
            t_arrive_ns=arrived_ns(request),
        )
    except ClientError as exc:
        raise errors.from_client_error(exc) from None
    registry.send_embedding(batch.id, name, req.texts, req.truncate, expires_s=WAIT_S)
    return req, shown, batch


async def _reply(batch_id: int) -> dict:
    """The worker's reply; the batch interrupted when none comes in time or the client leaves."""
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            reply = await asyncio.to_thread(registry.take_embedding_reply, batch_id, READ_S)
            if reply is not None:
                return reply
    except BaseException:
        await kept_db(embedding_service.embedding_batch_interrupt)(batch_id=batch_id)
        raise
    await kept_db(embedding_service.embedding_batch_interrupt)(batch_id=batch_id)
    raise ApiError(504, f"No worker embedded these inputs within {WAIT_S} s; retry later.", code="timeout")


async def embed(request: HttpRequest, parse, *, listing: str, keyless: bool) -> Embedded:
    """One embeddings request, from its body to the worker's vectors; ApiError when refused."""
    if request.method != "POST":
        raise ApiError(405, "Use POST for this endpoint.", code="method_not_allowed")
    try:
        req, shown, batch = await patient(lambda: kept_db(_accept)(request, parse, listing, keyless))
        reply = await _reply(batch.id)
    except redis.RedisError:
        down = "The message queue (Redis) is unreachable; retry in a moment."
        raise ApiError(503, down, code="unavailable") from None
    if reply["status"] != 200:
        raise ApiError(reply["status"], reply["message"], code=reply["code"], param="input")
    total_ms = (time.time_ns() - batch.t_arrive_ns) / 1e6
    await kept_db(embedding_service.embedding_batch_answered)(batch_id=batch.id, e2e_ms=total_ms)
    return Embedded(
        req=req,
        model=shown,
        vectors=reply["vectors"],
        prompt_tokens=reply["prompt_tokens"],
        total_ms=total_ms,
        load_ms=reply["load_ms"],
    )


def _with_allow(response: HttpResponse, exc: ApiError) -> HttpResponse:
    if exc.status == 405:
        response["Allow"] = "POST"
    return response


@csrf_exempt
async def openai_embeddings(request: HttpRequest) -> HttpResponse:
    try:
        done = await embed(request, parsing.parse_openai, listing="GET /v1/models", keyless=False)
    except ApiError as exc:
        return _with_allow(exc.response(), exc)
    return JsonResponse(wire.openai_body(done.req, done.model, done.vectors, done.prompt_tokens))


async def _ollama(request: HttpRequest, parse, shape) -> HttpResponse:
    try:
        done = await embed(request, parse, listing=ollama_parsing.LISTING, keyless=True)
    except ApiError as exc:
        return _with_allow(ollama_wire.error_response(exc), exc)
    return JsonResponse(shape(done))


@csrf_exempt
async def ollama_embed(request: HttpRequest) -> HttpResponse:
    return await _ollama(
        request,
        parsing.parse_ollama_embed,
        lambda done: wire.ollama_embed_body(
            done.model, done.vectors, done.prompt_tokens, total_ms=done.total_ms, load_ms=done.load_ms
        ),
    )


@csrf_exempt
async def ollama_embeddings(request: HttpRequest) -> HttpResponse:
    """Ollama's first embeddings endpoint (one prompt), which its clients' embeddings() still call."""
    return await _ollama(
        request, parsing.parse_ollama_embeddings, lambda done: {"embedding": wire.floats(done.vectors[0])}
    )
