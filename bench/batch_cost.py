"""What a llama_decode costs by batch size, on the llama.cpp build in this venv: a 512-token
prefill, and one step of n tokens with logits at every position (a speculative draft's check,
or n answers' decode step) after a 200-token context. Also checks that a batch computes what
token-by-token decoding does (batch_logits_agree), which a miscompiled matrix kernel breaks.

    .venv/bin/python bench/batch_cost.py [model.gguf ...] [--threads 2] [--reps 12]

Prints llama.cpp's CPU features (AMX_INT8 = 1 where the build uses Intel AMX tiles:
scripts/llama-cmake-native.sh) and, per model, the median of `reps` timings per size.
docs/bench/journal.md has the last run, with and without AMX.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import llama_cpp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.engine.runner import Runner, RunnerConfig  # noqa: E402

MODELS = Path(__file__).resolve().parent.parent / "data" / "models"
DEFAULT_MODELS = (MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf", MODELS / "gemma-3-270m-q4_k_m.gguf")  # settings.BUNDLED_*
SIZES = (1, 2, 3, 4, 5, 8, 9, 16)
TEXT = "The quick brown fox jumps over the lazy dog. Paris is the capital of France, and Berlin is the capital of"
TOKENS = [(i * 7919) % 30000 + 100 for i in range(4096)]  # any in-vocabulary ids


class Decoder:
    """The engine's own Runner (one slot: the same context settings the engine decodes with),
    and a batch that holds a whole ubatch; decodes given tokens in slot 0."""

    def __init__(self, model_path: Path, threads: int, n_ctx: int = 4096):
        config = RunnerConfig(model_path=model_path, n_ctx_seq=n_ctx, n_slots=1, n_batch=512, n_threads=threads)
        self.runner = Runner(config)
        self.runner.load()  # llama.cpp's log goes to Python logging (warnings only)
        self.ctx = self.runner.ctx
        self.memory = llama_cpp.llama_get_memory(self.ctx)

    def close(self) -> None:
        self.runner.close()

    def tokenize(self, text: str) -> list[int]:
        return self.runner.tokenize(text)

    def decode(self, tokens: list[int], start: int, all_logits: bool = True) -> float:
        """Decode tokens at positions start.. in sequence 0; seconds taken."""
        batch = self.runner._batch
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, start + i, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = all_logits or i == len(tokens) - 1
        began = time.perf_counter()
        if llama_cpp.llama_decode(self.ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        return time.perf_counter() - began

    def logits(self, i: int) -> np.ndarray:
        return self.runner.logits(i)

    def clear(self, from_pos: int = 0) -> None:
        llama_cpp.llama_memory_seq_rm(self.memory, 0, from_pos, -1)


def batch_logits_agree(decoder: Decoder) -> tuple[float, int, int, float]:
    """TEXT decoded token by token and then in one batch: (the largest difference between the
    two of a logit among each position's 40 highest, positions whose highest logit is the same
    token, positions, and where the batch picked another token, the largest lead the token by
    token top had over it: a near tie that another kernel's rounding flips is a fraction of a
    logit)."""
    tokens = decoder.tokenize(TEXT)
    decoder.clear()
    one = []
    for i, token in enumerate(tokens):
        decoder.decode([token], i)
        one.append(decoder.logits(0))
    decoder.clear()
    decoder.decode(tokens, 0)
    many = [decoder.logits(i) for i in range(len(tokens))]
    # The likely tokens only: far down the vocabulary some kernels differ by units (llama.cpp's
    # AVX-512 Q4_K path at a batch of 24 against one, measured), where no sampler looks.
    diff = max(
        float(np.abs(a[top] - b[top]).max()) for a, b in zip(one, many, strict=True) for top in [np.argsort(a)[-40:]]
    )
    same = sum(int(a.argmax() == b.argmax()) for a, b in zip(one, many, strict=True))
    flipped = max(float(a.max() - a[b.argmax()]) for a, b in zip(one, many, strict=True))
    return diff, same, len(tokens), flipped


def measure(decoder: Decoder, reps: int) -> dict:
    prefill = []
    for _ in range(3):
        decoder.clear()
        prefill.append(decoder.decode(TOKENS[:512], 0, all_logits=False))
    decoder.clear()
    decoder.decode(TOKENS[:200], 0, all_logits=False)
    step_ms = {}
    for n in SIZES:
        times = []
        for _ in range(reps):
            times.append(decoder.decode(TOKENS[200 : 200 + n], 200))
            decoder.clear(200)
        step_ms[n] = statistics.median(times) * 1000
    return {"prefill_512_ms": statistics.median(prefill) * 1000, "step_ms": step_ms}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", type=Path, default=list(DEFAULT_MODELS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=12)
    args = parser.parse_args(argv)
    features = llama_cpp.llama_print_system_info().decode()
    print(f"llama.cpp: {' '.join(f for f in features.split(' | ') if '= 1' in f)}")
    print(f"threads {args.threads}, median of {args.reps} steps after a 200-token context, logits at every position\n")
    sizes = " | ".join(f"{n} tok ms" for n in SIZES)
    print(f"| model | prefill 512 tok/s | {sizes} | 9 tok / 1 tok | batch = one by one |")
    print("|---|---:|" + "---:|" * len(SIZES) + "---:|---|")
    for path in args.models:
        decoder = Decoder(path, args.threads)
        try:
            diff, same, total, _ = batch_logits_agree(decoder)
            result = measure(decoder, args.reps)
        finally:
            decoder.close()
        steps = result["step_ms"]
        print(
            f"| {path.name} | {512 / result['prefill_512_ms'] * 1000:,.0f} | "
            + " | ".join(f"{steps[n]:.1f}" for n in SIZES)
            + f" | {steps[9] / steps[1]:.2f}x | top token {same}/{total}, top-40 logit diff {diff:.4f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
