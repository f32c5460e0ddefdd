"""The library's decode forecast against a real decode of both bundled chat models (issue 39:
within ±25%). Run from the repository root:

    python -m bench.decode_forecast --rounds 7 [--wall --threads 2] [--out docs/bench]

Each round decodes 64 tokens greedily on SmolLM2-135M and Gemma 3 270M in turns (llama.cpp
through llama-cpp-python, as the worker does), and measures the box's read bandwidth as the
hardware probe does and a layer's cost as the worker's layer probe does. The forecasts are the
roofline (bandwidth / file size), the size alone (the other model's tok/s x its size / this
model's size: the library's forecast before the layer term) and the library's
(inference/speed.py: the other model's read rate, with each model's layers' cost). On a shared
box, the default counts tokens per CPU-second of one thread (time the process waited for a core
is not counted); --wall times the decode as an answer sees it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from llama_cpp import Llama

from inference.engine import layer_probe
from inference.gguf_header import read_header
from inference.probe import measure_bandwidth
from inference.speed import Shape, speed_of

PROMPT = b"Write a long story about a lighthouse keeper and the sea."
MODELS = {"smollm2-135m": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3-270m": "gemma-3-270m-q4_k_m.gguf"}


def decode(llm: Llama, tokens: int, clock) -> float:
    """tok/s of `tokens` decode steps after the prompt (greedy, never stopping at an end token)."""
    llm.reset()
    start, n = None, 0
    for _ in llm.generate(llm.tokenize(PROMPT), temp=0.0):
        n += 1
        if start is None:
            start = clock()  # the prompt is read: from here on, decode steps only
        if n > tokens:
            break
    return tokens / (clock() - start)


def _layers(path: Path) -> int:
    meta = read_header(path).metadata
    return int(meta[f"{meta['general.architecture']}.block_count"])


def run(models_dir: Path, rounds: int, tokens: int, threads: int, wall: bool, log=print) -> dict:
    clock = time.perf_counter if wall else time.process_time
    sizes = {k: (models_dir / f).stat().st_size for k, f in MODELS.items()}
    llms = {
        k: Llama(model_path=str(models_dir / f), n_ctx=1024, n_threads=threads, verbose=False)
        for k, f in MODELS.items()
    }
    shapes = {k: Shape(sizes[k], _layers(models_dir / f)) for k, f in MODELS.items()}
    tps: dict[str, list[float]] = {k: [] for k in MODELS}
    bandwidth, layer_ms = [], []
    for i in range(rounds):
        bandwidth.append(measure_bandwidth())
        layer_ms.append(layer_probe.measure(threads)["layer_ms"])
        for k in list(llms) if i % 2 == 0 else list(llms)[::-1]:
            tps[k].append(decode(llms[k], tokens, clock))
        log(
            f"round {i + 1}: "
            + ", ".join(f"{k} {v[-1]:.1f} tok/s" for k, v in tps.items())
            + f", {bandwidth[-1]:.1f} GB/s, {layer_ms[-1]:.3f} ms a layer"
        )
    med = {k: statistics.median(v) for k, v in tps.items()}
    gbs = statistics.median(bandwidth)
    box = {"bandwidth_gbs": gbs, "layer_ms": statistics.median(layer_ms)}
    (a, b) = MODELS
    other = {a: b, b: a}
    models = {
        k: {
            "bytes": sizes[k],
            "measured_tps": med[k],
            "roofline_tps": gbs * 1e9 / sizes[k],
            "layers": shapes[k].layers,
            "size_only_tps": med[other[k]] * sizes[other[k]] / sizes[k],
            "forecast_tps": speed_of(k, shapes[k], shapes, med, box).tps,
            "rounds_tps": tps[k],
        }
        for k in MODELS
    }
    for m in models.values():
        m["roofline_ratio"] = m["roofline_tps"] / m["measured_tps"]
        m["forecast_ratio"] = m["forecast_tps"] / m["measured_tps"]
        m["size_only_ratio"] = m["size_only_tps"] / m["measured_tps"]
    return {
        "clock": "wall" if wall else "cpu",
        "threads": threads,
        "tokens": tokens,
        "rounds": rounds,
        "bandwidth_gbs": gbs,
        "bandwidth_rounds": bandwidth,
        "layer_ms": box["layer_ms"],
        "layer_ms_rounds": layer_ms,
        "models": models,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models-dir", default="data/models")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--wall", action="store_true", help="wall-clock time, not CPU time")
    parser.add_argument("--out", default="", help="a folder for decode-forecast.json")
    args = parser.parse_args()
    result = run(Path(args.models_dir), args.rounds, args.tokens, args.threads or os.cpu_count() or 1, args.wall)
    for k, m in result["models"].items():
        print(
            f"{k}: measured {m['measured_tps']:.1f} tok/s; library forecast {m['forecast_tps']:.1f} "
            f"({m['forecast_ratio']:.2f}x); size alone {m['size_only_tps']:.1f} ({m['size_only_ratio']:.2f}x); "
            f"roofline {m['roofline_tps']:.1f} ({m['roofline_ratio']:.2f}x)"
        )
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "decode-forecast.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
