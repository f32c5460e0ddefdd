"""Thin Celery tasks: take IDs, call the worker's code. Imported by workers only (celery.py's
`imports`), since it loads the engine; the web sends these tasks by name (registry)."""

from __future__ import annotations

import functools
import gc
import os
import threading

from celery import shared_task
from celery.signals import celeryd_after_setup, task_prerun, worker_ready, worker_shutdown
from django.conf import settings

from documents import indexing
from inference import broadcast, events, model_library, probe, speech

# Acknowledged when it starts: the database, not the broker, knows whether an answer ran.
from inference.dispatch import pulls as pull_dispatch
from inference.dispatch import registry
from inference.engine import layer_probe
from inference.services import demo
from inference.worker import embedder, heartbeat, pulls, queues, runtime, stream
from infra import dbthreads


# A redelivered task is a no-op (stream.generation_run claims its row with a conditional update),
# the web's watchdog ends a dead worker's answers and sends waiting ones again, and a task held
# unacknowledged through an answer made every Redis restart a worker crash. The broker keeps no
# copy of a taken task at all (CELERY_BROKER_TRANSPORT_OPTIONS in settings.py).
@shared_task(name=registry.GENERATE_TASK, ignore_result=True)
def generate(generation_id: int, arrival: str = "") -> None:
    stream.generation_run(generation_id=generation_id, arrival=arrival)


@shared_task(name=registry.SPEECH_TASK, ignore_result=True)
def speak(generation_id: int, asked_at: float) -> None:
    """An answer read aloud: handed to a thread of this process at once (speech.py), so this task
    thread is free while the answer it reads is still being written."""
    speech.start(generation_id, asked_at)


@shared_task(name=registry.LOAD_TASK, ignore_result=True)
def load_model(model_name: str, keep_alive_s: float | None = None) -> None:
    runtime.preload(model_name, keep_alive_s)


@shared_task(name=registry.EMBED_TASK, ignore_result=True)
def embed(batch_id: int, texts: list[str], truncate: bool) -> None:
    embedder.batch_run(batch_id=batch_id, texts=texts, truncate=truncate)


# One collection indexed at a time in this process: jobs would take turns at the one embedding
# context anyway, and each held a task thread (an answer's) while it waited.
_indexing = threading.Semaphore(1)
INDEX_RETRY_S = 5.0


@shared_task(name=registry.INDEX_TASK, ignore_result=True)
def index_collection(job_id: int, model_name: str) -> None:
    """A collection's indexing job, embedded with this worker's embedding model (one batch of
    chunks at a time, between other requests' batches: embedder's lock). While this worker
    indexes another, the task is sent again for later, and its job waits queued."""
    if not indexing.job_waiting(job_id):
        return
    if not _indexing.acquire(blocking=False):
        registry.send_index(job_id, model_name, countdown=INDEX_RETRY_S)
        return
    try:
        indexing.job_run(
            job_id=job_id,
            worker=registry.worker_name(),
            embed=lambda texts: (
                embedder.embed(model_name, texts, truncate=True, background=True, answering=runtime.answering).vectors
            ),
            report=lambda state: broadcast.publish_collection(state["collection"], [events.index_progress(state)]),
        )
    finally:
        _indexing.release()


@shared_task(name=pull_dispatch.PULL_TASK, ignore_result=True)
def pull_model(pid: str, name: str) -> None:
    """A model pulled into this worker's folder (acknowledged at start: a pull whose worker dies
    is not run again by itself; the next pull of that name resumes from its partial file)."""
    pulls.pull_run(pid=pid, name=name)


@shared_task(name=registry.DEMO_DOCUMENT_TASK, ignore_result=True)
def demo_document(user_id: int, chat_ids: list[int], waited_s: float = 0.0) -> None:
    """The demo's long document, sent once its chats are writing: looked at every DEMO_POLL_S
    by re-scheduling itself, so no worker thread sits waiting."""
    if demo.demo_chats_writing(chat_ids) or waited_s >= demo.DEMO_WAIT_S:
        demo.demo_document_send(user_id=user_id)
    else:
        registry.send_demo_document(user_id, chat_ids, waited_s + demo.DEMO_POLL_S, countdown=demo.DEMO_POLL_S)


@celeryd_after_setup.connect
def _on_worker_setup(sender, instance, **_kwargs) -> None:
    """Before it consumes anything: the bundled models written into the folder (unless turned
    off), and a queue per model held added to the worker's queues. Its threads keep their
    database connections (infra/dbthreads.py)."""
    dbthreads.keep_worker_connections()
    if settings.HOMEAI_BUNDLED_MODELS:
        model_library.ensure_bundled_models()
    runtime.clear_stale_kv()
    queues.at_setup(
        sender,
        instance.app,
        [registry.model_queue(m.name) for m in model_library.servable()],
        fixed=(registry.machine_queue(registry.machine_of(registry.worker_name())),),
    )


@task_prerun.connect
def _on_task_prerun(sender=None, **_kwargs) -> None:
    # The thread's kept connection, checked as a request's start checks one (not for a task run
    # in the caller's own thread, whose transaction may be open).
    if not getattr(getattr(sender, "request", None), "is_eager", False):
        dbthreads.check_connections()


@worker_ready.connect
def _on_worker_ready(**_kwargs) -> None:
    # Build the default model's engine now (llama.cpp's library import takes a few hundred ms)
    # so the first request's queue time is not inflated by it; the model loads on the first
    # request. A worker that does not hold the default model builds nothing yet.
    if model_library.path_of(runtime.default_model()).is_file():
        runtime.get_engine()
    # What is loaded by now lives as long as the worker: out of the cyclic collector's way, so a
    # full collection scans only what came after (one took 149 ms, holding the interpreter and
    # so the engine thread between two steps; docs/bench/journal.md).
    gc.freeze()
    heartbeat.start()
    # The voice, ready before anyone asks (about a second); then memory bandwidth and FLOP/s for
    # the dashboard's "why" panel and a layer's cost in a decode step for the library's forecast
    # (a second or two once the box is quiet, cached per host): one after the other, so neither
    # times the other.
    config = runtime.runner_config()
    threads = config.n_threads or os.cpu_count() or 1
    layers = functools.partial(layer_probe.measure_when_quiet, threads, config.n_gpu_layers)
    threading.Thread(target=_preload_then_measure, args=(layers,), name="homeai-probe", daemon=True).start()
    # Answers a dead worker left running are the web's watchdog's to end (sweeps.sweep): it alone
    # has watched the heartbeats long enough to tell a dead worker from a Redis restart.


def _preload_then_measure(layers) -> None:
    try:
        if settings.HOMEAI_SPEECH:
            speech.preload()
    finally:
        probe.ensure_cached(layers)


@worker_shutdown.connect
def _on_worker_shutdown(**_kwargs) -> None:
    heartbeat.stop()
    runtime.stop()
