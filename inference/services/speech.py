"""Answers read aloud (docs/speech.md): a person asks, a worker reads; the audio is theirs alone."""

from __future__ import annotations

import time

import redis
from django.conf import settings
from django.utils.translation import gettext

from inference import redis_client, selectors
from inference.dispatch import registry
from infra.errors import ClientError

MAX_SENTENCES = 10_000


def speech_request(*, user, generation_id) -> None:
    """Send one of the person's chat answers to a worker to be read aloud (written or still being
    written: the worker follows it sentence by sentence)."""
    if not settings.HOMEAI_SPEECH:
        raise ClientError("speech_off", gettext("Reading aloud is turned off on this server."))
    generation = selectors.generation_for_user(user=user, generation_id=generation_id)
    if generation is None or generation.client != "chat":
        raise ClientError("not_found", gettext("That answer does not exist."), field="generation")
    registry.send_speech(generation.id, time.time())


def speech_audio(*, user, generation_id: int, index: int) -> bytes | None:
    """One sentence's WAV of the person's own answer; None when it is not theirs or not (or no
    longer) there."""
    if not 0 <= index < MAX_SENTENCES or selectors.generation_for_user(user=user, generation_id=generation_id) is None:
        return None
    try:
        return redis_client.client().get(redis_client.speech_audio_key(generation_id, index))
    except redis.RedisError:
        return None
