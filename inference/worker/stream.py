"""One answer's run inside a worker: claim it, submit it to this process's engine, relay the
engine's events to its client as they come, save as it streams, and store how it ended."""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from inference import broadcast, events, selectors, speech
from inference.dispatch import arrivals, registry
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, EngineEvent, ErrorEvent, PhaseEvent, TokenEvent
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, wall_to_perf_ns
from inference.engine.tools import OutputSpec
from inference.metrics import record_generation
from inference.models import Generation, Message
from inference.worker import runtime
from inference.worker.cancels import CANCELS, Watched, forget
from inference.worker.retrieve import retrieve_phase
from inference.worker.step_relay import STEP_RELAY, QuickAnswer, wire_event
from inference.worker.toolcalls import ToolRound

SAVE_EVERY_S = 0.25  # a crash loses at most this much of an answer
# An answer's task thread wakes for its events, and at least this often to save its text, feed
# the dashboard and look at its deadline and its engine (a client's stop is cancels.py's to see).
WAKE_EVERY_S = SAVE_EVERY_S
CHAT_FRAME_EVERY_S = 0.1
CANCEL_GRACE_S = 30.0  # a cancel the engine has not answered by then: the engine is stuck
SUBMIT_ATTEMPTS = 3
WORKER_ERROR_MESSAGE = "Something went wrong in the worker while writing this answer; the text so far is kept."
log = logging.getLogger(__name__)

# The columns an answer's end writes (the web writes the browser's TTFT, a reading its first
# audio; the tool round its tool time).
METRIC_COLUMNS = tuple(
    f for f in Generation.METRIC_FIELDS if f not in ("client_ttft_ms", "speech_first_ms", "finish_reason", "tool_ms")
)


def sampling_params(generation: Generation) -> SamplingParams:
    """The engine's sampling settings: the server's defaults under the request's own."""
    options = dict(generation.sampling)
    stop = tuple(options.pop("stop", ()))
    # On by the server's policy, off per request (a request cannot turn it on against the policy).
    asked = options.pop("speculative", True)
    speculative = settings.HOMEAI_SPECULATION == "ngram" and asked
    base = {"temperature": settings.HOMEAI_TEMPERATURE, "seed": settings.HOMEAI_SEED}
    return SamplingParams(max_tokens=generation.max_tokens, stop=stop, speculative=speculative, **{**base, **options})


# Answer id -> the tasks of this process working on it: a counter, not a set, since a duplicate
# task (a resend) passes through while the first still runs, and its exit must not unlist it.
_in_flight: collections.Counter[int] = collections.Counter()
_in_flight_lock = threading.Lock()


def in_flight() -> list[int]:
    """The answers this process is running (its heartbeat reports them, so the web can tell an
    answer this worker lost from one it is still writing)."""
    with _in_flight_lock:
        return sorted(gid for gid, n in _in_flight.items() if n > 0)


def generation_run(*, generation_id: int, arrival: str = "") -> None:
    """The worker side of one answer: run it through the engine, relay and save as it streams.

    1. Claim the row (queued -> running) so a redelivered task is a no-op.
    2. Submit a Sequence to this process's engine (a newer one if a model switch retired it).
    3. Relay engine events to the user's sockets in frames (all events ready at once),
       saving the partial text every SAVE_EVERY_S (a client's stop is seen by cancels.py).
    4. Write the final text and metrics once.

    Whatever fails after the claim, the answer ends: marked error with the text so far, and
    its client told (nothing is left running for the watchdog to guess about).
    """
    with _in_flight_lock:
        _in_flight[generation_id] += 1  # before the claim: a heartbeat must never miss a claimed answer
    try:
        with arrivals.taken(arrival, generation_id) as (token, handed):
            _run(generation_id, token, handed)
    finally:
        with _in_flight_lock:
            _in_flight[generation_id] -= 1
            if _in_flight[generation_id] <= 0:
                del _in_flight[generation_id]


def _run(generation_id: int, arrival: str, handed: Callable[[], None]) -> None:
    """arrival: the answer's token among those on their way (arrivals.py); handed() is called
    once the answer is with an engine."""
    generation = claim(generation_id)
    if generation is None:
        return
    relay = _Relay(generation)
    if generation.client != "chat":
        # Before the engine can send a token; None (Redis down): this thread publishes them.
        relay.quick = STEP_RELAY.register(generation.id, settings.HOMEAI_API_FRAME_MS / 1000)
    try:
        messages, retrieve_ns = retrieve_phase(generation, selectors.prompt_messages(generation=generation))
        seq = Sequence(
            seq_id=generation.id,
            messages=messages,
            params=sampling_params(generation),
            clock=PhaseClock(t_arrive=wall_to_perf_ns(generation.t_arrive_ns), retrieve_ns=retrieve_ns),
            owner=cache_owner(generation),
            output=OutputSpec.from_dict(generation.output),
            arrival=arrival,
        )
        if generation.raw_prompt:
            seq.raw_prompt = seq.messages[-1]["content"]
        engine = _submit(seq, generation.model_name)
        handed()
        relay.run(seq, engine)
    except Exception:
        log.exception("answer %s failed in the worker", generation_id)
        relay.fail("worker_error", WORKER_ERROR_MESSAGE)
        raise
    finally:
        STEP_RELAY.unregister(generation.id)
        runtime.answered(generation.model_name, generation.keep_alive_s)


def cache_owner(generation: Generation) -> object:
    """Whose cached prefixes (slots, saved KV states) an answer may reuse: its person's. An answer
    asked without a key (the keyless Ollama API: any client on the LAN) has an owner of its own,
    so a guest cannot tell from prompt_eval_count what the account's chats began with."""
    return f"keyless:{generation.user_id}" if generation.keyless else generation.user_id


def claim(generation_id: int) -> Generation | None:
    """The answer taken (queued -> running, by this worker) and its row as the claim left it, in
    one statement (UPDATE ... RETURNING: SQLite 3.35 and PostgreSQL): None when another task had
    it, or it ended meanwhile. One round trip on the path to the first token, not two (an update,
    then the row read back). Its user is read when the dashboard first needs the name."""
    table = Generation._meta.db_table
    qn = connection.ops.quote_name
    columns = ", ".join(qn(field.column) for field in Generation._meta.concrete_fields)
    sql = (
        f"UPDATE {qn(table)} SET {qn('status')} = %s, {qn('worker')} = %s, {qn('attempts')} = {qn('attempts')} + 1 "
        f"WHERE {qn('id')} = %s AND {qn('status')} = %s RETURNING {columns}"
    )
    params = [Generation.Status.RUNNING.value, registry.worker_name(), generation_id, Generation.Status.QUEUED.value]
    # Read to the end: a statement left half-read would hold SQLite's write lock.
    rows = list(Generation.objects.raw(sql, params))
    return rows[0] if rows else None


def _submit(seq: Sequence, model_name: str) -> Engine:
    """Hand the sequence to the model's engine: one that a settings change or a make-room
    retired meanwhile refuses it, and the runtime builds its successor."""
    for _ in range(SUBMIT_ATTEMPTS):
        engine = runtime.get_engine(model_name)
        if engine.submit(seq):
            return engine
    raise RuntimeError("no engine of this worker accepts work")


def _save_text(message_id: int, text: str) -> None:
    """An answer's text so far, saved four times a second while it streams: one plain statement,
    not the ORM's update (0.04 against 0.24 ms of CPU in a warm loop; docs/bench/journal.md)."""
    qn = connection.ops.quote_name
    sql = f"UPDATE {qn(Message._meta.db_table)} SET {qn('content')} = %s WHERE {qn('id')} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [text, message_id])


def _gather(events: queue.Queue, hold_until: float) -> list[EngineEvent]:
    """The events ready now (waiting up to WAKE_EVERY_S for the first), and those that follow
    until hold_until; an answer's end is never held back."""
    ready: list[EngineEvent] = []
    try:
        ready.append(events.get(timeout=WAKE_EVERY_S))
        while not isinstance(ready[-1], DoneEvent | ErrorEvent):
            wait = hold_until - time.monotonic()
            ready.append(events.get(timeout=wait) if wait > 0 else events.get_nowait())
    except queue.Empty:
        pass
    return ready


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

    def tool(self) -> None:
        """The answer's tool calls run (toolcalls.py)."""
        self._changed("tool")
        self.flush()

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


class _Relay:
    """One answer's stream from the engine to its client and the database."""

    def __init__(self, generation: Generation):
        self.generation = generation
        self.pieces: list[str] = []
        self.feed = _DashboardFeed(generation)
        self.ended = False
        # The chat page draws four times a second, so its tokens go in frames at most every
        # CHAT_FRAME_EVERY_S (the first at once): a third as many frames for the browser, daphne
        # and Redis to pass on. API answers' tokens are the engine thread's to publish, in the
        # server's HOMEAI_API_FRAME_MS frames (step_relay.py), unless Redis was down when the
        # answer started; then this thread publishes every token as it comes.
        self.frame_every = CHAT_FRAME_EVERY_S if generation.client == "chat" else 0.0
        self.quick: QuickAnswer | None = None  # on the engine thread's quick path (step_relay.py)
        # A chat answer's sentences, kept for reading it aloud (speech.py).
        reads = generation.client == "chat" and settings.HOMEAI_SPEECH
        self.speech = speech.SpeechFeed(generation.id) if reads else None
        self.tools = ToolRound.offered(generation)  # a chat answer's tool calls, if it has tools

    def run(self, seq: Sequence, engine: Engine) -> None:
        self.engine = engine  # the second round of a tool call may be another engine's
        watched = CANCELS.watch(self.generation.id, lambda: self.engine.cancel(seq.seq_id))
        try:
            self._stream(seq, engine, watched)
        finally:
            CANCELS.unwatch(self.generation.id, watched)

    def _stream(self, seq: Sequence, engine: Engine, watched: Watched) -> None:
        gid = self.generation.id
        saved = 0
        last_save = time.monotonic()
        deadline = last_save + settings.HOMEAI_ANSWER_DEADLINE_S
        quick = self.quick
        next_frame = 0.0
        while True:
            # Events the engine thread took on do not wake this thread: it takes them when its
            # wait for the first event times out (WAKE_EVERY_S).
            ready = _gather(seq.events, next_frame)
            frame, final = [], None
            for ev in ready:
                self.feed.observe(ev)
                if isinstance(ev, TokenEvent):
                    self.pieces.append(ev.text)
                    if self.speech is not None:
                        self.speech.feed(ev.text)
                    # The next frame holds what comes within frame_every of this one; until the
                    # first token, nothing is held (a phase event must not delay it).
                    next_frame = time.monotonic() + self.frame_every
                if isinstance(ev, DoneEvent | ErrorEvent):
                    final = ev
                elif quick is None or not quick.took(ev):  # the engine thread's to publish
                    frame.append(wire_event(gid, ev))
            if quick is not None and (final is not None or not quick.on):
                # The engine thread is done with this answer: what it still holds goes first.
                frame = quick.take_frame() + frame
            if final is not None and self.tools is not None and isinstance(final, DoneEvent):
                broadcast.publish_for(self.generation, frame)
                frame = []
                following = self.tools.next_sequence(seq, final, watched, self.feed)
                if following is not None:  # the answer continues with the tools' results
                    self.pieces = []
                    seq, engine = following, _submit(following, self.generation.model_name)
                    self.engine = engine
                    continue
                if self.tools.first is not None:
                    final = self.tools.merged(final)
            if final is not None:
                self._publish_end(frame, self._store_end(final))
                if watched.asked_at is not None:
                    forget(gid)
                return
            broadcast.publish_for(self.generation, frame)
            self.feed.flush()
            if self.speech is not None:
                self.speech.flush()
            now = time.monotonic()
            if len(self.pieces) != saved and now - last_save >= SAVE_EVERY_S:
                _save_text(self.generation.message_id, self._text())
                saved, last_save = len(self.pieces), now
            if now >= deadline:
                watched.stop()  # the engine answers with a cancelled DoneEvent
            stalled = watched.asked_at is not None and now - watched.asked_at > CANCEL_GRACE_S
            if stalled or not engine.thread_alive:
                self.fail("worker_error", WORKER_ERROR_MESSAGE)  # the engine will never answer
                return

    def _text(self) -> str:
        """The answer's text so far: after a tool call, what came before it and the second round's."""
        shown = self.tools.visible if self.tools is not None and self.tools.first is not None else ""
        written = "".join(self.pieces)
        return f"{shown}\n\n{written}" if shown and written else shown or written

    def fail(self, code: str, message: str) -> None:
        """End the answer as an error with the text so far, unless it already ended."""
        if not self.ended:
            held = self.quick.take_frame() if self.quick else []
            self._publish_end(held, self._store_end(ErrorEvent(code, message)))

    def _publish_end(self, frame: list[dict], end: dict | None) -> None:
        """Send the last frame, with the end event when this worker wrote the end; then count
        the answer in the metrics and tell the dashboards (the client does not wait for those)."""
        self.ended = True
        if self.speech is not None:
            self.speech.flush(end=True)
        frame = [*frame, end] if end else frame
        # Through the engine thread's connection while its tokens went there: after them.
        quick = self.quick is not None and self.quick.on
        if not (frame and quick and STEP_RELAY.outbox.send([(self.quick.group, broadcast.relay_message(frame))])):
            broadcast.publish_for(self.generation, frame)
        if end:
            record_generation(self.generation)
            broadcast.publish_dashboard([events.request_done(self.generation)])

    def _store_end(self, final: DoneEvent | ErrorEvent) -> dict | None:
        """Store the answer's end (done, cancelled or error) and return the event that says so.

        The row changes only while it is still running. None when it had already ended: the
        watchdog marked it interrupted and told its client; the whole text is still saved.
        """
        generation, gid = self.generation, self.generation.id
        running = Generation.objects.filter(id=gid, status=Generation.Status.RUNNING)
        if isinstance(final, ErrorEvent):
            values = {
                "status": Generation.Status.ERROR,
                "error_code": final.code,
                "error_message": final.message,
                "finished_at": timezone.now(),
            }
            with transaction.atomic():
                changed = running.update(**values)
                if changed:
                    Message.objects.filter(id=generation.message_id).update(content=self._text())
        else:
            metrics = final.metrics
            status = Generation.Status.CANCELLED if final.finish_reason == "cancelled" else Generation.Status.DONE
            values = {
                "status": status,
                "finish_reason": final.finish_reason,
                "notice": final.notice,
                "finished_at": timezone.now(),
                "token_times_ms": metrics["token_times_ms"],
                "token_texts": self.pieces,
                "itl_ms": metrics["itl_ms"],
                **{name: metrics[name] for name in METRIC_COLUMNS},
            }
            if self.tools is not None and self.tools.first is not None:
                values.update(tool_ms=self.tools.tool_ms, tool_calls=self.tools.cards)
            with transaction.atomic():
                Message.objects.filter(id=generation.message_id).update(content=final.text)
                changed = running.update(**values)
        if not changed:
            return None
        # The row holds what was just written and, for the rest, what this thread read at the
        # claim: the end is built from those, not from the whole row read back (a query between
        # the last token and the client's end, four in a row when four answers end in one step).
        # The one column the web writes while an answer runs is a chat's browser TTFT.
        for name, value in values.items():
            setattr(generation, name, value)
        if generation.client == "chat":
            generation.refresh_from_db(fields=["client_ttft_ms"])
        if isinstance(final, ErrorEvent):
            return events.error(gid, final.code, final.message)
        return events.done(generation, text=final.text)
