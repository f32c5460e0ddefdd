"""Answers on their way to an engine: announced by the web in Redis, withdrawn once an engine
has them, and forgotten after a while if nobody withdraws them."""

from __future__ import annotations

import time

import pytest
import redis

from inference import redis_client
from inference.dispatch import arrivals


@pytest.fixture(autouse=True)
def empty_set():
    r, key = redis_client.client(), arrivals.arriving_key()
    r.delete(key)
    yield
    r.delete(key)


def test_an_announced_request_is_on_the_way_until_it_is_withdrawn():
    first, second = arrivals.announce(), arrivals.announce()
    assert first and second and first != second
    assert set(arrivals.on_the_way()) == {first, second}
    arrivals.withdraw(first)
    assert arrivals.on_the_way() == [second]


def test_a_token_nobody_withdraws_stops_counting_and_the_next_announcement_drops_it():
    stale = "left-behind"
    redis_client.client().zadd(arrivals.arriving_key(), {stale: time.time() - arrivals.ON_THE_WAY_S - 1})
    assert arrivals.on_the_way() == []
    fresh = arrivals.announce()
    assert redis_client.client().zrange(arrivals.arriving_key(), 0, -1) == [fresh.encode()]


def test_the_set_is_the_deployments_own(settings):
    mine, ours = arrivals.announce(), settings.CELERY_TASK_DEFAULT_QUEUE
    settings.CELERY_TASK_DEFAULT_QUEUE = "another-deployment"
    assert arrivals.on_the_way() == []
    settings.CELERY_TASK_DEFAULT_QUEUE = ours
    assert arrivals.on_the_way() == [mine]


def test_an_arrival_is_announced_once_and_its_token_goes_either_to_the_task_or_back():
    arrival = arrivals.Arrival()
    arrival.announce()
    token = arrival.token
    arrival.announce()  # a retried request is the same arrival
    assert arrivals.on_the_way() == [token]
    assert arrival.sent() == token and arrival.token == ""
    arrival.withdraw()  # nothing left to withdraw: the task carries it
    assert arrivals.on_the_way() == [token]

    refused = arrivals.Arrival()
    refused.announce()
    refused.withdraw()
    assert arrivals.on_the_way() == [token]


def test_a_worker_withdraws_the_announced_token_when_handed_or_at_the_latest_when_its_task_ends():
    token = arrivals.announce()
    with arrivals.taken(token, 7) as (carried, handed):
        assert carried == token and arrivals.on_the_way() == [token]
        handed()
        assert arrivals.on_the_way() == []
    other = arrivals.announce()
    with pytest.raises(RuntimeError), arrivals.taken(other, 8):
        raise RuntimeError("the claim failed")
    assert arrivals.on_the_way() == []


def test_an_answer_nobody_announced_counts_from_when_its_worker_takes_it():
    with arrivals.taken("", 9) as (token, handed):
        assert token.startswith("worker-9-") and arrivals.on_the_way() == [token]
        with arrivals.taken("", 10) as (second, _):
            assert set(arrivals.on_the_way()) == {token, second}
        assert arrivals.on_the_way() == [token]  # the second's task ended before it reached an engine
        handed()
        handed()  # once only
        assert arrivals.on_the_way() == []
    assert redis_client.client().zcard(arrivals.arriving_key()) == 0  # a worker's own never go to Redis


def test_with_redis_down_nothing_is_announced_and_the_engine_is_told_only_of_its_own(monkeypatch):
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.05)
    monkeypatch.setattr(redis_client, "client", lambda: down)
    monkeypatch.setattr(arrivals, "_poll_client", lambda: down)
    assert arrivals.announce() == ""
    arrivals.withdraw("anything")  # no error: a token left behind expires
    with arrivals.taken("", 11) as (token, _):
        assert arrivals.on_the_way() == [token]
