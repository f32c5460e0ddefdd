"""Pages: first-run setup, chat, conversation delete, and the health check."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db import connection, transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from inference import redis_client, selectors, services, worker
from inference.model_library import scan as model_library_scan
from inference.models import EngineConfig
from inference.services import ClientError


def home(request: HttpRequest) -> HttpResponse:
    return redirect("chat")


@never_cache
def setup(request: HttpRequest) -> HttpResponse:
    """Create the first (admin) account; gone once any account exists."""
    User = get_user_model()
    if User.objects.exists():
        return redirect("login")
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            if User.objects.exists():  # someone else finished setup first
                return redirect("login")
            user = form.save(commit=False)
            user.is_staff = user.is_superuser = True
            user.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}. Your admin account is ready.")
        return redirect("chat")
    return render(request, "setup.html", {"form": form})


@login_required
@require_GET
def chat(request: HttpRequest, conversation_id: int | None = None) -> HttpResponse:
    conversation = None
    history: list[dict] = []
    if conversation_id is not None:
        conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
        if conversation is None:
            raise Http404("No such conversation.")
        history = selectors.conversation_history(conversation=conversation)
    chat_config = {
        "ws_path": "/ws/chat/",
        "conversation": conversation.id if conversation else None,
        "default_max_tokens": settings.HOMEAI_MAX_TOKENS,
        "max_tokens_limit": settings.HOMEAI_MAX_TOKENS_LIMIT,
        "max_chars": settings.HOMEAI_MAX_PROMPT_CHARS,
    }
    context = {
        "conversations": selectors.conversation_list(user=request.user)[:200],
        "conversation": conversation,
        "history": history,
        "chat_config": chat_config,
    }
    return render(request, "dashboard/chat.html", context)


@login_required
@require_POST
def conversation_delete(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise Http404("No such conversation.")
    conversation.delete()
    return redirect("chat")


def _optional_int(raw: str | None, name: str, low: int, high: int) -> int | None:
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ClientError("bad_request", f"{name} must be a whole number.") from None
    if not low <= value <= high:
        raise ClientError("bad_request", f"{name} must be from {low:,} to {high:,}.")
    return value


@staff_member_required
def model_library(request: HttpRequest) -> HttpResponse:
    """The models folder: every GGUF described from its header; choose what the workers run."""
    if request.method == "POST":
        try:
            config = services.engine_config_set(
                model_name=request.POST.get("model", ""),
                context=_optional_int(request.POST.get("context"), "Context", 256, 131072),
                threads=_optional_int(request.POST.get("threads"), "Threads", 0, 512),
                gpu_layers=_optional_int(request.POST.get("gpu_layers"), "GPU layers", -1, 999),
            )
        except ClientError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Workers will load {config.model_name} on the next request.")
        return redirect("model_library")
    config = EngineConfig.current()
    context = {
        "models": model_library_scan(),
        "config": config,
        "active": config.model_name or settings.HOMEAI_MODEL_PATH.name,
        "models_dir": settings.MODELS_DIR,
        "workers": list(worker.live_workers().values()),
        "defaults": {
            "context": settings.HOMEAI_CONTEXT,
            "threads": settings.HOMEAI_THREADS,
            "gpu_layers": settings.HOMEAI_GPU_LAYERS,
        },
    }
    return render(request, "dashboard/models.html", context)


@staff_member_required
@require_POST
def engine_policy(request: HttpRequest) -> HttpResponse:
    """Switch the scheduling policy of every worker (staff only): serial, continuous or chunked."""
    try:
        services.engine_policy_set(policy=request.POST.get("policy", ""))
    except ClientError as exc:
        return JsonResponse({"error": exc.message}, status=400)
    return JsonResponse({"policy": request.POST["policy"]})


@staff_member_required
@require_POST
def engine_demo(request: HttpRequest) -> HttpResponse:
    """Start the shared-machine scenario (staff only: it keeps the engine busy for a while)."""
    try:
        chats = services.demo_start(user=request.user)
    except ClientError as exc:
        return JsonResponse({"error": exc.message}, status=400 if exc.code == "bad_request" else 503)
    return JsonResponse({"generations": [g.id for g in chats]})


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
        workers = worker.live_workers()
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
