"""A sentence-transformers BERT folder (config, WordPiece vocabulary, safetensors weights) written
as a llama.cpp GGUF of architecture "bert": what llama.cpp's own converter (convert_hf_to_gguf.py,
BertModel) writes, without torch or transformers, for the bundled embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import load_file

# Tensors an embedding never reads: the next-sentence pooler and the masked-LM head.
_SKIPPED_PREFIXES = ("pooler.", "cls.", "embeddings.position_ids")
# Kept in F32, as llama.cpp's converter keeps them: they are small, and the embeddings' sums and
# layer norms lose most to rounding.
_F32_TENSORS = (gguf.MODEL_TENSOR.POS_EMBD, gguf.MODEL_TENSOR.TOKEN_TYPES)


def _pooling_type(folder: Path) -> gguf.PoolingType:
    """The pooling that sentence-transformers applies (modules.json names its folder)."""
    modules = json.loads((folder / "modules.json").read_text())
    pooling = next((m["path"] for m in modules if m["type"].endswith("Pooling")), None)
    if pooling is None:
        raise ValueError(f"{folder} has no pooling module, so its sentence embedding is undefined.")
    config = json.loads((folder / pooling / "config.json").read_text())
    if config.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    if config.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    raise ValueError(f"{folder}: only mean and CLS pooling are supported.")


def _vocabulary(folder: Path, n_vocab: int) -> tuple[list[str], list[int]]:
    """The WordPiece tokens in llama.cpp's phantom-space form, and their types.

    1. Each id's token from tokenizer.json (an id with none becomes "[PAD<id>]", unused).
    2. Special added tokens ([CLS], [SEP], ...) are control tokens, kept as they are.
    3. Every other token that continues a word ("##ing") loses its "##"; one that starts a word
       gains "▁" (U+2581), which is how llama.cpp's WPM tokenizer marks a word's start.
    """
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    by_id = {index: token for token, index in tokenizer["model"]["vocab"].items()}
    special = {t["id"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    tokens, types = [], []
    for index in range(n_vocab):
        token = by_id.get(index)
        if token is None:
            tokens.append(f"[PAD{index}]")
            types.append(gguf.TokenType.UNUSED)
        elif index in special:
            tokens.append(token)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(token[2:] if token.startswith("##") else "\u2581" + token)
            types.append(gguf.TokenType.NORMAL)
    return tokens, types


def _tensor_name(name: str, names: gguf.TensorNameMap) -> str:
    mapped = names.get_name(name.removeprefix("bert."), try_suffixes=(".weight", ".bias"))
    if mapped is None:
        raise ValueError(f"The tensor {name} has no llama.cpp name for a BERT model.")
    return mapped


def _stored(gguf_name: str, data: np.ndarray) -> tuple[np.ndarray, gguf.GGMLQuantizationType]:
    """F32 for vectors (biases, norms) and the position and token-type tables; Q8_0 otherwise
    (as llama.cpp's converter writes with --outtype q8_0: gguf-py's own quantization).

    Q8_0 rather than F16: llama.cpp multiplies it with int8 dot products (AMX tiles where the
    CPU has them, VNNI or AVX2 otherwise) where F16 converts every weight to float first. On a
    2-core Xeon with AMX, 256 chunks of Python's documentation embedded 1.6-2.5x faster; on a
    2-core EPYC (AVX-512, no AMX) 29.0-31.6 against 27.7-29.5 chunks/s; vectors at a cosine
    of 0.9995 or more to the F16 ones (test_bert_gguf.py holds 0.999 to float32)."""
    keep_f32 = data.ndim == 1 or any(
        gguf_name.startswith(gguf.TENSOR_NAMES[kind].format(bid=0)) for kind in _F32_TENSORS
    )
    if keep_f32 or data.shape[-1] % gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0][0]:
        return data.astype(np.float32), gguf.GGMLQuantizationType.F32
    qtype = gguf.GGMLQuantizationType.Q8_0
    return gguf.quants.quantize(data.astype(np.float32), qtype), qtype


def convert(folder: Path, target: Path, *, name: str, basename: str, size_label: str, license_name: str) -> None:
    """Write the GGUF of the model in folder to target (any existing file there is replaced).

    basename and size_label make the model's short name (model_library.short_name): "all-minilm"
    and "22M" make "all-minilm:22m", Ollama's name for all-MiniLM-L6-v2."""
    config = json.loads((folder / "config.json").read_text())
    if config.get("model_type") != "bert":
        raise ValueError(f"{folder} is a {config.get('model_type')!r} model, not BERT.")
    n_blocks = config["num_hidden_layers"]
    n_vocab = config["vocab_size"]
    writer = gguf.GGUFWriter(str(target), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(name)
    writer.add_basename(basename)
    writer.add_size_label(size_label)
    writer.add_license(license_name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)

    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(n_blocks)
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(_pooling_type(folder))

    tokens, types = _vocabulary(folder, n_vocab)
    writer.add_token_type_count(config.get("type_vocab_size", 1))
    writer.add_tokenizer_model("bert")
    # bert-base-uncased's WordPiece, as llama.cpp's converter names it (from BAAI/bge-small-en);
    # llama.cpp reads the pre-tokenizer of BPE vocabularies only.
    writer.add_tokenizer_pre("bert-bge")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    gguf.SpecialVocab(folder, load_merges=False, n_vocab=n_vocab).add_to_gguf(writer, quiet=True)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_blocks)
    for hf_name, data in sorted(load_file(str(folder / "model.safetensors")).items()):
        if hf_name.removeprefix("bert.").startswith(_SKIPPED_PREFIXES):
            continue
        gguf_name = _tensor_name(hf_name, names)
        stored, qtype = _stored(gguf_name, data)
        writer.add_tensor(gguf_name, stored, raw_dtype=qtype)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
