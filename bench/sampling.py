"""What picking one token costs, by sampling settings: the engine's Runner.sample against
llama.cpp's own sampler chain with its penalties sampler, on the same logits.

    .venv/bin/python bench/sampling.py [model.gguf] [--reps 300]

llama.cpp's penalties sampler looks every token of the vocabulary up in its window (Gemma 3 has
262,144), so a repeat penalty, which HomeAI's chat has on by default (1.1), cost more than the
rest of the chain; the engine applies a repeat penalty alone to the window's logits in place
(runner._RepeatPenalty) and reads greedy picks in place. Each setting is timed both ways in
interleaved rounds on one decoded position; p50 of the per-call times is printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import llama_cpp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.engine.runner import Runner, RunnerConfig, sampler_chain  # noqa: E402
from inference.engine.sequence import SamplingParams  # noqa: E402

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "data" / "models" / "gemma-3-270m-q4_k_m.gguf"
SETTINGS = {
    "greedy, no penalty": SamplingParams(temperature=0.0, repeat_penalty=1.0),
    "greedy, repeat penalty 1.1 (an API client's temperature 0)": SamplingParams(temperature=0.0, repeat_penalty=1.1),
    "the chat's defaults (0.7, top-k 40, top-p 0.95, min-p 0.05, repeat 1.1)": SamplingParams(seed=0),
}
PROMPT = (2, 9259, 3324, 496, 990, 1345, 563, 496)  # a few Gemma 3 tokens; any will do


class _Seq:
    def __init__(self, seq_id: int):
        self.seq_id = seq_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL))
    parser.add_argument("--reps", type=int, default=300)
    args = parser.parse_args()
    runner = Runner(RunnerConfig(model_path=Path(args.model), n_ctx_seq=256, n_slots=1, n_batch=64, n_threads=1))
    runner.load()
    batch = runner._batch
    for i, token in enumerate(PROMPT):
        batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, i, 1
        batch.seq_id[i][0], batch.logits[i] = 0, i == len(PROMPT) - 1
    batch.n_tokens = len(PROMPT)
    if llama_cpp.llama_decode(runner.ctx, batch) != 0:
        raise SystemExit("llama_decode failed")
    index = len(PROMPT) - 1
    print(f"{Path(args.model).name}, vocabulary {runner.n_vocab:,}, {args.reps} picks each way, ms per pick (p50):\n")
    print("| settings | llama.cpp's chain | Runner.sample | ratio |\n|---|---|---|---|")
    for n, (name, params) in enumerate(SETTINGS.items()):
        seq = _Seq(100 + n)
        runner.new_sampler(seq.seq_id, params)
        chain = sampler_chain(params, n_vocab=runner.n_vocab)  # llama.cpp's penalties sampler first
        for token in range(1000, 1064):  # a full window of 64 different recent tokens, both ways
            llama_cpp.llama_sampler_accept(chain, token)
            if seq.seq_id in runner._penalties:
                runner._penalties[seq.seq_id].accept(token)
        ours, theirs = [], []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            llama_cpp.llama_sampler_sample(chain, runner.ctx, index)
            t1 = time.perf_counter()
            runner.sample(seq, index)
            t2 = time.perf_counter()
            theirs.append(t1 - t0)
            ours.append(t2 - t1)
        a, b = statistics.median(theirs) * 1000, statistics.median(ours) * 1000
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.0f}x |")
        llama_cpp.llama_sampler_free(chain)
        runner.free_sampler(seq.seq_id)
    runner.close()


if __name__ == "__main__":
    main()
