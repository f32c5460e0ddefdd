"""What the web knows of workers: who is alive (their heartbeats in Redis) and the tasks it sends.

The web process imports this and nothing else of inference.worker, so it never loads llama.cpp:
tasks are sent by name, and their code (inference.worker.tasks) is imported by workers only.
"""

from __future__ import annotations

import json
import os
import socket

from homeai.celery import app
from inference import redis_client

GENERATE_TASK = "inference.generate"
DEMO_DOCUMENT_TASK = "inference.demo_document"


def worker_name() -> str:
    """This process's name in heartbeats and on the answers it claims."""
    return f"{socket.gethostname()}:{os.getpid()}"


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


def send_generation(generation_id: int) -> None:
    """Ask a worker to run an answer (a duplicate is harmless: the claim lets one run it)."""
    app.send_task(GENERATE_TASK, args=(generation_id,))


def send_demo_document(user_id: int, chat_ids: list[int], waited_s: float = 0.0, *, countdown: float) -> None:
    """The demo's long document, looked at again after countdown seconds."""
    app.send_task(DEMO_DOCUMENT_TASK, args=(user_id, chat_ids, waited_s), countdown=countdown)
