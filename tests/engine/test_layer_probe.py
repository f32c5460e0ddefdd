"""The layer probe: two synthetic models that llama.cpp loads and runs, and a layer's cost from them."""

from __future__ import annotations

import os
import threading

from inference import model_library
from inference.engine import layer_probe


def test_its_synthetic_model_is_a_llama_model_of_the_layers_asked_for(tmp_path):
    path = tmp_path / "probe.gguf"
    layer_probe.write_model(path, 6)
    model = model_library.inspect(path)
    assert model.usable and model.architecture == "llama" and model.n_layers == 6
    assert model.embedding_length == layer_probe.WIDTH


def test_it_measures_a_layers_cost_with_llama_cpp():
    result = layer_probe.measure(threads=2)
    assert result["layer_threads"] == 2
    # The 24-layer model's best step takes longer than the 4-layer one's: a positive cost, and
    # well under a whole step of the smallest bundled model.
    assert 0 < result["layer_ms"] < 5


def test_it_waits_for_a_quiet_box_but_not_for_ever(monkeypatch):
    looks = iter([0.9, 0.7, 0.05])
    monkeypatch.setattr(layer_probe, "busy_share", lambda: next(looks))
    monkeypatch.setattr(layer_probe.time, "sleep", lambda s: None)
    monkeypatch.setattr(layer_probe, "measure", lambda threads, gpu_layers: {"layer_ms": 0.05})
    assert layer_probe.measure_when_quiet(2) == {"layer_ms": 0.05}
    assert next(looks, "none left") == "none left"  # it measured at the first quiet look
    monkeypatch.setattr(layer_probe, "busy_share", lambda: 1.0)
    assert layer_probe.measure_when_quiet(2, attempts=3) == {"layer_ms": 0.05}  # busy all along: measured anyway


def test_the_box_is_seen_busy_while_something_runs():
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [None for _ in iter(lambda: stop.is_set(), True)])
    spinner.start()
    try:
        assert layer_probe.busy_share(0.5) > 0.5 / (os.cpu_count() or 1)  # most of one core at least
    finally:
        stop.set()
        spinner.join()
