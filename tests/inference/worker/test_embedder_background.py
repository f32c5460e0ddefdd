"""An index job's embeddings yield the cores to answers: while answers are being written they run
on a thread of their own under SCHED_IDLE, while none are at normal priority in parts (asking
again before each), with a llama.cpp context of their own, and give the same vectors as a
question's."""

import os
import threading

import numpy as np
import pytest
from django.conf import settings

from inference.worker import embedder


def _policy(idle: bool) -> int:
    return embedder._background[idle].submit(lambda: os.sched_getscheduler(threading.get_native_id())).result()


def test_beside_answers_the_background_thread_runs_only_on_idle_cores_and_alone_at_normal_priority():
    assert _policy(True) == os.SCHED_IDLE
    assert _policy(False) == os.SCHED_OTHER


@pytest.mark.django_db(transaction=True)
def test_an_answer_that_starts_mid_batch_has_the_rest_of_it_yield_to_it(monkeypatch):
    name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    texts = [f"Note {i} about the garden shed." for i in range(embedder.NORMAL_PART + 3)]
    ran: list[tuple[int, int]] = []
    real = embedder._embed

    def watched(model, part, truncate, background):
        ran.append((os.sched_getscheduler(threading.get_native_id()), len(part)))
        return real(model, part, truncate, background)

    monkeypatch.setattr(embedder, "_embed", watched)
    answers = iter([False, True])  # none at the first part, one by the second
    whole = embedder.embed(name, texts, truncate=True, background=True, answering=lambda: next(answers))
    assert ran == [(os.SCHED_OTHER, embedder.NORMAL_PART), (os.SCHED_IDLE, 3)]
    alone = embedder.embed(name, texts, truncate=True)
    cosines = (np.array(whole.vectors) * np.array(alone.vectors)).sum(axis=1)
    assert cosines.min() > 0.9999 and whole.prompt_tokens == alone.prompt_tokens  # parts batch otherwise


@pytest.mark.django_db(transaction=True)  # the background thread reads the settings row itself
def test_background_and_foreground_embed_alike_on_contexts_of_their_own():
    name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    texts = ["The boiler was serviced in May.", "A recipe for bread."]
    front = embedder.embed(name, texts, truncate=True)
    back = embedder.embed(name, texts, truncate=True, background=True)
    assert np.allclose(front.vectors, back.vectors, atol=1e-5)
    assert embedder._contexts[(name, False)] is not embedder._contexts[(name, True)]
    assert embedder.loaded() == [name]
