"""The GGUF header reader, checked against the gguf package's own writer and reader."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFReader, GGUFValueType, GGUFWriter

from inference.gguf_header import GGUFError, SkippedArray, read_header


@pytest.fixture
def written(tmp_path):
    """A small model file with every kind of value, written by the reference writer."""
    path = tmp_path / "tiny.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_name("Tiny")
    w.add_context_length(4096)
    w.add_file_type(15)
    w.add_uint8("t.u8", 7)
    w.add_int8("t.i8", -7)
    w.add_uint16("t.u16", 65000)
    w.add_int16("t.i16", -3000)
    w.add_int32("t.i32", -70000)
    w.add_float32("t.f32", 0.5)
    w.add_uint64("t.u64", 2**40)
    w.add_int64("t.i64", -(2**40))
    w.add_float64("t.f64", 1e-300)
    w.add_bool("t.bool", True)
    w.add_string("t.unicode", "façade — 模型")
    w.add_array("t.tokens", ["<s>", "", "héllo", "x" * 300] * 50)
    w.add_array("t.scores", [0.25] * 1000)
    w.add_array("t.nested", [[1, 2], [3], ["a", "b"]])
    w.add_tensor("token_embd.weight", np.zeros((32, 16), dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(16, dtype=np.float32))
    w.add_tensor("blk.0.ffn.weight", np.zeros((2, 3, 4), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_it_reads_what_the_reference_reader_reads(written):
    header = read_header(written)
    reference = GGUFReader(str(written))
    assert header.version == 3
    keys = [k for k in reference.fields if not k.startswith("GGUF.")]
    assert list(header.metadata) == keys
    for key in keys:
        field, got = reference.fields[key], header.metadata[key]
        if key == "t.nested":  # the reference flattens nested arrays; the file says 3 items
            assert got == SkippedArray(GGUFValueType.ARRAY, 3)
        elif field.types[0] == GGUFValueType.ARRAY:
            assert got == SkippedArray(field.types[1], len(field.contents())), key
        elif field.types[0] == GGUFValueType.FLOAT32:
            assert got == pytest.approx(field.contents()), key
        else:
            assert got == field.contents(), key
    assert [(t.name, t.n_elements, t.type) for t in header.tensors] == [
        (t.name, int(t.n_elements), int(t.tensor_type)) for t in reference.tensors
    ]
    assert header.metadata["t.unicode"] == "façade — 模型"
    assert header.metadata["t.tokens"].count == 200


def test_a_truncated_header_is_named_as_such(written, tmp_path):
    data = written.read_bytes()
    for cut in (30, 200, 2000):  # inside the counts, the metadata, the vocabulary
        path = tmp_path / f"cut{cut}.gguf"
        path.write_bytes(data[:cut])
        with pytest.raises(GGUFError, match="truncated"):
            read_header(path)


def test_other_files_get_a_sentence_not_a_traceback(tmp_path):
    text = tmp_path / "notes.gguf"
    text.write_text("not a model at all")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_header(text)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_header(empty)
    future = tmp_path / "future.gguf"
    future.write_bytes(b"GGUF" + (9).to_bytes(4, "little") + bytes(16))
    with pytest.raises(GGUFError, match="version 9"):
        read_header(future)
