"""Speculative decoding against plain decoding on one model, greedy, in interleaved rounds.

Three tasks: summarise-and-quote (the answer quotes its passage), code-edit (the answer returns
a 40-line function with one name changed), free writing (nothing to copy). Each round runs
every task without and with prompt-lookup drafts on one engine (which first alternates by
round), so a busy box slows both alike; the ratio of decode tok/s per round is what counts.
Each pair's texts must be identical.

The tasks come as chat messages (TASKS, for an instruction-tuned model such as the bundled chat
model) or, with `completion`, as completion prompts that lead a base model (the bundled Gemma 3)
into the same answers (COMPLETION_TASKS, as an API client's /v1/completions would send them).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench.report import write_json
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, FinalEvent
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns

PASSAGE = (
    "The old harbour town of Wrenmouth sits where the river meets a cold grey sea. "
    "Fishing boats leave before dawn and return at noon with herring and cod. "
    "In 1887 a storm destroyed the stone pier, and the townspeople rebuilt it in one summer. "
    "The lighthouse on the northern cliff has guided ships since 1902 and is still lit every night. "
    "Every August the town holds a festival where children race small wooden boats in the harbour. "
    "Tourists come for the smoked fish, the steep cobbled lanes and the view from the cliff path."
)
FUNCTION = "\n".join(
    [
        "def summarise(x, limit):",
        "    total = 0",
        "    count = 0",
        *(f"    part_{i} = x[{i}] * {i + 1} + limit  # weight {i}\n    total += part_{i}" for i in range(18)),
        "    count = len(x)",
        "    return total / max(count, 1)",
    ]
)
TASKS = {
    "summarise-and-quote": (
        f"{PASSAGE}\n\nQuote the sentence about the lighthouse exactly, then summarise the passage in two sentences."
    ),
    "code-edit": f"Rename the variable x to values in this function and return the whole function.\n\n{FUNCTION}\n",
    "free-writing": "Write a short story about a fox who learns to sail.",
}

COMPLETION_TASKS = {
    "summarise-and-quote": (
        f"Passage: {PASSAGE}\n\n"
        "Task: quote the sentence about the lighthouse exactly, then summarise the passage in two sentences.\n\n"
        'Quote: "'
    ),
    "code-edit": (
        f"Original function:\n```python\n{FUNCTION}\n```\n\n"
        "The same function with the variable x renamed to values:\n```python\ndef summarise(values, limit):\n"
    ),
    "free-writing": "A short story about a fox who learns to sail.\n\nOnce upon a time,",
}


@dataclass(frozen=True)
class SpeculationConfig:
    model_path: Path
    rounds: int = 3
    max_tokens: int = 256
    threads: int = 0
    gpu_layers: int = 0
    completion: bool = False  # COMPLETION_TASKS (a base model) instead of TASKS


def start_answer(engine: Engine, seq_id: int, text: str, params: SamplingParams, *, completion: bool) -> Sequence:
    """Submit one answer: a completion prompt as /v1/completions sends it, or a chat message."""
    messages = [] if completion else [{"role": "user", "content": text}]
    raw_prompt = text if completion else None
    # Each answer its own owner: no answer reuses the cache of the one before, so both ways of
    # decoding start alike (a reused prompt's last token is read alone, not in the prompt's
    # batch, and its logits differ in the last bits).
    seq = Sequence(
        seq_id=seq_id,
        messages=messages,
        params=params,
        clock=PhaseClock(now_ns()),
        raw_prompt=raw_prompt,
        owner=f"bench-{seq_id}",
    )
    engine.submit(seq)
    return seq


def answer_end(seq: Sequence) -> DoneEvent:
    """The answer's end, once it has one; an error end raises."""
    while True:
        event = seq.events.get(timeout=600)
        if isinstance(event, FinalEvent):
            if not isinstance(event, DoneEvent):
                raise RuntimeError(f"{event.code}: {event.message}")
            return event


def _answer(engine: Engine, seq_id: int, text: str, params: SamplingParams, *, completion: bool) -> DoneEvent:
    return answer_end(start_answer(engine, seq_id, text, params, completion=completion))


def run(cfg: SpeculationConfig, log=print) -> dict:
    threads = cfg.threads or os.cpu_count() or 1
    config = RunnerConfig(
        model_path=cfg.model_path,
        n_ctx_seq=4096,
        n_slots=1,
        n_batch=512,
        n_threads=threads,
        n_gpu_layers=cfg.gpu_layers,
    )
    runner = Runner(config)
    engine = Engine(runner=runner, scheduler=Scheduler(policy="chunked", n_slots=1, n_batch=512))
    ids = itertools.count(1)
    greedy = SamplingParams(max_tokens=cfg.max_tokens, temperature=0.0, repeat_penalty=1.0)
    load_before = os.getloadavg()
    tasks = COMPLETION_TASKS if cfg.completion else TASKS
    results: dict[str, dict] = {name: {"ratios": [], "plain_tps": [], "spec_tps": []} for name in tasks}
    speculative = dataclasses.replace(greedy, speculative=True)
    try:
        _answer(engine, next(ids), "Hello", greedy, completion=cfg.completion)  # loads the model
        for round_no in range(cfg.rounds):
            for name, text in tasks.items():
                # Which way goes first alternates by round: the second answer of a pair finds
                # the cache where the first left it, and may run a little slower for it.
                if round_no % 2 == 0:
                    plain = _answer(engine, next(ids), text, greedy, completion=cfg.completion)
                    spec = _answer(engine, next(ids), text, speculative, completion=cfg.completion)
                else:
                    spec = _answer(engine, next(ids), text, speculative, completion=cfg.completion)
                    plain = _answer(engine, next(ids), text, greedy, completion=cfg.completion)
                row = results[name]
                same = plain.text == spec.text
                row.setdefault("identical_rounds", []).append(same)
                row["plain_tps"].append(plain.metrics["output_tps"])
                row["spec_tps"].append(spec.metrics["output_tps"])
                row["ratios"].append(spec.metrics["output_tps"] / plain.metrics["output_tps"])
                m = spec.metrics
                # Every round's drafts count (a short answer may draft in some rounds only).
                for key, metric in (
                    ("output_tokens", "output_tokens"),
                    ("drafted", "spec_drafted"),
                    ("accepted", "spec_accepted"),
                    ("decode_steps", "decode_steps"),
                ):
                    row[key] = row.get(key, 0) + m[metric]
                row["text"] = plain.text
                row["tokens_per_step"] = row["output_tokens"] / row["decode_steps"]
                log(f"round {round_no + 1} {name}: {row['ratios'][-1]:.2f}x, identical={same}")
    finally:
        engine.stop()
    for row in results.values():
        row["median_ratio"] = statistics.median(row["ratios"])
        row["identical"] = all(row["identical_rounds"])
        row["acceptance"] = row["accepted"] / row["drafted"] if row["drafted"] else None
    return {
        "model": cfg.model_path.name,
        "threads": threads,
        "rounds": cfg.rounds,
        "max_tokens": cfg.max_tokens,
        "completion": cfg.completion,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "tasks": results,
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }


def markdown(result: dict) -> str:
    lines = [
        f"Model {result['model']}, {'completion prompts' if result.get('completion') else 'chat messages'}, "
        f"{result['threads']} threads, greedy, {result['max_tokens']} tokens at most, "
        f"{result['rounds']} interleaved rounds; load average {result['load_before'][0]:.1f} before, "
        f"{result['load_after'][0]:.1f} after; drafts counted over all rounds.",
        "",
        "| task | decode tok/s plain | with drafts | ratio (median of rounds) | identical text | drafted | accepted "
        "| acceptance | tokens/step |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for name, row in result["tasks"].items():
        acceptance = f"{100 * row['acceptance']:.0f}%" if row["acceptance"] is not None else "-"
        lines.append(
            f"| {name} | {statistics.median(row['plain_tps']):.1f} | {statistics.median(row['spec_tps']):.1f} "
            f"| {row['median_ratio']:.2f}x | {'yes' if row['identical'] else 'NO'} | {row['drafted']} "
            f"| {row['accepted']} | {acceptance} | {row['tokens_per_step']:.2f} |"
        )
    return "\n".join(lines)


def write(result: dict, folder: Path) -> Path:
    return write_json(result, folder, "speculation-completion" if result.get("completion") else "speculation")
