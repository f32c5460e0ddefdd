"""What other threads ask of the engine thread, through its inbox (pure data).

Only the engine thread touches the Runner, so every request from a task or heartbeat thread
is one of these, queued and applied between steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from inference.engine.sequence import Sequence


@dataclass(frozen=True)
class Submit:
    """Start answering a sequence (the first one loads the model)."""

    seq: Sequence


@dataclass(frozen=True)
class Load:
    """Load the model now, before any request needs it (Ollama's load request)."""


@dataclass(frozen=True)
class Cancel:
    """End a sequence now; it finishes with reason "cancelled" and keeps its text so far."""

    seq_id: int


@dataclass(frozen=True)
class SetPolicy:
    """Schedule with another policy from the next step on (a name validated by the sender)."""

    name: str


@dataclass(frozen=True)
class Retire:
    """Finish the sequences held, then unload: a newer engine takes the new requests."""


@dataclass(frozen=True)
class Stop:
    """Wake the engine thread so it sees that it is stopping."""


Command = Submit | Load | Cancel | SetPolicy | Retire | Stop
