"""One answer's run inside a worker: claim it, submit it to this process's engine, relay the
engine's events to its client as they come, save as it streams, and store how it ended."""

from __future__ import annotations

import queue
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inference import broadcast, events, redis_client, selectors
from inference.engine.events import DoneEvent, EngineEvent, ErrorEvent, PhaseEvent, TokenEvent
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, wall_to_perf_ns
from inference.metrics import record_generation
from inference.models import Generation, Message
from inference.worker import registry, runtime

SAVE_EVERY_S = 0.25  # a crash loses at most this much of an answer
CANCEL_POLL_S = 0.1
METRIC_COLUMNS = tuple(f for f in Generation.METRIC_FIELDS if f not in ("client_ttft_ms", "finish_reason"))


def sampling_params(generation: Generation) -> SamplingParams:
    """The engine's sampling settings: the server's defaults under the request's own."""
    options = dict(generation.sampling)
    stop = tuple(options.pop("stop", ()))
    base = {"temperature": settings.HOMEAI_TEMPERATURE, "seed": settings.HOMEAI_SEED}
    return SamplingParams(max_tokens=generation.max_tokens, stop=stop, **{**base, **options})


def generation_run(*, generation_id: int) -> None:
    """The worker side of one answer: run it through the engine, relay and save as it streams.

    1. Claim the row (queued -> running) so a redelivered task is a no-op.
    2. Submit a Sequence to this process's engine.
    3. Relay engine events to the user's sockets in frames (all events ready at once),
       saving the partial text every SAVE_EVERY_S and polling for a cancel request.
    4. Write the final text and metrics once.
    """
    engine = runtime.get_engine()
    claimed = Generation.objects.filter(id=generation_id, status=Generation.Status.QUEUED).update(
        status=Generation.Status.RUNNING,
        worker=registry.worker_name(),
        model_name=engine.runner.config.model_path.name,
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

    def observe(self, ev: EngineEvent) -> None:
        if isinstance(ev, TokenEvent):
            self.output_tokens += 1
        elif isinstance(ev, PhaseEvent) and ev.phase == "prefill":
            self.prompt_tokens, self.prefill_done = ev.total, ev.done
            self._changed("prefill")
        elif isinstance(ev, PhaseEvent) and ev.phase in ("load", "decode"):
            self._changed(ev.phase)

    def _changed(self, phase: str) -> None:
        self.phase = phase
        self._last = 0.0  # send at the next flush

    def flush(self) -> None:
        now = time.monotonic()
        if now - self._last < self.DECODE_EVERY_S:
            return
        self._last = now
        if self.phase != "queued":
            update = events.request_update(
                self.generation,
                phase=self.phase,
                prompt_tokens=self.prompt_tokens,
                prefill_done=self.prefill_done,
                output_tokens=self.output_tokens,
            )
            broadcast.publish_dashboard([update])


def _relay_until_finished(generation: Generation, seq: Sequence, engine) -> None:
    gid = generation.id
    pieces: list[str] = []
    saved = 0
    last_save = last_cancel_check = time.monotonic()
    feed = _DashboardFeed(generation)
    r = redis_client.client()
    while True:
        ready: list[EngineEvent] = []
        try:
            ready.append(seq.events.get(timeout=CANCEL_POLL_S))
            while True:
                ready.append(seq.events.get_nowait())
        except queue.Empty:
            pass
        frame, final = [], None
        for ev in ready:
            feed.observe(ev)
            if isinstance(ev, TokenEvent):
                pieces.append(ev.text)
                frame.append(events.token(gid, ev.text, ev.t_ms))
            elif isinstance(ev, PhaseEvent):
                frame.append(events.phase(gid, **ev.as_dict()))
            else:
                final = ev
        if final is not None:
            frame.append(_finish(generation, final, pieces))
            broadcast.publish_for(generation, frame)
            broadcast.publish_dashboard([events.request_done(generation)])
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


def _finish(generation: Generation, final: DoneEvent | ErrorEvent, pieces: list[str]) -> dict:
    """Store the answer's end (done, cancelled or error) and return the event that says so."""
    now = timezone.now()
    gid = generation.id
    if isinstance(final, ErrorEvent):
        Message.objects.filter(id=generation.message_id).update(content="".join(pieces))
        Generation.objects.filter(id=gid).update(
            status=Generation.Status.ERROR, error_code=final.code, error_message=final.message, finished_at=now
        )
        generation.refresh_from_db()
        record_generation(generation)
        return events.error(gid, final.code, final.message)
    metrics = final.metrics
    status = Generation.Status.CANCELLED if final.finish_reason == "cancelled" else Generation.Status.DONE
    columns = {name: metrics[name] for name in METRIC_COLUMNS}
    with transaction.atomic():
        Message.objects.filter(id=generation.message_id).update(content=final.text)
        Generation.objects.filter(id=gid).update(
            status=status,
            finish_reason=final.finish_reason,
            notice=final.notice,
            finished_at=now,
            token_times_ms=metrics["token_times_ms"],
            token_texts=pieces,
            itl_ms=metrics["itl_ms"],
            **columns,
        )
    generation.refresh_from_db()
    record_generation(generation)
    return events.done(generation, text=final.text)
