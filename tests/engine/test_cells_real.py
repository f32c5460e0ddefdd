"""Borrowing KV cells on the bundled chat model (SmolLM2-135M, trained for 8,192 tokens), in
process: 2 slots with a share of 1,024 each make one cache of 2,048 cells, which one request may
fill; two that do not fit together run one after the other, and the idle slot's cache gives its
cells up."""

from __future__ import annotations

import pytest
from django.conf import settings

from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, ErrorEvent, PhaseEvent
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns
from tests.engine.test_engine_real import events_until_end
from tests.support import digits

pytestmark = [pytest.mark.integration]

SHARE, SLOTS = 1024, 2
GREEDY = SamplingParams(max_tokens=8, temperature=0.0, repeat_penalty=1.0)


@pytest.fixture(scope="module")
def engine():
    runner = Runner(
        RunnerConfig(
            model_path=settings.BUNDLED_CHAT_MODEL_PATH, n_ctx_seq=SHARE, n_slots=SLOTS, n_batch=512, n_threads=2
        )
    )
    scheduler = Scheduler(policy="chunked", n_slots=SLOTS, n_batch=512, token_budget=512)
    engine = Engine(runner=runner, scheduler=scheduler)
    yield engine
    engine.stop()


def completion(seq_id: int, n_tokens: int, start: int = 0) -> Sequence:
    """A completion of n_tokens digits, asked by person seq_id (a cached prefix serves its owner only)."""
    seq = Sequence(seq_id=seq_id, messages=[], params=GREEDY, clock=PhaseClock(t_arrive=now_ns()), owner=seq_id)
    seq.raw_prompt = digits(n_tokens, start)
    return seq


def test_two_requests_past_a_slots_share_run_one_after_the_other(engine):
    first, second = completion(1, 1500), completion(2, 1500, start=3)
    engine.submit(first)
    engine.submit(second)
    ends = [events_until_end(seq) for seq in (first, second)]
    for events in ends:
        assert isinstance(events[-1], DoneEvent), events[-1]
        assert events[-1].metrics["prompt_tokens"] > SHARE  # past one slot's share
        assert events[-1].metrics["kv_cells"] == events[-1].metrics["prompt_tokens"] + GREEDY.max_tokens
    waited = [seq for seq, events in zip((first, second), ends, strict=True) if _queued(events)]
    assert len(waited) == 1  # 2 x 1,508 cells do not fit in 2,048: one waited for the other's
    together = [step for step in engine.steps if {1, 2} <= set(step["seqs"])]
    assert together == []
    assert all(step["cells"] <= step["cells_total"] == SHARE * SLOTS for step in engine.steps)
    # The first one's slot kept its cells as its owner's reusable prefix; the second, another
    # person's, started in the other slot and needed them: without giving them up, its prompt
    # would not have found cells (llama_decode's "no KV slot") and it would have failed.
    assert (first.slot, second.slot) == (0, 1)
    assert engine.cells() == {"total": 2048, "reserved": 0, "cached": engine.runner.slots.cells(1), "per_request": 2048}
    assert engine.runner.slots.cells(0) == 0


def test_a_prompt_longer_than_the_cache_is_refused_with_the_numbers(engine):
    seq = completion(3, 2100)
    end = events_until_end(seq_submitted(engine, seq))[-1]
    assert isinstance(end, ErrorEvent) and end.code == "context_overflow"
    assert "this model's context holds 2,048 (its cache holds 2,048 cells (2 slots of 1,024)" in end.message
    assert "trained for 8,192" in end.message and "HOMEAI_CONTEXT" in end.message


def seq_submitted(engine: Engine, seq: Sequence) -> Sequence:
    assert engine.submit(seq)
    return seq


def _queued(events) -> bool:
    return any(isinstance(ev, PhaseEvent) and ev.phase == "queued" for ev in events)
