"""A chat message past a slot's share of the KV cache (HOMEAI_CONTEXT) and within what the
bundled chat model was trained for is answered on the chat page's socket."""

from __future__ import annotations

import pytest

from inference.models import Generation
from tests.api.test_long_context import LONG_MESSAGE, TIMEOUT_S, assert_borrowed
from tests.support import of_type

pytestmark = [pytest.mark.integration]


def test_a_7000_token_message_is_answered_on_the_chat_socket(worker, make_user, connect):
    sock = connect(make_user())
    events = sock.chat(LONG_MESSAGE, max_tokens=4, timeout=TIMEOUT_S)
    done = of_type(events, "generation.done")
    assert done, f"no generation.done; last events: {events[-3:]}"
    assert done[0]["status"] == "done" and not done[0]["notice"]  # nothing was left out
    generation = Generation.objects.get(id=events[0]["generation"])
    assert_borrowed(generation.prompt_tokens)
    assert done[0]["metrics"]["kv_cells"] == generation.kv_cells
