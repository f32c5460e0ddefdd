"""Fixtures of the API tests: the official OpenAI client with a real key (api_key: tests/conftest.py)."""

from __future__ import annotations

import openai
import pytest


@pytest.fixture
def api(live_server_url, worker, settled, api_key) -> openai.OpenAI:
    """The official client, pointed at the live server with a real key."""
    return openai.OpenAI(base_url=live_server_url + "/v1", api_key=api_key, max_retries=0, timeout=180)
