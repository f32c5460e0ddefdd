from __future__ import annotations

import pytest

from infra.pull.errors import PullError
from infra.pull.names import HfName, OllamaName, parse


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("llama3.2", OllamaName("", "library", "llama3.2", "latest")),
        ("qwen3:4b", OllamaName("", "library", "qwen3", "4b")),
        ("me/tiny:q4_K_M", OllamaName("", "me", "tiny", "q4_K_M")),
        ("localhost:5000/me/tiny:1", OllamaName("localhost:5000", "me", "tiny", "1")),
        ("hf.co/bartowski/SmolLM2-GGUF:Q4_K_M", HfName("bartowski/SmolLM2-GGUF", "Q4_K_M", "")),
        ("huggingface.co/u/r", HfName("u/r", "", "")),
        ("hf.co/u/r/model-Q8_0.gguf", HfName("u/r", "", "model-Q8_0.gguf")),
    ],
)
def test_it_reads_ollama_and_hugging_face_names(text, parsed):
    assert parse(text) == parsed


@pytest.mark.parametrize(
    "text",
    ["", "../etc/passwd", "/abs", "a/../b", "a\\b", "ns/.hidden", "x:../y", "a b", "hf.co/u/r/../../x.gguf", "a/b/c/d"],
)
def test_it_refuses_names_with_paths_or_odd_characters(text):
    with pytest.raises(PullError) as err:
        parse(text)
    assert err.value.code == "bad_name"
    assert "is not a model name" in err.value.message


def test_its_file_names_stay_in_the_folder():
    assert parse("qwen3:4b").file_name == "qwen3-4b.gguf"
    assert parse("me/tiny:1").file_name == "me-tiny-1.gguf"
    assert parse("localhost:5000/me/tiny").file_name == "localhost-5000-me-tiny-latest.gguf"
