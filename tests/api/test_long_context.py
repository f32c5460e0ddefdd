"""A conversation past a slot's share of the KV cache (HOMEAI_CONTEXT, 4,096) and within what the
bundled chat model was trained for (8,192) is answered through both APIs: the request borrows
the cells the other slots leave free (inference/engine/scheduler.py)."""

from __future__ import annotations

import ollama
import pytest
from django.conf import settings

from inference.models import Generation
from tests.api.test_openai_api import MODEL
from tests.support import digits, wait_until

pytestmark = [pytest.mark.integration]

SHARE = settings.HOMEAI_CONTEXT  # 4,096: what a conversation could hold before
# About 7,000 tokens of prompt, in fewer characters than a message may have.
LONG_MESSAGE = f"Here are some digits: {digits(6950)}\nHow many digits did I send?"
# Reading it takes a quiet 2-core box half a minute, a busy one minutes: a cap, not an expectation.
TIMEOUT_S = 900


def assert_borrowed(prompt_tokens: int) -> None:
    assert SHARE < prompt_tokens < 8192
    generation = Generation.objects.latest("id")
    assert generation.prompt_tokens == prompt_tokens
    assert generation.kv_cells >= prompt_tokens  # the cells it held, as the dashboard shows them


def test_a_7000_token_prompt_is_answered_through_the_openai_api(api):
    reply = api.with_options(timeout=TIMEOUT_S).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": LONG_MESSAGE}], max_tokens=4, temperature=0
    )
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert_borrowed(reply.usage.prompt_tokens)


def test_a_7000_token_prompt_is_answered_through_the_ollama_api(live_server_url, worker, settled, api_key):
    client = ollama.Client(host=live_server_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=TIMEOUT_S)
    reply = client.chat(
        model=MODEL,
        messages=[{"role": "user", "content": LONG_MESSAGE}],
        options={"temperature": 0, "num_predict": 4},
    )
    assert reply.done and reply.done_reason in ("stop", "length")
    assert_borrowed(reply.prompt_eval_count)
    # /api/ps reports the context a request may fill, once the loaded engine's heartbeat says it.
    assert wait_until(lambda: _ps_context(client) == 8192, timeout=30)


def _ps_context(client: ollama.Client) -> int | None:
    return next((m.context_length for m in client.ps().models if m.model == MODEL), None)
