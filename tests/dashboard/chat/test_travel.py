"""Export, import and share through the chat's own routes: downloads for the owner only, the
import's sentences in the endpoints' shape, and a shared chat readable by those it names alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from homeai import bodylimit
from inference.models import ChatShare, Conversation
from tests import factories

EXPORTS = Path(__file__).resolve().parents[2] / "inference" / "exports"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice(db):
    return factories.user("alice")


@pytest.fixture
def bob(db):
    return factories.user("bob")


@pytest.fixture
def carol(db):
    return factories.user("carol")


@pytest.fixture
def lemons(alice) -> Conversation:
    return factories.finished_generation(
        alice, prompt="Tell me about lemons.", answer="They are **sour**."
    ).conversation


def test_the_owner_downloads_one_chat_as_json_or_markdown(alice, lemons):
    client = signed_in(alice)
    response = client.get(f"/chat/{lemons.id}/export/")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="homeai-chat-{lemons.id}.json"'
    document = json.loads(response.content)
    assert [m["content"] for m in document["conversations"][0]["messages"]] == [
        "Tell me about lemons.",
        "They are **sour**.",
    ]
    markdown = client.get(f"/chat/{lemons.id}/export/", {"format": "md"})
    assert markdown["Content-Type"] == "text/markdown; charset=utf-8"
    assert markdown.content.decode() == (
        "# Tell me about lemons.\n\n## You\n\nTell me about lemons.\n\n## Assistant\n\nThey are **sour**.\n"
    )
    everything = client.get("/chat/export/")
    assert everything.status_code == 200 and len(json.loads(everything.content)["conversations"]) == 1
    assert client.get(f"/chat/{lemons.id}/export/", {"format": "pdf"}).status_code == 404


def test_nobody_else_exports_a_persons_chat(bob, lemons):
    client = signed_in(bob)
    assert client.get(f"/chat/{lemons.id}/export/").status_code == 404
    assert client.get(f"/chat/{lemons.id}/export/", {"format": "md"}).status_code == 404
    assert json.loads(client.get("/chat/export/").content)["conversations"] == []
    assert Client().get(f"/chat/{lemons.id}/export/").status_code == 302  # to the sign-in page


def test_an_upload_imports_for_the_importer_and_answers_json(bob):
    client = signed_in(bob)
    upload = SimpleUploadedFile("openwebui.json", (EXPORTS / "openwebui_export.json").read_bytes())
    response = client.post("/chat/import/", {"file": upload})
    assert response.status_code == 201
    [entry] = response.json()["imported"]
    assert entry["title"] == "🌱 Tomato Seedlings Care"
    assert Conversation.objects.get(id=entry["id"]).user == bob
    page = client.get(f"/chat/{entry['id']}/")
    assert "Should I bury the stems deeper" in page.content.decode()


def test_a_bad_upload_gets_a_sentence_in_the_endpoints_shape(bob):
    client = signed_in(bob)
    refused = client.post("/chat/import/", {"file": SimpleUploadedFile("notes.txt", b"shopping: eggs, milk")})
    assert refused.status_code == 400
    assert refused.json() == {
        "code": "bad_file",
        "message": "This file is not JSON: choose an export from HomeAI, ChatGPT (conversations.json) or Open WebUI.",
        "field": "file",
    }
    assert client.post("/chat/import/", {}).json()["message"] == "Choose a file to import."
    assert not Conversation.objects.exists()


@override_settings(HOMEAI_MAX_IMPORT_BYTES=2048)
def test_a_file_past_the_limit_is_refused_with_its_size(bob):
    upload = SimpleUploadedFile("big.json", b"[" + b" " * 5000 + b"]")
    refused = signed_in(bob).post("/chat/import/", {"file": upload})
    assert refused.status_code == 400 and refused.json()["code"] == "too_large"
    assert refused.json()["message"] == "The file is 5,002 bytes; this server imports files of up to 2,048 bytes."


def test_the_import_needs_the_csrf_token(bob):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    upload = SimpleUploadedFile("openwebui.json", (EXPORTS / "openwebui_export.json").read_bytes())
    assert client.post("/chat/import/", {"file": upload}).status_code == 403
    assert not Conversation.objects.exists()


@override_settings(HOMEAI_MAX_IMPORT_BYTES=4096, HOMEAI_MAX_BODY_FORM=1024)
def test_the_import_route_takes_its_own_body_limit():
    assert bodylimit.limit_for(b"/chat/import/") == 4096 + bodylimit.FORM_OVERHEAD
    assert bodylimit.limit_for(b"/chat/1/rename/") == 1024
    content_type, body = bodylimit.refusal(b"/chat/import/", 4096 + bodylimit.FORM_OVERHEAD)
    assert content_type == b"application/json"
    assert json.loads(body)["message"].startswith("The file is larger than the 4,096 bytes this server imports")


def share(client: Client, conversation: Conversation, **body) -> dict:
    response = client.post(f"/chat/{conversation.id}/share/", json.dumps(body), content_type="application/json")
    return {"status": response.status_code, **response.json()}


def test_a_chat_shared_with_one_person_is_read_by_them_and_nobody_else(alice, bob, carol, lemons):
    owner = signed_in(alice)
    assert owner.get(f"/chat/{lemons.id}/share/").json() == {
        "url": None,
        "everyone": False,
        "people": [],
        "housemates": [{"id": bob.id, "name": "bob"}, {"id": carol.id, "name": "carol"}],
    }
    shared = share(owner, lemons, people=[bob.id])
    assert shared["status"] == 200 and shared["people"] == [bob.id] and not shared["everyone"]
    path = shared["url"].removeprefix("http://testserver")
    assert path.startswith("/chat/shared/")

    page = signed_in(bob).get(path)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Tell me about lemons." in text and "They are **sour**." in text and "Shared by alice, read-only." in text
    assert 'id="composer"' not in text  # read-only: nothing to send with
    assert signed_in(carol).get(path).status_code == 404
    assert Client().get(path).status_code == 302
    assert owner.get(path).status_code == 200
    # Bob reads; he still cannot export, change or re-share it.
    assert signed_in(bob).get(f"/chat/{lemons.id}/export/").status_code == 404
    assert share(signed_in(bob), lemons, everyone=True)["status"] == 404


def test_everyone_signed_in_reads_a_chat_shared_with_everyone(alice, carol, lemons):
    path = share(signed_in(alice), lemons, everyone=True)["url"].removeprefix("http://testserver")
    assert signed_in(carol).get(path).status_code == 200
    assert Client().get(path).status_code == 302


def test_revoking_ends_the_link_and_a_new_share_is_a_new_link(alice, bob, lemons):
    owner = signed_in(alice)
    first = share(owner, lemons, people=[bob.id])["url"].removeprefix("http://testserver")
    revoked = owner.post(f"/chat/{lemons.id}/share/revoke/")
    assert revoked.status_code == 200 and revoked.json()["url"] is None
    assert signed_in(bob).get(first).status_code == 404
    assert not ChatShare.objects.exists()
    second = share(owner, lemons, people=[bob.id])["url"].removeprefix("http://testserver")
    assert second != first and signed_in(bob).get(second).status_code == 200


def test_sharing_refuses_nobody_a_stranger_and_a_bad_body(alice, bob, lemons):
    owner = signed_in(alice)
    assert share(owner, lemons) == {
        "status": 400,
        "code": "bad_request",
        "message": "Choose the people to share with, or everyone signed in.",
        "field": "people",
    }
    assert share(owner, lemons, people=[987654])["message"] == "One of those people has no account here."
    assert share(owner, lemons, people=["bob"])["field"] == "people"
    assert share(owner, lemons, everyone="yes")["field"] == "everyone"
    bob.is_active = False
    bob.save()
    assert share(owner, lemons, people=[bob.id])["status"] == 404
    assert not ChatShare.objects.exists()


def test_sharing_needs_the_csrf_token(alice, bob, lemons):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    body = json.dumps({"everyone": True})
    assert client.post(f"/chat/{lemons.id}/share/", body, content_type="application/json").status_code == 403
    assert not ChatShare.objects.exists()
