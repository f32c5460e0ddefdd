"""The Scheduler: queues, slots, and the policy chosen by name (the policies: test_policies.py)."""

from __future__ import annotations

import pytest

from inference.engine.policies import POLICIES, Chunked, Serial
from inference.engine.scheduler import Scheduler
from tests.engine.fake_engine import fake_run, make_seq


def test_serial_reports_queue_positions():
    s = Scheduler(policy="serial", n_slots=4, n_batch=64)
    a, b, c = make_seq(1, 4), make_seq(2, 4), make_seq(3, 4)
    for seq in (a, b, c):
        s.add(seq)
    s.schedule()
    assert [s.queue_position(x) for x in (a, b, c)] == [0, 1, 2]


def test_finish_returns_the_slot_for_the_next_sequence():
    s = Scheduler(policy="serial", n_slots=1, n_batch=64)
    a, b = make_seq(1, 4), make_seq(2, 4)
    s.add(a)
    s.add(b)
    s.schedule()
    assert a.slot == 0
    s.finish(a)  # e.g. cancelled mid-prefill
    step = s.schedule()
    assert b.slot == 0 and step.chunks[0].seq is b


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown policy"):
        Scheduler(policy="fastest", n_slots=1, n_batch=8)


def test_the_policy_is_switched_by_name_and_reported_by_name():
    """The worker compares `policy` with the name staff chose, and switches by that name."""
    s = Scheduler(policy="serial", n_slots=2, n_batch=64)
    assert s.policy == "serial" and isinstance(s.current, Serial)
    s.set_policy("chunked")
    assert s.policy == "chunked" and isinstance(s.current, Chunked)
    with pytest.raises(ValueError, match="choose one of serial, continuous, chunked"):  # the first three
        s.set_policy("fastest")
    assert s.policy == "chunked"  # a refused name leaves the policy as it was
    assert list(POLICIES)[:3] == ["serial", "continuous", "chunked"]  # the order of the dashboard's buttons


def test_a_switch_applies_from_the_next_step_to_what_is_already_running():
    s = Scheduler(policy="serial", n_slots=2, n_batch=64)
    a, b = make_seq(1, 4, 3), make_seq(2, 4, 3)
    s.add(a)
    s.add(b)
    assert [c.seq for c in s.schedule().chunks] == [a]
    s.set_policy("continuous")
    assert [c.seq for c in s.schedule().chunks] == [a, b]
    fake_run(s)
    assert not s.has_work()


def test_the_admit_hook_chooses_the_slot_and_may_mark_a_cached_prefix():
    def admit(seq, free_slots, cache_room):
        seq.num_computed = 3  # a prefix the slot already holds
        return free_slots[-1]

    s = Scheduler(policy="continuous", n_slots=3, n_batch=64, admit=admit)
    seq = make_seq(1, 10)
    s.add(seq)
    step = s.schedule()
    assert seq.slot == 2
    assert [(c.n_tokens, c.prefill) for c in step.chunks] == [(7, True)]


def test_nothing_to_run_schedules_no_step():
    for name in POLICIES:
        assert Scheduler(policy=name, n_slots=2, n_batch=64).schedule() is None
