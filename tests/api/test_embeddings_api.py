"""Embeddings, end to end: the official `ollama` and `openai` clients and LangChain's
OllamaEmbeddings -> daphne -> a Celery worker -> llama.cpp (the bundled all-MiniLM-L6-v2)."""

from __future__ import annotations

import io
import json
import random

import httpx
import numpy as np
import ollama
import openai
import pytest
from django.conf import settings
from django.core.management import call_command
from langchain_ollama import OllamaEmbeddings
from prometheus_client.parser import text_string_to_metric_families

from inference import redis_client
from inference.metrics import PREFIX
from inference.models import EmbeddingBatch
from tests.api.test_api_hostile import JUNK
from tests.api.test_openai_api import MODEL, _post
from tests.support import METRICS_AUTH, wait_until

pytestmark = [pytest.mark.integration]

EMBEDDER = "all-minilm"
HI = [{"role": "user", "content": "Hi"}]
SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."]


@pytest.fixture
def client(live_server_url, worker, settled, api_key) -> ollama.Client:
    return ollama.Client(host=live_server_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=180)


def _unit(vectors) -> np.ndarray:
    array = np.array(vectors, dtype=np.float64)
    assert array.shape[1] == 384
    assert np.allclose(np.linalg.norm(array, axis=1), 1.0, atol=1e-4)
    return array


def _ranked(vectors: np.ndarray) -> None:
    """The paraphrase pair scores above the unrelated one."""
    assert vectors[0] @ vectors[1] > 0.6 > 0.2 > vectors[0] @ vectors[2]


def _tokens(text: str) -> int:
    """WordPiece tokens and [CLS], [SEP], counted from the words of SENTENCES (each word and the
    full stop is one token in this vocabulary)."""
    return len(text.replace(".", " .").split()) + 2


def test_the_ollama_client_embeds_a_batch_as_it_embeds_each_alone(client):
    batch = client.embed(model=EMBEDDER, input=SENTENCES)
    vectors = _unit(batch.embeddings)
    _ranked(vectors)
    assert batch.model == EMBEDDER
    assert batch.prompt_eval_count == sum(map(_tokens, SENTENCES))
    assert batch.total_duration >= batch.load_duration >= 0 and batch.total_duration > 0
    alone = _unit([client.embed(model=EMBEDDER, input=s).embeddings[0] for s in SENTENCES])
    assert np.abs(alone - vectors).max() < 1e-4

    legacy = client.embeddings(model=EMBEDDER, prompt=SENTENCES[0])
    assert np.abs(_unit([legacy.embedding])[0] - vectors[0]).max() < 1e-4

    rows = list(EmbeddingBatch.objects.order_by("id"))
    assert [r.inputs for r in rows] == [3, 1, 1, 1, 1]
    assert {r.status for r in rows} == {"done"} and {r.model_name for r in rows} == {"all-MiniLM-L6-v2.Q8_0.gguf"}
    assert rows[0].prompt_tokens == batch.prompt_eval_count
    assert all(r.compute_ms > 0 and r.queue_ms >= 0 and r.e2e_ms >= r.compute_ms for r in rows)


def test_the_openai_client_gets_base64_and_float_vectors_alike(api):
    packed = api.embeddings.create(model=EMBEDDER, input=SENTENCES)  # the client asks for base64
    plain = api.embeddings.create(model="all-minilm:22m", input=SENTENCES, encoding_format="float")
    assert [d.index for d in packed.data] == [0, 1, 2]
    vectors = _unit([d.embedding for d in packed.data])
    _ranked(vectors)
    assert np.abs(_unit([d.embedding for d in plain.data]) - vectors).max() < 1e-6
    assert packed.usage.prompt_tokens == packed.usage.total_tokens == sum(map(_tokens, SENTENCES))
    default = api.embeddings.create(model="", input=SENTENCES[0], dimensions=384, user="someone")
    assert np.abs(_unit([default.data[0].embedding])[0] - vectors[0]).max() < 1e-4


def test_langchains_ollama_embeddings_embed_documents_and_queries(live_server_url, worker, settled, api_key):
    embeddings = OllamaEmbeddings(
        model=EMBEDDER, base_url=live_server_url, client_kwargs={"headers": {"Authorization": f"Bearer {api_key}"}}
    )
    documents = _unit(embeddings.embed_documents(SENTENCES))
    _ranked(documents)
    query = _unit([embeddings.embed_query(SENTENCES[1])])[0]
    assert int(np.argmax(documents @ query)) == 1


def test_an_input_past_the_context_is_cut_unless_truncate_is_off(client, api_key, live_server_url):
    long_text = "word " * 700
    cut = client.embed(model=EMBEDDER, input=long_text)
    assert cut.prompt_eval_count == 512
    refused = _post(live_server_url, "/api/embed", api_key, {"model": EMBEDDER, "input": long_text, "truncate": False})
    assert refused.status_code == 400
    assert "702 tokens" in refused.json()["error"] and "at most 512" in refused.json()["error"]
    assert EmbeddingBatch.objects.latest("id").status == "error"


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/v1/embeddings", {"model": EMBEDDER, "input": []}, 400, "input is empty"),
        ("/v1/embeddings", {"model": EMBEDDER, "input": ""}, 400, "input[0] is empty"),
        ("/v1/embeddings", {"model": EMBEDDER}, 400, "input is required"),
        ("/v1/embeddings", {"model": EMBEDDER, "input": ["a", 3]}, 400, "input[1] must be a string"),
        ("/v1/embeddings", {"model": EMBEDDER, "input": [101, 2054]}, 400, "token ids"),
        ("/v1/embeddings", {"model": EMBEDDER, "input": "a", "encoding_format": "hex"}, 400, "encoding_format"),
        ("/v1/embeddings", {"model": EMBEDDER, "input": "a", "dimensions": 128}, 400, "only be 384"),
        ("/v1/embeddings", {"model": EMBEDDER, "input": ["a"] * 257}, 400, "at most 256"),
        ("/v1/embeddings", {"model": MODEL, "input": "a"}, 400, "is a chat model"),
        ("/v1/embeddings", {"model": "nomic-embed-text", "input": "a"}, 404, "does not exist"),
        ("/api/embed", {"model": EMBEDDER, "input": "a", "truncate": "no"}, 400, "truncate must be"),
        ("/api/embed", {"model": "smollm2", "input": "a"}, 400, "is a chat model"),
        ("/api/embeddings", {"model": EMBEDDER}, 400, "prompt must be a string"),
        ("/v1/chat/completions", {"model": EMBEDDER, "messages": HI}, 400, "embedding"),
        ("/api/chat", {"model": EMBEDDER, "messages": HI}, 400, "embedding model"),
    ],
)
def test_bad_embedding_requests_get_a_clear_error_and_queue_nothing(
    api, api_key, live_server_url, path, body, status, words
):
    response = _post(live_server_url, path, api_key, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert words in (error if isinstance(error, str) else error["message"])
    assert not EmbeddingBatch.objects.exists()


def test_a_request_without_a_key_is_refused(live_server_url, worker, settled):
    for path in ("/v1/embeddings", "/api/embed", "/api/embeddings"):
        response = _post(live_server_url, path, None, {"model": EMBEDDER, "input": "a", "prompt": "a"})
        assert response.status_code == 401, path
    assert not EmbeddingBatch.objects.exists()


def test_the_model_lists_show_the_embedding_model_as_such(client, api, live_server_url):
    assert settings.BUNDLED_EMBEDDING_MODEL_PATH.name in [m.id for m in api.models.list()]
    assert settings.BUNDLED_EMBEDDING_MODEL_PATH.name in [m.model for m in client.list().models]
    shown = client.show(EMBEDDER)
    assert shown.capabilities == ["embedding"] and shown.details.family == "bert"
    assert client.show(MODEL).capabilities == ["completion", "tools"]


def test_embeddings_are_counted_in_metrics_apart_from_answers(client, live_server_url):
    r = redis_client.client()
    stale = list(r.scan_iter(match=PREFIX + "*", count=500))
    if stale:
        r.delete(*stale)
    client.embed(model=EMBEDDER, input=SENTENCES)
    model = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    samples = [
        s
        for family in text_string_to_metric_families(
            httpx.get(live_server_url + "/metrics", headers=METRICS_AUTH, timeout=30).text
        )
        for s in family.samples
        if s.labels.get("model") == model
    ]

    def value(name: str, **labels) -> float:
        return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())

    assert value("homeai_embedding_inputs_total") == 3
    assert value("homeai_embedding_tokens_total") == sum(map(_tokens, SENTENCES))
    assert value("homeai_embedding_requests_total", outcome="done") == 1
    assert value("homeai_embedding_request_seconds_count") == 1
    assert value("homeai_requests_total") == 0  # not an answer


def test_a_batch_of_thirty_two_sentences_is_embedded_in_one_request(client, capsys):
    sentences = [f"Sentence number {i} is about a cat sitting on a mat." for i in range(32)]
    client.embed(model=EMBEDDER, input=sentences[:1])  # loaded
    before = EmbeddingBatch.objects.count()
    batch = client.embed(model=EMBEDDER, input=sentences)
    assert len(batch.embeddings) == 32
    # One request, one batch for the worker: a single row holding all 32 inputs.
    assert EmbeddingBatch.objects.count() == before + 1
    row = EmbeddingBatch.objects.latest("id")
    assert row.inputs == 32 and row.status == EmbeddingBatch.Status.DONE
    with capsys.disabled():
        print(f"\n32 sentences: {row.compute_ms:.0f} ms compute, {32000 / row.compute_ms:.1f} inputs/s")


def test_a_second_users_key_makes_rows_of_its_own(client, live_server_url, make_user):
    client.embed(model=EMBEDDER, input=SENTENCES[0])
    make_user("bob")
    out = io.StringIO()
    call_command("create_api_key", "bob", "--name", "bob's", stdout=out)
    bobs = openai.OpenAI(base_url=live_server_url + "/v1", api_key=out.getvalue().strip(), max_retries=0)
    bobs.embeddings.create(model=EMBEDDER, input=SENTENCES)
    by_user = {r.user.username: r.inputs for r in EmbeddingBatch.objects.select_related("user")}
    assert by_user == {"ada": 1, "bob": 3}


def hostile_embedding_body(rng: random.Random) -> bytes:
    if rng.random() < 0.1:
        return rng.choice([b"", b"{", b"[]", b"null", b"\xff\xfe", b'{"input":', b"[" * 5000])
    body: dict = {}
    for name in rng.sample(
        ["input", "prompt", "model", "encoding_format", "dimensions", "truncate", "options", "keep_alive", "user"],
        rng.randint(0, 5),
    ):
        body[name] = rng.choice([*JUNK, [rng.choice(JUNK), "a"], [[101, 102]], "base64", 384, EMBEDDER])
    return json.dumps(body).encode()


def test_random_hostile_bodies_never_get_a_5xx_and_every_refusal_is_an_error_object(api, api_key, live_server_url):
    rng = random.Random(20261201)
    statuses: dict[int, int] = {}
    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=live_server_url, timeout=180) as http:
        for _ in range(300):
            path = rng.choice(["/v1/embeddings", "/api/embed", "/api/embeddings"])
            response = http.post(path, content=hostile_embedding_body(rng), headers=headers)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert response.status_code < 500, (path, response.status_code, response.text[:300])
            if response.status_code != 200:
                error = response.json()["error"]
                assert error if path == "/v1/embeddings" else isinstance(error, str), (path, response.text[:300])
    assert statuses.get(400, 0) > 150, statuses
    assert not EmbeddingBatch.objects.exclude(status="done").exists()


def test_api_ps_lists_the_embedding_model_once_a_worker_has_loaded_it(client):
    client.embed(model=EMBEDDER, input=SENTENCES[0])
    name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    assert wait_until(lambda: name in [m.model for m in client.ps().models], timeout=30)
