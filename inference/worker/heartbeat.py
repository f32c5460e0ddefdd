"""The worker's background thread: a heartbeat in Redis (so a dead worker is noticed, and the
web can show what each one runs) and the shipping of engine step records to the dashboard."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time

from django.conf import settings

from inference import broadcast, events, model_library, probe, redis_client
from inference.dispatch import registry
from inference.outage import OutageLog
from inference.worker import embedder, queues, runtime, stream

log = logging.getLogger(__name__)

STEPS_EVERY_S = 0.25

_thread: threading.Thread | None = None
_stop = threading.Event()


def status() -> dict:
    """What this worker reports in its heartbeat (registry.live_workers() reads it back): the
    models it holds (the web routes their answers here), its engines, and at the top level the
    most recently used engine's fields."""
    built = runtime.engines()
    engine = built[-1] if built else None
    base = {
        "worker": registry.worker_name(),
        "host": socket.gethostname(),
        "time": time.time(),
        "pid": os.getpid(),
        "n_gpu_layers": engine.runner.config.n_gpu_layers if engine else settings.HOMEAI_GPU_LAYERS,
        "gpus": probe.gpu_live(),
        "answers": stream.in_flight(),
        "models": _models,
        "engines": [dict(e.status(), keep_alive_until=runtime.keep_alive_until(e)) for e in built],
        "embedders": embedder.loaded(),  # the embedding models it holds loaded (not engines)
    }
    if engine is None:
        base.update(loaded=False, model=runtime.default_model(), running=0, waiting=0)
    else:
        base.update(engine.status())
    return base


_models: list[dict] = []  # model_library.describe() of each model this worker holds


def follow_library() -> None:
    """The models in this worker's folder, read again every beat: announced to the web, and
    their queues consumed (a model put into the folder is served without a restart)."""
    global _models
    _models = [model_library.describe(m) for m in model_library.servable()]
    registry.announce_models(_models)
    queues.follow([registry.model_queue(m["name"]) for m in _models])


def follow_library_now() -> None:
    """A model just put into the folder (a pull), announced and beaten at once rather than at
    the next beat: a request for it right after is accepted and routed here."""
    follow_library()
    registry.beat(registry.worker_name(), status(), settings.HOMEAI_WORKER_TTL)


def _publish_steps() -> None:
    """Ship the engine's step records: to Redis (for the dashboard's history) and live."""
    records = runtime.drain_steps()
    if not records:
        return
    r = redis_client.client()
    pipe = r.pipeline(transaction=False)
    pipe.rpush(redis_client.STEPS_KEY, *(json.dumps(rec) for rec in records))
    pipe.ltrim(redis_client.STEPS_KEY, -redis_client.STEPS_KEPT, -1)
    pipe.execute()
    broadcast.publish_dashboard([events.engine_steps(registry.worker_name(), records)])


def _beat() -> None:
    """Heartbeat and step shipping, on one background thread."""
    name = registry.worker_name()
    ttl = settings.HOMEAI_WORKER_TTL
    interval = max(ttl / 4, 0.5)
    next_beat = 0.0
    outage = OutageLog(log, "the heartbeat to Redis")
    while not _stop.is_set():
        try:
            _publish_steps()
            if time.monotonic() >= next_beat:
                runtime.follow_controls()
                follow_library()
                registry.beat(name, status(), ttl)
                next_beat = time.monotonic() + interval
        except Exception:
            outage.failed(f"retrying every {STEPS_EVERY_S} s; answers go on, saved to the database")
        else:
            outage.ok()
        _stop.wait(STEPS_EVERY_S)
    try:
        registry.withdraw(name)
    except Exception:
        pass  # it expires by itself


def start() -> None:
    global _thread
    if _thread is None:
        _thread = threading.Thread(target=_beat, name="homeai-heartbeat", daemon=True)
        _thread.start()


def stop() -> None:
    _stop.set()
    if _thread is not None:
        _thread.join(timeout=5)
