"""What reading a few prompt tokens costs deep in a conversation, by how many there are: a
message added to a long chat, or a document's slice beside running answers. llama.cpp's CPU
flash attention picks its kernel by the batch's query rows, so a cost that jumps between two
neighbouring sizes is a kernel boundary (patches/llama.cpp/README.md, patch 0001).

    .venv/bin/python bench/slice_depth.py [model.gguf ...] [--depths 0,1000,2000] [--sizes 16,21,22,40,63,64]

Per model and depth: the context is read first (in 512-token batches), then each size is read
at its end `reps` times (its cells dropped after each); the median, in ms and ms per token.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.batch_cost import DEFAULT_MODELS, TOKENS, Decoder  # noqa: E402


def measure(decoder: Decoder, depth: int, sizes: list[int], reps: int) -> dict[int, float]:
    decoder.clear()
    for start in range(0, depth, 512):
        decoder.decode(TOKENS[start : min(start + 512, depth)], start, all_logits=False)
    out = {}
    for n in sizes:
        times = []
        for _ in range(reps):
            times.append(decoder.decode(TOKENS[depth : depth + n], depth, all_logits=False))
            decoder.clear(depth)
        out[n] = statistics.median(times) * 1000
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", type=Path, default=list(DEFAULT_MODELS))
    parser.add_argument("--depths", default="0,1000,2000")
    parser.add_argument("--sizes", default="16,21,22,40,63,64")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    depths = [int(d) for d in args.depths.split(",")]
    sizes = [int(n) for n in args.sizes.split(",")]
    print(f"threads {args.threads}, median of {args.reps}: ms to read n tokens after a context (ms per token)\n")
    print("| model | context | " + " | ".join(f"{n} tokens" for n in sizes) + " |")
    print("|---|---:|" + "---:|" * len(sizes))
    for path in args.models:
        decoder = Decoder(path, args.threads)
        try:
            for depth in depths:
                ms = measure(decoder, depth, sizes, args.reps)
                cells = " | ".join(f"{ms[n]:.1f} ({ms[n] / n:.2f})" for n in sizes)
                print(f"| {path.name} | {depth:,} | {cells} |", flush=True)
        finally:
            decoder.close()


if __name__ == "__main__":
    sys.exit(main())
