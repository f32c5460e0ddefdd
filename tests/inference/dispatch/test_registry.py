"""The heartbeats the web reads (registry.py), on the real Redis: who is alive, found through the
workers' index rather than a scan of the keyspace."""

from __future__ import annotations

import uuid

import pytest

from inference import redis_client
from inference.dispatch import registry


@pytest.fixture
def name():
    name = f"registry-test:{uuid.uuid4().hex[:8]}"
    yield name
    registry.withdraw(name)


def test_a_worker_is_alive_while_its_heartbeat_lasts_and_gone_at_once_when_it_stops(name):
    registry.beat(name, {"running": 1, "models": [{"name": "m.gguf"}]}, ttl=30)
    assert registry.live_workers()[name] == {"running": 1, "models": [{"name": "m.gguf"}]}
    registry.beat(name, {"running": 2}, ttl=30)  # the latest beat is what is read
    assert registry.live_workers()[name] == {"running": 2}
    registry.withdraw(name)
    assert name not in registry.live_workers()


def test_a_worker_whose_heartbeat_expired_is_not_alive_and_leaves_the_index(name):
    registry.beat(name, {}, ttl=30)
    redis_client.client().delete(redis_client.worker_key(name))  # as when its heartbeat expires
    assert name not in registry.live_workers()
    assert not redis_client.client().sismember(redis_client.WORKERS_KEY, name)


def test_an_unreadable_heartbeat_still_counts_as_a_living_worker(name):
    registry.beat(name, {}, ttl=30)
    redis_client.client().set(redis_client.worker_key(name), b"{not json", ex=30)
    assert registry.live_workers()[name] == {}


def test_the_catalogs_one_round_trip_reads_what_the_two_readings_do(name):
    registry.beat(name, {"models": [{"name": "m.gguf"}]}, ttl=30)
    registry.announce_models([{"name": "registry-test.gguf", "kind": "chat"}])
    try:
        assert registry.live_workers_and_known_models() == (registry.live_workers(), registry.known_models())
        assert registry.known_models()["registry-test.gguf"] == {"name": "registry-test.gguf", "kind": "chat"}
    finally:
        redis_client.client().hdel(redis_client.MODELS_KEY, "registry-test.gguf")
