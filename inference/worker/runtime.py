"""This worker process's engines, one per loaded model: built lazily (never at import), kept
loaded least-recently-used within a count and a memory budget and for each answer's keep_alive,
rebuilt when staff change their settings, switched when staff choose another policy; and the
buffer of their step records."""

from __future__ import annotations

import collections
import logging
import os
import shutil
import socket
import threading
import time
from pathlib import Path

from django.conf import settings

from inference import model_library, redis_client
from inference.dispatch import arrivals, registry
from inference.engine.budget import StepCostModel
from inference.engine.engine import Engine
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sizing import Sizing, size_engine
from inference.models import EngineConfig
from inference.worker.step_relay import STEP_RELAY

log = logging.getLogger(__name__)

# The engines of this process, one per loaded model, least recently used first.
_engines: collections.OrderedDict[str, Engine] = collections.OrderedDict()
_expiry: dict[str, float] = {}  # model -> when (monotonic) its keep_alive runs out; absent: never
_engine_lock = threading.RLock()
_steps: list[dict] = []
_steps_lock = threading.Lock()


def default_model() -> str:
    """The model a chat uses unless it names another: the model library's choice, else the
    environment's HOMEAI_MODEL_PATH."""
    return EngineConfig.current().model_name or settings.HOMEAI_MODEL_PATH.name


def runner_config(model_name: str | None = None) -> RunnerConfig:
    """A model's engine settings: the environment's, under the model library's choice
    (EngineConfig: context, threads, GPU layers for every model), with the slots and the
    context per slot sized to the model (sizing.size_engine)."""
    chosen = EngineConfig.current()
    path = model_library.path_of(model_name or default_model())
    size = engine_size(path, chosen.context or settings.HOMEAI_CONTEXT)
    return RunnerConfig(
        model_path=path,
        n_ctx_seq=size.context,
        n_slots=size.slots,
        n_batch=settings.HOMEAI_BATCH,
        n_threads=settings.HOMEAI_THREADS if chosen.threads is None else chosen.threads,
        n_gpu_layers=settings.HOMEAI_GPU_LAYERS if chosen.gpu_layers is None else chosen.gpu_layers,
        kv_ram_bytes=settings.HOMEAI_KV_RAM_MB * 2**20,
        kv_disk_bytes=settings.HOMEAI_KV_DISK_MB * 2**20,
        kv_dir=kv_folder() / path.stem,
    )


def engine_size(path: Path, context: int) -> Sizing:
    """A model's slots and context per slot: HOMEAI_SLOTS when set, else what its KV cache
    costs beside its weights within its share of HOMEAI_MODELS_MEMORY_MB (the budget split
    evenly among the HOMEAI_MAX_LOADED_MODELS it may be loaded with, so they fit together)."""
    model = model_library.inspect(path) if path.is_file() else None
    return size_engine(
        kv_bytes_per_token=model.kv_bytes_per_token if model else 0,
        weights_bytes=model.size_bytes if model else 0,
        budget_bytes=settings.HOMEAI_MODELS_MEMORY_MB * 2**20 // settings.HOMEAI_MAX_LOADED_MODELS,
        context=context,
        trained_context=model.context_length if model else 0,
        slots=settings.HOMEAI_SLOTS,
    )


def kv_folder() -> Path:
    """Where this process's engines spill saved conversations: a folder per process, named by
    host and pid (worker containers may share the data volume)."""
    return settings.DATA_DIR / "kv" / f"{socket.gethostname()}-{os.getpid()}"


def clear_stale_kv() -> None:
    """At start: remove the saved conversations this host's earlier worker processes left (a
    crash leaves them; a restarted container may even have the same pid)."""
    root = settings.DATA_DIR / "kv"
    host, _, _ = kv_folder().name.rpartition("-")
    for folder in root.glob(f"{host}-*") if root.is_dir() else ():
        pid = folder.name.rpartition("-")[2]
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def build_engine(model_name: str | None = None) -> Engine:
    """Engine, Runner and Scheduler for a model (the model itself loads on its first request)."""
    runner = Runner(runner_config(model_name))
    scheduler = Scheduler(
        policy=settings.HOMEAI_POLICY,
        n_slots=runner.config.n_slots,
        n_batch=settings.HOMEAI_BATCH,
        token_budget=settings.HOMEAI_TOKEN_BUDGET,
    )
    cost_model = StepCostModel(
        target_ms=settings.HOMEAI_TARGET_ITL_MS,
        stall_factor=settings.HOMEAI_STALL_FACTOR,
        burst_ms=settings.HOMEAI_STALL_BURST_MS,
    )
    return Engine(
        runner=runner,
        scheduler=scheduler,
        cost_model=cost_model,
        on_step=_record_step,
        on_events=STEP_RELAY,
        arriving=arrivals.on_the_way,
    )


def get_engine(model_name: str | None = None) -> Engine:
    """The engine of a model (the default one when None), built on first use and then the most
    recently used; building one may unload the least recently used others (make_room)."""
    name = model_name or default_model()
    with _engine_lock:
        engine = _engines.get(name)
        if engine is None:
            engine = _engines[name] = build_engine(name)
            _make_room(keep=name)
        _engines.move_to_end(name)
        _expiry.pop(name, None)  # in use: its keep_alive counts from the end of this answer
        return engine


def engines() -> list[Engine]:
    """The engines built in this process, least recently used first (status reports read them)."""
    with _engine_lock:
        return list(_engines.values())


def answering() -> bool:
    """Whether any engine here has answers to write (running, waiting, or just handed over)."""
    return any(engine.busy for engine in engines())


def _cost(engine: Engine) -> int:
    """What an engine's model costs loaded: its weights and its KV cache (from the file's header)."""
    config = engine.runner.config
    if not config.model_path.is_file():
        return 0
    return model_library.inspect(config.model_path).memory_bytes(config.n_ctx_seq * config.n_slots)


def _make_room(*, keep: str) -> None:
    """Unload the least recently used models until at most HOMEAI_MAX_LOADED_MODELS are left
    and they fit in HOMEAI_MODELS_MEMORY_MB (the one about to be used is never unloaded).
    Each finishes the answers it holds first (Engine.retire), as Ollama's scheduler does."""
    budget = settings.HOMEAI_MODELS_MEMORY_MB * 2**20
    while len(_engines) > 1:
        over = len(_engines) > settings.HOMEAI_MAX_LOADED_MODELS or sum(map(_cost, _engines.values())) > budget
        if not over:
            break
        _unload(next(name for name in _engines if name != keep), "to make room")
    if _cost(_engines[keep]) > budget:
        log.warning(
            "%s needs about %d MB, more than HOMEAI_MODELS_MEMORY_MB=%d; loading it alone",
            keep,
            _cost(_engines[keep]) // 2**20,
            settings.HOMEAI_MODELS_MEMORY_MB,
        )


def _unload(name: str, why: str) -> None:
    engine = _engines.pop(name)
    _expiry.pop(name, None)
    engine.retire()
    log.info("unloading %s %s", name, why)


def answered(model_name: str, keep_alive_s: float | None) -> None:
    """An answer of the model ended: keep it loaded for its keep_alive (the request's, else
    HOMEAI_KEEP_ALIVE; negative: until another model needs its place)."""
    keep = settings.HOMEAI_KEEP_ALIVE if keep_alive_s is None else keep_alive_s
    with _engine_lock:
        if model_name not in _engines or _expiry.get(model_name) == _UNLOAD_NOW:
            return
        if keep < 0:
            _expiry.pop(model_name, None)
        else:
            _expiry[model_name] = time.monotonic() + keep


def preload(model_name: str, keep_alive_s: float | None) -> None:
    """Ollama's load request: the model's engine loads it now and keeps it for keep_alive."""
    get_engine(model_name).preload()
    answered(model_name, keep_alive_s)


_unloads_seen: dict[str, int] | None = None
# An expiry long past: set by an unload request, and kept by the answers that were running then.
_UNLOAD_NOW = 0.0


def follow_unloads(requests: dict[str, int]) -> None:
    """Ollama's unload requests (registry.request_unload): a model whose counter moved since the
    last look is unloaded as soon as it holds no answer (one asked for meanwhile keeps it). The
    counters seen first are history: a worker that starts unloads nothing."""
    global _unloads_seen
    seen, _unloads_seen = _unloads_seen, dict(requests)
    if seen is None:
        return
    with _engine_lock:
        for name, count in requests.items():
            if count != seen.get(name) and name in _engines:
                _expiry[name] = _UNLOAD_NOW


def expire_idle() -> None:
    """Unload the models whose keep_alive ran out and that hold no answer now."""
    now = time.monotonic()
    with _engine_lock:
        for name, until in list(_expiry.items()):
            engine = _engines[name]
            if until <= now and not engine.scheduler.has_work():
                _unload(name, "(its keep_alive ran out)")


def keep_alive_until(engine: Engine) -> float | None:
    """Wall-clock time at which the engine's model will be unloaded if unused; None: not planned."""
    with _engine_lock:
        until = _expiry.get(engine.runner.config.model_path.name)
    return None if until is None else time.time() + (until - time.monotonic())


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
    settings (an engine whose settings changed is retired: it finishes its own answers, then
    unloads, and the next request builds it anew); and unload models past their keep_alive."""
    global _seen_config
    r = redis_client.client()
    version = r.get(redis_client.ENGINE_CONFIG_KEY)
    if version is None:
        # Redis is a cache of the database's choice: after a Redis restart (or flush) the key is
        # gone, and reading it as "changed" would make every worker reload its model cold.
        version = EngineConfig.current().version.encode()
        r.set(redis_client.ENGINE_CONFIG_KEY, version)
    if _seen_config is _UNSEEN:
        _seen_config = version  # the engines were just built from the database: nothing to apply
    elif version != _seen_config:
        _seen_config = version
        with _engine_lock:
            for name, engine in list(_engines.items()):
                if engine.runner.config != runner_config(name):
                    _unload(name, "(its settings changed; it loads again on its next request)")
    follow_unloads(registry.unload_requests())
    expire_idle()
    wanted = r.get(redis_client.POLICY_KEY)
    if wanted:
        for engine in engines():
            if engine.scheduler.policy != wanted.decode():
                engine.set_policy(wanted.decode())


def stop() -> None:
    for engine in engines():
        engine.stop()
