"""Several models, several workers: each answer goes to a worker that holds its model, a model no
worker has is refused at once, one a stopped worker held waits for it, and a worker keeps its
most recently used models loaded (real workers, real model, real daphne)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from inference.dispatch import registry
from inference.models import Generation
from tests.support import WorkerProcess, wait_until

pytestmark = [pytest.mark.integration]


def model_folder(tmp_path: Path, *names: str) -> Path:
    """A worker's own models folder: the chat model's file under each name (hard links)."""
    folder = tmp_path / "-".join(Path(n).stem for n in names)
    folder.mkdir()
    for name in names:
        (folder / name).hardlink_to(settings.BUNDLED_CHAT_MODEL_PATH)
    return folder


def start_worker(folder: Path, log_name: str, **env: str) -> WorkerProcess:
    """A worker that holds only its folder's models (standing in for another machine)."""
    handle = WorkerProcess(
        concurrency=2,
        env={"HOMEAI_MODELS_DIR": str(folder), "HOMEAI_BUNDLED_MODELS": "0", **env},
        log_name=log_name,
    )
    handle.start()
    return handle


def holders(model: str) -> list[str]:
    return [name for name, beat in registry.live_workers().items() if model in registry.held_models({name: beat})]


def answer(sock, model: str, text: str = "Say hi.") -> dict:
    return sock.chat(text, max_tokens=4, settings={"model": model})[-1]


def api_chat(base_url: str, key: str, model: str) -> tuple[int, dict]:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}).encode()
    request = urllib.request.Request(
        base_url + "/v1/chat/completions",
        data=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def two_machines(tmp_path, live_server_url, settled):
    """Worker A holds alpha.gguf, worker B beta.gguf; nothing else serves either."""
    a = start_worker(model_folder(tmp_path, "alpha.gguf"), "worker-alpha")
    b = start_worker(model_folder(tmp_path, "beta.gguf"), "worker-beta")
    yield a, b
    a.stop()
    b.stop()


def test_each_worker_gets_only_its_own_models_answers_and_a_stopped_ones_wait_for_it(
    two_machines, make_user, connect, api_key, live_server_url
):
    a, b = two_machines
    assert wait_until(lambda: holders("alpha.gguf") == [a.name] and holders("beta.gguf") == [b.name], timeout=60)
    sock = connect(make_user("ann"))
    for model, worker in [("alpha.gguf", a), ("beta.gguf", b), ("alpha.gguf", a), ("beta.gguf", b)]:
        done = answer(sock, model)
        assert done["type"] == "generation.done", done
        row = Generation.objects.get(id=done["generation"])
        assert row.model_name == model and row.worker == worker.name

    # A model no worker has, and none ever had: refused at once, by both doors.
    refused = sock.chat("Hi", max_tokens=4, settings={"model": "nowhere:1b"})[-1]
    assert refused["type"] == "generation.error" and refused["code"] == "model_not_found"
    assert "nowhere:1b" in refused["message"] and "alpha.gguf" in refused["message"]
    status, body = api_chat(live_server_url, api_key, "nowhere:1b")
    assert status == 404 and body["error"]["code"] == "model_not_found"

    # B's machine goes off: A goes on serving alpha; an API request for beta is a 503 at once;
    # a chat message for beta waits, told why, and is answered once a worker with beta is back.
    b.kill()
    assert wait_until(lambda: holders("beta.gguf") == [], timeout=60)
    assert answer(sock, "alpha.gguf")["type"] == "generation.done"
    status, body = api_chat(live_server_url, api_key, "beta.gguf")
    assert status == 503 and "beta.gguf" in body["error"]["message"]
    sock.send(
        {
            "type": "chat.send",
            "conversation": None,
            "text": "Still there?",
            "max_tokens": 4,
            "settings": {"model": "beta.gguf"},
        }
    )
    events = sock.collect(lambda e: e["type"] == "generation.phase" and e.get("phase") == "notice", timeout=120)
    notice = events[-1]
    assert "beta.gguf" in notice["message"] and "answered as soon as one starts" in notice["message"]
    assert Generation.objects.get(id=notice["generation"]).status == "queued"
    b.start()
    events = sock.collect(lambda e: e["type"] in ("generation.done", "generation.error"), timeout=600)
    assert events[-1]["type"] == "generation.done" and events[-1]["generation"] == notice["generation"]
    assert Generation.objects.get(id=notice["generation"]).worker == b.name


def test_two_models_stay_loaded_between_interleaved_answers_and_a_third_unloads_the_least_recently_used(
    tmp_path, live_server_url, settled, make_user, connect
):
    names = ("one.gguf", "two.gguf", "three.gguf")
    worker = start_worker(model_folder(tmp_path, *names), "worker-lru", HOMEAI_MAX_LOADED_MODELS="2")
    try:
        assert wait_until(lambda: all(holders(n) == [worker.name] for n in names), timeout=60)
        sock = connect(make_user("bea"))

        def cold(model: str) -> bool:
            done = answer(sock, model)
            assert done["type"] == "generation.done", done
            return done["metrics"]["cold"]

        assert [cold(n) for n in ("one.gguf", "two.gguf", "one.gguf", "two.gguf")] == [True, True, False, False]

        def loaded() -> set[str]:
            beat = registry.live_workers().get(worker.name, {})
            return {e["model"] for e in beat.get("engines", []) if e.get("loaded")}

        assert wait_until(lambda: loaded() == {"one.gguf", "two.gguf"}, timeout=60)
        assert cold("three.gguf") is True  # one.gguf was used least recently: it makes room
        assert wait_until(lambda: loaded() == {"two.gguf", "three.gguf"}, timeout=60)
        assert cold("two.gguf") is False
        assert cold("one.gguf") is True  # loaded again, in place of three.gguf
        assert wait_until(lambda: loaded() == {"two.gguf", "one.gguf"}, timeout=60)
        rss_kb = int(
            next(line for line in open(f"/proc/{worker.proc.pid}/status") if line.startswith("VmRSS")).split()[1]
        )
        print(f"worker RSS with two models loaded: {rss_kb / 1024:.0f} MB")
    finally:
        worker.stop()
