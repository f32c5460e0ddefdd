"""One sync Redis client per process, plus the key names the web and worker agree on."""

from __future__ import annotations

import functools

import redis
from django.conf import settings

WORKER_KEY_PREFIX = "homeai:worker:"  # + a worker's name: its latest heartbeat, expiring
# The names of the workers that have beaten (a set; registry.live_workers() drops expired ones):
# the web reads the heartbeats through it, never by scanning the keyspace.
WORKERS_KEY = "homeai:workers"


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=2)


def cancel_key(generation_id: int) -> str:
    return f"homeai:cancel:{generation_id}"


def tool_confirm_key(generation_id: int, index: int) -> str:
    """A person's answer to an acting tool call: "allow" or "deny" (the chat socket sets it)."""
    return f"homeai:tool-confirm:{generation_id}:{index}"


def worker_key(name: str) -> str:
    return WORKER_KEY_PREFIX + name


POLICY_KEY = "homeai:policy"  # the scheduling policy every worker should use now (set by staff)
ENGINE_CONFIG_KEY = "homeai:engine-config"  # version of the model library's choice; workers reload on change
# Every model a worker has announced (file name -> its description, JSON), kept when the worker
# stops: a request for a model no living worker holds waits for one only if some worker had it.
MODELS_KEY = "homeai:models"
# Ollama's unload requests (a load-only request with keep_alive 0): model file -> a counter every
# request raises; each worker unloads the model, once idle, when the counter moves.
UNLOAD_KEY = "homeai:unload"
STEPS_KEY = "homeai:steps"  # the engines' recent step records (workers append, the dashboard reads)
STEPS_KEPT = 5000
# Model pulls (inference/dispatch/pulls.py): pull id -> its state (JSON: name, worker, the last
# status line, each layer's progress, whether it runs, its end), and a stop request per pull.
PULLS_KEY = "homeai:pulls"


def pull_cancel_key(pull_id: str) -> str:
    return f"homeai:pull-cancel:{pull_id}"


# Reading aloud (docs/speech.md): an answer's sentences as its task thread cuts them (a stream,
# ended by an entry with "end"), and the audio the worker made of each (WAV bytes), both expiring.
SPEECH_KEPT_S = 600


def speech_text_key(generation_id: int) -> str:
    return f"homeai:speech-text:{generation_id}"


def speech_audio_key(generation_id: int, index: int) -> str:
    return f"homeai:speech-audio:{generation_id}:{index}"
