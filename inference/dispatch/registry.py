"""What the web knows of workers: who is alive (their heartbeats in Redis) and the tasks it sends.

The web reaches workers only through this package (inference.dispatch), never the worker
package, so it never loads llama.cpp: tasks are sent by name, and their code is imported by
workers only (homeai/celery.py names it).
"""

from __future__ import annotations

import functools
import json
import os
import socket

from celery import current_app as app
from django.conf import settings

from inference import redis_client

GENERATE_TASK = "inference.generate"
EMBED_TASK = "inference.embed"
DEMO_DOCUMENT_TASK = "inference.demo_document"
LOAD_TASK = "inference.load_model"
INDEX_TASK = "documents.index"
SPEECH_TASK = "inference.speak"


def worker_name() -> str:
    """This process's name in heartbeats and on the answers it claims."""
    return f"{socket.gethostname()}:{os.getpid()}"


# The living workers' heartbeats in one round trip: each name in WORKERS_KEY whose heartbeat
# key has not expired, name then heartbeat; an expired name is dropped from the set. Atomic, so a
# worker beating meanwhile (SET and SADD in one transaction) is never dropped.
_LIVE_WORKERS = """
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local beat = redis.call('GET', ARGV[1] .. name)
  if beat then
    out[#out + 1] = name
    out[#out + 1] = beat
  else
    redis.call('SREM', KEYS[1], name)
  end
end
return out
"""


@functools.cache
def _live_workers_script(client):
    return client.register_script(_LIVE_WORKERS)


def _read_live(reply: list) -> dict[str, dict]:
    out = {}
    for name, raw in zip(reply[::2], reply[1::2], strict=True):
        try:
            out[name.decode()] = json.loads(raw)
        except ValueError:
            out[name.decode()] = {}
    return out


def _read_models(reply: dict) -> dict[str, dict]:
    out = {}
    for name, raw in reply.items():
        try:
            out[name.decode()] = json.loads(raw)
        except ValueError:
            continue
    return out


def _ask_live(client, pipe=None):
    script = _live_workers_script(client)
    return script(keys=[redis_client.WORKERS_KEY], args=[redis_client.WORKER_KEY_PREFIX], client=pipe)


def live_workers() -> dict[str, dict]:
    """Workers whose heartbeat has not expired, with what each reported."""
    r = redis_client.client()
    return _read_live(_ask_live(r))


def live_workers_and_known_models() -> tuple[dict[str, dict], dict[str, dict]]:
    """live_workers() and known_models() in one round trip (the catalog of every API request)."""
    r = redis_client.client()
    pipe = r.pipeline(transaction=False)
    _ask_live(r, pipe)
    pipe.hgetall(redis_client.MODELS_KEY)
    live, models = pipe.execute()
    return _read_live(live), _read_models(models)


def beat(name: str, status: dict, ttl: float) -> None:
    """A worker's heartbeat: what it reports, kept for ttl seconds (it beats again well before)."""
    pipe = redis_client.client().pipeline(transaction=True)
    pipe.set(redis_client.worker_key(name), json.dumps(status), ex=ttl)
    pipe.sadd(redis_client.WORKERS_KEY, name)
    pipe.execute()


def withdraw(name: str) -> None:
    """A worker's stop: gone from live_workers() at once, not when its heartbeat expires."""
    pipe = redis_client.client().pipeline(transaction=True)
    pipe.delete(redis_client.worker_key(name))
    pipe.srem(redis_client.WORKERS_KEY, name)
    pipe.execute()


def held_models(workers: dict[str, dict]) -> set[str]:
    """The model files the living workers hold (each heartbeat lists its worker's)."""
    return {model["name"] for beat in workers.values() for model in beat.get("models") or []}


def engines_of(beat: dict) -> list[dict]:
    """A worker's engines, one per model it has built (a heartbeat too old to list them: itself)."""
    return beat.get("engines") or [beat]


def request_contexts(workers: dict[str, dict]) -> dict[str, int]:
    """The most one request may fill (prompt and answer), per model, as loaded engines report
    it: the model's trained context when the KV cache has the cells, else a slot's share."""
    contexts: dict[str, int] = {}
    for status in workers.values():
        for engine in engines_of(status):
            per_request = (engine.get("cells") or {}).get("per_request")
            if engine.get("loaded") and engine.get("model") and per_request:
                contexts.setdefault(engine["model"], per_request)
    return contexts


def machine_of(worker: str) -> str:
    """The machine a worker runs on (its name is host:pid)."""
    return worker.rsplit(":", 1)[0]


def machine_queue(host: str) -> str:
    """The Celery queue of one machine's pulls: every worker on it consumes it, so a pull sent
    there lands in that machine's models folder (issue 39: choose where a model goes)."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}.machine.{host}"


def model_queue(model_name: str) -> str:
    """The Celery queue of one model's answers: only workers that hold the model consume it, so
    a worker never takes an answer it cannot write, wherever it runs."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}.model.{model_name}"


def send_generation(generation_id: int, model_name: str, arrival: str = "") -> None:
    """Ask a worker holding the model to run an answer (a duplicate is harmless: the claim lets
    one run it). With none alive it waits in the model's queue until one starts. arrival: the
    token the request was announced with (arrivals.py), withdrawn once an engine has it."""
    args = (generation_id, arrival) if arrival else (generation_id,)
    app.send_task(GENERATE_TASK, args=args, queue=model_queue(model_name))


def send_load(model_name: str, keep_alive_s: float | None) -> None:
    """Ollama's load request: a worker holding the model loads it now and keeps it for keep_alive."""
    app.send_task(LOAD_TASK, args=(model_name, keep_alive_s), queue=model_queue(model_name))


def request_unload(model_name: str) -> None:
    """Ollama's unload request (keep_alive 0, nothing to answer): every worker holding the model
    unloads it once its answers have ended (a worker sees the counter move; see UNLOAD_KEY)."""
    redis_client.client().hincrby(redis_client.UNLOAD_KEY, model_name, 1)


def unload_requests() -> dict[str, int]:
    """The unload counters: model file -> requests so far."""
    return {name.decode(): int(count) for name, count in redis_client.client().hgetall(redis_client.UNLOAD_KEY).items()}


def send_embedding(batch_id: int, model_name: str, texts: list[str], truncate: bool, *, expires_s: float) -> None:
    """Ask a worker holding the embedding model for the texts' vectors (the texts travel in the
    task: they are not stored). A task no worker took within expires_s is dropped: its request
    has been answered with a timeout by then."""
    app.send_task(EMBED_TASK, args=(batch_id, texts, truncate), queue=model_queue(model_name), expires=expires_s)


def embedding_reply_key(batch_id: int) -> str:
    return f"homeai:embedding:{batch_id}"


def reply_embedding(batch_id: int, reply: dict) -> None:
    """The worker's answer to one embeddings request, for the web process that waits on it."""
    key = embedding_reply_key(batch_id)
    pipe = redis_client.client().pipeline()
    pipe.rpush(key, json.dumps(reply))
    pipe.expire(key, 60)  # the waiting request takes it within a second or two; nobody else will
    pipe.execute()


def take_embedding_reply(batch_id: int, wait_s: int) -> dict | None:
    """The worker's answer, waiting up to wait_s seconds for it (kept below the Redis client's
    socket timeout: a caller waits longer by asking again)."""
    found = redis_client.client().blpop([embedding_reply_key(batch_id)], timeout=wait_s)
    return None if found is None else json.loads(found[1])


def announce_models(models: list[dict]) -> None:
    """A worker's models, remembered beyond its life (see MODELS_KEY)."""
    if models:
        redis_client.client().hset(redis_client.MODELS_KEY, mapping={m["name"]: json.dumps(m) for m in models})


def forget_model(name: str) -> None:
    """A deleted model: no longer known (living workers that held it stop listing it at their next beat)."""
    redis_client.client().hdel(redis_client.MODELS_KEY, name)


def known_models() -> dict[str, dict]:
    """Every model some worker announced: file name -> description."""
    return _read_models(redis_client.client().hgetall(redis_client.MODELS_KEY))


def send_index(job_id: int, model_name: str, *, countdown: float = 0) -> None:
    """Ask a worker holding the embedding model to run a collection's indexing job (a duplicate
    is harmless: the job is claimed once), now or after countdown seconds."""
    app.send_task(INDEX_TASK, args=(job_id, model_name), queue=model_queue(model_name), countdown=countdown or None)


def send_demo_document(user_id: int, chat_ids: list[int], waited_s: float = 0.0, *, countdown: float) -> None:
    """The demo's long document, looked at again after countdown seconds."""
    app.send_task(DEMO_DOCUMENT_TASK, args=(user_id, chat_ids, waited_s), countdown=countdown)


def send_speech(generation_id: int, asked_at: float) -> None:
    """Read an answer aloud on any worker (the default queue; it needs no model): docs/speech.md."""
    app.send_task(SPEECH_TASK, args=(generation_id, asked_at), expires=60)
