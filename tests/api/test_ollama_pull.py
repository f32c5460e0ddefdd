# ruff: noqa: F811
"""/api/pull, /api/delete and /api/copy against a real registry, with the official ollama client.

A HomeAI of its own (tests/stack.py: its own Redis, daphne and worker) whose worker's models
folder is a temporary one: what it pulls never reaches the suite's or anyone's models folder.
The registry is Debian's docker-registry, behind a proxy that counts blob bytes and can hold a
download half-way (tests/infra/pull/servers.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import ollama
import pytest
from django.conf import settings

from inference import redis_client
from infra.pull import store
from tests.infra.pull.servers import flip_blob_byte, push_ollama_model, tiny_gguf

# The stack's fixtures, shared with the library page's test (pytest finds them here by name;
# the tests' parameters of the same names are those fixtures: ruff's F811 is off in this file).
from tests.pullstack import hf_hub, models_dir, registry, stack  # noqa: F401
from tests.support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.faults]
WAIT = 600  # an upper bound on an event on a busy box, never a measurement


@pytest.fixture
def client(stack, staff_api_key) -> ollama.Client:
    if not stack.worker.alive():
        stack.worker.start()
    return ollama.Client(host=stack.url, headers={"Authorization": f"Bearer {staff_api_key}"}, timeout=WAIT)


def push(registry, repo: str, gguf: Path, tag: str = "latest") -> dict:
    handle, _ = registry
    return push_ollama_model(handle.url, repo, tag, gguf)


def gguf_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.gguf"))


def test_the_ollama_client_pulls_a_model_that_then_answers(stack, registry, client, models_dir):
    manifest = push(registry, "library/smol", _bundled_chat(), "135m")
    model = manifest["layers"][0]

    parts = list(client.pull("smol:135m", stream=True))

    statuses = [p.status for p in parts]
    assert statuses[0] == "pulling manifest"
    assert statuses[-3:] == ["verifying sha256 digest", "writing manifest", "success"]
    layer = [p for p in parts if p.digest == model["digest"]]
    assert layer[-1].total == layer[-1].completed == model["size"]
    assert [p.completed for p in layer] == sorted(p.completed for p in layer)
    assert gguf_files(models_dir) == ["smol-135m.gguf"]

    listed = [m.model for m in client.list().models]
    assert "smol-135m.gguf" in listed
    key = client._client.headers["authorization"]
    served = httpx.get(stack.url + "/v1/models", headers={"Authorization": key}, timeout=60).json()
    assert "smol-135m.gguf" in [m["id"] for m in served["data"]]
    shown = client.show("smol:135m")
    assert shown.parameters == 'stop                           "<|im_end|>"'
    assert shown.license.startswith("Apache")
    assert "im_start" in shown.template  # the GGUF's own chat template comes first
    answer = client.chat(
        model="smol:135m", messages=[{"role": "user", "content": "Say hi."}], options={"num_predict": 8}
    )
    assert answer.message.content.strip()


def _bundled_chat() -> Path:
    """The bundled chat model (SmolLM2 135M; the session's bundled_models fixture wrote it)."""
    return Path(settings.BUNDLED_CHAT_MODEL_PATH)


def test_an_unknown_name_is_an_ollama_404(client):
    with pytest.raises(ollama.ResponseError) as err:
        list(client.pull("nobody-has-this:1b", stream=True))
    assert err.value.status_code == 404
    assert "There is no model nobody-has-this:1b" in err.value.error
    with pytest.raises(ollama.ResponseError) as err:
        client.pull("nobody-has-this:1b", stream=False)
    assert err.value.status_code == 404


def test_a_name_with_a_path_is_refused(client):
    with pytest.raises(ollama.ResponseError) as err:
        client.pull("../../etc/passwd")
    assert err.value.status_code == 400
    assert "is not a model name" in err.value.error


def test_a_flipped_byte_is_refused_and_nothing_is_listed(registry, client, models_dir, tmp_path):
    handle, _ = registry
    manifest = push(registry, "library/flipped", tiny_gguf(tmp_path / "f.gguf", n_floats=64 * 1024))
    flip_blob_byte(handle.directory / "storage", manifest["layers"][0]["digest"])
    before = gguf_files(models_dir)
    with pytest.raises(ollama.ResponseError) as err:
        client.pull("flipped", stream=False)
    assert "does not match its sha256 digest" in err.value.error
    assert gguf_files(models_dir) == before
    assert not list(models_dir.glob(".pull-*"))
    assert all("flipped" not in m.model for m in client.list().models)


def test_people_without_a_staff_key_cannot_pull(stack, api_key):
    plain = ollama.Client(host=stack.url, headers={"Authorization": f"Bearer {api_key}"})
    with pytest.raises(ollama.ResponseError) as err:
        plain.pull("smol:135m")
    assert err.value.status_code == 403
    with pytest.raises(ollama.ResponseError) as err:
        ollama.Client(host=stack.url).pull("smol:135m")
    assert err.value.status_code == 401


def test_a_pull_cut_by_a_dead_worker_resumes_from_its_partial(
    stack, registry, client, models_dir, staff_api_key, tmp_path
):
    """The worker is SIGKILLed while the registry's proxy holds the model's blob half-sent;
    the next pull asks for the rest with a Range request (well under 60% of the bytes), and
    meanwhile a second pull is refused (HOMEAI_MAX_PULLS 1)."""
    _, proxy = registry
    manifest = push(registry, "library/resumable", tiny_gguf(tmp_path / "r.gguf", n_floats=2 * 2**20))
    size = manifest["layers"][0]["size"]
    lines: list[dict] = []

    def watch() -> None:
        headers = {"Authorization": f"Bearer {staff_api_key}"}
        try:
            with httpx.stream(
                "POST", stack.url + "/api/pull", json={"model": "resumable"}, headers=headers, timeout=WAIT
            ) as r:
                for line in r.iter_lines():
                    lines.append(json.loads(line))
        except httpx.HTTPError:
            pass

    proxy.hold_after(size // 2)
    threading.Thread(target=watch, daemon=True).start()
    assert proxy.held.wait(WAIT)
    assert wait_until(lambda: any(line.get("completed") == size // 2 for line in lines), timeout=120)
    with pytest.raises(ollama.ResponseError) as err:
        client.pull("another", stream=False)
    assert err.value.status_code == 429
    killed = stack.worker.name
    stack.worker.kill()
    proxy.release()
    # Once its heartbeat has expired the pull no longer counts as running (HOMEAI_WORKER_TTL).
    assert wait_until(lambda: not stack.redis.client.exists(redis_client.worker_key(killed)), timeout=120)
    partial = store.partial_path(models_dir, manifest["layers"][0]["digest"])
    assert partial.stat().st_size == size // 2
    stack.worker.start()

    before = proxy.blob_bytes
    assert client.pull("resumable", stream=False).status == "success"
    assert proxy.blob_bytes - before < 0.6 * size
    assert f"bytes={size // 2}-" in proxy.ranges
    assert (models_dir / "resumable-latest.gguf").stat().st_size == size
    assert not partial.exists()


def test_copy_and_delete_a_pulled_model(registry, client, models_dir, tmp_path):
    push(registry, "library/small", tiny_gguf(tmp_path / "s.gguf", n_floats=1024))
    client.pull("small:latest", stream=False)
    client.copy("small", "mine:1")
    assert {"small-latest.gguf", "mine-1.gguf"} <= set(gguf_files(models_dir))
    assert store.read_sidecar(models_dir / "mine-1.gguf")["name"] == "mine:1"
    assert client.delete("mine:1").status == "success"
    assert "mine-1.gguf" not in gguf_files(models_dir)
    with pytest.raises(ollama.ResponseError) as err:
        client.delete("mine:1")
    assert err.value.status_code == 404


def test_it_pulls_a_hugging_face_gguf_through_huggingface_hub(hf_hub, client, models_dir, tmp_path):
    gguf = tiny_gguf(tmp_path / "t.gguf", n_floats=64 * 1024)
    hf_hub.add("someone/Tiny-GGUF", gguf, "Tiny-Q4_K_M.gguf")
    parts = list(client.pull("hf.co/someone/Tiny-GGUF:Q4_K_M", stream=True))
    assert parts[-1].status == "success"
    assert any(p.completed == gguf.stat().st_size for p in parts)
    assert (models_dir / "Tiny-Q4_K_M.gguf").read_bytes() == gguf.read_bytes()
    with pytest.raises(ollama.ResponseError) as err:
        client.pull("hf.co/someone/Tiny-GGUF:Q2_K")
    assert err.value.status_code == 404
    assert "has no Q2_K file" in err.value.error
