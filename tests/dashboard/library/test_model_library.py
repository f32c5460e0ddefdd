"""The model library: GGUF files described from their headers, chosen live, corrupt ones listed."""

from __future__ import annotations

import json
import os

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from inference import model_library, probe, redis_client, speed
from inference.models import Generation
from inference.speed import Shape
from tests import factories
from tests.support import wait_until

BUNDLED_BASE = factories.BUNDLED_MODEL


def holds(health, name: str) -> bool:
    """Whether the (one) worker holds the model, as /healthz tells staff (its heartbeat reads
    the models folder again every beat)."""
    items = health()["workers"]["items"]
    return bool(items) and name in items[0]["models"]


def test_the_bundled_model_is_described_without_loading_it(bundled_model):
    info = model_library.inspect(bundled_model)
    assert info.usable and info.bundled
    assert info.architecture == "gemma3"
    assert info.n_params == 268_098_176  # the tensors' elements, as llama.cpp counts them
    assert info.quantization == "Q4_K_M"
    assert info.context_length == 32_768
    assert info.size_bytes == bundled_model.stat().st_size


@pytest.mark.parametrize(
    ("basename", "size_label", "alias"),
    [
        ("gemma-3", "270M", "gemma3:270m"),  # no hyphen before a number, as Ollama names it
        ("SmolLM2", "135M", "smollm2:135m"),
        ("all-minilm", "22M", "all-minilm:22m"),  # a hyphen between words stays
        ("Qwen2.5-Coder", "7B", "qwen2.5-coder:7b"),
        ("Llama-3.2", None, "llama3.2:latest"),
        ("-odd-", "", "odd:latest"),
        ("", "1B", ""),
    ],
)
def test_a_models_alias_is_ollamas_spelling_of_its_basename_and_size(basename, size_label, alias):
    assert model_library.short_name(basename, size_label) == alias


def test_a_chat_model_is_no_embedding_model_and_the_bundled_embedder_is_one(bundled_model):
    assert model_library.inspect(bundled_model).kind == model_library.CHAT
    assert model_library.inspect(settings.BUNDLED_EMBEDDING_MODEL_PATH).kind == model_library.EMBEDDING
    assert model_library.kind_of({"qwen3.pooling_type": 3}, "qwen3") == model_library.EMBEDDING
    assert model_library.kind_of({"qwen3.pooling_type": 0}, "qwen3") == model_library.CHAT


def test_staff_cannot_make_the_embedding_model_the_chats_model(db, bundled_models):
    name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("admin", password="x" * 12))
    page = client.get("/models/").content.decode()
    radio = page[page.index(f'value="{name}"') :]
    assert radio[: radio.index(">")].split()[-1] == "disabled"
    refused = client.post("/models/", {"model": name}, follow=True).content.decode()
    assert f"{name} is an embedding model" in refused


def test_a_corrupt_file_is_listed_as_unusable_with_the_reason(tmp_path):
    (tmp_path / "broken.gguf").write_bytes(b"definitely not a model" * 50)
    (tmp_path / "notes.txt").write_text("ignored: not a .gguf")
    [broken] = model_library.scan(tmp_path)
    assert broken.name == "broken.gguf" and not broken.usable
    assert "not a GGUF file" in broken.problem


@pytest.mark.integration
def test_a_second_model_can_be_chosen_and_the_next_answer_comes_from_it_after_a_cold_load(
    worker, make_user, connect, health, bundled_model
):

    second = settings.MODELS_DIR / "second-copy.gguf"
    broken = settings.MODELS_DIR / "broken.gguf"
    os.link(bundled_model, second)
    broken.write_bytes(b"GGUF but truncated")
    admin = get_user_model().objects.create_superuser("admin", password="x" * 12)
    client = Client()
    client.force_login(admin)

    try:
        page = client.get("/models/").content.decode()
        assert "second-copy.gguf" in page and "broken.gguf" in page and "268 M" in page and "Unusable" in page
        refused = client.post("/models/", {"model": "broken.gguf"}, follow=True).content.decode()
        assert "broken.gguf cannot be used" in refused
        client.post("/models/", {"model": "second-copy.gguf", "context": "2048"})
        assert wait_until(lambda: holds(health, "second-copy.gguf"), timeout=15)

        sock = connect(make_user("dora"))
        events = sock.chat("Hello there.", max_tokens=4)
        done = [e for e in events if e["type"] == "generation.done"][0]
        assert done["metrics"]["cold"] is True and done["metrics"]["load_ms"] > 0
        assert Generation.objects.get(id=done["generation"]).model_name == "second-copy.gguf"
        assert worker.alive()
    finally:
        client.post("/models/", {"model": bundled_model.name})
        redis_client.client().delete(redis_client.ENGINE_CONFIG_KEY)
        second.unlink()
        broken.unlink()


@pytest.mark.integration
def test_a_model_llama_cpp_cannot_load_is_a_clear_error_and_the_worker_stays_up(worker, make_user, connect, health):
    """A file whose header reads well but whose tensors are cut short (a download that stopped):
    the worker takes it up from the folder, fails to load it, says so, and serves the others."""
    broken = settings.MODELS_DIR / "truncated.gguf"
    with open(settings.BUNDLED_CHAT_MODEL_PATH, "rb") as whole:
        broken.write_bytes(whole.read(3_000_000))
    try:
        assert wait_until(lambda: holds(health, broken.name), timeout=60)
        sock = connect(make_user())
        error = sock.chat("Hello?", max_tokens=4, settings={"model": broken.name})[-1]
        assert error["type"] == "generation.error" and error["code"] == "model_unusable"
        assert "truncated.gguf" in error["message"]
        assert Generation.objects.get(id=error["generation"]).status == "error"
        assert worker.alive()
        done = sock.chat("Hello?", max_tokens=4, settings={"model": ""})[-1]
        assert done["type"] == "generation.done"
    finally:
        broken.unlink()


@pytest.mark.integration
def test_a_model_switch_mid_answer_lets_the_answer_finish_and_the_next_comes_from_the_new_model(
    worker, make_user, connect, health, bundled_model
):
    second = settings.MODELS_DIR / "switched-copy.gguf"
    os.link(bundled_model, second)
    admin = get_user_model().objects.create_superuser("root", password="x" * 12)
    client = Client()
    client.force_login(admin)

    sock = connect(make_user("eve"))
    before = settings.HOMEAI_MODEL_PATH.name
    try:
        sock.send(
            {
                "type": "chat.send",
                "conversation": None,
                "text": "Count to 300.",
                "max_tokens": 160,
                "options": {"ignore_eos": True},
            }
        )
        events = sock.collect(lambda e: e["type"] == "generation.token", timeout=600)
        running = events[-1]["generation"]
        client.post("/models/", {"model": second.name})
        events = sock.collect(lambda e: e["type"] in ("generation.done", "generation.error"), timeout=600)
        assert events[-1]["type"] == "generation.done" and events[-1]["metrics"]["output_tokens"] == 160, events[-1]
        assert Generation.objects.get(id=running).model_name == before
        assert wait_until(lambda: holds(health, second.name), timeout=60)

        done = sock.chat("Hello there.", max_tokens=4)[-1]
        assert done["type"] == "generation.done"
        assert Generation.objects.get(id=done["generation"]).model_name == second.name
        assert worker.alive()
    finally:
        client.post("/models/", {"model": before})
        redis_client.client().delete(redis_client.ENGINE_CONFIG_KEY)
        second.unlink()


def _speed_cell(page: str, name: str) -> str:
    row = page[page.index(f"<strong>{name}</strong>") :]
    cell = row[row.index('class="model-speed">') + len('class="model-speed">') :]
    return " ".join(cell[: cell.index("</td>")].split())


def test_each_model_shows_its_decode_forecast_beside_what_its_answers_measured(db, bundled_models):
    """Before any other model has answered, the forecast is the roofline (the box's measured
    bandwidth over the file's size, a ceiling: ≤); once one has, a model's forecast is the
    bandwidth the others' answers reached here over its size (≈), and the page says how far it
    was from the model's own measured figure (the median output tok/s of its finished answers)."""
    staff = get_user_model().objects.create_superuser("admin", password="x" * 12)
    chat = settings.BUNDLED_CHAT_MODEL_PATH
    for tps in (30.0, 40.0, 50.0):
        factories.finished_generation(staff, prompt="Hi", answer="Hi.", model_name=BUNDLED_BASE, output_tps=tps)
    key = probe.probe_key(probe.host_name())
    r = redis_client.client()
    kept = r.get(key)  # a worker's real probe of this host, put back afterwards
    r.set(key, json.dumps({"host": probe.host_name(), "bandwidth_gbs": 20.0, "gflops": 100.0}))
    client = Client()
    client.force_login(staff)
    try:
        first = client.get("/models/").content.decode()
        # The chat model's answers, a little faster than the base model's bandwidth says.
        calibrated = 40.0 * settings.BUNDLED_BASE_MODEL_PATH.stat().st_size / chat.stat().st_size
        factories.finished_generation(
            staff, prompt="Hi", answer="Hi.", model_name=chat.name, output_tps=calibrated * 1.1
        )
        second = client.get("/models/").content.decode()
    finally:
        if kept is None:
            r.delete(key)
        else:
            r.set(key, kept)
    roofline = 20.0e9 / settings.BUNDLED_BASE_MODEL_PATH.stat().st_size
    off = round(100 * (roofline - 40) / 40)
    note = '<div class="field-help model-forecast-off">'
    assert _speed_cell(first, BUNDLED_BASE) == f"≤ {roofline:.0f} · 40.0 {note}Forecast off by {off}%.</div>"
    expected = f"≈ {calibrated:.0f} · {calibrated * 1.1:.1f} {note}Forecast within ±25% (-9%).</div>"
    assert _speed_cell(second, chat.name) == expected
    # The base model's forecast now comes from the chat model's answers.
    assert _speed_cell(second, BUNDLED_BASE).startswith(f"≈ {40 * 1.1:.0f} · 40.0")


def test_a_decode_forecast_never_comes_from_the_models_own_answers():
    shapes = {n: Shape(mb * 10**6) for n, mb in (("a.gguf", 100), ("b.gguf", 300), ("c.gguf", 200))}
    measured = {"a.gguf": 60.0, "b.gguf": 25.0, "c.gguf": 30.0}  # 6.0, 7.5 and 6.0 GB/s
    assert speed.read_rate(shapes, measured, 0.0, exclude="b.gguf") == 6.0
    assert speed.read_rate(shapes, measured, 0.0, exclude="a.gguf") == 7.5  # the upper median of two
    box = {"bandwidth_gbs": 15.0}
    got = speed.speed_of("a.gguf", shapes["a.gguf"], shapes, {"a.gguf": 60.0}, box)
    assert (got.basis, got.tps) == ("roofline", 150.0)
    got = speed.speed_of("new", Shape(400 * 10**6), shapes, measured, box)
    assert (got.basis, round(got.tps, 1)) == ("answers", 15.0)
    assert speed.speed_of("new", Shape(400 * 10**6), {}, {}, {}).tps is None


def test_a_decode_forecast_counts_each_layers_cost_beside_the_weights():
    """The two bundled models' bare decode on a 2-core EPYC in its slower state (one run, while
    the layer probe was written): SmolLM2 (30 layers, 98 MB) wrote 145.1 tok/s, Gemma (18 layers,
    253 MB) 75.8, and a layer cost 0.075 ms. Scaled by size alone each forecast the other 1.35x
    / 0.74x off; with the layers' cost taken out of each step first, within 1%."""
    smollm, gemma = Shape(98_362_432, 30), Shape(253_113_024, 18)
    shapes = {"smollm": smollm, "gemma": gemma}
    measured = {"smollm": 145.1, "gemma": 75.8}
    box = {"bandwidth_gbs": 33.0, "layer_ms": 0.075}
    for name in shapes:
        got = speed.speed_of(name, shapes[name], shapes, measured, box)
        assert got.basis == "answers" and got.tps == pytest.approx(measured[name], rel=0.02)
        sized = speed.speed_of(name, shapes[name], shapes, measured, {"bandwidth_gbs": 33.0})
        assert not 0.8 < sized.tps / measured[name] < 1.25  # what the size alone said
    # The read rate: Gemma's step (13.19 ms) less its 18 layers (1.35 ms) over its 253 MB.
    assert speed.read_rate(shapes, measured, 0.075, exclude="smollm") == pytest.approx(21.4, abs=0.05)
    # Before any answer: the raw bandwidth and the layers, a ceiling.
    got = speed.speed_of("smollm", smollm, shapes, {}, box)
    assert got.basis == "roofline" and got.tps == pytest.approx(1000 / (30 * 0.075 + 98.362432 / 33.0))
    # A measured step its layers alone would outlast tells nothing of the rate.
    assert speed.read_rate(shapes, {"gemma": 1000.0}, 0.075) is None
