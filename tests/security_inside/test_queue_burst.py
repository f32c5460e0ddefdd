"""The per-person limit on answers waiting is counted inside the transaction that writes the
answer: a burst of requests sent together gets no more than the limit into the line."""

from __future__ import annotations

import contextlib
import threading

import pytest
from django.db import connection

from inference.models import Generation
from inference.services import generations
from infra.errors import ClientError
from tests import factories

LIMIT = 2
BURST = 6


@pytest.mark.django_db(transaction=True)
def test_a_parallel_burst_gets_no_more_than_the_per_person_limit_into_the_line(settings, monkeypatch):
    settings.HOMEAI_MAX_WAITING_PER_USER = LIMIT
    settings.HOMEAI_MAX_WAITING = 100
    user = factories.user()
    # Each request that passed the count waits here for the whole burst: counted outside the
    # insert's transaction, every one of them would pass before any row was written. Counted
    # inside it, the first holds the person's lock here, the others wait for that lock, and the
    # barrier gives up (a few seconds) and lets them through one at a time.
    barrier = threading.Barrier(BURST)
    count = generations._check_waiting_limit

    def count_then_wait(person) -> None:
        count(person)
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=3)

    monkeypatch.setattr(generations, "_check_waiting_limit", count_then_wait)
    admitted, refused, failed = [], [], []

    def send(n: int) -> None:
        try:
            generations.generation_create_api(
                user=user, client="burst", prompt=f"question {n}", model_name="SmolLM2-135M-Instruct.Q4_1.gguf"
            )
            admitted.append(n)
        except ClientError as exc:
            refused.append(exc.code)
        except Exception as exc:  # noqa: BLE001 - reported below, with the test's assertion
            failed.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(n,)) for n in range(BURST)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failed, failed
    assert len(admitted) == LIMIT and refused == ["busy"] * (BURST - LIMIT)
    assert Generation.objects.filter(user=user, status=Generation.Status.QUEUED).count() == LIMIT
