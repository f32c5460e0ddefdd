"""Writes: creating, running, cancelling and interrupting generations."""

from __future__ import annotations

import math
import queue
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inference import broadcast, redis_client, selectors
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, wall_to_perf_ns
from inference.metrics import record_generation
from inference.models import Conversation, Generation, Message

TITLE_CHARS = 60
SAVE_EVERY_S = 0.25  # a crash loses at most this much of an answer
CANCEL_POLL_S = 0.1
METRIC_COLUMNS = tuple(f for f in Generation.METRIC_FIELDS if f not in ("client_ttft_ms", "finish_reason"))


class ClientError(Exception):
    """Bad input from a client: a code and a sentence for the person."""

    def __init__(self, code: str, message: str, generation: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.generation = generation


def _event(kind: str, generation_id: int, **data) -> dict:
    return {"type": f"generation.{kind}", "generation": generation_id, **data}


def _dash_update(generation: Generation, *, phase: str, status: str = "running", **progress) -> dict:
    """A dashboard event about a request in flight (metrics only, never text)."""
    return {
        "type": "request.update",
        "generation": generation.id,
        "user_id": generation.user_id,
        "username": generation.user.username,
        "client": generation.client,
        "model": generation.model_name,
        "status": status,
        "phase": phase,
        "t_arrive": generation.t_arrive_ns / 1e9,
        "t": time.time(),
        "prompt_tokens": progress.get("prompt_tokens"),
        "prefill_done": progress.get("prefill_done"),
        "output_tokens": progress.get("output_tokens", 0),
    }


def _dash_done(generation: Generation) -> dict:
    """A dashboard event for a request that ended (reads the stored row)."""
    return {
        "type": "request.done",
        "generation": generation.id,
        "user_id": generation.user_id,
        "username": generation.user.username,
        "client": generation.client,
        "model": generation.model_name,
        "status": generation.status,
        "t_arrive": generation.t_arrive_ns / 1e9,
        "t": time.time(),
        "metrics": {**generation.metrics(), "token_times_ms": generation.token_times_ms, "itl_ms": generation.itl_ms},
    }


def _validate_text(text) -> str:
    if not isinstance(text, str):
        raise ClientError("bad_request", "The message text must be a string.")
    if not text.strip():
        raise ClientError("empty_message", "Type a message before sending.")
    limit = settings.HOMEAI_MAX_PROMPT_CHARS
    if len(text) > limit:
        raise ClientError("too_long", f"Your message is {len(text):,} characters; the limit is {limit:,}.")
    return text


def _validate_max_tokens(value) -> int:
    if value is None:
        return settings.HOMEAI_MAX_TOKENS
    limit = settings.HOMEAI_MAX_TOKENS_LIMIT
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit:
        raise ClientError("bad_request", f"max_tokens must be a whole number from 1 to {limit:,}.")
    return value


# name -> (type, lowest, highest)
SAMPLING_RANGES = {
    "temperature": (float, 0.0, 5.0),
    "top_p": (float, 0.0, 1.0),
    "top_k": (int, 0, 1000),
    "min_p": (float, 0.0, 1.0),
    "repeat_penalty": (float, 0.5, 2.0),
    "seed": (int, -1, 2**31 - 1),
}


def validate_sampling(options) -> dict:
    """Per-request sampling overrides, checked: a dict of known names with numbers in range."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ClientError("bad_request", 'options must be an object, e.g. {"temperature": 0.2}.')
    clean: dict = {}
    for name, value in options.items():
        if name == "ignore_eos":  # benchmarks: write exactly max_tokens (as vLLM's ignore_eos)
            if not isinstance(value, bool):
                raise ClientError("bad_request", "ignore_eos must be true or false.")
            clean[name] = value
            continue
        if name == "stop":
            stops = [value] if isinstance(value, str) else value
            if not isinstance(stops, list) or len(stops) > 4 or not all(isinstance(s, str) and s for s in stops):
                raise ClientError("bad_request", "stop must be a string or a list of up to 4 non-empty strings.")
            clean["stop"] = stops
            continue
        if name not in SAMPLING_RANGES:
            known = ", ".join([*SAMPLING_RANGES, "stop", "ignore_eos"])
            raise ClientError("bad_request", f"Unknown option {name!r}; known options: {known}.")
        kind, low, high = SAMPLING_RANGES[name]
        number_ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not number_ok or (kind is int and value != int(value)) or not low <= value <= high:
            what = "a whole number" if kind is int else "a number"
            raise ClientError("bad_request", f"{name} must be {what} from {low} to {high}.")
        clean[name] = kind(value)
    return clean


def sampling_params(generation: Generation) -> SamplingParams:
    options = dict(generation.sampling)
    stop = tuple(options.pop("stop", ()))
    base = {"temperature": settings.HOMEAI_TEMPERATURE, "seed": settings.HOMEAI_SEED}
    return SamplingParams(max_tokens=generation.max_tokens, stop=stop, **{**base, **options})


def generation_create(
    *, user, conversation_id, text, max_tokens=None, options=None, client: str = "chat"
) -> Generation:
    """Store the user's message and a queued answer (committed; generation_enqueue sends it)."""
    text = _validate_text(text)
    max_tokens = _validate_max_tokens(max_tokens)
    sampling = validate_sampling(options)
    _check_waiting_limit()
    t_arrive_ns = time.time_ns()
    with transaction.atomic():
        if conversation_id is None:
            title = " ".join(text.split())[:TITLE_CHARS]
            conversation = Conversation.objects.create(user=user, title=title)
        else:
            conversation = selectors.conversation_for_user(user=user, conversation_id=conversation_id)
            if conversation is None:
                raise ClientError("not_found", "That conversation does not exist.")
            if conversation.generations.filter(status__in=Generation.ACTIVE).exists():
                raise ClientError(
                    "busy", "An answer is still being written in this conversation: wait for it or press Stop."
                )
            conversation.save(update_fields=["updated_at"])
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=text)
        reply = Message.objects.create(conversation=conversation, role=Message.Role.ASSISTANT, content="")
        generation = Generation.objects.create(
            user=user,
            conversation=conversation,
            message=reply,
            client=client,
            model_name=settings.HOMEAI_MODEL_PATH.name,
            max_tokens=max_tokens,
            sampling=sampling,
            t_arrive_ns=t_arrive_ns,
        )
    return generation


def generation_create_api(
    *, user, client: str, messages: list[dict] | None = None, prompt: str | None = None, max_tokens=None, options=None
) -> Generation:
    """An OpenAI-style request: its messages (or raw prompt) become an API conversation."""
    if (messages is None) == (prompt is None):
        raise ClientError("bad_request", "Give either messages or a prompt.")
    if prompt is not None:
        turns = [{"role": "user", "content": _validate_text(prompt)}]
    else:
        if not isinstance(messages, list) or not messages:
            raise ClientError("bad_request", "messages must be a non-empty list.")
        turns = []
        for m in messages:
            role = m.get("role") if isinstance(m, dict) else None
            if role not in Message.Role.values:
                raise ClientError("bad_request", "Each message needs a role of system, user or assistant.")
            turns.append({"role": role, "content": _validate_text(m.get("content"))})
        if turns[-1]["role"] == "assistant":
            raise ClientError("bad_request", "The last message must come from the user (or system).")
    max_tokens = _validate_max_tokens(max_tokens)
    sampling = validate_sampling(options)
    _check_waiting_limit()
    t_arrive_ns = time.time_ns()
    title = f"API · {client}: " + " ".join(turns[-1]["content"].split())[:TITLE_CHARS]
    with transaction.atomic():
        conversation = Conversation.objects.create(user=user, title=title[:120], source=Conversation.Source.API)
        Message.objects.bulk_create(Message(conversation=conversation, **t) for t in turns)
        reply = Message.objects.create(conversation=conversation, role=Message.Role.ASSISTANT, content="")
        return Generation.objects.create(
            user=user,
            conversation=conversation,
            message=reply,
            client=client[:32] or "api",
            raw_prompt=prompt is not None,
            model_name=settings.HOMEAI_MODEL_PATH.name,
            max_tokens=max_tokens,
            sampling=sampling,
            t_arrive_ns=t_arrive_ns,
        )


# The shared-machine scenario, one click away for staff: three people's answers are being
# written when a fourth person's long document arrives. Raw prompts (no chat template) and
# ignore_eos, so the chats are still writing when the document comes, whatever the model says.
DEMO_CHATS = (
    "The lighthouse keeper climbed the stairs every evening, and one night",
    "Tides rise and fall twice a day because",
    "Here are twenty birds of the northern coast, with one fact about each:",
)
DEMO_CHAT_TOKENS = 200
DEMO_POLL_S = 0.25  # how often the document's task looks whether the chats are writing yet
DEMO_WAIT_S = 60.0  # ... and when it gives up waiting and sends the document anyway
DEMO_DOCUMENT_LINES = 70  # about 1,500 tokens with the bundled model's tokenizer
DEMO_LINE = "Quarterly report line {i}: revenue grew, costs fell, and the team shipped the new release."


def demo_start(*, user) -> list[Generation]:
    """Start the scenario: the chats now, the document once they are all writing (a task
    creates it then, so its queue time and TTFT are its own). All tagged with the client "demo"."""
    from inference.tasks import demo_document

    chats = [
        generation_create_api(
            user=user, client="demo", prompt=text, max_tokens=DEMO_CHAT_TOKENS, options={"ignore_eos": True}
        )
        for text in DEMO_CHATS
    ]
    for generation in chats:
        generation_enqueue(generation=generation)
    demo_document.apply_async((user.id, [g.id for g in chats]), countdown=DEMO_POLL_S)
    return chats


def demo_chats_writing(chat_ids: list[int]) -> bool:
    """Whether every chat of the scenario has written something (or already ended)."""
    rows = Generation.objects.filter(id__in=chat_ids).select_related("message")
    return all(
        g.status != Generation.Status.QUEUED and (g.status != Generation.Status.RUNNING or g.message.content)
        for g in rows
    )


def demo_document_send(*, user_id: int) -> Generation:
    """The scenario's long document: a report to summarise, from the same user."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(id=user_id)
    lines = "\n".join(DEMO_LINE.format(i=i) for i in range(DEMO_DOCUMENT_LINES))
    prompt = f"Summarise this report in one sentence.\n{lines}\nSummary:"
    generation = generation_create_api(user=user, client="demo", prompt=prompt, max_tokens=32)
    generation_enqueue(generation=generation)
    return generation


def _check_waiting_limit() -> None:
    waiting = Generation.objects.filter(status=Generation.Status.QUEUED).count()
    if waiting >= settings.HOMEAI_MAX_WAITING:
        raise ClientError(
            "busy", f"The server is busy: {waiting} answers are already waiting. Please try again in a minute."
        )


def generation_enqueue(*, generation: Generation) -> None:
    """Send the answer to a worker (after the client was told it is queued, so no event beats that)."""
    from inference.tasks import generate

    broadcast.publish_dashboard([_dash_update(generation, phase="queued", status="queued")])
    generate.delay(generation.id)


def generation_cancel(*, user, generation_id) -> None:
    """Stop an answer: a queued one never starts, a running one stops within one engine step."""
    generation = selectors.generation_for_user(user=user, generation_id=generation_id)
    if generation is None:
        raise ClientError("not_found", "That answer does not exist.")
    stopped = Generation.objects.filter(id=generation.id, status=Generation.Status.QUEUED).update(
        status=Generation.Status.CANCELLED, finish_reason="cancelled", finished_at=timezone.now()
    )
    if stopped:
        generation.refresh_from_db()
        broadcast.publish_for(
            generation,
            [_event("done", generation.id, status=generation.status, text="", metrics=generation.metrics(), notice="")],
        )
        broadcast.publish_dashboard([_dash_done(generation)])
        record_generation(generation)
    elif generation.status == Generation.Status.RUNNING:
        redis_client.client().set(redis_client.cancel_key(generation.id), 1, ex=3600)


def engine_config_set(*, model_name: str, context: int | None, threads: int | None, gpu_layers: int | None):
    """Choose the workers' model and settings (model library); they switch within a heartbeat."""
    from inference import model_library
    from inference.models import EngineConfig

    model = model_library.find(model_name)
    if model is None:
        raise ClientError("not_found", f"There is no model file named {model_name!r} in the models folder.")
    if not model.usable:
        raise ClientError("model_unusable", f"{model.name} cannot be used: {model.problem}")
    if context is not None and model.context_length and context > model.context_length:
        raise ClientError(
            "bad_request",
            f"{model.name} was trained for {model.context_length:,} tokens of context; {context:,} is more.",
        )
    config = EngineConfig.current()
    config.model_name = model.name
    config.context, config.threads, config.gpu_layers = context, threads, gpu_layers
    config.save()
    redis_client.client().set(redis_client.ENGINE_CONFIG_KEY, config.version)
    return config


def engine_policy_set(*, policy: str) -> None:
    """Switch every worker's scheduling policy (they pick it up within a heartbeat)."""
    from inference.engine.scheduler import POLICIES

    if policy not in POLICIES:
        raise ClientError("bad_request", f"Unknown policy {policy!r}; choose one of {', '.join(POLICIES)}.")
    redis_client.client().set(redis_client.POLICY_KEY, policy)


def generation_set_client_ttft(*, user, generation_id, ttft_ms) -> None:
    generation = selectors.generation_for_user(user=user, generation_id=generation_id)
    if generation is None:
        raise ClientError("not_found", "That answer does not exist.")
    valid = isinstance(ttft_ms, (int, float)) and not isinstance(ttft_ms, bool) and math.isfinite(ttft_ms)
    if not valid or not 0 <= ttft_ms <= 86_400_000:
        raise ClientError("bad_request", "ttft_ms must be a number of milliseconds.", generation.id)
    Generation.objects.filter(id=generation.id).update(client_ttft_ms=float(ttft_ms))


def generation_run(*, generation_id: int) -> None:
    """The worker side of one answer: run it through the engine, relay and save as it streams.

    1. Claim the row (queued -> running) so a redelivered task is a no-op.
    2. Submit a Sequence to this process's engine.
    3. Relay engine events to the user's sockets in frames (all events ready at once),
       saving the partial text every SAVE_EVERY_S and polling for a cancel request.
    4. Write the final text and metrics once.
    """
    from inference import worker

    engine = worker.get_engine()
    claimed = Generation.objects.filter(id=generation_id, status=Generation.Status.QUEUED).update(
        status=Generation.Status.RUNNING, worker=worker.worker_name(), model_name=engine.runner.config.model_path.name
    )
    if claimed != 1:
        return
    generation = Generation.objects.select_related("user").get(id=generation_id)
    seq = Sequence(
        seq_id=generation.id,
        messages=selectors.prompt_messages(generation=generation),
        params=sampling_params(generation),
        clock=PhaseClock(t_arrive=wall_to_perf_ns(generation.t_arrive_ns)),
    )
    if generation.raw_prompt:
        seq.raw_prompt = seq.messages[-1]["content"]
    engine.submit(seq)
    _relay_until_finished(generation, seq, engine)


class _DashboardFeed:
    """Turns one answer's engine events into throttled dashboard updates."""

    DECODE_EVERY_S = 0.5

    def __init__(self, generation: Generation):
        self.generation = generation
        self.phase = "queued"
        self.prompt_tokens: int | None = None
        self.prefill_done: int | None = None
        self.output_tokens = 0
        self._last = 0.0

    def observe(self, ev) -> None:
        if ev.kind == "token":
            self.output_tokens += 1
        elif ev.kind == "phase" and ev.data["phase"] == "prefill":
            self.prompt_tokens, self.prefill_done = ev.data["total"], ev.data["done"]
            self._changed("prefill")
        elif ev.kind == "phase" and ev.data["phase"] in ("load", "decode"):
            self._changed(ev.data["phase"])

    def _changed(self, phase: str) -> None:
        self.phase = phase
        self._last = 0.0  # send at the next flush

    def flush(self) -> None:
        now = time.monotonic()
        if now - self._last < self.DECODE_EVERY_S:
            return
        self._last = now
        if self.phase != "queued":
            broadcast.publish_dashboard(
                [
                    _dash_update(
                        self.generation,
                        phase=self.phase,
                        prompt_tokens=self.prompt_tokens,
                        prefill_done=self.prefill_done,
                        output_tokens=self.output_tokens,
                    )
                ]
            )


def _relay_until_finished(generation: Generation, seq: Sequence, engine) -> None:
    gid = generation.id
    pieces: list[str] = []
    saved = 0
    last_save = last_cancel_check = time.monotonic()
    feed = _DashboardFeed(generation)
    r = redis_client.client()
    while True:
        events = []
        try:
            events.append(seq.events.get(timeout=CANCEL_POLL_S))
            while True:
                events.append(seq.events.get_nowait())
        except queue.Empty:
            pass
        frame, final = [], None
        for ev in events:
            feed.observe(ev)
            if ev.kind == "token":
                pieces.append(ev.data["text"])
                frame.append(_event("token", gid, text=ev.data["text"], t_ms=round(ev.data["t_ms"], 3)))
            elif ev.kind == "phase":
                frame.append(_event("phase", gid, **ev.data))
            else:
                final = ev
        if final is not None:
            frame.append(_finish(generation, final, pieces))
            broadcast.publish_for(generation, frame)
            broadcast.publish_dashboard([_dash_done(generation)])
            r.delete(redis_client.cancel_key(gid))
            return
        broadcast.publish_for(generation, frame)
        feed.flush()
        now = time.monotonic()
        if len(pieces) != saved and now - last_save >= SAVE_EVERY_S:
            Message.objects.filter(id=generation.message_id).update(content="".join(pieces))
            saved, last_save = len(pieces), now
        if now - last_cancel_check >= CANCEL_POLL_S:
            last_cancel_check = now
            if r.exists(redis_client.cancel_key(gid)):
                engine.cancel(seq.seq_id)


def _finish(generation: Generation, final, pieces: list[str]) -> dict:
    """Store the answer's end (done, cancelled or error) and return the event that says so."""
    now = timezone.now()
    gid = generation.id
    if final.kind == "error":
        Message.objects.filter(id=generation.message_id).update(content="".join(pieces))
        Generation.objects.filter(id=gid).update(
            status=Generation.Status.ERROR,
            error_code=final.data["code"],
            error_message=final.data["message"],
            finished_at=now,
        )
        generation.refresh_from_db()
        record_generation(generation)
        return _event("error", gid, code=final.data["code"], message=final.data["message"])
    metrics = final.data["metrics"]
    reason = final.data["finish_reason"]
    status = Generation.Status.CANCELLED if reason == "cancelled" else Generation.Status.DONE
    columns = {name: metrics[name] for name in METRIC_COLUMNS}
    with transaction.atomic():
        Message.objects.filter(id=generation.message_id).update(content=final.data["text"])
        Generation.objects.filter(id=gid).update(
            status=status,
            finish_reason=reason,
            notice=final.data["notice"],
            finished_at=now,
            token_times_ms=metrics["token_times_ms"],
            token_texts=pieces,
            itl_ms=metrics["itl_ms"],
            **columns,
        )
    generation.refresh_from_db()
    record_generation(generation)
    return _event(
        "done", gid, status=status, text=final.data["text"], notice=final.data["notice"], metrics=generation.metrics()
    )


def generations_interrupt_orphans() -> list[Generation]:
    """Mark running answers whose worker stopped beating as interrupted, and tell their users.

    Idempotent by conditional update: when several web processes sweep, one wins each row.
    """
    from inference import worker

    alive = set(worker.live_workers())
    orphans = (
        Generation.objects.filter(status=Generation.Status.RUNNING).exclude(worker__in=alive).select_related("user")
    )
    interrupted = []
    message = "The worker stopped while writing this answer; the text so far is kept."
    for generation in orphans:
        changed = Generation.objects.filter(id=generation.id, status=Generation.Status.RUNNING).update(
            status=Generation.Status.INTERRUPTED,
            error_code="interrupted",
            error_message=message,
            finish_reason="interrupted",
            finished_at=timezone.now(),
        )
        if changed:
            interrupted.append(generation)
            generation.refresh_from_db()
            record_generation(generation)
            broadcast.publish_for(generation, [_event("error", generation.id, code="interrupted", message=message)])
            broadcast.publish_dashboard([_dash_done(generation)])
    return interrupted


def generations_resend_stale(*, resent: set[int]) -> None:
    """Send the task again, once, for answers queued too long while workers are alive.

    The web process stores an answer and then sends its task; if it died in between, nothing
    would ever run it. A second task for an answer that is merely waiting in a long line is
    harmless: the claim (queued -> running) lets only one of them run.
    """
    from inference import worker
    from inference.tasks import generate

    if not worker.live_workers():
        return
    cutoff = timezone.now() - timezone.timedelta(seconds=settings.HOMEAI_RESEND_AFTER_S)
    stale = Generation.objects.filter(status=Generation.Status.QUEUED, created_at__lt=cutoff).exclude(id__in=resent)
    for generation_id in stale.values_list("id", flat=True):
        resent.add(generation_id)
        generate.delay(generation_id)


NO_WORKER_MESSAGE = "No worker is running right now; this message will be answered as soon as one starts."


def generations_notify_no_worker(*, notified: set[int]) -> None:
    """Tell people whose answers wait that no worker is alive (once per answer), so a stopped
    worker shows up as a sentence instead of an endless "queued"."""
    from inference import worker

    if worker.live_workers():
        notified.clear()
        return
    cutoff = timezone.now() - timezone.timedelta(seconds=settings.HOMEAI_WORKER_TTL)
    waiting = Generation.objects.filter(status=Generation.Status.QUEUED, created_at__lt=cutoff).exclude(id__in=notified)
    for generation in waiting.select_related("user"):
        notified.add(generation.id)
        broadcast.publish_for(generation, [_event("phase", generation.id, phase="notice", message=NO_WORKER_MESSAGE)])
