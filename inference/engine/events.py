"""What the engine thread tells a request's task thread, one typed event at a time.

Every sequence sees phase and token events, then exactly one final event: DoneEvent (stopped,
cut at a length, or cancelled) or ErrorEvent. Pure data, so the web side may import it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

Phase = Literal["load", "notice", "queued", "prefill", "decode"]


@dataclass(frozen=True)
class PhaseEvent:
    """A step in a request's life; only the fields its phase carries are set.

    load: state "start", then "done" with ms (the request that waited for the model pays it).
    notice: message (something the person should know: dropped turns, no GPU).
    queued: position (1 = next to start).
    prefill: done and total prompt tokens in the KV cache.
    decode: the first answer token is out.
    """

    phase: Phase
    state: Literal["start", "done"] | None = None
    ms: float | None = None
    message: str | None = None
    position: int | None = None
    done: int | None = None
    total: int | None = None

    def as_dict(self) -> dict:
        """The wire form: `phase` and the fields this phase sets, nothing else."""
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None}


@dataclass(frozen=True)
class TokenEvent:
    """Answer text released by a token (may be empty while a stop string is held back)."""

    text: str
    t_ms: float  # since the request arrived


@dataclass(frozen=True)
class DoneEvent:
    """The end of an answer: its whole text, why it ended, and its phase metrics."""

    text: str
    finish_reason: str  # stop | length | cancelled
    notice: str
    metrics: dict


@dataclass(frozen=True)
class ErrorEvent:
    """The end of a request that could not be answered, in words a person understands."""

    code: str
    message: str


FinalEvent = DoneEvent | ErrorEvent
EngineEvent = PhaseEvent | TokenEvent | DoneEvent | ErrorEvent
