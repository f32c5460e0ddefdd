"""API answers' tokens published by the engine thread itself, one write per step.

An answer's task thread (stream._Relay) relays its events, and when it woke for every token
it cost a thread wake-up, an interpreter hand-over and a Redis round trip per token, on cores
that llama.cpp's threads need (docs/performance.md). For an answer registered here, the engine
calls this module's StepRelay with each step's events (Engine's on_events), which publishes
them for all the step's answers in one reply-less write (broadcast.Outbox) and has them queued
without waking the task thread. That thread still saves the text, feeds the dashboard, watches
for a cancel (all on its own 0.1 s schedule) and publishes the answer's end, through the same
connection, after the tokens.

If a write fails (Redis down, the connection busy or not yet made), the answers it carried
leave the quick path for good and their task threads publish everything from there on, so no
answer's events arrive out of order.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from inference import broadcast, events
from inference.engine.events import EngineEvent, PhaseEvent, TokenEvent


def wire_event(generation_id: int, event: EngineEvent) -> dict:
    """An engine event as an answer's clients get it (not for ends: those come from the row)."""
    if isinstance(event, TokenEvent):
        return events.token(generation_id, event.text, event.t_ms)
    if isinstance(event, PhaseEvent):
        return events.phase(generation_id, **event.as_dict())
    raise TypeError(f"not a streamed event: {event!r}")


@dataclass
class QuickAnswer:
    """One answer on the quick path, shared by the engine thread and its task thread."""

    generation_id: int
    group: str
    on: bool = True  # False once a write failed: its task thread publishes everything
    # The events the engine thread published, oldest first: the task thread finds them at the
    # head as it takes them from the sequence's queue, and does not publish them again.
    published: collections.deque = field(default_factory=collections.deque)

    def was_published(self, event: EngineEvent) -> bool:
        if self.published and self.published[0] is event:
            self.published.popleft()
            return True
        return False


class StepRelay:
    def __init__(self, outbox: broadcast.Outbox | None = None):
        self.outbox = outbox or broadcast.Outbox()
        # Task threads add and remove their answers, the engine thread reads: single dict
        # operations, atomic under the interpreter lock, so no lock of its own.
        self._answers: dict[int, QuickAnswer] = {}

    def register(self, generation_id: int) -> QuickAnswer | None:
        """Put an answer on the quick path before its sequence is submitted; None when the
        outbox cannot be connected (its task thread publishes as before)."""
        if not self.outbox.connect():
            return None
        answer = QuickAnswer(generation_id, broadcast.generation_group(generation_id))
        self._answers[generation_id] = answer
        return answer

    def unregister(self, generation_id: int) -> None:
        self._answers.pop(generation_id, None)

    def __call__(self, batch: list[tuple[object, list[EngineEvent]]]) -> set[int]:
        """Engine.on_events: publish the step's events of the answers on the quick path; the
        ids of those whose events went out."""
        messages, sent = [], []
        for seq, step_events in batch:
            answer = self._answers.get(seq.seq_id)
            if answer is None or not answer.on:
                continue
            streamed = [e for e in step_events if isinstance(e, TokenEvent | PhaseEvent)]
            if streamed:
                frame = [wire_event(answer.generation_id, e) for e in streamed]
                messages.append((answer.group, broadcast.relay_message(frame)))
                sent.append((answer, streamed))
        if not messages:
            return set()
        if not self.outbox.send_now(messages):
            for answer, _ in sent:
                answer.on = False
            return set()
        for answer, streamed in sent:
            answer.published.extend(streamed)
        return {answer.generation_id for answer, _ in sent}


STEP_RELAY = StepRelay()
