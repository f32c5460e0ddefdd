"""Stop requests, watched by one thread for every answer a worker runs: one round trip to Redis
for all of them, each asked answer stopped once, and nothing stopped while Redis is down."""

from __future__ import annotations

import threading

import pytest
import redis

from inference import redis_client
from inference.worker import cancels

IDS = (910001, 910002, 910003)


@pytest.fixture(autouse=True)
def no_keys():
    r = redis_client.client()
    r.delete(*(redis_client.cancel_key(gid) for gid in IDS))
    yield
    r.delete(*(redis_client.cancel_key(gid) for gid in IDS))


class Counting:
    """A Redis client that counts the round trips made through it."""

    def __init__(self, real):
        self.real, self.round_trips = real, 0

    def pipeline(self, **kwargs):
        pipe, counter = self.real.pipeline(**kwargs), self

        class Pipe:
            def __getattr__(self, name):
                return getattr(pipe, name)

            def execute(self):
                counter.round_trips += 1
                return pipe.execute()

        return Pipe()


def test_one_look_asks_about_every_answer_at_once_and_stops_only_those_asked(monkeypatch):
    counting = Counting(redis_client.client())
    monkeypatch.setattr(redis_client, "client", lambda: counting)
    watch, stopped = cancels.CancelWatch(poll_s=3600), []
    watched = {gid: watch.watch(gid, lambda gid=gid: stopped.append(gid)) for gid in IDS}
    assert watch.check() == [] and counting.round_trips == 1
    redis_client.client().real.set(redis_client.cancel_key(IDS[1]), 1)
    assert watch.check() == [IDS[1]] and stopped == [IDS[1]] and counting.round_trips == 2
    assert watched[IDS[1]].asked_at is not None and watched[IDS[0]].asked_at is None
    # A stopped answer is not asked about (or stopped) again; the others still are.
    assert watch.check() == [] and stopped == [IDS[1]]
    for gid, w in watched.items():
        watch.unwatch(gid, w)
    assert watch.check() == [] and counting.round_trips == 3  # nothing watched: nothing asked


def test_the_thread_stops_an_answer_its_client_asked_to_stop():
    watch, stopped = cancels.CancelWatch(poll_s=0.01), threading.Event()
    watched = watch.watch(IDS[0], stopped.set)
    redis_client.client().set(redis_client.cancel_key(IDS[0]), 1)
    assert stopped.wait(timeout=60)
    watch.unwatch(IDS[0], watched)
    cancels.forget(IDS[0])
    assert not redis_client.client().exists(redis_client.cancel_key(IDS[0]))


def test_a_stop_by_the_deadline_and_one_by_the_client_cancel_once():
    calls = []
    watched = cancels.Watched(lambda: calls.append(1))
    watched.stop()
    watched.stop()
    assert calls == [1] and watched.asked_at is not None


def test_with_redis_down_nothing_is_stopped_and_the_look_says_so_once(monkeypatch, caplog):
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.05)
    monkeypatch.setattr(redis_client, "client", lambda: down)
    watch, stopped = cancels.CancelWatch(poll_s=3600), []
    watch.watch(IDS[0], lambda: stopped.append(IDS[0]))
    assert watch.check() == [] and watch.check() == [] and stopped == []
    assert sum("watching for stopped answers" in r.getMessage() for r in caplog.records) == 1
    cancels.forget(IDS[0])  # and forgetting a key does not raise either


def test_an_unwatched_answers_successor_stays_watched():
    """A second watch of the same answer (a resent task) is not dropped by the first's unwatch."""
    watch = cancels.CancelWatch(poll_s=3600)
    first = watch.watch(IDS[0], lambda: None)
    second = watch.watch(IDS[0], lambda: None)
    watch.unwatch(IDS[0], first)
    redis_client.client().set(redis_client.cancel_key(IDS[0]), 1)
    assert watch.check() == [IDS[0]] and second.asked_at is not None
