"""The chat's JSON endpoints (rename, search, presets) and what the page hands its script."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from inference.models import Conversation, Preset
from inference.services.generations import generation_create
from tests import factories


@pytest.fixture
def alice(db):
    return factories.user("alice")


@pytest.fixture
def as_alice(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def as_bob(db) -> Client:
    client = Client()
    client.force_login(factories.user("bob"))
    return client


@pytest.fixture
def lemons(alice) -> Conversation:
    generation = factories.finish(generation_create(user=alice, conversation_id=None, text="Tell me about LEMONS."))
    return generation.conversation


def post_json(client: Client, url: str, body) -> dict:
    response = client.post(url, json.dumps(body), content_type="application/json")
    return {"status": response.status_code, **response.json()}


def test_rename_takes_a_json_body_or_a_form_and_answers_json(as_alice, as_bob, lemons):
    url = f"/chat/{lemons.id}/rename/"
    assert post_json(as_alice, url, {"title": "Citrus"}) == {"status": 200, "id": lemons.id, "title": "Citrus"}
    assert as_alice.post(url, {"title": "Sour  fruit"}).json()["title"] == "Sour fruit"
    assert Conversation.objects.get(id=lemons.id).title == "Sour fruit"
    assert post_json(as_alice, url, {"title": " "}) == {
        "status": 400,
        "code": "bad_request",
        "message": "The title cannot be empty.",
        "field": "title",
    }
    assert as_alice.post(url, "{not json", content_type="application/json").json()["code"] == "bad_json"
    assert post_json(as_bob, url, {"title": "mine"})["status"] == 404
    assert as_alice.get(url).status_code == 405
    assert Conversation.objects.get(id=lemons.id).title == "Sour fruit"


def test_rename_needs_the_csrf_token(alice, lemons):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(f"/chat/{lemons.id}/rename/", {"title": "x"}).status_code == 403


def test_search_answers_the_users_own_matches_as_json(as_alice, as_bob, lemons):
    body = as_alice.get("/chat/search/", {"q": "lemons"}).json()
    assert body["query"] == "lemons"
    [hit] = body["results"]
    assert hit["id"] == lemons.id and hit["title"] == "Tell me about LEMONS." and "LEMONS" in hit["snippet"]
    assert as_bob.get("/chat/search/", {"q": "lemons"}).json()["results"] == []
    assert as_alice.get("/chat/search/").json()["results"] == []
    too_long = as_alice.get("/chat/search/", {"q": "x" * 201})
    assert too_long.status_code == 400 and too_long.json()["field"] == "q"


def test_presets_are_listed_saved_and_deleted_as_json(as_alice, as_bob):
    listed = as_alice.get("/chat/presets/").json()["presets"]
    assert [p["name"] for p in listed] == ["Precise", "Balanced", "Creative"]
    saved = post_json(as_alice, "/chat/presets/", {"name": "Terse", "settings": {"temperature": 0.1, "max_tokens": 32}})
    assert saved["status"] == 201
    assert saved["preset"] == {
        "id": saved["preset"]["id"],
        "name": "Terse",
        "builtin": False,
        "settings": {"model": "", "system_prompt": "", "temperature": 0.1, "top_p": None, "max_tokens": 32},
    }
    refused = post_json(as_alice, "/chat/presets/", {"name": "Terse", "settings": {}})
    assert refused["status"] == 400 and refused["code"] == "exists" and refused["field"] == "name"
    bad = post_json(as_alice, "/chat/presets/", {"name": "Hot", "settings": {"top_p": 2}})
    assert bad["field"] == "top_p" and "top_p must be a number from 0.0 to 1.0" in bad["message"]
    delete_url = f"/chat/presets/{saved['preset']['id']}/delete/"
    assert as_bob.post(delete_url).status_code == 404
    assert as_alice.post(delete_url).json() == {"deleted": saved["preset"]["id"]}
    assert not Preset.objects.exists()


def test_the_page_gives_its_script_the_settings_defaults_and_presets(as_alice, lemons):
    lemons.temperature = 0.3
    lemons.save()
    page = as_alice.get(f"/chat/{lemons.id}/")
    config = page.context["chat_config"]
    assert config["settings"] == {
        "model": "",
        "system_prompt": "",
        "temperature": 0.3,
        "top_p": None,
        "max_tokens": None,
    }
    assert set(config["defaults"]) == {"model", "system_prompt", "temperature", "top_p", "max_tokens"}
    assert config["system_prompt_chars"] == 4000 and config["presets"][0]["id"] == "precise"
    [question, answer] = page.context["history"]
    assert question["siblings"]["count"] == 1 and answer["generation"]["status"] == "done"
    assert as_alice.get("/chat/").context["chat_config"]["settings"]["temperature"] is None


def test_the_json_endpoints_need_a_login(client, lemons):
    for url in (f"/chat/{lemons.id}/rename/", "/chat/search/", "/chat/presets/"):
        assert client.get(url).status_code == 302
        assert client.post(url).status_code == 302


def test_the_request_detail_page_shows_the_system_prompt_and_sampling_to_the_owner(alice, as_alice, as_bob):
    values = {"system_prompt": "Answer in haiku.", "temperature": 0.25}
    generation = factories.finish(generation_create(user=alice, conversation_id=None, text="Hi", settings=values))
    url = f"/dashboard/requests/{generation.id}/"
    page = as_alice.get(url).content.decode()
    assert "System prompt" in page and "Answer in haiku." in page and "temperature 0.25" in page
    other = as_bob.get(url).content.decode()
    assert "Answer in haiku." not in other and "temperature 0.25" not in other
