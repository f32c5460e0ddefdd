"""The real path: socket -> daphne -> Celery worker -> llama.cpp (bundled model) -> socket."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from websockets.exceptions import InvalidStatus

from inference import redis_client
from inference.dispatch import registry
from inference.metrics import exposition
from inference.models import Generation, Message
from inference.services.generations import (
    generation_cancel,
    generation_create,
    generation_create_api,
    generation_enqueue,
)
from infra.errors import ClientError
from tests.support import ChatSocket, of_type, session_cookie, wait_until

pytestmark = [pytest.mark.integration]

# A prompt the bundled base model keeps answering for a while; ignore_eos makes sure of it.
LONG_PROMPT = "Count from one to three hundred, writing every number in words, separated by commas."
KEEP_GOING = {"ignore_eos": True}


def _done(events: list[dict]) -> dict:
    done = of_type(events, "generation.done")
    assert done, f"no generation.done; last events: {events[-3:]}"
    return done[0]


def test_it_streams_tokens_in_order_and_stores_the_metrics(worker, make_user, connect):
    user = make_user()
    sock = connect(user)
    events = sock.chat("Tell me about the sea.", max_tokens=24)

    assert events[0]["type"] == "generation.queued"
    gid = events[0]["generation"]
    tokens = of_type(events, "generation.token")
    done = _done(events)
    assert tokens and all(t["generation"] == gid for t in tokens)
    assert [t["t_ms"] for t in tokens] == sorted(t["t_ms"] for t in tokens)
    assert events.index(tokens[-1]) < events.index(done)
    streamed = "".join(t["text"] for t in tokens)
    assert done["text"].startswith(streamed.rstrip()[: len(done["text"])]) or streamed.startswith(done["text"])

    generation = Generation.objects.get(id=gid)
    assert generation.status == "done"
    assert generation.message.content == done["text"]
    assert generation.output_tokens == len(tokens) <= 24
    assert len(generation.itl_ms) == generation.output_tokens - 1
    assert len(generation.token_times_ms) == generation.output_tokens
    assert generation.prompt_tokens > 5 and generation.prompt_tps > 0
    assert generation.ttft_ms > 0 and generation.e2e_ms >= generation.ttft_ms
    if generation.output_tokens >= 2:
        assert generation.output_tps > 0 and generation.tpot_ms > 0
        assert generation.tpot_ms == pytest.approx(sum(generation.itl_ms) / len(generation.itl_ms), rel=1e-6)
    # The phase identity of docs/architecture.md, within 1 ms.
    phases = (generation.queue_ms, generation.load_ms, generation.prefill_ms, generation.first_token_ms)
    total = sum(phases) + generation.decode_ms
    assert abs(total - generation.e2e_ms) < 1.0
    assert abs(sum(phases) - generation.ttft_ms) < 1.0
    assert done["metrics"]["ttft_ms"] == pytest.approx(generation.ttft_ms)


def test_a_follow_up_includes_the_history_and_the_browser_ttft_is_stored(worker, make_user, connect):
    user = make_user()
    sock = connect(user)
    first = sock.chat("My name is Ada.", max_tokens=8)
    conversation = first[0]["conversation"]
    second = sock.chat("What is my name?", conversation=conversation, max_tokens=8)
    gen1 = Generation.objects.get(id=first[0]["generation"])
    gen2 = Generation.objects.get(id=second[0]["generation"])
    assert gen2.conversation_id == gen1.conversation_id == conversation
    assert gen2.prompt_tokens > gen1.prompt_tokens + 4  # the earlier turn is in the prompt

    sock.send({"type": "chat.ttft", "generation": gen2.id, "ttft_ms": 123.5})
    assert wait_until(lambda: Generation.objects.get(id=gen2.id).client_ttft_ms == 123.5, timeout=10)


def test_the_first_answer_after_start_pays_the_model_load_and_the_next_does_not(
    worker, make_user, connect, worker_process
):
    worker_process.stop()
    worker_process.start()
    sock = connect(make_user())
    cold = _done(sock.chat("Hello!", max_tokens=4))
    warm = _done(sock.chat("Hello again!", max_tokens=4))
    assert cold["metrics"]["cold"] is True and cold["metrics"]["load_ms"] > 0
    assert warm["metrics"]["cold"] is False and warm["metrics"]["load_ms"] == 0
    events = of_type(sock.chat("And once more.", max_tokens=2), "generation.phase")
    assert not [e for e in events if e["phase"] == "load"]


def test_stop_keeps_the_partial_answer_and_frees_the_engine(worker, make_user, connect):
    sock = connect(make_user())
    sock.send(
        {"type": "chat.send", "conversation": None, "text": LONG_PROMPT, "max_tokens": 2000, "options": KEEP_GOING}
    )
    events = sock.collect(lambda e: e["type"] == "generation.token", timeout=600)
    gid = events[0]["generation"]
    events += sock.collect(lambda e: e["type"] == "generation.token", timeout=30)
    events += sock.collect(lambda e: e["type"] == "generation.token", timeout=30)
    sock.send({"type": "chat.cancel", "generation": gid})
    events += sock.collect(lambda e: e["type"] in ("generation.done", "generation.error"), timeout=30)
    done = _done(events)
    assert done["status"] == "cancelled"
    generation = Generation.objects.get(id=gid)
    assert generation.status == "cancelled" and generation.finish_reason == "cancelled"
    streamed = "".join(t["text"] for t in of_type(events, "generation.token"))
    assert generation.message.content == done["text"] == streamed
    assert streamed.strip()
    assert 3 <= generation.output_tokens < 2000
    # The slot is free again: the next answer runs at once.
    again = sock.chat("Hi", conversation=events[0]["conversation"], max_tokens=4)
    assert _done(again)["status"] == "done"


def _cancelled_requests() -> float:
    families = {f.name: f for f in text_string_to_metric_families(exposition()[0].decode())}
    return sum(s.value for s in families["homeai_requests"].samples if s.labels.get("outcome") == "cancelled")


def test_cancelling_a_queued_answer_means_it_never_runs(worker, make_user, connect):
    user = make_user()
    counted = _cancelled_requests()
    generation = generation_create(user=user, conversation_id=None, text="never sent to a worker")
    sock = connect(user)
    generation_cancel(user=user, generation_id=generation.id)
    done = sock.collect(lambda e: e["type"] == "generation.done", timeout=10)[-1]
    assert done["generation"] == generation.id and done["status"] == "cancelled"
    assert _cancelled_requests() == counted + 1

    # Its task comes after all (as the watchdog resends a waiting answer's): the worker takes it
    # before the next message's, and must not run it.
    registry.send_generation(generation.id, generation.model_name)
    after = sock.chat("Hi", max_tokens=4)
    assert _done(after)["status"] == "done"
    generation.refresh_from_db()
    assert generation.status == "cancelled" and generation.attempts == 0
    assert not generation.output_tokens and generation.message.content == "" and generation.worker == ""


def test_a_killed_worker_leaves_the_partial_answer_interrupted_and_tells_the_browser(
    worker, make_user, connect, health
):
    sock = connect(make_user())
    sock.send(
        {"type": "chat.send", "conversation": None, "text": LONG_PROMPT, "max_tokens": 2000, "options": KEEP_GOING}
    )
    events = sock.collect(lambda e: e["type"] == "generation.token", timeout=600)
    gid = events[0]["generation"]
    # Let a few save intervals pass so the partial answer is on disk.
    events += sock.collect(lambda e: e["type"] == "generation.token" and e["t_ms"] > events[-1]["t_ms"] + 800, 60)
    worker.kill()
    events += sock.collect(lambda e: e["type"] == "generation.error", timeout=15)
    error = events[-1]
    assert error["generation"] == gid and error["code"] == "interrupted"
    assert "worker stopped" in error["message"]
    generation = Generation.objects.get(id=gid)
    assert generation.status == "interrupted"
    saved = Message.objects.get(id=generation.message_id).content
    # The end carries the text as saved, which the page then shows. The stream and the save are
    # both the one answer cut short: either may be ahead (tokens wait up to 100 ms for a frame, and
    # the text is saved every few hundred ms), never different.
    assert saved.strip() and error["text"] == saved
    streamed = "".join(t["text"] for t in of_type(events, "generation.token"))
    assert streamed.startswith(saved) or saved.startswith(streamed), (streamed[-80:], saved[-80:])
    assert health()["workers"]["count"] == 0


def test_a_message_sent_while_no_worker_runs_is_kept_and_answered_when_one_starts(worker, make_user, connect):
    sock = connect(make_user())
    worker.stop()
    sock.send({"type": "chat.send", "conversation": None, "text": "Are you there?", "max_tokens": 4})
    notice = sock.collect(lambda e: e["type"] == "generation.phase" and e["phase"] == "notice", timeout=20)[-1]
    assert "No worker is running" in notice["message"]
    assert Generation.objects.get(id=notice["generation"]).status == "queued"
    worker.start()
    done = sock.collect(lambda e: e["type"] == "generation.done", timeout=600)[-1]
    assert done["generation"] == notice["generation"] and done["status"] == "done"


def test_an_answer_whose_task_was_lost_is_sent_again_and_answered(worker, make_user, connect):

    user = make_user()
    sock = connect(user)
    # Stored but never sent: what a web process that died at the wrong moment leaves behind.
    generation = generation_create(user=user, conversation_id=None, text="Hello?", max_tokens=3)
    done = sock.collect(lambda e: e["type"] == "generation.done", timeout=60)[-1]
    assert done["generation"] == generation.id and done["status"] == "done"


def test_a_second_user_cannot_read_continue_cancel_or_watch_the_first_users_chat(
    worker, make_user, connect, live_server_url
):

    alice, bob = make_user("alice"), make_user("bob")
    alice_sock, bob_sock = connect(alice), connect(bob)
    alice_events = alice_sock.chat("A secret about the moon.", max_tokens=8)
    conversation, gid = alice_events[0]["conversation"], alice_events[0]["generation"]

    client = Client()
    client.force_login(bob)
    assert client.get(f"/chat/{conversation}/").status_code == 404
    assert client.post(f"/chat/{conversation}/delete/").status_code == 404
    assert "A secret" not in client.get("/chat/").content.decode()

    bob_sock.send({"type": "chat.send", "conversation": conversation, "text": "continue it"})
    assert bob_sock.recv() == {
        "type": "generation.error",
        "generation": None,
        "code": "not_found",
        "message": "That conversation does not exist.",
    }
    for message in ({"type": "chat.cancel", "generation": gid}, {"type": "chat.ttft", "generation": gid, "ttft_ms": 1}):
        bob_sock.send(message)
        assert bob_sock.recv()["code"] == "not_found"

    # While Alice streams another answer, Bob's socket receives none of it.
    alice_sock.chat("Tell me more.", conversation=conversation, max_tokens=8)
    bob_sock.send({"type": "chat.ttft", "generation": -1, "ttft_ms": 1})
    assert bob_sock.recv()["code"] == "not_found"  # the very next thing Bob gets is his own reply
    assert Message.objects.filter(conversation_id=conversation).count() == 4


BAD_INPUTS = [
    ("not json at all", "bad_json"),
    ("[1, 2, 3]", "bad_request"),
    ('{"type": "chat.dance"}', "unknown_type"),
    ('{"text": "no type"}', "unknown_type"),
    ('{"type": "chat.send", "conversation": null, "text": "   "}', "empty_message"),
    ('{"type": "chat.send", "conversation": null}', "bad_request"),
    ('{"type": "chat.send", "conversation": null, "text": "hi", "max_tokens": 0}', "bad_request"),
    ('{"type": "chat.send", "conversation": null, "text": "hi", "max_tokens": "lots"}', "bad_request"),
    ('{"type": "chat.send", "conversation": 999999, "text": "hi"}', "not_found"),
    ('{"type": "chat.send", "conversation": "1", "text": "hi"}', "not_found"),
    ('{"type": "chat.cancel", "generation": 424242}', "not_found"),
    ('{"type": "chat.ttft", "generation": null, "ttft_ms": 5}', "not_found"),
]


def test_every_bad_input_gets_a_clear_error_and_the_socket_keeps_working(worker, make_user, connect, settings):
    sock = connect(make_user())
    for raw, code in BAD_INPUTS:
        sock.send_raw(raw)
        reply = sock.recv(timeout=10)
        assert reply["type"] == "generation.error" and reply["code"] == code, raw
        assert reply["message"] and "Traceback" not in reply["message"]
    sock.send({"type": "chat.send", "conversation": None, "text": "x" * (settings.HOMEAI_MAX_PROMPT_CHARS + 1)})
    reply = sock.recv()
    assert reply["code"] == "too_long" and f"{settings.HOMEAI_MAX_PROMPT_CHARS:,}" in reply["message"]
    # Still usable after all of that.
    assert _done(sock.chat("Hello", max_tokens=3))["status"] == "done"


def test_a_second_message_while_an_answer_streams_is_refused_politely(worker, make_user, connect):
    sock = connect(make_user())
    sock.send({"type": "chat.send", "conversation": None, "text": LONG_PROMPT, "max_tokens": 60, "options": KEEP_GOING})
    queued = sock.collect(lambda e: e["type"] == "generation.queued")[-1]
    sock.send({"type": "chat.send", "conversation": queued["conversation"], "text": "and another"})
    events = sock.collect(lambda e: e["type"] == "generation.error" and e["generation"] is None, timeout=60)
    assert events[-1]["code"] == "busy"
    sock.collect(lambda e: e["type"] == "generation.done" and e["generation"] == queued["generation"], timeout=600)


def test_sockets_without_login_or_from_another_origin_are_refused(live_server_url, make_user, transactional_db):

    with pytest.raises(InvalidStatus):
        ChatSocket(live_server_url, None)
    with pytest.raises(InvalidStatus):
        ChatSocket(live_server_url, session_cookie(make_user()), origin="http://evil.example")


def test_healthz_reports_database_redis_worker_and_model(worker, health, transactional_db):
    report = health()
    assert report["status"] == "ok"
    assert report["database"]["ok"] and report["redis"]["ok"]
    assert report["workers"]["count"] >= 1 and report["workers"]["ok"]
    assert report["model"]["present"] is True


def test_past_the_waiting_limit_a_new_message_is_refused_as_busy(make_user, settings):

    settings.HOMEAI_MAX_WAITING = 2
    user = make_user()
    for _ in range(2):
        generation_create(user=user, conversation_id=None, text="waiting in line")
    with pytest.raises(ClientError) as excinfo:
        generation_create(user=user, conversation_id=None, text="one too many")
    assert excinfo.value.code == "busy" and "2 answers are already waiting" in excinfo.value.message
    Generation.objects.update(status="cancelled")


def test_sampling_options_are_checked_and_stored(worker, make_user, connect):
    sock = connect(make_user())
    for options, words in [
        ({"temperature": -1}, "temperature must be a number from 0.0 to 5.0"),
        ({"top_k": 2.5}, "top_k must be a whole number from 0 to 1000"),
        ({"warp": 9}, "Unknown option 'warp'"),
        ({"stop": [""]}, "stop must be a string or a list"),
        ("hot", "options must be an object"),
    ]:
        sock.send({"type": "chat.send", "conversation": None, "text": "hi", "options": options})
        reply = sock.recv()
        assert reply["code"] == "bad_request" and words in reply["message"], options
    events = sock.chat("Name a colour.", max_tokens=6, options={"temperature": 0, "seed": 7, "stop": ["\n\n"]})
    generation = Generation.objects.get(id=events[0]["generation"])
    assert generation.sampling == {"temperature": 0.0, "seed": 7, "stop": ["\n\n"]}
    assert _done(events)["status"] == "done"


def test_staff_can_switch_every_workers_policy_and_others_cannot(worker, make_user, health):

    client = Client()
    client.force_login(make_user("carol"))
    assert client.post("/engine/policy/", {"policy": "serial"}).status_code == 302  # to the admin login
    admin = get_user_model().objects.create_superuser("root", password="x" * 12)
    client.force_login(admin)
    assert client.post("/engine/policy/", {"policy": "fastest"}).status_code == 400
    try:
        assert client.post("/engine/policy/", {"policy": "serial"}).json() == {"policy": "serial"}
        assert wait_until(lambda: health()["workers"]["items"][0]["policy"] == "serial", timeout=15)
    finally:
        client.post("/engine/policy/", {"policy": "chunked"})
        assert wait_until(lambda: health()["workers"]["items"][0]["policy"] == "chunked", timeout=15)
        redis_client.client().delete(redis_client.POLICY_KEY)


def test_staff_start_the_shared_machine_demo_and_the_document_arrives_while_the_chats_write(worker, make_user, settled):

    client = Client()
    client.force_login(make_user("carol"))
    assert client.post("/engine/demo/").status_code == 302  # staff only: to the admin login
    admin = get_user_model().objects.create_superuser("root", password="x" * 12)
    client.force_login(admin)
    chat_ids = client.post("/engine/demo/").json()["generations"]
    assert len(chat_ids) == 3
    assert wait_until(lambda: Generation.objects.filter(client="demo", status="done").count() == 4, timeout=600)
    chats = list(Generation.objects.filter(id__in=chat_ids))
    [doc] = Generation.objects.filter(client="demo").exclude(id__in=chat_ids)
    assert doc.user == admin and doc.prompt_tokens > 1000
    assert all(c.output_tokens == 200 and c.conversation.source == "api" for c in chats)
    # The document came while every chat was writing: after each one's first token, before its last.
    for chat in chats:
        first_ns = chat.t_arrive_ns + chat.ttft_ms * 1e6
        last_ns = chat.t_arrive_ns + chat.e2e_ms * 1e6
        assert first_ns < doc.t_arrive_ns < last_ns


def test_api_requests_run_as_their_own_conversations_out_of_the_chat_sidebar(worker, make_user, settled):

    user = make_user()
    chat = generation_create_api(
        user=user,
        client="scripts",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi."}],
        max_tokens=6,
    )
    raw = generation_create_api(user=user, client="scripts", prompt="The capital of France is", max_tokens=6)
    for generation in (chat, raw):
        generation_enqueue(generation=generation)
    ended = lambda: not Generation.objects.filter(status__in=Generation.ACTIVE).exists()  # noqa: E731
    assert wait_until(ended, timeout=600)
    chat.refresh_from_db()
    raw.refresh_from_db()
    assert chat.status == raw.status == "done"
    assert raw.raw_prompt and raw.prompt_tokens < chat.prompt_tokens  # no turn markup around it
    assert [m.role for m in chat.conversation.messages.all()] == ["system", "user", "assistant"]
    client = Client()
    client.force_login(user)
    assert "API · scripts" not in client.get("/chat/").content.decode()
