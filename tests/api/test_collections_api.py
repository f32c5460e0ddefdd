"""/v1/collections end to end: httpx -> daphne -> a Celery worker indexing with the real
embedding model -> hybrid search; and a second person who can neither list, search, index nor
download from a private collection (404: it does not exist for them)."""

from __future__ import annotations

import io
import json
import re

import httpx
import ollama
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from documents import services
from documents.models import Collection
from inference import metrics
from inference.models import Generation
from tests.api.test_openai_api import MODEL
from tests.documents import files
from tests.support import wait_until

pytestmark = [pytest.mark.integration]


def key_of(username: str) -> str:
    out = io.StringIO()
    call_command("create_api_key", username, "--name", "tests", stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def people(live_server_url, worker, settled, make_user):
    """(ada's client, bob's client, ada's private collection of two uploads, indexed)."""
    ada = make_user("ada")
    make_user("bob")
    ada_client = httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {key_of('ada')}"})
    bob_client = httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {key_of('bob')}"})
    collection = services.collection_create(owner=ada, name="Ada's papers")
    lease = files.pdf_bytes(["Lease", "Parties", "The deposit is 1200 euros, paid in May."])
    services.upload_add(collection=collection, name="lease.pdf", chunks=[lease])
    services.upload_add(collection=collection, name="plants.txt", chunks=[b"Water the ferns every Sunday morning."])
    started = ada_client.post(f"/v1/collections/{collection.id}/index")
    assert started.status_code == 202, started.text

    def ended() -> dict | None:
        state = ada_client.get(f"/v1/collections/{collection.id}/index").json()
        return state if state["status"] not in ("queued", "running") else None

    assert wait_until(ended, timeout=300)
    state = ended()
    assert (state["status"], state["files_total"], state["files_embedded"], state["errors"]) == ("done", 2, 2, [])
    yield ada_client, bob_client, collection
    ada_client.close()
    bob_client.close()


def test_the_owner_lists_searches_and_downloads(people):
    ada, _bob, collection = people
    listed = ada.get("/v1/collections").json()["data"]
    assert [(c["id"], c["name"], c["visibility"], c["documents"]) for c in listed] == [
        (collection.id, "Ada's papers", "private", 2)
    ]

    found = ada.post(f"/v1/collections/{collection.id}/search", json={"query": "How much was the deposit?"})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["mode"] == "hybrid"
    best = body["data"][0]
    assert (best["path"], best["page"]) == ("lease.pdf", 3)
    assert "1200 euros" in best["text"]
    assert best["fulltext_rank"] == 1 and best["vector_rank"] is not None

    # A question that shares no word with the file is still answered, by its meaning.
    meaning = ada.post(f"/v1/collections/{collection.id}/search", json={"query": "watering houseplants", "limit": 1})
    assert [(h["path"], h["fulltext_rank"]) for h in meaning.json()["data"]] == [("plants.txt", None)]

    downloaded = ada.get(best["file"])
    assert downloaded.status_code == 200
    assert downloaded.content.startswith(b"%PDF")


def test_another_person_gets_404_for_a_private_collection(people):
    ada, bob, collection = people
    assert bob.get("/v1/collections").json()["data"] == []
    file_url = ada.post(f"/v1/collections/{collection.id}/search", json={"query": "deposit"}).json()["data"][0]["file"]
    for response in (
        bob.post(f"/v1/collections/{collection.id}/search", json={"query": "deposit"}),
        bob.get(file_url),
        bob.get(f"/v1/collections/{collection.id}/index"),
        bob.post(f"/v1/collections/{collection.id}/index"),
        bob.delete(f"/v1/collections/{collection.id}/index"),
    ):
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == "not_found"


def test_sharing_by_name_lets_that_person_read_but_not_reindex(people):
    ada, bob, collection = people
    Collection.objects.filter(id=collection.id).update(visibility=Collection.Visibility.PEOPLE)
    collection.readers.add(get_user_model().objects.get(username="bob"))

    assert [c["id"] for c in bob.get("/v1/collections").json()["data"]] == [collection.id]
    found = bob.post(f"/v1/collections/{collection.id}/search", json={"query": "deposit"}).json()["data"]
    assert found[0]["path"] == "lease.pdf"
    assert bob.get(found[0]["file"]).status_code == 200
    assert bob.post(f"/v1/collections/{collection.id}/index").status_code == 404


def test_bad_searches_get_a_sentence(people):
    ada, _bob, collection = people
    for body, param in (({}, "query"), ({"query": " "}, "query"), ({"query": "x", "limit": 0}, "limit")):
        response = ada.post(f"/v1/collections/{collection.id}/search", json=body)
        assert response.status_code == 400
        assert response.json()["error"]["param"] == param
    assert ada.get("/v1/collections", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert ada.post("/v1/collections/999999/search", json={"query": "x"}).status_code == 404
    never = services.collection_create(owner=collection.owner, name="Never indexed")
    for response in (ada.get(f"/v1/collections/{never.id}/index"), ada.delete(f"/v1/collections/{never.id}/index")):
        assert response.json() == {"job": None, "status": "never"}


def retrieve_count() -> float:
    exposition = metrics.exposition()[0].decode()
    counts = re.findall(r"^homeai_retrieve_time_seconds_count\{[^}]*\} (\S+)$", exposition, re.M)
    return sum(float(n) for n in counts)


def cites_the_lease(client: httpx.Client, sources: list[dict], collection: Collection) -> dict:
    """An answer's `homeai_sources` (the first answer of the test): numbered from 1, the ones
    stored on the answer, the PDF's page 3 among them with the file's API link, which downloads
    it. Returns that source."""
    assert [s["n"] for s in sources] == list(range(1, len(sources) + 1))
    lease = next(s for s in sources if s["page"] == 3)
    assert (lease["path"], lease["collection"]) == ("lease.pdf", collection.id)
    assert "1200 euros" in lease["text"]
    assert lease["file"] == f"/v1/collections/{collection.id}/documents/{lease['document']}/file"
    assert client.get(lease["file"]).content.startswith(b"%PDF")
    generation = Generation.objects.get()
    assert generation.collections == [collection.id] and generation.retrieve_ms > 0
    assert [s["chunk"] for s in generation.sources] == [s["chunk"] for s in sources]
    return lease


def test_a_chat_completion_is_drawn_from_a_collection_named_in_the_request(people):
    """The extension field `collections` on /v1/chat/completions: the answer's retrieve phase
    finds the PDF's page 3, its sources come back in `homeai_sources` with the file's API link;
    for a person who may not read the collection, the request is a 404 and nothing is stored."""
    ada, bob, collection = people
    ask = {"messages": [{"role": "user", "content": "How much was the deposit?"}], "max_tokens": 8}

    answered = ada.post("/v1/chat/completions", json={**ask, "collections": [collection.id]}, timeout=600)

    assert answered.status_code == 200, answered.text
    body = answered.json()
    lease = cites_the_lease(ada, body["homeai_sources"], collection)
    assert body["timings"]["retrieve_ms"] > 0
    # /metrics: the phase's histogram (counted by the worker just after it sent the answer).
    assert wait_until(lambda: retrieve_count() >= 1, timeout=60)

    # Without the field, no retrieve phase and no sources.
    plain = ada.post("/v1/chat/completions", json=ask, timeout=600).json()
    assert "homeai_sources" not in plain and plain["timings"]["retrieve_ms"] is None

    refused = bob.post("/v1/chat/completions", json={**ask, "collections": [collection.id]})
    assert refused.status_code == 404, refused.text
    assert (refused.json()["error"]["code"], refused.json()["error"]["param"]) == ("not_found", "collections")
    assert bob.get(lease["file"]).status_code == 404
    assert Generation.objects.filter(user__username="bob").count() == 0
    bad = ada.post("/v1/chat/completions", json={**ask, "collections": "all"})
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "collections")


def test_an_ollama_chat_and_generate_are_drawn_from_a_collection_named_in_the_request(people, live_server_url):
    """The same `collections` on Ollama's /api/chat and /api/generate: the sources come back as
    `homeai_sources` on the answer's done line, the same objects as /v1's; another person's
    collection is Ollama's 404 and nothing is stored; a bad value a 400 that names the field.
    The official `ollama` client has no field of its own for it and passes options through as they
    are: options.collections works, and the client reads the answer with our extra field."""
    ada, bob, collection = people
    question = [{"role": "user", "content": "How much was the deposit?"}]
    ask = {"model": MODEL, "messages": question, "options": {"num_predict": 8}, "stream": False}

    answered = ada.post("/api/chat", json={**ask, "collections": [collection.id]}, timeout=600)

    assert answered.status_code == 200, answered.text
    body = answered.json()
    assert body["done"] and body["message"]["role"] == "assistant"
    lease = cites_the_lease(ada, body["homeai_sources"], collection)

    # Streamed: only the done line carries the sources; /api/generate (through the chat template) too.
    with ada.stream(
        "POST", "/api/chat", json={**ask, "stream": True, "collections": [collection.id]}, timeout=600
    ) as streamed:
        lines = [json.loads(line) for line in streamed.iter_lines() if line]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert [("homeai_sources" in line) for line in lines] == [line["done"] for line in lines]
    assert lines[-1]["homeai_sources"][0]["collection"] == collection.id
    prompt = {"model": MODEL, "prompt": "How much was the deposit?", "options": {"num_predict": 8}, "stream": False}
    generated = ada.post("/api/generate", json={**prompt, "collections": [collection.id]}, timeout=600).json()
    assert any(s["page"] == 3 for s in generated["homeai_sources"]) and generated["response"]
    plain = ada.post("/api/chat", json=ask, timeout=600).json()
    assert plain["done"] and "homeai_sources" not in plain

    # The official client: collections through its options; its answers still parse.
    client = ollama.Client(host=live_server_url, headers={"Authorization": ada.headers["Authorization"]}, timeout=600)
    options = {"num_predict": 8, "collections": [collection.id]}
    reply = client.chat(model=MODEL, messages=question, options=options)
    assert reply.done and reply.message.role == "assistant"
    assert any(s["page"] == 3 for s in Generation.objects.latest("id").sources)
    parts = list(client.chat(model=MODEL, messages=question, options=options, stream=True))
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
    assert Generation.objects.latest("id").collections == [collection.id]

    stored = Generation.objects.count()
    refused = bob.post("/api/chat", json={**ask, "collections": [collection.id]})
    assert refused.status_code == 404, refused.text
    assert refused.json() == {"error": "No such collection, or it is not shared with you."}
    assert bob.get(lease["file"]).status_code == 404
    bob_client = ollama.Client(host=live_server_url, headers={"Authorization": bob.headers["Authorization"]})
    with pytest.raises(ollama.ResponseError) as caught:
        bob_client.chat(model=MODEL, messages=question, options=options)
    assert caught.value.status_code == 404 and "not shared with you" in caught.value.error
    assert bob.post("/api/generate", json={**prompt, "collections": [collection.id]}).status_code == 404
    for bad in ("all", [str(collection.id)]):
        for path, request in (("/api/chat", ask), ("/api/generate", prompt)):
            response = ada.post(path, json={**request, "collections": bad})
            assert response.status_code == 400, response.text
            assert response.json() == {"error": "collections must be a list of collection ids (integers)."}
    assert Generation.objects.count() == stored and not Generation.objects.filter(user__username="bob").exists()
