"""API answers' tokens published by the engine thread itself, in frames, one write per step.

An answer's task thread (stream._Relay) relays its events, and when it woke for every token
it cost a thread wake-up, an interpreter hand-over and a Redis round trip per token, on cores
that llama.cpp's threads need (docs/bench/journal.md). For an answer registered here, the engine
calls this module's StepRelay with each step's events (Engine's on_events): it publishes them
for all the step's answers in one reply-less write (broadcast.Outbox) and has them queued
without waking the task thread. With frames (HOMEAI_API_FRAME_MS), an answer's tokens that come
within that long of its last frame are held and go with the next one that is due; its first
token is never held, and its end never waits (the task thread sends what is still held, then the
end). The task thread still saves the text, feeds the dashboard, watches for a cancel (all on its
own 0.1 s schedule) and publishes the answer's end, through the same connection, after the tokens.

The engine thread lists the events it took on (`taken`); the task thread, which takes every event
from the sequence's queue in the same order, finds them at the head of that list and leaves them
to it (events the engine queues outside a step, such as a model load, it sends itself). If a write fails
(Redis down, the connection busy or not yet made), the answers it carried leave the quick path
for good: their task threads publish what the engine thread still held, then everything after,
so no answer's events arrive out of order.
"""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass, field

from inference import broadcast, events
from inference.engine.events import EngineEvent, PhaseEvent, TokenEvent

log = logging.getLogger(__name__)


def wire_event(generation_id: int, event: EngineEvent) -> dict:
    """An engine event as an answer's clients get it (not for ends: those come from the row)."""
    if isinstance(event, TokenEvent):
        return events.token(generation_id, event.text, event.t_ms)
    if isinstance(event, PhaseEvent):
        return events.phase(generation_id, **event.as_dict())
    raise TypeError(f"not a streamed event: {event!r}")


def streamed(event: EngineEvent) -> bool:
    """Whether an event goes to the client as it comes (tokens, phases; not the end)."""
    return isinstance(event, TokenEvent | PhaseEvent)


@dataclass
class QuickAnswer:
    """One answer on the quick path, shared by the engine thread and its task thread."""

    generation_id: int
    group: str
    frame_every_s: float = 0.0  # 0: every step's events go at once
    on: bool = True  # False once a write failed: its task thread publishes everything
    # The events the engine thread took on (published or held), oldest first: the task thread
    # finds them at the head as it takes them from the sequence's queue, and leaves them.
    taken: collections.deque = field(default_factory=collections.deque)
    held: list[EngineEvent] = field(default_factory=list)  # taken on, not yet published
    due: float = 0.0  # monotonic time the next frame may go (0: at once)

    def took(self, event: EngineEvent) -> bool:
        """Whether the engine thread took this event on (for the task thread, in queue order)."""
        if self.taken and self.taken[0] is event:
            self.taken.popleft()
            return True
        return False

    def frame(self) -> list[dict]:
        """What it holds, as its client gets it."""
        return [wire_event(self.generation_id, e) for e in self.held]

    def take_frame(self) -> list[dict]:
        """What the engine thread still holds, as its client gets it, for the task thread to send:
        only once the engine thread is done with the answer (its end came, or `on` went False)."""
        frame, self.held = self.frame(), []
        return frame


class StepRelay:
    def __init__(self, outbox: broadcast.Outbox | None = None):
        self.outbox = outbox or broadcast.Outbox()
        # Task threads add and remove their answers, the engine thread reads: single dict
        # operations, atomic under the interpreter lock, so no lock of its own.
        self._answers: dict[int, QuickAnswer] = {}

    def register(self, generation_id: int, frame_every_s: float = 0.0) -> QuickAnswer | None:
        """Put an answer on the quick path before its sequence is submitted; None when the
        outbox cannot be connected (its task thread publishes as before)."""
        if not self.outbox.connect():
            return None
        answer = QuickAnswer(generation_id, broadcast.generation_group(generation_id), frame_every_s)
        self._answers[generation_id] = answer
        return answer

    def unregister(self, generation_id: int) -> None:
        self._answers.pop(generation_id, None)

    def __call__(self, batch: list[tuple[object, list[EngineEvent]]]) -> set[int]:
        """Engine.on_events: take on the step's streamed events of the answers on the quick
        path, and publish the frames that are due; the ids of the answers taken on (their
        events need not wake their task threads)."""
        now = time.monotonic()
        took_on, due = set(), []
        for seq, step_events in batch:
            answer = self._answers.get(seq.seq_id)
            if answer is None or not answer.on:
                continue
            new = [e for e in step_events if streamed(e)]
            if not new:
                continue
            answer.held.extend(new)
            answer.taken.extend(new)
            took_on.add(answer.generation_id)
            if now >= answer.due:
                due.append(answer)
        if due:
            try:
                messages = [(a.group, broadcast.relay_message(a.frame())) for a in due]
                sent = self.outbox.send_now(messages)
            except Exception:
                log.exception("a step's frames could not be sent; their task threads send them")
                sent = False
            if sent:
                for answer in due:
                    # The next frame waits only after one that carried a token: the first
                    # token is never held behind the prompt's progress.
                    if any(isinstance(e, TokenEvent) for e in answer.held):
                        answer.due = now + answer.frame_every_s
                    answer.held = []
            else:
                for answer in due:
                    answer.on = False  # what it holds is its task thread's to send now
        return took_on


STEP_RELAY = StepRelay()
