"""The web side's repairs: an answer a living worker no longer runs is ended, not left running."""

from __future__ import annotations

import json

import pytest

from inference import redis_client
from inference.models import Generation
from inference.services import sweeps
from inference.services.generations import generation_create
from inference.worker import registry
from tests import factories

WORKER = "box:1"


@pytest.fixture
def running(db):
    generation = generation_create(user=factories.user(), conversation_id=None, text="Hi", max_tokens=4)
    Generation.objects.filter(id=generation.id).update(status="running", worker=WORKER)
    yield generation
    redis_client.client().delete(redis_client.worker_key(WORKER))


def sweep_lost(suspects: dict[int, float]) -> list[Generation]:
    return sweeps.generations_interrupt_lost(workers=registry.live_workers(), suspects=suspects)


def beat(t: float, answers: list[int]) -> None:
    status = {"worker": WORKER, "time": t, "answers": answers}
    redis_client.client().set(redis_client.worker_key(WORKER), json.dumps(status), ex=30)


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
