"""The Celery queues this worker consumes: its default queue, and one per model it holds
(registry.model_queue), so the web's routing sends it only answers it can write."""

from __future__ import annotations

import logging
import threading

from celery import current_app as app

log = logging.getLogger(__name__)

_lock = threading.Lock()
_node = ""  # this worker's Celery node name (remote control addresses it)
_consumed: set[str] = set()  # the model queues it consumes


def at_setup(node: str, worker_app, queues: list[str], fixed: tuple[str, ...] = ()) -> None:
    """Before the worker starts consuming: add the model queues to those it will consume, and
    the fixed ones (its machine's: registry.machine_queue), which follow() never drops."""
    global _node
    _node = node
    with _lock:
        for queue in fixed:
            worker_app.amqp.queues.select_add(queue)
        for queue in queues:
            worker_app.amqp.queues.select_add(queue)
            _consumed.add(queue)
    log.info("consuming the queues of %d models", len(queues))


def follow(queues: list[str]) -> None:
    """Consume the queues of models that appeared in the folder since, and stop consuming those
    of models that are gone (through Celery's remote control, addressed to this worker)."""
    if not _node:
        return  # not started by a Celery worker (a test, a benchmark)
    wanted = set(queues)
    with _lock:
        for queue in sorted(wanted - _consumed):
            app.control.add_consumer(queue, destination=[_node])
            log.info("now consuming %s", queue)
        for queue in sorted(_consumed - wanted):
            app.control.cancel_consumer(queue, destination=[_node])
            log.info("no longer consuming %s", queue)
        _consumed.clear()
        _consumed.update(wanted)
