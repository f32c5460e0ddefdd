"""What a prompt token costs by slice size, under llama.cpp context settings the engine does not use.

`manage.py bench_engine` measures slice costs with the engine's own context (flash attention
left to llama.cpp, which turns it on; F16 KV cache). This asks whether another setting would
make small slices cheaper, which is what chunked prefill pays on a CPU:

    .venv/bin/python bench/attention_paths.py [model.gguf] [--threads 2]

For each setting it evaluates one ~1,500-token document in slices of 16…512 tokens (llama.cpp's
batch set to the slice) and prints ms per token over the whole document and its last quarter.
It talks to llama.cpp's low-level API directly, with the same context shape as the engine
(4 sequence slots, unified KV cache, full sliding-window cache).
"""

from __future__ import annotations

import argparse
import ctypes
import time
from pathlib import Path

import llama_cpp

SLICES = (16, 32, 64, 128, 512)
DOC_TOKENS = 1536
SETTINGS = {  # name: (flash attention type, K and V cache type)
    "flash attention auto, F16 cache (the engine)": (-1, 1),
    "flash attention off, F16 cache": (0, 1),
    "flash attention auto, F32 cache": (-1, 0),
    "flash attention auto, q8_0 cache": (-1, 8),
}


@llama_cpp.llama_log_callback
def _quiet(_level, _text, _user_data) -> None:
    pass


def _context(model, threads: int, n_batch: int, flash_attn: int, kv_type: int):
    params = llama_cpp.llama_context_default_params()
    params.n_seq_max, params.n_ctx = 4, 4 * 4096
    params.n_batch = params.n_ubatch = n_batch
    params.n_threads = params.n_threads_batch = threads
    params.kv_unified, params.swa_full, params.no_perf = True, True, True
    params.flash_attn_type = flash_attn
    params.type_k = params.type_v = kv_type
    return llama_cpp.llama_init_from_model(model, params)


def _document(ctx, n_slice: int) -> tuple[float, float]:
    """(ms per token over the document, ms per token over its last quarter)."""
    batch = llama_cpp.llama_batch_init(n_slice, 0, 1)
    times: list[tuple[int, int, float]] = []
    try:
        done = 0
        while done < DOC_TOKENS:
            n = min(n_slice, DOC_TOKENS - done)
            batch.n_tokens = n
            for j in range(n):
                batch.token[j] = 1000 + (done + j) % 5000
                batch.pos[j] = done + j
                batch.n_seq_id[j] = 1
                batch.seq_id[j][0] = 0
                batch.logits[j] = done + j == DOC_TOKENS - 1
            t0 = time.perf_counter()
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
            times.append((done, n, (time.perf_counter() - t0) * 1000))
            done += n
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), 0, -1, -1)
    start = DOC_TOKENS - DOC_TOKENS // 4
    late_ms = sum(ms * max(0, min(d + n, DOC_TOKENS) - max(d, start)) / n for d, n, ms in times)
    return sum(ms for *_, ms in times) / DOC_TOKENS, late_ms / (DOC_TOKENS // 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="data/models/gemma-3-270m-q4_k_m.gguf")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(str(Path(args.model)).encode(), llama_cpp.llama_model_default_params())
    if not model:
        raise SystemExit(f"could not load {args.model}")
    print(
        f"{Path(args.model).name}, {args.threads} threads, a {DOC_TOKENS}-token document; ms per token (last quarter)"
    )
    print("| setting | " + " | ".join(f"slice {n}" for n in SLICES) + " |")
    print("|---|" + "---|" * len(SLICES))
    for name, (flash_attn, kv_type) in SETTINGS.items():
        cells = []
        for n_slice in SLICES:
            ctx = _context(model, args.threads, n_slice, flash_attn, kv_type)
            _document(ctx, n_slice)  # warm-up: first-touch page faults, thread start
            whole, late = _document(ctx, n_slice)
            llama_cpp.llama_free(ctx)
            cells.append(f"{whole:.2f} ({late:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    llama_cpp.llama_model_free(model)


if __name__ == "__main__":
    main()
