"""One answer's run in the worker, against a stand-in engine: whatever fails after the claim, the
answer ends with its text, and an end the watchdog already wrote is not overwritten. (The real
engine and model run through this code in tests/dashboard/chat.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from accounts.keys import api_key_create
from api import answers
from api.auth import authenticate
from api.ollama.parsing import parse_chat
from inference import events
from inference.catalog import Catalog
from inference.dispatch import arrivals, registry
from inference.engine.events import DoneEvent, PhaseEvent, TokenEvent
from inference.models import Generation, Message
from inference.services.generations import generation_create, generation_create_api, generation_enqueue
from inference.worker import stream
from inference.worker.step_relay import StepRelay
from tests import factories
from tests.support import RecordingOutbox

METRICS = {name: 0.0 for name in stream.METRIC_COLUMNS} | {"token_times_ms": [1.0, 2.0], "itl_ms": [1.0]}


class StandInEngine:
    """Answers a submitted sequence with the events a test scripts; says what it was asked."""

    def __init__(self, script=(), *, accepts: bool = True, alive: bool = True, on_submit=None):
        self.runner = SimpleNamespace(config=SimpleNamespace(model_path=Path("stand-in.gguf")))
        self.script, self.accepts, self.thread_alive, self.on_submit = list(script), accepts, alive, on_submit
        self.submitted, self.cancelled, self.seqs = [], [], {}

    def submit(self, seq) -> bool:
        if not self.accepts:
            return False
        self.submitted.append(seq.seq_id)
        self.seqs[seq.seq_id] = seq
        if self.on_submit:
            self.on_submit(seq)
        for event in self.script:
            seq.events.put(event)
        return True

    def cancel(self, seq_id: int) -> None:
        self.cancelled.append(seq_id)


class CancellingEngine(StandInEngine):
    """Answers a cancel as the real engine does: a DoneEvent with finish_reason "cancelled"."""

    def cancel(self, seq_id: int) -> None:
        super().cancel(seq_id)
        self.seqs[seq_id].events.put(DoneEvent(text="slow", finish_reason="cancelled", notice="", metrics=METRICS))


@pytest.fixture
def answer(db):
    return generation_create(user=factories.user(), conversation_id=None, text="Hello?", max_tokens=8)


def run_with(monkeypatch, *engines):
    queue = list(engines)
    monkeypatch.setattr(
        stream.runtime, "get_engine", lambda model_name=None: queue.pop(0) if len(queue) > 1 else queue[0]
    )


def test_a_finished_answer_stores_its_text_and_metrics(answer, monkeypatch):
    done = DoneEvent(text="Hi there", finish_reason="stop", notice="", metrics=METRICS)
    run_with(monkeypatch, StandInEngine([TokenEvent("Hi", 1.0), TokenEvent(" there", 2.0), done]))
    stream.generation_run(generation_id=answer.id)
    answer.refresh_from_db()
    assert answer.status == "done" and answer.message.content == "Hi there"
    assert answer.token_texts == ["Hi", " there"]


def test_an_exception_after_the_claim_ends_the_answer_with_its_text(answer, monkeypatch):
    run_with(monkeypatch, StandInEngine([TokenEvent("Half an ", 1.0), TokenEvent("answer", 2.0)]))
    real_token = stream.events.token

    def token(gid, text, t_ms):
        if text == "answer":
            raise RuntimeError("the relay broke")
        return real_token(gid, text, t_ms)

    monkeypatch.setattr(stream.events, "token", token)
    with pytest.raises(RuntimeError):
        stream.generation_run(generation_id=answer.id)
    answer.refresh_from_db()
    assert answer.status == "error" and answer.error_code == "worker_error"
    assert Message.objects.get(id=answer.message_id).content == "Half an answer"


def test_an_engine_whose_thread_died_ends_the_answer_instead_of_waiting_forever(answer, monkeypatch):
    run_with(monkeypatch, StandInEngine([PhaseEvent("prefill", done=0, total=3)], alive=False))
    stream.generation_run(generation_id=answer.id)
    answer.refresh_from_db()
    assert answer.status == "error" and "text so far is kept" in answer.error_message


def test_an_answer_past_its_deadline_is_cancelled_by_the_worker(answer, monkeypatch, settings):
    settings.HOMEAI_ANSWER_DEADLINE_S = 0
    engine = CancellingEngine([TokenEvent("slow", 1.0)])
    run_with(monkeypatch, engine)
    stream.generation_run(generation_id=answer.id)
    answer.refresh_from_db()
    assert engine.cancelled == [answer.id] and answer.status == "cancelled"


def test_a_retired_engine_hands_the_answer_to_its_successor(answer, monkeypatch):
    done = DoneEvent(text="ok", finish_reason="stop", notice="", metrics=METRICS)
    retired, successor = StandInEngine(accepts=False), StandInEngine([done])
    run_with(monkeypatch, retired, successor)
    stream.generation_run(generation_id=answer.id)
    assert successor.submitted == [answer.id]
    answer.refresh_from_db()
    assert answer.status == "done"


def test_an_announced_answer_carries_its_token_to_the_engine_which_has_it_before_it_is_withdrawn(answer, monkeypatch):
    token = arrivals.announce()
    seen = {}

    def at_submit(seq):
        seen["arrival"], seen["on_the_way"] = seq.arrival, arrivals.on_the_way()

    def at_first_token(gid, text, t_ms):
        seen.setdefault("then", arrivals.on_the_way())
        return real_token(gid, text, t_ms)

    real_token = stream.events.token
    monkeypatch.setattr(stream.events, "token", at_first_token)
    done = DoneEvent(text="Hi", finish_reason="stop", notice="", metrics=METRICS)
    run_with(monkeypatch, StandInEngine([TokenEvent("Hi", 1.0), done], on_submit=at_submit))
    stream.generation_run(generation_id=answer.id, arrival=token)
    assert seen["arrival"] == token and token in seen["on_the_way"]
    assert token not in seen["then"]  # withdrawn once the engine had it, while the answer ran


def test_the_web_hands_the_token_to_the_task_and_an_answer_sent_again_has_none(answer, monkeypatch):
    sent = []
    monkeypatch.setattr(registry.app, "send_task", lambda name, args, queue: sent.append(args))
    generation_enqueue(generation=answer, arrival="abc")
    generation_enqueue(generation=answer)
    assert sent == [(answer.id, "abc"), (answer.id,)]


def test_an_end_the_watchdog_already_wrote_is_kept_but_the_whole_text_is_saved(answer, monkeypatch):
    def interrupted_meanwhile(seq):
        Generation.objects.filter(id=seq.seq_id).update(status="interrupted", error_code="interrupted")

    done = DoneEvent(text="All of it", finish_reason="stop", notice="", metrics=METRICS)
    run_with(monkeypatch, StandInEngine([TokenEvent("All of it", 1.0), done], on_submit=interrupted_meanwhile))
    stream.generation_run(generation_id=answer.id)
    answer.refresh_from_db()
    assert answer.status == "interrupted"
    assert Message.objects.get(id=answer.message_id).content == "All of it"


def test_the_deadline_defaults_to_the_task_time_limit():
    """HOMEAI_TASK_TIME_LIMIT sets both: an answer's deadline, and Celery's limits (which -P threads
    cannot enforce, so the worker's own deadline is what stops an answer)."""
    code = "from django.conf import settings as s; print(s.HOMEAI_ANSWER_DEADLINE_S, s.CELERY_TASK_TIME_LIMIT)"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "homeai.settings", "HOMEAI_TASK_TIME_LIMIT": "123"}
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=Path(__file__).resolve().parents[3],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.split() == ["123", "153"]


def test_a_duplicate_task_of_an_answer_being_written_leaves_it_listed_in_the_heartbeat(answer, monkeypatch):
    """A resent task passes through (its claim fails) while the first still writes the answer:
    its exit must not take the answer off the heartbeat's list, or the watchdog calls it lost."""

    def duplicate_arrives(seq):
        assert stream.in_flight() == [answer.id]
        stream.generation_run(generation_id=answer.id)  # the row is running: a no-op
        assert stream.in_flight() == [answer.id]

    done = DoneEvent(text="Hi.", finish_reason="stop", notice="", metrics=METRICS)
    run_with(monkeypatch, StandInEngine([done], on_submit=duplicate_arrives))
    stream.generation_run(generation_id=answer.id)
    assert Generation.objects.get(id=answer.id).status == "done"
    assert stream.in_flight() == []


@pytest.mark.parametrize(
    ("policy", "options", "speculative"),
    [("ngram", {}, True), ("ngram", {"speculative": False}, False), ("off", {"speculative": True}, False)],
)
def test_speculation_is_on_by_the_servers_policy_and_off_per_request(answer, settings, policy, options, speculative):
    settings.HOMEAI_SPECULATION = policy
    answer.sampling = {**answer.sampling, **options}
    params = stream.sampling_params(answer)
    assert params.speculative is speculative


class QuickEngine(StandInEngine):
    """Runs its script as steps through a step relay, as the engine thread does (Engine._deliver):
    what the relay takes on is queued without waking the task thread. A callable in the script
    runs between two steps."""

    def __init__(self, steps, relay):
        super().__init__()
        self.steps, self.relay = steps, relay

    def submit(self, seq) -> bool:
        self.submitted.append(seq.seq_id)
        seq.events.put(PhaseEvent("load", state="start"))  # queued outside a step, as a model load is
        for step in self.steps:
            if callable(step):
                step()
                continue
            taken = self.relay([(seq, step)])
            seq.deliver(step, quiet=seq.seq_id in taken)
        return True


def _texts(frame: list[dict]) -> list[str]:
    return [e["text"] if e["type"] == events.TOKEN else e["type"].split(".")[-1] for e in frame]


@pytest.fixture
def quick(monkeypatch):
    """A step relay of the test's own whose writes are recorded (the worker's is STEP_RELAY), and
    what the task thread publishes itself (relay.published)."""
    relay = StepRelay(RecordingOutbox())
    relay.published = []
    monkeypatch.setattr(stream, "STEP_RELAY", relay)
    monkeypatch.setattr(stream.broadcast, "publish_for", lambda generation, frame: relay.published.append(frame))
    return relay


def _written(relay) -> list[list[str]]:
    return [_texts(message["events"]) for write in relay.outbox.writes for _, message in write]


def _api_answer():
    return generation_create_api(user=factories.user(), client="curl", prompt="Hello?", max_tokens=8)


@pytest.mark.parametrize(
    ("frame_ms", "frames"),
    [
        (0, [["phase", "a"], ["b"], ["c"], ["phase", "done"]]),
        # The first token at once; the rest held, and sent before the end, which never waits.
        (1000, [["phase", "a"], ["b", "c", "phase", "done"]]),
    ],
)
def test_an_api_answers_tokens_go_in_the_servers_frames_and_its_end_never_waits(
    db, monkeypatch, settings, quick, frame_ms, frames
):
    settings.HOMEAI_API_FRAME_MS = frame_ms
    api = _api_answer()
    done = DoneEvent(text="abc", finish_reason="stop", notice="", metrics=METRICS)
    steps = [[PhaseEvent("decode"), TokenEvent("a", 1.0)], [TokenEvent("b", 2.0)], [TokenEvent("c", 3.0), done]]
    run_with(monkeypatch, QuickEngine(steps, quick))
    stream.generation_run(generation_id=api.id)
    # The load's event, queued outside a step, is the task thread's: it goes with the end here,
    # since this engine queued everything before the thread looked. No token goes twice.
    assert _written(quick) == frames and not quick.published
    api.refresh_from_db()
    assert api.status == "done" and api.token_texts == ["a", "b", "c"]


def test_after_a_failed_write_the_task_thread_sends_what_was_held_then_the_rest_in_order(
    db, monkeypatch, settings, quick
):
    settings.HOMEAI_API_FRAME_MS = 1000
    api = _api_answer()

    def redis_fails_and_a_frame_is_due():
        quick.outbox.works = False
        quick._answers[api.id].due = 0.0

    done = DoneEvent(text="abcd", finish_reason="stop", notice="", metrics=METRICS)
    steps = [[TokenEvent("a", 1.0)], [TokenEvent("b", 2.0)], redis_fails_and_a_frame_is_due]
    steps += [[TokenEvent("c", 3.0)], [TokenEvent("d", 4.0), done]]
    run_with(monkeypatch, QuickEngine(steps, quick))
    stream.generation_run(generation_id=api.id)
    # "b" was held when the write that would carry it with "c" failed: both were left to the
    # task thread, which sent them before "d" (no longer taken on) and the end.
    assert _written(quick) == [["a"]]
    assert [_texts(frame) for frame in quick.published if frame] == [["b", "c", "phase", "d", "done"]]
    api.refresh_from_db()
    assert api.status == "done" and api.token_texts == ["a", "b", "c", "d"]


def test_an_api_answers_end_is_what_its_stored_row_says_and_is_not_read_back(db, monkeypatch, quick):
    api = _api_answer()
    metrics = METRICS | {"output_tokens": 2, "prompt_tokens": 5, "ttft_ms": 12.5, "decode_ms": 3.25}
    done = DoneEvent(text="ab", finish_reason="length", notice="cut short", metrics=metrics)
    run_with(monkeypatch, StandInEngine([TokenEvent("a", 1.0), TokenEvent("b", 2.0), done]))
    with CaptureQueriesContext(connection) as queries:
        stream.generation_run(generation_id=api.id)
    end = [e for write in quick.outbox.writes for _, message in write for e in message["events"]][-1]
    api.refresh_from_db()
    assert api.status == "done" and end == events.done(api, text="ab")
    # Nothing reads the answer's row after the final write: its end is built from what was written.
    table = Generation._meta.db_table
    final = max(i for i, q in enumerate(queries) if q["sql"].startswith("UPDATE") and table in q["sql"])
    assert not [q["sql"] for q in queries[final + 1 :] if q["sql"].startswith("SELECT") and table in q["sql"]]


def test_a_chat_answers_end_carries_the_browser_ttft_sent_while_it_streamed(answer, monkeypatch, quick):
    done = DoneEvent(text="ab", finish_reason="stop", notice="", metrics=METRICS)

    def browser_reports(seq):  # the page's own TTFT arrives while the answer runs
        Generation.objects.filter(id=seq.seq_id).update(client_ttft_ms=42.0)

    run_with(monkeypatch, StandInEngine([TokenEvent("a", 1.0), TokenEvent("b", 2.0), done], on_submit=browser_reports))
    stream.generation_run(generation_id=answer.id)
    end = [e for frame in quick.published for e in frame][-1]
    answer.refresh_from_db()
    assert end["metrics"]["client_ttft_ms"] == 42.0 and end == events.done(answer, text="ab")


def _ollama_chat(address: str, key: str | None = None):
    """An Ollama chat request as a LAN client sends it (with a key, or none)."""
    body = json.dumps({"messages": [{"role": "user", "content": "What did I ask you last?"}], "stream": False})
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return RequestFactory().post("/api/chat", body, "application/json", REMOTE_ADDR=address, **headers)


def test_an_answer_asked_without_a_key_does_not_reuse_the_accounts_cached_prefixes(db, settings, monkeypatch):
    """A LAN guest is the keyless account without a key: its answers must not reuse (and so time,
    through prompt_eval_count) the prefixes the account's own chats left in the cache."""
    settings.HOMEAI_OLLAMA_KEYLESS_USER = "ada"
    ada = factories.user("ada")
    _, key = api_key_create(user=ada)
    held = Catalog(default="m.gguf", holders={"m.gguf": ["box:1"]}, described={}, workers=1)
    monkeypatch.setattr(answers, "serving_state", lambda: held)
    owners = {}

    def run(name, generation):
        def at_submit(seq):
            owners[name] = seq.owner

        done = DoneEvent(text="ok", finish_reason="stop", notice="", metrics=METRICS)
        run_with(monkeypatch, StandInEngine([done], on_submit=at_submit))
        stream.generation_run(generation_id=generation.id)

    def asked(request):
        user = authenticate(request, keyless=True)
        return answers.queue_answer(request, lambda d, m: parse_chat(d, models=m), arrivals.Arrival(), user)[1]

    run("chat", generation_create(user=ada, conversation_id=None, text="My secret plan is ...", max_tokens=8))
    run("keyed", asked(_ollama_chat("192.168.1.20", key)))
    run("guest", asked(_ollama_chat("192.168.1.66")))
    assert owners["chat"] == owners["keyed"] == ada.id  # the account's own answers share its cache
    assert owners["guest"] not in (ada.id, None)
    assert Generation.objects.filter(keyless=True).count() == 1
