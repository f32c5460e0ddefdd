"""Ollama's model management (/api/pull, /api/delete, /api/copy), for staff's API keys.

A pull runs on a worker (dispatch/pulls.py), into its models folder; this request only starts
it (or joins one of the same name) and streams its status lines as Ollama does: "pulling
manifest", each layer's digest/total/completed, "verifying sha256 digest", "writing manifest",
"success". A client that leaves does not stop the pull (others may watch it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from api.answers import read_body, serving_state
from api.auth import authenticate
from api.errors import ApiError
from api.ollama import wire
from api.relay import PullLines
from inference import model_library
from inference.dispatch import pulls, registry
from infra.dbthreads import kept_db
from infra.pull import store
from infra.pull.errors import PullError
from infra.pull.names import OllamaName, parse

log = logging.getLogger(__name__)

IDLE_S = 10.0  # with no line for this long, the pull's state in Redis is read instead


def _staff(request: HttpRequest):
    user = authenticate(request)
    if not user.is_staff:
        raise ApiError(
            403,
            "Pulling, copying and deleting models needs a staff member's API key (they use the server's disk "
            "and bandwidth): ask whoever runs this HomeAI.",
            code="staff_only",
        )
    return user


def _name(data: dict, *keys: str) -> str:
    for key in keys:
        if isinstance(data.get(key), str) and data[key].strip():
            return data[key].strip()
    raise ApiError(400, f"Name the model in the request's {keys[0]!r} field.", code="invalid_value", param=keys[0])


def _parsed(text: str):
    try:
        return parse(text)
    except PullError as exc:
        raise ApiError(exc.status, exc.message, code=exc.code) from None


def _begin(request: HttpRequest) -> tuple[dict, bool, bool]:
    """Check the key and the body, start the pull (or join it): (state, started, stream)."""
    _staff(request)
    data = read_body(request)
    name = _parsed(_name(data, "model", "name")).short
    state, started = pulls.start(name)
    if state is None:
        raise ApiError(
            429,
            f"{settings.HOMEAI_MAX_PULLS} model pull(s) are running already (HOMEAI_MAX_PULLS): "
            "wait for one to end, then pull again.",
            code="too_many_pulls",
        )
    return state, started, data.get("stream", True) is not False


async def _lines(events: PullLines, state: dict, started: bool):
    """The pull's status lines to its end: where it stands first (for one joined), then as they come."""
    if not started:
        for line in pulls.lines_of(state):
            yield line
    while True:
        frame = await events.next(IDLE_S)
        if frame is None:  # pub/sub is at most once: the state says whether it ended meanwhile
            now = await asyncio.to_thread(pulls.read, state["id"])
            if now is not None and now.get("end"):
                yield now["end"]
                return
            if now is None or not await asyncio.to_thread(pulls.alive, now):
                # Its worker died: this watcher starts it again (resuming from its partial file).
                state, restarted = await asyncio.to_thread(pulls.start, state["name"])
                if state is None:
                    yield {
                        "error": "The pull stopped: its worker went away. Pull again to resume it.",
                        "http_status": 500,
                    }
                    return
                if restarted:
                    await asyncio.to_thread(pulls.send, state)
            continue
        for line in frame:
            yield line
            if pulls.is_end(line):
                return


def _shown(line: dict) -> dict:
    return {k: v for k, v in line.items() if k not in ("code", "http_status")}


async def _streamed(first: list[dict], rest, events: PullLines):
    try:
        for line in first:
            yield wire.line(_shown(line))
        async for line in rest:
            yield wire.line(_shown(line))
    finally:
        await events.close()


def _refusal(line: dict) -> JsonResponse:
    return wire.error_response(ApiError(int(line.get("http_status") or 500), line["error"]))


@csrf_exempt
async def pull(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return wire.error_response(ApiError(405, "Use POST for this endpoint."))
    events = PullLines("")
    try:
        state, started, stream = await kept_db(_begin)(request)
        events = PullLines(state["id"])
        await events.open()  # before the task is sent: no line is missed
        if started:
            await asyncio.to_thread(pulls.send, state)
    except ApiError as exc:
        await events.close()
        return wire.error_response(exc)
    except redis.RedisError:
        log.warning("a pull request met Redis down", exc_info=True)
        await events.close()
        return wire.error_response(
            ApiError(503, "The message queue (Redis) is unreachable; retry in a moment.", code="unavailable")
        )
    lines = _lines(events, state, started)
    # Until the first layer's progress, an error (an unknown name, a registry that does not
    # answer) is answered with its own status, as Ollama's does for a manifest it cannot get.
    first: list[dict] = []
    try:
        async for line in lines:
            first.append(line)
            ended = pulls.is_end(line)
            if ended and (not stream or not any("digest" in seen for seen in first)):
                await lines.aclose()
                await events.close()
                return _refusal(line) if "error" in line else JsonResponse({"status": "success"})
            if stream and ("digest" in line or ended):
                break
    except BaseException:
        await events.close()
        raise
    response = StreamingHttpResponse(_streamed(first, lines, events), content_type="application/x-ndjson")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _file_of(spelling: str) -> str:
    name = serving_state().resolve(spelling)
    if name is None or not (settings.MODELS_DIR / name).is_file():
        raise ApiError(404, f"model '{spelling}' not found", code="model_not_found")
    return name


def _delete(request: HttpRequest) -> None:
    _staff(request)
    name = _file_of(_name(read_body(request), "model", "name"))
    path = settings.MODELS_DIR / name
    if path in model_library.bundled_models():
        raise ApiError(
            400,
            f"{name} is one of HomeAI's bundled models: a worker writes it again when it starts; keep it.",
            code="bundled_model",
        )
    store.remove(path)
    registry.forget_model(name)


def _copy(request: HttpRequest) -> None:
    _staff(request)
    data = read_body(request)
    source = _file_of(_name(data, "source"))
    target = _parsed(_name(data, "destination"))
    if not isinstance(target, OllamaName):
        raise ApiError(400, "Copy to a name such as mymodel:latest, not a Hugging Face name.", code="bad_name")
    path = settings.MODELS_DIR / target.file_name
    if path.name == source:
        return
    tmp = path.with_name(path.name + ".copy")
    tmp.unlink(missing_ok=True)
    try:
        os.link(settings.MODELS_DIR / source, tmp)  # the same bytes twice cost no disk
    except OSError:
        shutil.copyfile(settings.MODELS_DIR / source, tmp)
    sidecar = {**store.read_sidecar(settings.MODELS_DIR / source), "name": target.short, "copied_from": source}
    store.install(settings.MODELS_DIR, tmp, path.name, sidecar)


async def _managed(request: HttpRequest, method: str, action) -> HttpResponse:
    if request.method != method:
        response = wire.error_response(ApiError(405, f"Use {method} for this endpoint."))
        response["Allow"] = method
        return response
    try:
        await kept_db(action)(request)
    except ApiError as exc:
        return wire.error_response(exc)
    except redis.RedisError:
        return wire.error_response(ApiError(503, "The message queue (Redis) is unreachable; retry in a moment."))
    return HttpResponse(status=200)


@csrf_exempt
async def delete(request: HttpRequest) -> HttpResponse:
    return await _managed(request, "DELETE", _delete)


@csrf_exempt
async def copy(request: HttpRequest) -> HttpResponse:
    return await _managed(request, "POST", _copy)
