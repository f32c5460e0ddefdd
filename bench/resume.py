"""Conversations that resume hot, on the real model, in process: the time to first token of a
follow-up in a conversation with a long history, when its slot was kept, when four other
people's answers took every slot (its KV state restored from the store: engine/kvstore.py), and
the same with the store off (the history read again: what HomeAI did before). Interleaved rounds,
one engine with the store and one without, the same threads."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench.report import machine, num, table
from inference.engine.budget import StepCostModel
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, ErrorEvent
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns

MODES = ("kept", "restored", "re-read")
GREEDY = SamplingParams(max_tokens=16, temperature=0.0)


@dataclass(frozen=True)
class ResumeConfig:
    model_path: Path
    rounds: int = 5
    history_lines: int = 85  # about 2,000 tokens of history with the chat model's tokenizer
    slots: int = 4
    threads: int = 0
    kv_dir: Path = Path("data/bench-kv")


def _engine(cfg: ResumeConfig, *, store: bool) -> Engine:
    config = RunnerConfig(
        model_path=cfg.model_path,
        n_ctx_seq=4096,
        n_slots=cfg.slots,
        n_batch=512,
        n_threads=cfg.threads,
        kv_ram_bytes=1024 * 2**20 if store else 0,
        kv_disk_bytes=0,
        kv_dir=cfg.kv_dir if store else None,
    )
    scheduler = Scheduler(policy="chunked", n_slots=cfg.slots, n_batch=512, token_budget=512)
    return Engine(runner=Runner(config), scheduler=scheduler, cost_model=StepCostModel(None))


def _ask(engine: Engine, owner: int, messages: list[dict]) -> dict:
    seq = Sequence(
        seq_id=int(time.monotonic_ns() % 2**31),
        messages=messages,
        params=GREEDY,
        clock=PhaseClock(t_arrive=now_ns()),
        owner=owner,
    )
    engine.submit(seq)
    while True:
        event = seq.events.get(timeout=900)
        if isinstance(event, ErrorEvent):
            raise RuntimeError(f"{event.code}: {event.message}")
        if isinstance(event, DoneEvent):
            return {"text": event.text, **event.metrics, "restored": seq.num_restored}


def _history(owner: int, lines: int) -> str:
    return "\n".join(
        f"Entry {i} of person {owner}: the shed's shelf {i % 7} holds {i * 3} screws." for i in range(lines)
    )


def _follow_up(engine: Engine, cfg: ResumeConfig, owner: int, *, lose_the_slot: bool) -> dict:
    first = [{"role": "user", "content": _history(owner, cfg.history_lines) + "\nWhich shelf holds the most screws?"}]
    answer = _ask(engine, owner, first)
    if lose_the_slot:
        for other in range(cfg.slots):
            _ask(engine, owner * 100 + other + 1, [{"role": "user", "content": _history(other, 20) + "\nSum them."}])
    follow = [*first, {"role": "assistant", "content": answer["text"]}, {"role": "user", "content": "And the least?"}]
    return _ask(engine, owner, follow)


def run(cfg: ResumeConfig, log=print) -> dict:
    with_store, without = _engine(cfg, store=True), _engine(cfg, store=False)
    samples: dict[str, list[dict]] = {mode: [] for mode in MODES}
    owner = 1
    try:
        _ask(with_store, 0, [{"role": "user", "content": "Hi"}])  # load both models first
        _ask(without, 0, [{"role": "user", "content": "Hi"}])
        for r in range(cfg.rounds):
            for mode in MODES:
                owner += 1
                engine = without if mode == "re-read" else with_store
                samples[mode].append(_follow_up(engine, cfg, owner, lose_the_slot=mode != "kept"))
            log(f"round {r + 1}/{cfg.rounds}: " + ", ".join(f"{m} {samples[m][-1]['ttft_ms']:.0f} ms" for m in MODES))
    finally:
        with_store.stop()
        without.stop()
    summary = {
        mode: {
            "ttft_ms_p50": statistics.median(s["ttft_ms"] for s in rows),
            "prompt_tokens": statistics.median(s["prompt_tokens"] for s in rows),
            "cached_tokens": statistics.median(s["cached_tokens"] for s in rows),
            "restored_tokens": statistics.median(s["restored"] for s in rows),
        }
        for mode, rows in samples.items()
    }
    kept = summary["kept"]["ttft_ms_p50"]
    for mode in MODES:
        summary[mode]["vs_kept"] = summary[mode]["ttft_ms_p50"] / kept if kept else None
    return {
        "machine": machine(model=cfg.model_path.name, threads=cfg.threads, slots=cfg.slots),
        "rounds": cfg.rounds,
        "summary": summary,
        "samples": samples,
    }


def markdown(result: dict) -> str:
    rows = [
        (
            mode,
            num(s["prompt_tokens"]),
            num(s["cached_tokens"]),
            num(s["restored_tokens"]),
            num(s["ttft_ms_p50"]),
            f"{s['vs_kept']:.2f}x",
        )
        for mode, s in result["summary"].items()
    ]
    header = ("follow-up", "prompt tokens", "cached", "restored", "TTFT p50 (ms)", "vs kept")
    return "\n".join(table(header, rows))


def write(result: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "resume.json"
    path.write_text(json.dumps(result, indent=2))
    return path
