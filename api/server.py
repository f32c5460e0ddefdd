"""The server's own endpoints: health (/healthz, /healthz/web), llama.cpp's /props and /slots, and
Prometheus' /metrics.

Health: /healthz for the whole service, /healthz/web for this web process alone.

- `/healthz` is 200 only when an answer could start now: the database and Redis answer and at
  least one inference worker has a live heartbeat. Otherwise 503, with `reasons` a person can act
  on ("no inference worker is running ...").
- `/healthz/web` is 200 when this web process can serve pages and sockets (database and Redis).
  The web container's health check uses it, so a stopped worker does not mark the web unhealthy.

Neither needs a login. Everyone gets the verdict, the reasons and yes/no per check; exception
text, worker names and their queues are shown to staff only (they name hosts, paths, versions).
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from api.answers import keyed_read, serving_state
from api.auth import metrics_allowed
from inference import model_library, redis_client
from inference.catalog import default_model
from inference.dispatch import registry
from inference.metrics import exposition
from inference.models import EngineConfig

WORKER_FIELDS = ("worker", "host", "model", "loaded", "running", "waiting", "policy")


def _check_database() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


def _check_redis() -> tuple[bool, str, dict]:
    try:
        redis_client.client().ping()
        return True, "", registry.live_workers()
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}", {}


def _report(request: HttpRequest, *, need_worker: bool) -> JsonResponse:
    ok, body = _verdict(request, need_worker=need_worker)
    return JsonResponse(body, status=200 if ok else 503)


def _verdict(request: HttpRequest, *, need_worker: bool) -> tuple[bool, dict]:
    staff = bool(getattr(request, "user", None) and request.user.is_authenticated and request.user.is_staff)
    db_ok, db_error = _check_database()
    redis_ok, redis_error, workers = _check_redis()
    default = default_model() if db_ok else settings.HOMEAI_MODEL_PATH.name
    reasons = []
    if not db_ok:
        reasons.append("The database does not answer: nothing can be read or saved.")
    if not redis_ok:
        reasons.append("Redis does not answer: answers cannot be queued or streamed.")
    elif not workers and need_worker:
        reasons.append(
            "No inference worker is running (none has reported in the last "
            f"{settings.HOMEAI_WORKER_TTL:g} s): answers cannot start. Start the worker."
        )
    checks: dict = {
        "database": {"ok": db_ok},
        "redis": {"ok": redis_ok},
        "workers": {"ok": bool(workers), "count": len(workers)},
        "model": {
            "configured": default,
            "present": model_library.path_of(default).is_file() or default in registry.held_models(workers),
            "loaded": any(
                e.get("loaded") and e.get("model") == default for w in workers.values() for e in registry.engines_of(w)
            ),
        },
    }
    if staff:
        if db_error:
            checks["database"]["error"] = db_error
        if redis_error:
            checks["redis"]["error"] = redis_error
        checks["workers"]["items"] = [
            {
                **{k: w.get(k) for k in WORKER_FIELDS},
                "models": [m.get("name") for m in w.get("models") or []],
                "loaded_models": [e.get("model") for e in registry.engines_of(w) if e.get("loaded")],
            }
            for w in workers.values()
        ]
    ok = db_ok and redis_ok and (bool(workers) or not need_worker)
    return ok, {"status": "ok" if ok else "error", "reasons": reasons, **checks}


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The service: 200 when an answer could start now (database, Redis, a live worker)."""
    return _report(request, need_worker=True)


@require_GET
@never_cache
def health(request: HttpRequest) -> JsonResponse:
    """/health as llama.cpp's server answers it, for clients and proxies that look there:
    {"status": "ok"}, or 503 with llama-server's error object and our reasons."""
    ok, body = _verdict(request, need_worker=True)
    if ok:
        return JsonResponse({"status": "ok"})
    error = {"code": 503, "message": " ".join(body["reasons"]), "type": "unavailable_error"}
    return JsonResponse({"error": error}, status=503)


@require_GET
@never_cache
def healthz_web(request: HttpRequest) -> JsonResponse:
    """This web process: 200 when it can serve (database and Redis); workers are reported only."""
    return _report(request, need_worker=False)


def _props() -> dict:
    """llama-server's /props fields that mean something here."""
    state = serving_state()
    contexts = registry.request_contexts(registry.live_workers())
    return {
        "default_generation_settings": {
            "n_ctx": contexts.get(state.default) or _slot_share(),
            "params": {
                "n_predict": settings.HOMEAI_MAX_TOKENS,
                "temperature": settings.HOMEAI_TEMPERATURE,
                "seed": settings.HOMEAI_SEED,
            },
        },
        "total_slots": sum(_worker_slots(status) for status in registry.live_workers().values()),
        "model_path": state.default,
        "modalities": {"vision": False, "audio": False},
        "build_info": "HomeAI",
    }


def _worker_slots(status: dict) -> int:
    """A worker's slots, as its heartbeat says (sized to its model); before its engine is built,
    its task threads, the most it will hold."""
    return status.get("slots") or settings.CELERY_WORKER_CONCURRENCY


def _slot_share() -> int:
    """A slot's share of a KV cache (HOMEAI_CONTEXT, or the engine settings' context)."""
    return EngineConfig.current().context or settings.HOMEAI_CONTEXT


def _slots() -> list[dict]:
    """One entry per engine slot of every live worker, busy ones first (a worker reports how
    many answers it runs, not which slot each takes). n_ctx is what one request in it may fill:
    slots share one cache, and a long request borrows the cells the others leave free."""
    workers = registry.live_workers()
    contexts = registry.request_contexts(workers)
    out = []
    for status in workers.values():
        running = status.get("running") or 0
        n_ctx = contexts.get(status.get("model")) or _slot_share()
        for i in range(_worker_slots(status)):
            out.append({"id": len(out), "n_ctx": n_ctx, "is_processing": i < running, "model": status.get("model")})
    return out


@csrf_exempt
@never_cache
async def props(request: HttpRequest) -> HttpResponse:
    return await keyed_read(request, _props)


@csrf_exempt
@never_cache
async def slots(request: HttpRequest) -> HttpResponse:
    return await keyed_read(request, _slots)


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus exposition, built from Redis (so right with any number of web and worker
    processes): for staff, or Prometheus with the token (metrics_allowed)."""
    if not metrics_allowed(request, settings.HOMEAI_METRICS_TOKEN):
        response = HttpResponse(
            "Sign in as staff, or send the token set in HOMEAI_METRICS_TOKEN as a bearer token "
            "(Prometheus: authorization: {credentials: ...}).\n",
            status=401,
        )
        response["WWW-Authenticate"] = 'Bearer realm="HomeAI metrics"'
        return response
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)
