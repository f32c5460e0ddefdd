"""The engine thread's quick path for API tokens (step_relay.py): one write per step for every
answer on it, nothing for the others, and an answer leaves it for good when a write fails."""

from __future__ import annotations

from types import SimpleNamespace

from inference import broadcast, events
from inference.engine.events import DoneEvent, PhaseEvent, TokenEvent
from inference.worker.step_relay import StepRelay


class RecordingOutbox:
    def __init__(self, *, works: bool = True):
        self.works, self.writes = works, []

    def connect(self) -> bool:
        return True

    def send_now(self, messages) -> bool:
        if self.works:
            self.writes.append(messages)
        return self.works


def seq(seq_id: int):
    return SimpleNamespace(seq_id=seq_id)


def test_a_steps_tokens_for_every_answer_on_the_quick_path_go_in_one_write():
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    one, two = relay.register(1), relay.register(2)
    t1, t2, t3 = TokenEvent("a", 1.0), TokenEvent("b", 2.0), TokenEvent("c", 3.0)
    decode = PhaseEvent("decode")
    sent = relay([(seq(1), [decode, t1]), (seq(2), [t2]), (seq(3), [t3])])  # 3 is not on it
    assert sent == {1, 2}
    assert len(outbox.writes) == 1
    (group_1, message_1), (group_2, message_2) = outbox.writes[0]
    assert group_1 == broadcast.generation_group(1) and group_2 == broadcast.generation_group(2)
    assert message_1 == {
        "type": broadcast.RELAY_TYPE,
        "events": [
            events.phase(1, "decode"),
            events.token(1, "a", 1.0),
        ],
    }
    assert [e["text"] for e in message_2["events"]] == ["b"]
    # The task thread finds them at the head of what it takes, in order, and only them.
    assert one.was_published(decode) and one.was_published(t1) and not one.was_published(t1)
    assert not two.was_published(t3) and two.was_published(t2)


def test_an_answers_end_is_left_to_its_task_thread():
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    relay.register(1)
    done = DoneEvent(text="a", finish_reason="stop", notice="", metrics={})
    assert relay([(seq(1), [done])]) == set()
    assert outbox.writes == []
    token = TokenEvent("a", 1.0)
    assert relay([(seq(1), [token, done])]) == {1}
    assert [e["type"] for e in outbox.writes[0][0][1]["events"]] == [events.TOKEN]


def test_a_failed_write_takes_its_answers_off_the_quick_path_for_good():
    outbox = RecordingOutbox(works=False)
    relay = StepRelay(outbox)
    answer = relay.register(1)
    assert relay([(seq(1), [TokenEvent("a", 1.0)])]) == set()
    assert not answer.on
    outbox.works = True  # Redis is back: this answer's task thread still publishes the rest
    assert relay([(seq(1), [TokenEvent("b", 2.0)])]) == set()
    assert outbox.writes == []
    assert relay.register(2).on  # a new answer takes the quick path again


def test_an_answer_unregistered_is_not_sent_on():
    outbox = RecordingOutbox()
    relay = StepRelay(outbox)
    relay.register(1)
    relay.unregister(1)
    assert relay([(seq(1), [TokenEvent("a", 1.0)])]) == set()
    assert outbox.writes == []
