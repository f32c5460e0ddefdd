"""An index job's embeddings yield the cores to answers: they run on a thread of their own under
SCHED_IDLE, with a llama.cpp context of their own, and give the same vectors as a question's."""

import os
import threading

import numpy as np
import pytest
from django.conf import settings

from inference.worker import embedder


def test_the_background_thread_runs_only_on_idle_cores():
    policy = embedder._background.submit(lambda: os.sched_getscheduler(threading.get_native_id())).result()
    assert policy == os.SCHED_IDLE


@pytest.mark.django_db(transaction=True)  # the background thread reads the settings row itself
def test_background_and_foreground_embed_alike_on_contexts_of_their_own():
    name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    texts = ["The boiler was serviced in May.", "A recipe for bread."]
    front = embedder.embed(name, texts, truncate=True)
    back = embedder.embed(name, texts, truncate=True, background=True)
    assert np.allclose(front.vectors, back.vectors, atol=1e-5)
    assert embedder._contexts[(name, False)] is not embedder._contexts[(name, True)]
    assert embedder.loaded() == [name]
