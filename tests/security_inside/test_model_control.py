"""Loading and unloading models over the API is staff's: another person's key (or the keyless
LAN user) gets a 403 that says so, and their keep_alive does not change how long a model stays."""

from __future__ import annotations

import httpx
import pytest

from inference.models import Generation
from tests.api.test_openai_api import MODEL

pytestmark = [pytest.mark.integration]

LOAD_REQUESTS = [
    ("/api/generate", {"model": MODEL, "keep_alive": 0}),  # Ollama's "unload the model"
    ("/api/generate", {"model": MODEL, "prompt": ""}),  # Ollama's "load the model"
    ("/api/chat", {"model": MODEL, "messages": [], "keep_alive": -1}),  # load, and keep it for ever
]


def post(base: str, key: str, path: str, body: dict) -> httpx.Response:
    return httpx.post(base + path, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=180)


@pytest.mark.parametrize(("path", "body"), LOAD_REQUESTS)
def test_a_key_of_someone_not_staff_cannot_load_or_unload_a_model(live_server_url, worker, api_key, path, body):
    refused = post(live_server_url, api_key, path, body)
    assert refused.status_code == 403, refused.text
    assert "Only staff can" in refused.json()["error"]


def test_a_staff_members_key_unloads_and_loads_a_model(live_server_url, worker, staff_api_key):
    unloaded = post(live_server_url, staff_api_key, "/api/generate", {"model": MODEL, "keep_alive": 0, "stream": False})
    assert unloaded.status_code == 200 and unloaded.json()["done_reason"] == "unload"
    loaded = post(live_server_url, staff_api_key, "/api/generate", {"model": MODEL, "stream": False})
    assert loaded.status_code == 200 and loaded.json()["done_reason"] == "load"


def test_the_keep_alive_of_someone_not_staff_is_not_kept_with_their_answer(live_server_url, worker, settled, api_key):
    body = {"model": MODEL, "prompt": "Hi", "keep_alive": 0, "stream": False, "options": {"num_predict": 1}}
    answered = post(live_server_url, api_key, "/api/generate", body)
    assert answered.status_code == 200, answered.text
    assert Generation.objects.latest("id").keep_alive_s is None  # the server's default, not an unload
