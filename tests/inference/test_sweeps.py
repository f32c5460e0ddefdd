"""The web side's repairs: an answer a living worker no longer runs is ended, not left running."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from documents import services as document_services
from documents.models import IndexJob
from inference.dispatch import registry
from inference.models import Generation, Message
from inference.services import indexing, sweeps
from inference.services.generations import generation_create
from tests import factories

WORKER = "box:1"
HELD = [{"name": settings.HOMEAI_MODEL_PATH.name}]  # what WORKER's heartbeat says it holds


@pytest.fixture
def running(db):
    generation = generation_create(user=factories.user(), conversation_id=None, text="Hi", max_tokens=4)
    Generation.objects.filter(id=generation.id).update(status="running", worker=WORKER)
    yield generation
    registry.withdraw(WORKER)


def sweep_lost(suspects: dict[int, float]) -> list[Generation]:
    return sweeps.generations_interrupt_lost(workers=registry.live_workers(), suspects=suspects)


def beat(t: float, answers: list[int]) -> None:
    status = {"worker": WORKER, "time": t, "answers": answers}
    registry.beat(WORKER, status, ttl=30)


def test_an_answer_missing_from_two_beats_of_a_living_worker_is_interrupted(running):
    suspects: dict[int, float] = {}
    beat(100.0, [])  # written before the claim, maybe: not yet a loss
    assert sweep_lost(suspects) == []
    assert Generation.objects.get(id=running.id).status == "running"
    beat(101.0, [])  # a later beat still leaves it out
    [lost] = sweep_lost(suspects)
    assert lost.id == running.id
    assert Generation.objects.get(id=running.id).status == "interrupted" and suspects == {}


def test_an_answer_its_worker_reports_is_never_touched(running):
    suspects: dict[int, float] = {}
    for t in (100.0, 101.0, 102.0):
        beat(t, [running.id])
        assert sweep_lost(suspects) == []
    assert Generation.objects.get(id=running.id).status == "running"


def test_a_suspect_that_shows_up_in_the_next_beat_is_forgotten(running):
    suspects: dict[int, float] = {}
    beat(100.0, [])
    sweep_lost(suspects)
    beat(101.0, [running.id])
    assert sweep_lost(suspects) == [] and suspects == {}


def test_a_worker_missing_from_one_reading_is_not_yet_gone(running, settings, monkeypatch):
    """A Redis restart loses every heartbeat at once; the living workers write theirs again
    within a quarter of the TTL, so one empty reading must not end their answers."""
    clock = [1000.0]
    monkeypatch.setattr(sweeps.time, "monotonic", lambda: clock[0])
    missing: dict[str, float] = {}
    assert sweeps.generations_interrupt_orphans(workers={}, missing=missing) == []
    assert Generation.objects.get(id=running.id).status == "running" and WORKER in missing
    clock[0] += settings.HOMEAI_WORKER_TTL / 2
    beat(101.0, [running.id])  # it beats again: forgotten
    assert sweeps.generations_interrupt_orphans(workers=registry.live_workers(), missing=missing) == []
    assert missing == {}


def _orphan_after_a_ttl(settings, monkeypatch) -> list[Generation]:
    clock = [1000.0]
    monkeypatch.setattr(sweeps.time, "monotonic", lambda: clock[0])
    missing: dict[str, float] = {}
    sweeps.generations_interrupt_orphans(workers={}, missing=missing)
    clock[0] += settings.HOMEAI_WORKER_TTL
    return sweeps.generations_interrupt_orphans(workers={}, missing=missing)


def test_a_worker_missing_for_a_whole_ttl_is_gone_and_its_answer_interrupted_with_its_text(
    running, settings, monkeypatch
):
    Message.objects.filter(id=running.message_id).update(content="Half an ans")
    [orphan] = _orphan_after_a_ttl(settings, monkeypatch)
    assert orphan.id == running.id
    generation = Generation.objects.select_related("message").get(id=running.id)
    assert generation.status == "interrupted" and generation.error_message == sweeps.INTERRUPTED_MESSAGE
    assert generation.message.content == "Half an ans"


def test_an_answer_whose_worker_died_before_its_first_word_starts_again_once(running, settings, monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr(registry, "send_generation", lambda gid, model: sent.append(gid))
    Generation.objects.filter(id=running.id).update(attempts=1)
    assert _orphan_after_a_ttl(settings, monkeypatch) == []
    generation = Generation.objects.get(id=running.id)
    assert generation.status == "queued" and generation.worker == "" and sent == [running.id]
    # A second worker dies on it too: now it ends, rather than taking down worker after worker.
    Generation.objects.filter(id=running.id).update(status="running", worker=WORKER, attempts=2)
    [orphan] = _orphan_after_a_ttl(settings, monkeypatch)
    assert Generation.objects.get(id=running.id).status == "interrupted" and sent == [running.id]


def test_after_redis_failed_every_waiting_answer_is_sent_again_at_once(db, monkeypatch):
    """A Redis restart without persistence empties the task queue: the first good reading with a
    worker alive sends every queued answer's task again, however recent."""
    queued = generation_create(user=factories.user(), conversation_id=None, text="Hi", max_tokens=4)
    sent: list[int] = []
    monkeypatch.setattr(registry, "send_generation", lambda gid, model: sent.append(gid))
    readings = iter([RuntimeError("Redis down"), {WORKER: {"time": 1.0, "answers": [], "models": HELD}}])

    def live_workers():
        reading = next(readings)
        if isinstance(reading, Exception):
            raise reading
        return reading

    monkeypatch.setattr(registry, "live_workers", live_workers)
    memory = sweeps.SweepMemory()
    with pytest.raises(RuntimeError):
        sweeps.sweep(memory)
    assert memory.redis_failed
    sweeps.sweep(memory)
    assert sent == [queued.id] and not memory.redis_failed


def test_a_long_wait_sends_the_task_again_every_resend_period(db, settings, monkeypatch):
    queued = generation_create(user=factories.user(), conversation_id=None, text="Hi", max_tokens=4)
    Generation.objects.filter(id=queued.id).update(created_at=timezone.now() - timedelta(hours=1))
    sent: list[int] = []
    monkeypatch.setattr(registry, "send_generation", lambda gid, model: sent.append(gid))
    clock = [1000.0]
    monkeypatch.setattr(sweeps.time, "monotonic", lambda: clock[0])
    resent: dict[int, float] = {}
    workers = {WORKER: {"time": 1.0, "models": HELD}}
    sweeps.generations_resend_stale(workers=workers, resent=resent)
    sweeps.generations_resend_stale(workers=workers, resent=resent)
    assert sent == [queued.id]  # once per period
    clock[0] += settings.HOMEAI_RESEND_AFTER_S
    sweeps.generations_resend_stale(workers=workers, resent=resent)
    assert sent == [queued.id, queued.id]


def test_an_answer_for_a_model_no_living_worker_holds_waits_and_its_person_is_told_once(db, monkeypatch):
    """Workers are alive, but none holds the answer's model (its machine is off): its task is
    not sent again (it waits in the model's queue), and the person is told which model waits."""
    queued = generation_create(user=factories.user(), conversation_id=None, text="Hi", max_tokens=4)
    Generation.objects.filter(id=queued.id).update(
        created_at=timezone.now() - timedelta(hours=1), model_name="elsewhere.gguf"
    )
    sent: list[int] = []
    told: list[dict] = []
    monkeypatch.setattr(registry, "send_generation", lambda gid, model: sent.append(gid))
    monkeypatch.setattr(sweeps.broadcast, "publish_for", lambda generation, batch: told.extend(batch))
    workers = {WORKER: {"time": 1.0, "models": HELD}}
    notified: set[int] = set()
    for _ in range(2):
        sweeps.generations_resend_stale(workers=workers, resent={})
        sweeps.generations_notify_no_worker(workers=workers, notified=notified)
    assert sent == []
    [notice] = told
    assert "elsewhere.gguf" in notice["message"] and notice["generation"] == queued.id
    # A worker holding it starts: now its task is sent again.
    workers[WORKER]["models"] = HELD + [{"name": "elsewhere.gguf"}]
    sweeps.generations_resend_stale(workers=workers, resent={})
    sweeps.generations_notify_no_worker(workers=workers, notified=notified)
    assert sent == [queued.id] and notified == set()


def test_an_index_job_whose_worker_died_goes_on_as_a_new_job_without_anyone_asking(db, settings, monkeypatch):
    """Without the periodic re-scan, nothing else would notice: the job would read "running"
    until someone pressed Index again."""
    clock = [1000.0]
    monkeypatch.setattr(sweeps.time, "monotonic", lambda: clock[0])
    sent: list[int] = []
    monkeypatch.setattr(registry, "send_index", lambda job_id, *args, **kwargs: sent.append(job_id))
    told: list[dict] = []
    monkeypatch.setattr(indexing.broadcast, "publish_collection", lambda _collection, events: told.extend(events))
    owner = factories.user("ada")
    collection = document_services.collection_create(owner=owner, name="Letters")
    job = IndexJob.objects.create(collection=collection, status="running", worker="gone:1", requested_by=owner)
    holder = {"box:2": {"models": [{"name": settings.BUNDLED_EMBEDDING_MODEL_PATH.name}]}}
    missing: dict[str, float] = {}

    assert sweeps.documents_resume_orphans(workers=holder, missing=missing) == []  # one reading: not yet gone
    clock[0] += settings.HOMEAI_WORKER_TTL
    assert sweeps.documents_resume_orphans(workers={}, missing=missing) == []  # gone, but no one to go on
    assert IndexJob.objects.get(id=job.id).status == "running" and sent == []
    [new] = sweeps.documents_resume_orphans(workers=holder, missing=missing)
    assert IndexJob.objects.get(id=job.id).status == "interrupted"
    assert IndexJob.objects.get(id=new).status == "queued" and IndexJob.objects.get(id=new).requested_by == owner
    assert sent == [new] and (told[-1]["job"], told[-1]["status"]) == (new, "queued")
    assert sweeps.documents_resume_orphans(workers=holder, missing=missing) == []  # once
