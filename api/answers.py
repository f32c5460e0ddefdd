"""An API answer's life, shared by every protocol: the request admitted (its key, its
announcement), checked and queued (a Generation, a Celery task, the worker's engine), then
answered whole or streamed through its protocol's wire.

Requests run like chat messages. The view listens on the answer's own channel-layer group
(subscribed before the task is sent) and hands its events to a wire that writes them in its
API's shapes (an OpenAI response or SSE stream, an Ollama object or NDJSON). A client that goes
away cancels its answer, so a closed tab or a killed script frees its engine slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import time
from collections.abc import AsyncIterator

import redis
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse

from api import checks, errors
from api.auth import api_user, authenticate, bearer_token
from api.errors import ApiError
from api.openai import wire as openai_wire
from api.relay import GenerationEvents, final_event
from inference import events, watchdog
from inference.catalog import Catalog, catalog, embedding_model_message
from inference.dispatch import arrivals, registry
from inference.engine.tools import OutputSpec, answer_calls, matching_tools, tool_tokens
from inference.models import EngineConfig, Generation
from inference.services import generations
from infra.arrival import arrived_ns
from infra.dbthreads import kept_db
from infra.errors import ClientError

log = logging.getLogger(__name__)
REDIS_WAIT_S = 10.0  # how long a request waits out an unreachable Redis before its 503
REDIS_RETRY_S = 0.5


def serving_state() -> Catalog:
    """The models clients may ask for and the living workers (one reading of the heartbeats)."""
    return catalog()


def read_body(request: HttpRequest) -> dict:
    try:
        raw = request.body
    except RequestDataTooBig:
        limit = settings.HOMEAI_MAX_BODY_API  # homeai/bodylimit.py refuses larger bodies as they are read
        raise ApiError(413, f"The request body is larger than the {limit:,} bytes this server accepts.") from None
    return checks.parse_body(raw)


def admit(request: HttpRequest, arrival: arrivals.Arrival, *, keyless: bool = False):
    """The user whose key the request carries (ApiError 401 otherwise), and the request announced
    (arrival), so that an engine about to read another's prompt waits for this one too. Its own
    trip to a thread, before the rest of the work: requests sent together are all announced
    within a few milliseconds, not each at the end of its share of the burst (docs/bench/journal.md).
    An unauthenticated request is never announced; a good one is, before its key's use is noted
    (a write)."""
    return authenticate(request, keyless=keyless, admitted=arrival.announce)


def queue_answer(request: HttpRequest, parse, arrival: arrivals.Arrival, user) -> tuple[object, Generation | None]:
    """Everything else before the answer is queued, in one trip to a thread: body, model, row. A
    refused request withdraws its announcement (arrival).

    parse(data, models) checks the body in its API's terms (openai_parsing.parse_request,
    ollama.parse_chat, ...). The order is OpenAI's: a bad key is a 401 whatever the body (admit),
    a bad body a 400, an unknown model a 404, no worker a 503. No row for an Ollama load request
    (there is nothing to answer).
    """
    try:
        req, generation = _checked_answer(request, parse, user)
    except BaseException:
        arrival.withdraw()
        raise
    if generation is None:
        arrival.withdraw()
    return req, generation


def _checked_answer(request: HttpRequest, parse, user) -> tuple[object, Generation | None]:
    """The body checked in its API's terms, and the answer stored (None: a load-only request)."""
    data = read_body(request)
    state = serving_state()
    req = parse(data, state.spellings)
    model_name = state.spellings[req.model]
    if state.embeds(model_name):
        raise ApiError(400, embedding_model_message(req.model), code="embedding_model", param="model")
    if not state.workers:
        raise ApiError(
            503,
            "No worker is running, so nothing can write the answer. Start one (make run starts one), then retry.",
            code="no_worker",
        )
    if not state.held(model_name):
        raise ApiError(
            503,
            f"No worker that holds {model_name} is running right now; retry once one has started.",
            code="no_worker",
        )
    fit_tools(req)
    load_only = getattr(req, "load_only", None)
    keep_alive_s = getattr(req, "keep_alive_s", None)
    if not controls_models(request, user):
        if load_only:
            raise ApiError(
                403,
                f"Only staff can {load_only} models, with their own API key. Send a prompt to use "
                f"{model_name}: a worker loads it when it is needed.",
                code="staff_only",
                param="keep_alive",
            )
        keep_alive_s = None  # the server's default: 0 would unload the model for everyone, -1 pin it
    if load_only == "unload":
        registry.request_unload(model_name)
        return req, None
    if load_only == "load":
        registry.send_load(model_name, keep_alive_s)
        return req, None
    try:
        generation = generations.generation_create_api(
            user=user,
            client=checks.client_name(request.headers),
            messages=req.messages,
            prompt=req.prompt,
            max_tokens=req.max_tokens,
            options=req.options,
            output=req.output.as_dict() if req.output else None,
            model_name=model_name,
            keep_alive_s=keep_alive_s,
            t_arrive_ns=arrived_ns(request),
            keyless=bearer_token(request) is None,  # admitted without a key: the keyless LAN user
            collections=getattr(req, "collections", None),
        )
    except ClientError as exc:
        raise errors.from_client_error(exc, req) from None
    return req, generation


def fit_tools(req) -> None:
    """Tools the model can use: with tool_choice "auto", a block of tools larger than
    HOMEAI_TOOL_SHARE of the context (Open WebUI sends 36 with every message, 7,400 tokens)
    leaves a small model no room to answer, or no context at all. HOMEAI_TOOL_OVERFLOW says
    what is offered then: "matching" (the default: docs/api.md has the measurement), the tools
    whose words match the conversation's first user message, within the share; "none"; or
    "all" (as sent). req.tools_note says how many were offered, for the X-HomeAI-Tools header.

    The first user message, not the latest: a conversation then keeps one tool block, the
    prefix its next messages reuse from the cache, and a tool result's turn is offered the
    tool that was called. A forced call (required, or a named tool) is offered as asked."""
    output = req.output
    if output is None or not output.tools or output.tool_choice != "auto" or settings.HOMEAI_TOOL_OVERFLOW == "all":
        return
    budget = int((EngineConfig.current().context or settings.HOMEAI_CONTEXT) * settings.HOMEAI_TOOL_SHARE)
    if tool_tokens(output.tools) <= budget:
        return
    offered: tuple[dict, ...] = ()
    if settings.HOMEAI_TOOL_OVERFLOW == "matching":
        first = next((m["content"] for m in req.messages if m["role"] == "user"), "")
        offered = matching_tools(output.tools, first, budget)
    req.tools_note = f"{len(offered)} of {len(output.tools)} offered"
    if offered:
        req.output = dataclasses.replace(output, tools=offered)
    else:
        req.output = None if output.schema is None else OutputSpec(schema=output.schema)


def controls_models(request: HttpRequest, user) -> bool:
    """Whether the request may load or unload models (Ollama's empty prompt, keep_alive): a
    staff member's API key. Anyone else's key, and the keyless LAN user, only use them."""
    return user.is_staff and bearer_token(request) is not None


def method_not_allowed(allowed: str) -> JsonResponse:
    error = ApiError(405, f"Use {allowed} for this endpoint.", code="method_not_allowed")
    response = error.response()
    response["Allow"] = allowed
    return response


async def keyed_read(request: HttpRequest, build) -> HttpResponse:
    """A GET that needs an API key, answered with build() (run in a thread) as JSON; an ApiError
    (the key's, or one build raises) is answered as such."""
    if request.method != "GET":
        return method_not_allowed("GET")
    try:
        await api_user(request)
        return JsonResponse(await kept_db(build)(), safe=False)
    except ApiError as exc:
        return exc.response()


class Answer:
    """One request's answer, from subscription to response; end() cancels it unless it finished.

    The wire (openai/wire.OpenAIWire, ollama/wire.OllamaWire) writes it in its API's shapes."""

    def __init__(self, *, user, generation: Generation, wire, tools: bool, arrival: str = ""):
        self.user = user
        self.arrival = arrival
        self.generation = generation
        self.generation_id = generation.id
        self.wire = wire
        self.tools = tools
        self.events = GenerationEvents(generation.id)
        self.finished = False
        self._ended = False
        self.first_sent_ns: int | None = None  # wall clock, once the answer's first bytes went to the socket
        self.served_ttft_ms: float | None = None

    async def start(self) -> None:
        """Subscribe, then send the task: the first token cannot beat the subscription."""
        await self.events.open()
        await kept_db(generations.generation_enqueue)(generation=self.generation, arrival=self.arrival)

    async def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        try:
            if not self.finished:
                # The client left (or this server failed) before the answer ended: stop it.
                await kept_db(generations.generation_cancel)(user=self.user, generation_id=self.generation_id)
            elif self.served_ttft_ms is not None:
                await kept_db(generations.generation_set_served_ttft)(
                    generation_id=self.generation_id, ttft_ms=self.served_ttft_ms
                )
        except Exception:
            log.warning("could not cancel generation %s", self.generation_id, exc_info=True)
        finally:
            await self.events.close()

    async def frames(self) -> AsyncIterator[list[dict] | None]:
        """Frames of events until the answer ends; None when idle (a keep-alive is due)."""
        while not self.finished:
            frame = await self.events.next()
            if frame is None:
                final = await final_event(self.generation_id)  # pub/sub may have dropped the end
                if final is None:
                    yield None
                    continue
                frame = [final]
            for event in frame:
                if event["type"] in events.ENDS:
                    self.finished = True
            yield frame

    async def collect(self) -> HttpResponse:
        pieces: list[str] = []
        async for frame in self.frames():
            for event in frame or ():
                if event["type"] == events.TOKEN:
                    pieces.append(event["text"])
                elif event["type"] == events.DONE:
                    text = event.get("text")
                    body = self.wire.body("".join(pieces) if text is None else text, event)
                    return self.noted(JsonResponse(body, json_dumps_params={"ensure_ascii": False}))
                elif event["type"] == events.ERROR:
                    return self.wire.error_response(errors.from_engine_error(event["code"], event["message"]))
        return self.wire.error_response(ApiError(500, "The answer ended without a result.", code="no_result"))

    def noted(self, response: HttpResponse) -> HttpResponse:
        """The response with X-HomeAI-Tools when fewer tools were offered than sent (fit_tools)."""
        if self.wire.req.tools_note:
            response["X-HomeAI-Tools"] = self.wire.req.tools_note
        return response

    async def stream(self) -> AsyncIterator[bytes]:
        """The stream of chunks. Primed by the view (see _respond), so end() runs however it stops."""
        try:
            yield self.wire.start()
            visible = openai_wire.VisibleText(self.tools)
            async for frame in self.frames():
                if frame is None:
                    if self.wire.keepalive:
                        yield self.wire.keepalive
                    continue
                out = []
                for event in frame:
                    kind = event["type"]
                    if kind == events.TOKEN and event["text"]:
                        text = visible.feed(event["text"])
                        if text:
                            out.append(self.wire.text(text))
                    elif kind == events.DONE:
                        # Text the stop-string filter held back until the end was never sent as a token.
                        final = event.get("text") or ""
                        reason = (event.get("metrics") or {}).get("finish_reason")
                        calls = answer_calls(final, self.wire.req.output, reason)[1]
                        out.append(self.wire.end(self._served(event), visible.rest(final, calls), calls))
                    elif kind == events.ERROR:
                        out.append(self.wire.error(errors.from_engine_error(event["code"], event["message"])))
                if out:
                    yield b"".join(out)
                    # Resumed once the server has taken the bytes (ASGI send returned); its
                    # transport writes them to the socket on a later turn of the loop.
                    if self.first_sent_ns is None:
                        await _written()
                        self.first_sent_ns = time.time_ns()
        finally:
            await self.end()

    def _served(self, done: dict) -> dict:
        """The end event with the time to first token as the client got it: from the request's
        arrival at the web server to the answer's first bytes handed to the client's socket (now,
        when they go out with the end), both on this process's clock. delivery_ms is the part
        after the worker's first token (relay, Redis, this server); the worker's phases join
        this clock at the arrival, as its own ttft_ms does."""
        metrics = dict(done.get("metrics") or {})
        sent = self.first_sent_ns or time.time_ns()
        self.served_ttft_ms = (sent - self.generation.t_arrive_ns) / 1e6
        worker_ttft = metrics.get("ttft_ms")
        metrics["delivery_ms"] = None if worker_ttft is None else self.served_ttft_ms - worker_ttft
        metrics["ttft_ms"] = self.served_ttft_ms
        return {**done, "metrics": metrics}


async def _written() -> None:
    """Return once the server's transport has written what it was handed. Daphne's (Twisted's)
    does not write within ASGI send: it asks the loop to tell it when the socket is writable and
    writes then, a turn later; the second turn runs after that write (the loop runs what the
    poll found after what was already due). The first token's time is taken here, so the
    served TTFT ends when its bytes are in the client's socket (docs/bench/journal.md, the goals' item 4)."""
    for _ in range(2):
        await asyncio.sleep(0)


async def _primed(first: bytes, rest) -> AsyncIterator[bytes]:
    # aclosing: when Django closes this wrapper, the inner stream's finally runs now, not at GC.
    async with contextlib.aclosing(rest):
        if first:
            yield first
        async for part in rest:
            yield part


async def patient(attempt):
    """await attempt(), again every REDIS_RETRY_S while Redis is unreachable, for up to REDIS_WAIT_S:
    a Redis restart (a NAS updating its container) takes a second or two, and a request that
    arrives meanwhile should wait it out rather than fail."""
    deadline = time.monotonic() + REDIS_WAIT_S
    while True:
        try:
            return await attempt()
        except redis.RedisError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(REDIS_RETRY_S)


async def respond(request: HttpRequest, accept, *, errors, keyless: bool = False) -> HttpResponse:
    """Queue an answer and answer the request with it, whole or streamed, in its wire's shapes.

    The request is admitted first (its key, then its announcement: admit); accept(user, arrival)
    (run in a thread) then checks the rest and stores the answer: (user, generation, wire,
    stream, tools), or an HttpResponse when there is nothing to answer, or raises ApiError;
    errors(ApiError) renders a refusal. arrival: the request's announcement, whose token the
    answer's task carries. keyless: the Ollama API's keyless LAN user may be the requester.
    """
    answer = None
    arrival = arrivals.Arrival()
    try:
        user = await kept_db(admit)(request, arrival, keyless=keyless)
        accepted = await patient(lambda: kept_db(accept)(user, arrival))
        if isinstance(accepted, HttpResponse):
            return accepted
        user, generation, wire, stream_it, tools = accepted
        # This web process also sweeps for a dead worker's answers. An empty context: the task
        # must not inherit this request's thread-sensitive executor, which ends with the request.
        contextvars.Context().run(watchdog.ensure_running)
        answer = Answer(user=user, generation=generation, wire=wire, tools=tools, arrival=arrival.sent())
        await patient(answer.start)
        if not stream_it:
            try:
                return await answer.collect()
            finally:
                await answer.end()
        stream = answer.stream()
        # Run the generator up to its first chunk here, inside its try/finally: from now on
        # a disconnect at any point (even before Django iterates it) reaches end().
        first = await anext(stream)
    except ApiError as exc:
        if answer is not None:
            await answer.end()
        return errors(exc)
    except redis.RedisError:
        log.warning("an API request met Redis down", exc_info=True)
        if answer is not None:
            await answer.end()
        down = ApiError(503, "The message queue (Redis) is unreachable; retry in a moment.", code="unavailable")
        return errors(down)
    except Exception:
        log.exception("an API request failed")
        if answer is not None:
            await answer.end()
        failed = ApiError(500, "The server failed while starting this answer; its log says why.", code="internal_error")
        return errors(failed)
    except BaseException:  # cancelled: the client went away
        if answer is not None:
            await answer.end()
        else:
            arrival.withdraw()  # no task will carry its token
        raise
    response = StreamingHttpResponse(_primed(first, stream), content_type=answer.wire.content_type)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass tokens through as they come
    response["X-HomeAI-Generation"] = str(answer.generation_id)
    return answer.noted(response)
