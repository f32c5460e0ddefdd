"""How staff's changes reach a worker's engine: through Redis, with the database the truth."""

from __future__ import annotations

import pytest

from inference import redis_client
from inference.models import EngineConfig
from inference.worker import runtime


class StandInEngine:
    def __init__(self):
        self.retired = False
        self.scheduler = type("S", (), {"policy": "chunked"})()
        self.runner = type("R", (), {"config": type("C", (), {"model_path": type("P", (), {"name": "m"})()})()})()

    def retire(self):
        self.retired = True


@pytest.fixture
def engine(db, monkeypatch):
    r = redis_client.client()
    r.delete(redis_client.ENGINE_CONFIG_KEY, redis_client.POLICY_KEY)
    built = []
    monkeypatch.setattr(runtime, "build_engine", lambda: built.append(StandInEngine()) or built[-1])
    monkeypatch.setattr(runtime, "_engine", StandInEngine())
    monkeypatch.setattr(runtime, "_seen_config", runtime._UNSEEN)
    yield built
    r.delete(redis_client.ENGINE_CONFIG_KEY)


def test_a_redis_that_lost_the_config_key_does_not_make_the_worker_reload_its_model(engine):
    redis_client.client().set(redis_client.ENGINE_CONFIG_KEY, EngineConfig.current().version)  # staff chose once
    runtime.follow_controls()  # the engine was just built from the database
    redis_client.client().delete(redis_client.ENGINE_CONFIG_KEY)  # a Redis restart without persistence
    runtime.follow_controls()
    assert engine == []  # no new engine: the database says nothing changed


def test_a_changed_choice_builds_a_new_engine_and_retires_the_old(engine):
    EngineConfig.current()
    runtime.follow_controls()
    old = runtime.current_engine()
    config = EngineConfig.current()
    config.context = 2048
    config.save()
    redis_client.client().set(redis_client.ENGINE_CONFIG_KEY, config.version)
    runtime.follow_controls()
    assert len(engine) == 1 and runtime.current_engine() is engine[0] and old.retired
