"""Structured output on the real model, in process: N answers under a grammar (JSON schemas and
tool calls, sampled at temperature 0.8 with a seed each), every one parsed and validated.

A check more than a timing: the grammar must make every answer parse. An answer cut at
max_tokens is counted as a failure too (its limit is set far above what these schemas need:
their strings and arrays are bounded; a free-form {"type": "object"} is not, and a small model
may write one until max_tokens, so it is not among them: docs/api.md).
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import jsonschema

from bench.report import machine, num, table
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, ErrorEvent
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns
from inference.engine.tools import OutputSpec, parse_calls

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string", "maxLength": 40},
        "pets": {"type": "array", "items": {"enum": ["cat", "dog", "fish", "bird"]}, "maxItems": 3},
    },
    "required": ["name", "age", "pets"],
}
EVENT = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 40},
        "date": {"type": "string", "format": "date"},
        "all_day": {"type": "boolean"},
        "attendees": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4},
    },
    "required": ["title", "date", "all_day", "attendees"],
    "additionalProperties": False,
}
SHOPPING = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 20},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 12},
                    "price": {"type": "number"},
                },
                "required": ["name", "quantity"],
            },
        },
        "shop": {"enum": ["market", "bakery", "pharmacy"]},
    },
    "required": ["items", "shop"],
}
REVIEW = {
    "type": "object",
    "properties": {
        "book": {"type": "string", "maxLength": 40},
        "stars": {"type": "integer", "exclusiveMinimum": 0, "maximum": 5},
        "verdict": {"enum": ["read it", "skip it"]},
        "summary": {"type": "string", "maxLength": 120},
    },
    "required": ["book", "stars", "verdict"],
    "additionalProperties": False,
}
LIGHTS = {
    "name": "set_lights",
    "description": "Turn the lights of a room on or off, optionally dimmed",
    "parameters": {
        "type": "object",
        "properties": {
            "room": {"enum": ["kitchen", "living room", "bedroom"]},
            "on": {"type": "boolean"},
            "brightness": {"type": "integer", "minimum": 0, "maximum": 100},
        },
        "required": ["room", "on"],
    },
}
WEATHER = {
    "name": "get_weather",
    "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30}}, "required": ["city"]},
}
# (name, prompt, what the answer must be)
TASKS = (
    ("person", "Describe a person and their pets as JSON.", OutputSpec(schema=PERSON)),
    ("event", "Plan a birthday party as a calendar event.", OutputSpec(schema=EVENT)),
    ("shopping", "Write a shopping list for a pancake breakfast.", OutputSpec(schema=SHOPPING)),
    ("review", "Review your favourite book.", OutputSpec(schema=REVIEW)),
    (
        "tool",
        "Dim the kitchen lights, then tell me the weather in Lyon.",
        OutputSpec(tools=(LIGHTS, WEATHER), tool_choice="required"),
    ),
)


@dataclass(frozen=True)
class StructuredConfig:
    model_path: Path
    n: int = 200
    threads: int = 0
    slots: int = 4
    max_tokens: int = 400
    temperature: float = 0.8


def check(spec: OutputSpec, text: str) -> str | None:
    """Why the answer does not parse or match (None: it does)."""
    try:
        if spec.tools:
            content, calls = parse_calls(text)
            if not calls:
                return f"no tool call in {text[:80]!r}"
            for call in calls:
                tool = next(t for t in spec.tools if t["name"] == call["name"])
                jsonschema.validate(call["arguments"], tool["parameters"])
        else:
            jsonschema.validate(json.loads(text), spec.schema)
    except (ValueError, StopIteration, jsonschema.ValidationError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    return None


def run(cfg: StructuredConfig, log=print) -> dict:
    """Submit the answers `slots` at a time (a batch decodes together, as a server's do)."""
    runner = Runner(
        RunnerConfig(model_path=cfg.model_path, n_ctx_seq=2048, n_slots=cfg.slots, n_batch=512, n_threads=cfg.threads)
    )
    engine = Engine(
        runner=runner, scheduler=Scheduler(policy="chunked", n_slots=cfg.slots, n_batch=512, token_budget=256)
    )
    results = []
    start = time.monotonic()
    try:
        for first in range(0, cfg.n, cfg.slots):
            batch = []
            for i in range(first, min(first + cfg.slots, cfg.n)):
                name, prompt, spec = TASKS[i % len(TASKS)]
                params = SamplingParams(max_tokens=cfg.max_tokens, temperature=cfg.temperature, seed=i)
                seq = Sequence(
                    seq_id=i + 1,
                    messages=[{"role": "user", "content": prompt}],
                    params=params,
                    clock=PhaseClock(t_arrive=now_ns()),
                    output=spec,
                )
                engine.submit(seq)
                batch.append((name, spec, seq))
            for name, spec, seq in batch:
                final = _final(seq)
                if isinstance(final, ErrorEvent):
                    results.append({"task": name, "ok": False, "why": f"{final.code}: {final.message}"})
                    continue
                why = "cut at max_tokens" if final.finish_reason == "length" else check(spec, final.text)
                results.append(
                    {
                        "task": name,
                        "ok": why is None,
                        "why": why,
                        "tokens": final.metrics["output_tokens"],
                        "text": final.text,
                    }
                )
            log(f"{len(results)}/{cfg.n} answers, {sum(r['ok'] for r in results)} valid")
    finally:
        engine.stop()
    seconds = time.monotonic() - start
    tokens = [r["tokens"] for r in results if "tokens" in r]
    return {
        "machine": machine(model=cfg.model_path.name, threads=cfg.threads, slots=cfg.slots),
        "n": cfg.n,
        "valid": sum(r["ok"] for r in results),
        "per_task": dict(Counter(r["task"] for r in results if r["ok"])),
        "failures": [r for r in results if not r["ok"]],
        "median_tokens": statistics.median(tokens) if tokens else None,
        "max_tokens_seen": max(tokens) if tokens else None,
        "seconds": seconds,
        "examples": {r["task"]: r["text"] for r in results if r["ok"]},
    }


def _final(seq: Sequence, timeout: float = 600) -> DoneEvent | ErrorEvent:
    deadline = time.monotonic() + timeout
    while True:
        event = seq.events.get(timeout=max(deadline - time.monotonic(), 0.01))
        if isinstance(event, DoneEvent | ErrorEvent):
            return event


def markdown(result: dict) -> str:
    rows = [(task, count) for task, count in sorted(result["per_task"].items())]
    lines = [
        f"{result['valid']} of {result['n']} answers parsed and matched their schema ({result['seconds']:.0f} s; "
        f"median {num(result['median_tokens'])} tokens, longest {num(result['max_tokens_seen'])}).",
        "",
        *table(("task", "valid answers"), rows),
    ]
    for failure in result["failures"][:10]:
        lines.append(f"- {failure['task']}: {failure['why']}")
    return "\n".join(lines)


def write(result: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "structured.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    return path
