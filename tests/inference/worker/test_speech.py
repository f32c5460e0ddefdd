"""Reading aloud on a worker: Piper makes each sentence's WAV with the bundled voice, and a reading
follows an answer's sentences as its task thread cuts them (or its saved text once written)."""

from __future__ import annotations

import io
import threading
import wave

import pytest

from inference import redis_client, speech
from inference.models import Generation
from tests import factories
from tests.support import forget_speech, wait_until


@pytest.fixture(autouse=True)
def _no_kept_speech():
    forget_speech()
    yield
    forget_speech()


def read_wav(data: bytes) -> wave.Wave_read:
    return wave.open(io.BytesIO(data), "rb")


def test_a_sentence_becomes_a_mono_16_bit_wav_of_speech():
    data = speech.synthesize("The garage door is shut.")
    wav = read_wav(data)
    assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 22050)
    seconds = wav.getnframes() / wav.getframerate()
    assert 0.5 < seconds < 10
    samples = wav.readframes(wav.getnframes())
    assert any(samples)  # not silence


@pytest.fixture
def answer(transactional_db):
    owner = factories.user()
    generation = factories.finished_generation(owner, prompt="Hi", answer="Hello there. How are you today?")
    keys = [
        redis_client.speech_text_key(generation.id),
        *(redis_client.speech_audio_key(generation.id, i) for i in range(4)),
    ]
    redis_client.client().delete(*keys)
    yield generation
    redis_client.client().delete(*keys)


def test_a_written_answer_is_read_from_its_saved_text(answer):
    assert speech.read(answer.id, asked_at=0.0) == 2
    for index in range(2):
        assert read_wav(redis_client.client().get(redis_client.speech_audio_key(answer.id, index))).getnframes() > 0
    assert Generation.objects.get(id=answer.id).speech_first_ms > 0


def test_a_reading_follows_the_answer_as_it_is_written(answer):
    Generation.objects.filter(id=answer.id).update(status=Generation.Status.RUNNING)
    feed = speech.SpeechFeed(answer.id)
    done = threading.Event()
    counts = []
    thread = threading.Thread(target=lambda: (counts.append(speech.read(answer.id, asked_at=0.0)), done.set()))
    thread.start()
    for piece in ("The lights", " are off", ". The door", " is shut", ". Good night"):
        feed.feed(piece)
        feed.flush()
    # The first sentence is made while the answer goes on.
    key = redis_client.speech_audio_key(answer.id, 0)
    assert wait_until(lambda: redis_client.client().exists(key), timeout=60)
    assert not done.is_set()  # no end yet: the reading waits for the rest
    feed.flush(end=True)
    assert done.wait(60)
    thread.join()
    assert counts == [3]


def test_an_answer_with_nothing_the_voice_reads_reads_nothing(db):
    owner = factories.user()
    generation = factories.finished_generation(owner, prompt="Hi", answer="안녕하세요. 반갑습니다.")
    assert speech.read(generation.id, asked_at=0.0) == 0
