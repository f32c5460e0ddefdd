"""OpenAI-compatible endpoints: /v1/models, /v1/models/<id>, /v1/chat/completions and
/v1/completions (the answer's path: api/answers.py).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from api.answers import keyed_read, method_not_allowed, queue_answer, respond, serving_state
from api.errors import ApiError
from api.openai import parsing, wire


def _model_object(name: str) -> dict:
    path = settings.MODELS_DIR / name
    created = int(path.stat().st_mtime) if path.is_file() else 0
    return {"id": name, "object": "model", "created": created, "owned_by": "homeai"}


@csrf_exempt
@never_cache
async def models(request: HttpRequest) -> HttpResponse:
    return await keyed_read(
        request, lambda: {"object": "list", "data": [_model_object(n) for n in serving_state().names]}
    )


@csrf_exempt
@never_cache
async def model_detail(request: HttpRequest, model_id: str) -> HttpResponse:
    def build() -> dict:
        if model_id not in serving_state().spellings:
            raise ApiError(404, f"The model {model_id!r} does not exist here.", code="model_not_found", param="model")
        return _model_object(model_id)

    return await keyed_read(request, build)


async def _respond(request: HttpRequest, *, chat: bool) -> HttpResponse:
    if request.method != "POST":
        return method_not_allowed("POST")

    def accept(user, arrival):
        req, generation = queue_answer(
            request, lambda data, models: parsing.parse_request(data, chat=chat, models=models), arrival, user
        )
        shapes = wire.OpenAIWire(req, f"{req.object_id_prefix}-{generation.id}", int(time.time()))
        return user, generation, shapes, req.stream, req.tools

    return await respond(request, accept, errors=ApiError.response)


@csrf_exempt
async def chat_completions(request: HttpRequest) -> HttpResponse:
    return await _respond(request, chat=True)


@csrf_exempt
async def completions(request: HttpRequest) -> HttpResponse:
    return await _respond(request, chat=False)
