"""/healthz: database, Redis, workers and model state, for container health checks."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from inference import redis_client
from inference.worker import registry


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Database, Redis, workers and model state, for Docker health checks (no login, no user data)."""
    checks: dict = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = {"ok": True}
    except Exception as exc:
        checks["database"] = {"ok": False, "error": str(exc)}
    try:
        redis_client.client().ping()
        checks["redis"] = {"ok": True}
        workers = registry.live_workers()
    except Exception as exc:
        checks["redis"] = {"ok": False, "error": str(exc)}
        workers = {}
    checks["workers"] = {
        "ok": bool(workers),
        "count": len(workers),
        "items": [
            {k: w.get(k) for k in ("worker", "model", "loaded", "running", "waiting", "policy")}
            for w in workers.values()
        ],
    }
    checks["model"] = {
        "configured": settings.HOMEAI_MODEL_PATH.name,
        "present": settings.HOMEAI_MODEL_PATH.is_file(),
        "loaded": any(w.get("loaded") for w in workers.values()),
    }
    # The web container is healthy when it can serve: database and Redis. Workers are reported.
    ok = checks["database"]["ok"] and checks["redis"]["ok"]
    return JsonResponse({"status": "ok" if ok else "error", **checks}, status=200 if ok else 503)
