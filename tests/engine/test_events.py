"""The engine's events: what reaches the browser must stay the wire format it was."""

from __future__ import annotations

import pytest

from inference.engine.events import DoneEvent, ErrorEvent, FinalEvent, PhaseEvent, TokenEvent


@pytest.mark.parametrize(
    ("event", "wire"),
    [
        (PhaseEvent("load", state="start"), {"phase": "load", "state": "start"}),
        (PhaseEvent("load", state="done", ms=812.5), {"phase": "load", "state": "done", "ms": 812.5}),
        (PhaseEvent("notice", message="Dropped 2."), {"phase": "notice", "message": "Dropped 2."}),
        (PhaseEvent("queued", position=0), {"phase": "queued", "position": 0}),
        (PhaseEvent("prefill", done=64, total=300), {"phase": "prefill", "done": 64, "total": 300}),
        (PhaseEvent("decode"), {"phase": "decode"}),
    ],
)
def test_a_phase_goes_on_the_wire_with_only_the_fields_it_carries(event, wire):
    assert event.as_dict() == wire


def test_the_final_events_are_told_apart_by_type():
    done = DoneEvent(text="Paris.", finish_reason="stop", notice="", metrics={"output_tokens": 2})
    error = ErrorEvent("context_overflow", "Too long.")
    assert isinstance(done, FinalEvent) and isinstance(error, FinalEvent)
    assert not isinstance(TokenEvent("Paris", t_ms=12.0), FinalEvent)
    assert not isinstance(PhaseEvent("decode"), FinalEvent)
