"""A worker's engines: one per model, least recently used unloaded to make room, keep_alive
honoured, and staff's changes applied through Redis with the database the truth."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from django.conf import settings as settings_module

from inference import model_library, redis_client
from inference.engine.sizing import MAX_AUTO_SLOTS
from inference.models import EngineConfig
from inference.worker import runtime


class StandInEngine:
    """What the runtime reads of an engine (the real one loads llama.cpp)."""

    def __init__(self, config):
        self.retired = False
        self.busy = False
        self.scheduler = type("S", (), {"policy": "chunked", "has_work": lambda _self: self.busy})()
        self.runner = type("R", (), {"config": config})()

    def retire(self):
        self.retired = True


@pytest.fixture
def engines(db, monkeypatch, settings):
    """The runtime with stand-in engines: the list of every engine built, in order."""
    r = redis_client.client()
    r.delete(redis_client.ENGINE_CONFIG_KEY, redis_client.POLICY_KEY)
    built: list[StandInEngine] = []

    def build(name=None):
        built.append(StandInEngine(runtime.runner_config(name)))
        return built[-1]

    monkeypatch.setattr(runtime, "build_engine", build)
    monkeypatch.setattr(runtime, "_engines", collections.OrderedDict())
    monkeypatch.setattr(runtime, "_expiry", {})
    monkeypatch.setattr(runtime, "_seen_config", runtime._UNSEEN)
    monkeypatch.setattr(runtime, "_unloads_seen", None)
    settings.HOMEAI_MAX_LOADED_MODELS = 2
    settings.HOMEAI_MODELS_MEMORY_MB = 1_000_000
    settings.HOMEAI_KEEP_ALIVE = -1.0
    yield built
    r.delete(redis_client.ENGINE_CONFIG_KEY)


@pytest.fixture
def three_models(settings):
    """Three model files: the two bundled ones and a third name for the chat model's file."""
    chat, base = Path(settings.BUNDLED_CHAT_MODEL_PATH), Path(settings.BUNDLED_BASE_MODEL_PATH)
    third = chat.with_name("third-model.gguf")
    if not third.exists():
        third.hardlink_to(chat)
    yield chat.name, base.name, third.name
    third.unlink(missing_ok=True)


def loaded() -> list[str]:
    return [e.runner.config.model_path.name for e in runtime.engines()]


def test_each_model_gets_its_own_engine_and_a_third_unloads_the_least_recently_used(engines, three_models):
    a, b, c = three_models
    first_a = runtime.get_engine(a)
    runtime.get_engine(b)
    assert runtime.get_engine(a) is first_a and len(engines) == 2  # a again: no new engine
    runtime.get_engine(c)  # a was used after b: b goes
    assert loaded() == [a, c]
    assert [e.retired for e in engines] == [False, True, False]


def test_the_memory_budget_unloads_models_before_the_count_does(engines, three_models, settings):
    a, b, _ = three_models
    runtime.get_engine(a)
    cost_a = runtime._cost(runtime.get_engine(a))
    settings.HOMEAI_MODELS_MEMORY_MB = (cost_a + cost_a // 2) // 2**20  # room for a, not for a and b
    runtime.get_engine(b)
    assert loaded() == [b] and engines[0].retired


def test_keep_alive_unloads_an_idle_model_and_never_a_busy_one(engines, three_models):
    a, b, _ = three_models
    runtime.get_engine(a)
    runtime.get_engine(b)
    runtime.answered(a, 0.0)  # Ollama's keep_alive 0: unload once the answer is done
    runtime.answered(b, 0.0)
    engines[1].busy = True  # another answer of b is still running
    runtime.expire_idle()
    assert loaded() == [b] and engines[0].retired and not engines[1].retired
    runtime.get_engine(b)  # in use again: its keep_alive counts from its next answer's end
    engines[1].busy = False
    runtime.expire_idle()
    assert loaded() == [b]


def test_an_unload_request_unloads_the_model_once_its_running_answers_end(engines, three_models):
    a, b, _ = three_models
    runtime.get_engine(a)
    runtime.get_engine(b)
    runtime.follow_unloads({a: 3})  # what was asked before this worker looked is history
    runtime.expire_idle()
    assert loaded() == [a, b]
    engines[0].busy = True  # an answer of a is running when the unload comes
    runtime.follow_unloads({a: 4})
    runtime.expire_idle()
    assert loaded() == [a, b]
    runtime.answered(a, None)  # that answer's end does not cancel the unload...
    engines[0].busy = False
    runtime.expire_idle()
    assert loaded() == [b] and engines[0].retired
    runtime.get_engine(b)
    runtime.follow_unloads({a: 4, b: 1})
    runtime.get_engine(b)  # ...but an answer asked for after it does: b stays loaded
    runtime.answered(b, None)
    runtime.expire_idle()
    assert loaded() == [b] and not engines[1].retired


def test_a_load_request_builds_the_engine_and_loads_it_now(engines, three_models, monkeypatch):
    a, _, _ = three_models
    preloaded = []
    monkeypatch.setattr(StandInEngine, "preload", lambda self: preloaded.append(self), raising=False)
    runtime.preload(a, 0.0)
    assert loaded() == [a] and preloaded == [engines[0]]
    runtime.expire_idle()  # keep_alive 0 from the load request itself: gone once idle
    assert loaded() == []


def test_a_negative_keep_alive_keeps_the_model_until_another_needs_its_place(engines, three_models):
    a, _, _ = three_models
    runtime.get_engine(a)
    runtime.answered(a, -1.0)
    runtime.expire_idle()
    assert loaded() == [a]


def test_a_redis_that_lost_the_config_key_does_not_make_the_worker_reload_its_model(engines):
    runtime.get_engine()
    redis_client.client().set(redis_client.ENGINE_CONFIG_KEY, EngineConfig.current().version)  # staff chose once
    runtime.follow_controls()  # the engine was just built from the database
    redis_client.client().delete(redis_client.ENGINE_CONFIG_KEY)  # a Redis restart without persistence
    runtime.follow_controls()
    assert len(engines) == 1 and not engines[0].retired  # the database says nothing changed


def test_changed_settings_retire_the_engines_they_change(engines, three_models):
    a, b, _ = three_models
    runtime.get_engine(a)
    runtime.get_engine(b)
    runtime.follow_controls()
    config = EngineConfig.current()
    config.context = 2048
    config.save()
    redis_client.client().set(redis_client.ENGINE_CONFIG_KEY, config.version)
    runtime.follow_controls()
    assert loaded() == [] and all(e.retired for e in engines)
    assert runtime.get_engine(a).runner.config.n_ctx_seq == 2048


def test_choosing_another_default_model_keeps_the_loaded_ones(engines, three_models):
    a, b, _ = three_models
    runtime.get_engine(a)
    runtime.follow_controls()
    config = EngineConfig.current()
    config.model_name = b
    config.save()
    redis_client.client().set(redis_client.ENGINE_CONFIG_KEY, config.version)
    runtime.follow_controls()
    assert loaded() == [a] and runtime.default_model() == b
    assert runtime.get_engine().runner.config.model_path.name == b


def test_auto_slots_come_from_the_model_header_and_the_budget_share(db, settings):
    chat = Path(settings.BUNDLED_CHAT_MODEL_PATH)
    model = model_library.inspect(chat)
    settings.HOMEAI_SLOTS, settings.HOMEAI_CONTEXT, settings.HOMEAI_MAX_LOADED_MODELS = None, 4096, 2
    per_slot = model.kv_bytes_per_token * 4096
    settings.HOMEAI_MODELS_MEMORY_MB = 2 * (model.size_bytes + 3 * per_slot + per_slot // 2) // 2**20
    config = runtime.runner_config(chat.name)
    assert (config.n_slots, config.n_ctx_seq) == (3, 4096)  # 3.5 slots in its half of the budget
    settings.HOMEAI_SLOTS = 5
    assert runtime.runner_config(chat.name).n_slots == 5


def test_the_task_threads_cover_the_largest_slot_count():
    assert settings_module.CELERY_WORKER_CONCURRENCY == (settings_module.HOMEAI_SLOTS or MAX_AUTO_SLOTS)
