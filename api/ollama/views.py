"""Ollama's API (/api/*): chat and generate take the same path as /v1 (a queued Generation, a
worker's engine, the dashboard), and the model endpoints Ollama's clients look for."""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from api.answers import queue_answer, read_body, respond, serving_state
from api.auth import ollama_user
from api.checks import check_model
from api.errors import ApiError
from api.ollama import parsing, wire
from inference import model_library
from inference.dispatch import registry
from inference.gguf_header import read_header
from inference.models import EngineConfig
from infra.dbthreads import kept_db
from infra.pull import store

NEVER = "9999-12-31T23:59:59Z"  # /api/ps's expires_at: a worker keeps its model until it is told otherwise


def _not_allowed(method: str) -> JsonResponse:
    response = wire.error_response(ApiError(405, f"Use {method} for this endpoint."))
    response["Allow"] = method
    return response


async def _answer(request: HttpRequest, parse) -> HttpResponse:
    if request.method != "POST":
        return _not_allowed("POST")

    def accept(user, arrival):
        req, generation = queue_answer(request, lambda data, models: parse(data, models=models), arrival, user)
        shapes = wire.OllamaWire(req)
        if generation is None:
            return JsonResponse(shapes.loaded())
        return user, generation, shapes, req.stream, req.tools

    return await respond(request, accept, errors=wire.error_response, keyless=True)


@csrf_exempt
async def chat(request: HttpRequest) -> HttpResponse:
    return await _answer(request, parsing.parse_chat)


@csrf_exempt
async def generate(request: HttpRequest) -> HttpResponse:
    return await _answer(request, parsing.parse_generate)


# --- models -----------------------------------------------------------------------------------


def _parameter_size(n: int) -> str:
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{round(n / 1e6)}M"


def _described(name: str) -> tuple[model_library.ModelFile | None, dict]:
    """The model file's library entry and Ollama's description of a model (/api/tags' items)."""
    path = settings.MODELS_DIR / name
    info = model_library.inspect(path) if path.is_file() else None
    stat = path.stat() if info else None
    modified = datetime.datetime.fromtimestamp(stat.st_mtime, datetime.UTC) if stat else None
    # Ollama's digest is its blob's sha256; hashing gigabytes per listing is not worth it, so this
    # one names the file's identity (name, size, time) instead: it changes when the file does.
    identity = f"{name}:{stat.st_size}:{stat.st_mtime_ns}" if stat else name
    family = info.architecture if info else ""
    return info, {
        "name": name,
        "model": name,
        "modified_at": modified.isoformat().replace("+00:00", "Z") if modified else None,
        "size": info.size_bytes if info else 0,
        "digest": hashlib.sha256(identity.encode()).hexdigest(),
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": family,
            "families": [family] if family else [],
            "parameter_size": _parameter_size(info.n_params) if info else "",
            "quantization_level": info.quantization if info else "",
        },
    }


def _tags() -> dict:
    return {"models": [_described(name)[1] for name in serving_state().names]}


def _running() -> dict:
    """The models workers hold loaded now (each once), with when each will be unloaded."""
    loaded: dict[str, str] = {}
    workers = registry.live_workers()
    contexts = registry.request_contexts(workers)  # the most one request may fill, per model
    for status in workers.values():
        for engine in registry.engines_of(status):
            if engine.get("loaded") and engine.get("model"):
                until = engine.get("keep_alive_until")
                expires = (
                    datetime.datetime.fromtimestamp(until, datetime.UTC).isoformat().replace("+00:00", "Z")
                    if until
                    else NEVER
                )
                loaded.setdefault(engine["model"], expires)
        for name in status.get("embedders") or []:
            loaded.setdefault(name, NEVER)  # an embedding model stays loaded once it is
    context = EngineConfig.current().context or settings.HOMEAI_CONTEXT
    models = []
    for name, expires in loaded.items():
        _, item = _described(name)
        models.append({**item, "expires_at": expires, "size_vram": 0, "context_length": contexts.get(name, context)})
    return {"models": models}


def _parameters(params: str | None) -> str:
    """Ollama's params layer (JSON) as its /api/show writes it: one `name value` line each."""
    try:
        values = json.loads(params) if params else {}
    except ValueError:
        return ""
    if not isinstance(values, dict):
        return ""
    lines = []
    for key, value in values.items():
        for item in value if isinstance(value, list) else [value]:
            lines.append(f"{key:<30} {json.dumps(item)}")
    return "\n".join(lines)


def _show(request: HttpRequest) -> dict:
    data = read_body(request)
    if "model" not in data and "name" in data:  # older clients name it `name`
        data["model"] = data["name"]
    spellings = serving_state().spellings
    name = spellings[check_model(data, spellings, parsing.LISTING)]
    info, item = _described(name)
    template, model_info = "", {}
    if info is not None and info.usable:
        meta = read_header(info.path).metadata
        template = meta.get("tokenizer.chat_template") or ""
        model_info = {
            key: value
            for key, value in meta.items()
            if isinstance(value, str | int | float | bool) and key != "tokenizer.chat_template"
        }
    # A pulled model's registry layers: its parameters and licence, and its template where the
    # GGUF has none (infra/pull/store.py keeps them beside the file).
    pulled = store.read_sidecar(Path(info.path)) if info is not None else {}
    template = template or pulled.get("template", "")
    return {
        "modelfile": f"FROM {name}\n",
        "parameters": _parameters(pulled.get("params")),
        "license": pulled.get("license", ""),
        "template": template if isinstance(template, str) else "",
        "details": item["details"],
        "model_info": model_info,
        # Tools work with any chat model here: a grammar makes the call parse (engine/grammar.py).
        "capabilities": ["embedding"] if info and info.kind == model_library.EMBEDDING else ["completion", "tools"],
        "modified_at": item["modified_at"],
    }


async def _read(request: HttpRequest, method: str, build) -> HttpResponse:
    if request.method != method:
        return _not_allowed(method)
    try:
        await ollama_user(request)
        return JsonResponse(await kept_db(build)())
    except ApiError as exc:
        return wire.error_response(exc)


@csrf_exempt
@never_cache
async def tags(request: HttpRequest) -> HttpResponse:
    return await _read(request, "GET", _tags)


@csrf_exempt
@never_cache
async def ps(request: HttpRequest) -> HttpResponse:
    return await _read(request, "GET", _running)


@csrf_exempt
@never_cache
async def show(request: HttpRequest) -> HttpResponse:
    return await _read(request, "POST", lambda: _show(request))


@never_cache
def version(request: HttpRequest) -> HttpResponse:
    """Open to all, as Ollama's is: clients ask it before anything else to tell a server is there."""
    return JsonResponse({"version": parsing.VERSION})
