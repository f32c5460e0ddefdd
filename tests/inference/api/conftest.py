"""Fixtures of the API tests: a user's real key, and the official OpenAI client with it."""

from __future__ import annotations

import io

import openai
import pytest
from django.core.management import call_command


@pytest.fixture
def api_key(make_user) -> str:
    make_user("ada")
    out = io.StringIO()
    call_command("create_api_key", "ada", "--name", "tests", stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def api(live_server_url, worker, settled, api_key) -> openai.OpenAI:
    """The official client, pointed at the live server with a real key."""
    return openai.OpenAI(base_url=live_server_url + "/v1", api_key=api_key, max_retries=0, timeout=180)
