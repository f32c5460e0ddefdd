"""This worker process's engine: built lazily (never at import), rebuilt when staff choose another
model, switched when they choose another policy; and the buffer of its step records."""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from inference import model_library, redis_client
from inference.engine.budget import StepCostModel
from inference.engine.engine import Engine
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.models import EngineConfig

log = logging.getLogger(__name__)

_engine: Engine | None = None
_engine_lock = threading.Lock()
_steps: list[dict] = []
_steps_lock = threading.Lock()


def runner_config() -> RunnerConfig:
    """The environment's settings, overridden by the model library's choice (EngineConfig)."""
    chosen = EngineConfig.current()
    path = settings.MODELS_DIR / chosen.model_name if chosen.model_name else settings.HOMEAI_MODEL_PATH
    return RunnerConfig(
        model_path=path,
        n_ctx_seq=chosen.context or settings.HOMEAI_CONTEXT,
        n_slots=settings.HOMEAI_SLOTS,
        n_batch=settings.HOMEAI_BATCH,
        n_threads=settings.HOMEAI_THREADS if chosen.threads is None else chosen.threads,
        n_gpu_layers=settings.HOMEAI_GPU_LAYERS if chosen.gpu_layers is None else chosen.gpu_layers,
    )


def build_engine() -> Engine:
    """Engine, Runner and Scheduler from settings (the model itself loads on the first request)."""
    runner = Runner(runner_config())
    scheduler = Scheduler(
        policy=settings.HOMEAI_POLICY,
        n_slots=settings.HOMEAI_SLOTS,
        n_batch=settings.HOMEAI_BATCH,
        token_budget=settings.HOMEAI_TOKEN_BUDGET,
    )
    cost_model = StepCostModel(target_ms=settings.HOMEAI_TARGET_ITL_MS, stall_factor=settings.HOMEAI_STALL_FACTOR)
    return Engine(runner=runner, scheduler=scheduler, cost_model=cost_model, on_step=_record_step)


def get_engine() -> Engine:
    """The process's engine; its thread loads the model when the first request arrives."""
    global _engine
    with _engine_lock:
        if _engine is None:
            model_library.ensure_bundled_models()
            _engine = build_engine()
        return _engine


def current_engine() -> Engine | None:
    """The engine if one was built (status reports must not build one)."""
    return _engine


def _record_step(record: dict) -> None:
    """Called on the engine thread after every step: only a list append, the I/O is elsewhere."""
    with _steps_lock:
        _steps.append(record)


def drain_steps() -> list[dict]:
    """The step records since the last call (the heartbeat ships them)."""
    with _steps_lock:
        records = _steps[:]
        _steps.clear()
    return records


_UNSEEN = object()
_seen_config: object = _UNSEEN


def follow_controls() -> None:
    """Apply what staff changed at run time: the scheduling policy, or the model library's
    choice (a new engine takes new requests; the old one finishes its own, then unloads)."""
    global _engine, _seen_config
    r = redis_client.client()
    version = r.get(redis_client.ENGINE_CONFIG_KEY)
    if version is None:
        # Redis is a cache of the database's choice: after a Redis restart (or flush) the key is
        # gone, and reading it as "changed" would make every worker reload its model cold.
        version = EngineConfig.current().version.encode()
        r.set(redis_client.ENGINE_CONFIG_KEY, version)
    if _seen_config is _UNSEEN:
        _seen_config = version  # the engine was just built from the database: nothing to apply
    elif version != _seen_config and _engine is not None:
        _seen_config = version
        with _engine_lock:
            old, _engine = _engine, build_engine()
        old.retire()
        log.info("engine settings changed: %s will load on the next request", _engine.runner.config.model_path.name)
    wanted = r.get(redis_client.POLICY_KEY)
    if wanted and _engine is not None and _engine.scheduler.policy != wanted.decode():
        _engine.set_policy(wanted.decode())


def stop() -> None:
    if _engine is not None:
        _engine.stop()
