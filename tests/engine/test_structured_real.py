"""Grammars on the bundled chat model, in process: every constrained answer parses and validates
(a sample of `manage.py bench_structured`'s 200, which docs/api.md reports)."""

from __future__ import annotations

import pytest
from django.conf import settings

from bench.structured import TASKS, StructuredConfig, run

pytestmark = [pytest.mark.integration]


def test_every_schema_constrained_answer_parses_and_validates():
    result = run(
        StructuredConfig(model_path=settings.BUNDLED_CHAT_MODEL_PATH, n=2 * len(TASKS), threads=1), log=lambda _: None
    )
    assert result["valid"] == result["n"], result["failures"]
    assert set(result["per_task"]) == {name for name, _, _ in TASKS}
