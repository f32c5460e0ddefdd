"""The bundled chat model answers a household's question in words: an instruct model through its
own chat template, ending its turn by itself (real model, worker and socket)."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from inference.models import Generation
from tests.support import of_type

pytestmark = [pytest.mark.integration]

TEMPLATE_MARKERS = ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<s>", "</s>")


def test_the_default_model_is_the_bundled_instruct_model():
    assert settings.HOMEAI_MODEL_PATH == settings.BUNDLED_CHAT_MODEL_PATH


def test_a_fresh_install_answers_a_question_with_a_sentence_that_ends_its_turn(worker, make_user, connect):
    sock = connect(make_user())
    events = sock.chat("What is a NAS good for?", max_tokens=256, options={"seed": 7}, timeout=300)
    [done] = of_type(events, "generation.done")
    generation = Generation.objects.get(id=done["generation"])
    assert generation.finish_reason == "stop", "the model wrote to max_tokens instead of ending its turn"
    assert generation.output_tokens < 256
    text = done["text"]
    assert not any(marker in text for marker in TEMPLATE_MARKERS), text
    assert re.search(r"[A-Za-z]+ [A-Za-z]+ [A-Za-z]+", text), text  # words, not noise
