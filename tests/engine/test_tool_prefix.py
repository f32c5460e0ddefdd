"""Tool definitions cost once: the tools' block is the front of the prompt, the same tokens on
every request that sends the same tools, whatever the client's system text says that time and in
whatever order the tools come, with each bundled model's own tokenizer and chat format (the chat
model's template, Gemma's turn markup). The prefix cache then reuses the block's KV."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from inference.engine.runner import Runner, RunnerConfig
from inference.engine.tools import tools_system_text
from tests.api.openwebui_tools import FUNCTIONS

pytestmark = [pytest.mark.integration]


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.parametrize(
    "path", [settings.BUNDLED_CHAT_MODEL_PATH, settings.BUNDLED_BASE_MODEL_PATH], ids=lambda p: p.name
)
def test_the_tool_block_is_a_prefix_shared_by_every_message_of_a_conversation(path):
    first = [
        {"role": "system", "content": "Today is Monday, 09:14. The user likes short answers."},
        {"role": "user", "content": "What is a NAS good for?"},
    ]
    second = [
        {"role": "system", "content": "Today is Tuesday, 18:02. The user likes short answers."},
        {"role": "user", "content": "What is a NAS good for?"},
        {"role": "assistant", "content": "Keeping a home's files and backups in one place."},
        {"role": "user", "content": "And for photos?"},
    ]
    runner = Runner(RunnerConfig(model_path=Path(path), n_ctx_seq=512, n_slots=1))
    runner.load()
    try:
        block = len(runner.tokenize(tools_system_text(FUNCTIONS), add_special=False, parse_special=False))
        a = runner.prompts.tokens(first, FUNCTIONS)[0]
        b = runner.prompts.tokens(second, tuple(reversed(FUNCTIONS)))[0]
    finally:
        runner.close()
    assert block > 5000  # Open WebUI's 36 tools: thousands of tokens
    assert common_prefix(a, b) >= block
