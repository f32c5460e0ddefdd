"""The engine thread's quick path for API tokens (step_relay.py): one write per step for every
answer on it, nothing for the others, frames that hold tokens but never the first, and an answer
that leaves it for good when a write fails."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from inference import broadcast, events
from inference.engine.events import DoneEvent, PhaseEvent, TokenEvent
from inference.worker import step_relay
from inference.worker.step_relay import StepRelay
from tests.support import RecordingOutbox


def seq(seq_id: int):
    return SimpleNamespace(seq_id=seq_id)


def texts(message: dict) -> list[str]:
    return [e.get("text", e["type"]) for e in message["events"]]


@pytest.fixture
def clock(monkeypatch):
    now = SimpleNamespace(t=100.0)
    monkeypatch.setattr(step_relay.time, "monotonic", lambda: now.t)
    return now


def test_a_steps_tokens_for_every_answer_on_the_quick_path_go_in_one_write():
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    one, two = relay.register(1), relay.register(2)
    t1, t2, t3 = TokenEvent("a", 1.0), TokenEvent("b", 2.0), TokenEvent("c", 3.0)
    decode = PhaseEvent("decode")
    taken = relay([(seq(1), [decode, t1]), (seq(2), [t2]), (seq(3), [t3])])  # 3 is not on it
    assert taken == {1, 2}
    assert len(outbox.writes) == 1
    (group_1, message_1), (group_2, message_2) = outbox.writes[0]
    assert group_1 == broadcast.generation_group(1) and group_2 == broadcast.generation_group(2)
    assert message_1 == {"type": broadcast.RELAY_TYPE, "events": [events.phase(1, "decode"), events.token(1, "a", 1.0)]}
    assert texts(message_2) == ["b"]
    # The task threads find them at the head of what they take, in order, and only them.
    assert one.took(decode) and one.took(t1) and not one.took(t1)
    assert not two.took(t3) and two.took(t2) and one.held == two.held == []


def test_an_answers_end_is_left_to_its_task_thread():
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    answer = relay.register(1)
    done = DoneEvent(text="a", finish_reason="stop", notice="", metrics={})
    assert relay([(seq(1), [done])]) == set()
    assert outbox.writes == []
    assert relay([(seq(1), [TokenEvent("a", 1.0), done])]) == {1}
    assert [e["type"] for e in outbox.writes[0][0][1]["events"]] == [events.TOKEN]
    assert len(answer.taken) == 1


def test_a_frame_holds_the_tokens_that_come_within_its_time_of_the_last_one(clock):
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    answer = relay.register(1, frame_every_s=0.05)
    assert relay([(seq(1), [TokenEvent("a", 1.0)])]) == {1}  # the first token: at once
    clock.t += 0.02
    assert relay([(seq(1), [TokenEvent("b", 2.0)])]) == {1}  # held, yet taken on (no wake-up)
    clock.t += 0.02
    assert relay([(seq(1), [TokenEvent("c", 3.0)])]) == {1}
    assert [texts(w[0][1]) for w in outbox.writes] == [["a"]]
    assert [e.text for e in answer.held] == ["b", "c"] and len(answer.taken) == 3
    clock.t += 0.02  # 60 ms after the last frame: this step's token goes with the held ones
    relay([(seq(1), [TokenEvent("d", 4.0)])])
    assert [texts(w[0][1]) for w in outbox.writes] == [["a"], ["b", "c", "d"]]
    assert answer.held == []


def test_the_prompts_progress_never_holds_the_first_token_back(clock):
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    relay.register(1, frame_every_s=1.0)
    relay([(seq(1), [PhaseEvent("prefill", done=3, total=6)])])
    clock.t += 0.001
    relay([(seq(1), [PhaseEvent("decode"), TokenEvent("a", 1.0)])])
    assert [texts(w[0][1]) for w in outbox.writes] == [[events.PHASE], [events.PHASE, "a"]]


def test_answers_in_one_step_keep_frames_of_their_own(clock):
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    relay.register(1, frame_every_s=0.05)
    relay.register(2)  # no frames
    relay([(seq(1), [TokenEvent("a", 1.0)]), (seq(2), [TokenEvent("x", 1.0)])])
    clock.t += 0.01
    relay([(seq(1), [TokenEvent("b", 2.0)]), (seq(2), [TokenEvent("y", 2.0)])])
    assert [[texts(m) for _, m in w] for w in outbox.writes] == [[["a"], ["x"]], [["y"]]]


def test_a_failed_write_leaves_what_was_held_to_the_task_thread_and_the_answer_off_the_quick_path(clock):
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    answer = relay.register(1, frame_every_s=0.05)
    relay([(seq(1), [TokenEvent("a", 1.0)])])
    clock.t += 0.01
    relay([(seq(1), [TokenEvent("b", 2.0)])])  # held
    outbox.works = False
    clock.t += 0.05
    assert relay([(seq(1), [TokenEvent("c", 3.0)])]) == {1}  # taken on, but the write failed
    assert not answer.on and [e["text"] for e in answer.take_frame()] == ["b", "c"] and len(answer.taken) == 3
    outbox.works = True  # Redis is back: this answer's task thread still publishes the rest
    assert relay([(seq(1), [TokenEvent("d", 4.0)])]) == set()
    assert [texts(w[0][1]) for w in outbox.writes] == [["a"]]
    assert relay.register(2).on  # a new answer takes the quick path again


def test_an_answer_unregistered_is_not_sent_on():
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    relay.register(1)
    relay.unregister(1)
    assert relay([(seq(1), [TokenEvent("a", 1.0)])]) == set()
    assert outbox.writes == []
