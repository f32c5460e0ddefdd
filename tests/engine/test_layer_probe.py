"""The layer probe: two synthetic models that llama.cpp loads and runs, and a layer's cost from them."""

from __future__ import annotations

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
