"""Is a greedy answer the same text every time, without drafts? The same completion prompt,
temperature 0, through the engine (4 slots, as served): alone once in each slot, then beside
three other answers that start with it, then once with prompt-lookup drafts.

    .venv/bin/python bench/greedy_repeat.py [--model gemma.gguf] [--separate-cache] [--rounds 2]

Speculative decoding is held to "greedy output identical to no speculation". On a CPU whose
batch logits equal its one-token logits (the AMX box) every line here is "same". Where they do
not (the AVX-512 and AVX2 boxes, for Gemma 3), this tells whether a drafted answer's other text
is the drafts' doing or llama.cpp's: a plain answer's text then also moves with the slot it is
decoded in (its cells' place in the shared cache) and with the answers beside it.

--separate-cache gives each slot a cache of its own (llama.cpp's non-unified KV cache) instead
of the shared one the engine uses, for comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
from pathlib import Path

import llama_cpp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.speculation import COMPLETION_TASKS, answer_end, start_answer  # noqa: E402
from inference.engine.engine import Engine  # noqa: E402
from inference.engine.runner import Runner, RunnerConfig  # noqa: E402
from inference.engine.scheduler import Scheduler  # noqa: E402
from inference.engine.sequence import SamplingParams  # noqa: E402

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "data" / "models" / "gemma-3-270m-q4_k_m.gguf"
SLOTS = 4
NEIGHBOURS = ("A recipe for bread.\n\nIngredients:", "The history of the bicycle begins", "Dear diary, today")


def separate_caches() -> None:
    """Every context made from here on gives each sequence a KV cache of its own."""
    made = llama_cpp.llama_init_from_model

    def init(model, params):
        params.kv_unified = False
        return made(model, params)

    llama_cpp.llama_init_from_model = init


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="times through every slot, and beside others")
    parser.add_argument("--separate-cache", action="store_true")
    opts = parser.parse_args(argv)
    if opts.separate_cache:
        separate_caches()
    config = RunnerConfig(model_path=opts.model, n_ctx_seq=4096, n_slots=SLOTS, n_batch=512, n_threads=opts.threads)
    engine = Engine(runner=Runner(config), scheduler=Scheduler(policy="chunked", n_slots=SLOTS, n_batch=512))
    ids = itertools.count(1)

    def start(prompt: str, params: SamplingParams):
        return start_answer(engine, next(ids), prompt, params, completion=True)

    def text(seq) -> str:
        return answer_end(seq).text

    greedy = SamplingParams(max_tokens=opts.max_tokens, temperature=0.0, repeat_penalty=1.0)
    drafted = dataclasses.replace(greedy, speculative=True)
    print(
        f"{opts.model.name}, {SLOTS} slots, {'a cache per slot' if opts.separate_cache else 'one shared cache'}, "
        f"greedy, {opts.max_tokens} tokens at most; each answer's text against the first one alone:\n"
    )
    print("| task | alone, slot by slot | beside three others | with drafts |")
    print("|---|---|---|---|")
    try:
        text(start("Hello", greedy))  # loads the model
        for name, prompt in COMPLETION_TASKS.items():
            alone = []
            for _ in range(opts.rounds * SLOTS):  # a new answer takes the next slot in turn
                seq = start(prompt, greedy)
                alone.append((seq, text(seq)))
            reference = alone[0][1]
            beside = []
            for _ in range(opts.rounds):
                seqs = [start(prompt, greedy)] + [start(other, greedy) for other in NEIGHBOURS]
                texts = [text(seq) for seq in seqs]
                beside.append(texts[0] == reference)
            with_drafts = text(start(prompt, drafted)) == reference
            slots = ", ".join(f"{seq.slot}: {'same' if answer == reference else 'OTHER'}" for seq, answer in alone)
            together = ", ".join("same" if same else "OTHER" for same in beside)
            print(f"| {name} | {slots} | {together} | {'same' if with_drafts else 'OTHER'} |", flush=True)
    finally:
        engine.stop()


if __name__ == "__main__":
    main()
