"""What one transformer layer costs a decode step on this box, beside reading its weights: the
second figure of the library's decode forecast (inference/speed.py).

A decode step reads every weight once, so on a CPU its time is mostly the model's size over the
memory bandwidth; but each layer also costs a fixed time: some twenty graph nodes, each ending
at a barrier where llama.cpp's threads wait for one another, and the small operations between
the matrix products. On a fast-memory box with cheap barriers that term is small; on a 2-core
EPYC guest it was 40-80 µs a layer, up to 2 ms of SmolLM2-135M's 6-7 ms step (30 layers in 98 MB),
which is why one bandwidth cannot forecast both bundled models there.

Measured with two synthetic llama-architecture models written here (random 4-bit weights, a
259-token byte vocabulary, a few MB, nothing downloaded) that differ only in their number of
layers: the difference of their best decode steps over the difference of their layers is a
layer's cost, with the output layer, the logits and llama-cpp-python's own per-step work
cancelled out.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import gguf
import numpy as np

WIDTH = 256  # narrow, so a layer's weights (0.6 MB) are a small part of its time
FEED_FORWARD = 1024
HEADS = 4  # 64-wide, as most small models' heads are
LAYERS = (4, 24)
TOKENS = 32  # decode steps a round
ROUNDS = 7  # the best round counts: the probe runs beside whatever else the box is doing
QUIET = 0.2  # the share of the box's CPU others may use for the probe to start at once
_Q = gguf.GGMLQuantizationType.Q4_0


def _q4_0(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """A Q4_0 matrix's blocks: a valid small f16 scale, then random nibbles (what they say
    does not matter to how long multiplying by them takes)."""
    block, size = gguf.GGML_QUANT_SIZES[_Q]
    blocks = rng.integers(0, 256, size=(rows * cols // block, size), dtype=np.uint8)
    blocks[:, 0:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
    return blocks.reshape(rows, cols // block * size)


def write_model(path: Path, layers: int, seed: int = 0) -> None:
    """A llama-architecture GGUF with `layers` layers of the probe's shape."""
    rng = np.random.default_rng(seed)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(512)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(WIDTH // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(
        [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    )
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)

    def matrix(name: str, rows: int, cols: int) -> None:
        writer.add_tensor(name, _q4_0(rows, cols, rng), raw_dtype=_Q)

    def ones(name: str) -> None:
        writer.add_tensor(name, np.ones(WIDTH, np.float32))

    matrix("token_embd.weight", len(tokens), WIDTH)
    ones("output_norm.weight")
    matrix("output.weight", len(tokens), WIDTH)
    for i in range(layers):
        ones(f"blk.{i}.attn_norm.weight")
        ones(f"blk.{i}.ffn_norm.weight")
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            matrix(f"blk.{i}.{part}.weight", WIDTH, WIDTH)
        matrix(f"blk.{i}.ffn_gate.weight", FEED_FORWARD, WIDTH)
        matrix(f"blk.{i}.ffn_up.weight", FEED_FORWARD, WIDTH)
        matrix(f"blk.{i}.ffn_down.weight", WIDTH, FEED_FORWARD)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _step_ms(llm) -> float:
    """One round: a short prompt, then TOKENS decode steps; ms a step."""
    llm.reset()
    llm.eval([1, 3, 4, 5])
    start = time.perf_counter()
    for i in range(TOKENS):
        llm.eval([10 + i])
    return (time.perf_counter() - start) * 1000 / TOKENS


def busy_share(window_s: float = 1.0) -> float:
    """How much of the box's CPU time something used over the next `window_s` (0 to 1, from
    /proc/stat; 0 where there is none to read)."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
        return sum(fields), idle

    try:
        total0, idle0 = sample()
        time.sleep(window_s)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return 0.0
    return 1 - (idle1 - idle0) / max(total1 - total0, 1)


def measure_when_quiet(threads: int, gpu_layers: int = 0, *, attempts: int = 8, pause_s: float = 2.0) -> dict:
    """measure() once the box is quiet (under QUIET of its CPU busy for a second before), so a
    worker starting beside the web server, or answering, does not time its neighbours; after
    `attempts` looks, measured anyway. The lock that keeps two probes apart (probe.py) holds for
    a minute: this waits at most (attempts - 1) x (1 s + pause_s), 21 s by default."""
    for _ in range(attempts - 1):
        if busy_share() < QUIET:
            break
        time.sleep(pause_s)
    return measure(threads, gpu_layers)


def measure(threads: int, gpu_layers: int = 0) -> dict:
    """{"layer_ms": a layer's fixed cost in a decode step, "layer_threads": the threads it was
    measured with}: about half a second. The two models' rounds alternate and each keeps its
    best, so a short burst of other work lands on both or on neither, not on the difference."""
    import llama_cpp  # the worker's import; the web never loads llama.cpp

    with tempfile.TemporaryDirectory(prefix="homeai-layer-probe-") as folder:
        models = {}
        try:
            for layers in LAYERS:
                path = Path(folder) / f"probe-{layers}.gguf"
                write_model(path, layers)
                models[layers] = llama_cpp.Llama(
                    str(path),
                    n_ctx=256,
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_gpu_layers=gpu_layers,
                    verbose=False,
                )
            best = dict.fromkeys(LAYERS, float("inf"))
            for round_ in range(ROUNDS):
                for layers in LAYERS if round_ % 2 == 0 else LAYERS[::-1]:
                    best[layers] = min(best[layers], _step_ms(models[layers]))
        finally:
            for llm in models.values():
                llm.close()
    few, many = LAYERS
    return {"layer_ms": round(max(best[many] - best[few], 0.0) / (many - few), 4), "layer_threads": threads}
