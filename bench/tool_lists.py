"""Small models and big tool lists: which answers are useful when a client sends more tool text
than the model can use? The bundled chat model answers a few household questions with Open
WebUI's 36 default tools (tool_choice auto) offered three ways: all of them, only those whose
words match the question (tools.matching_tools, within HOMEAI_TOOL_SHARE of the context), and
none. Greedy, in process.

An answer is useful when it is words that answer the question (its text holds one of the
question's expected words) or, for a question a tool serves, a call to that tool. A rough,
stated test: the answers themselves are in the JSON, to be read.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from bench.report import machine, table
from bench.structured import _final
from inference.engine.engine import Engine
from inference.engine.events import ErrorEvent
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns
from inference.engine.tools import OutputSpec, matching_tools, parse_calls

ROOT = Path(__file__).resolve().parent.parent
OPENWEBUI_TOOLS = ROOT / "tests" / "api" / "openwebui_tools.json"
MODES = ("all", "matching", "none")
# (question, words a useful answer holds, the tool that serves it)
QUESTIONS = (
    ("What is a NAS good for? Answer in one sentence.", ("stor", "file", "backup", "data", "shar"), None),
    ("What is the current time? Use a tool if you have one.", (), "get_current_timestamp"),
    ("How do I remove limescale from a kettle?", ("vinegar", "citric", "lemon", "descal", "boil"), None),
    (
        "What temperature should a fridge be set to?",
        ("°", "degree", "celsius", "fahrenheit", " 4", " 5", "37", "40"),
        None,
    ),
    (
        "Why does my Wi-Fi get slow in the evening?",
        ("neighbo", "congest", "interfer", "traffic", "busy", "band", "devices", "router"),
        None,
    ),
    ("How often should I change the batteries in a smoke alarm?", ("year", "month", "annual"), None),
    ("Remind me to take the bins out tomorrow at 7am.", (), "create_calendar_event"),
    (
        "Give me one tip to save energy when heating a house.",
        ("thermostat", "insulat", "temperature", "window", "door", "curtain", "lower"),
        None,
    ),
    ("How long should I boil an egg for a soft yolk?", ("minute",), None),
    ("Search my earlier chats for what we said about the garden.", (), "search_chats"),
)


@dataclass(frozen=True)
class ToolListsConfig:
    model_path: Path
    tools_path: Path = OPENWEBUI_TOOLS
    context: int = 4096  # the context the tool share is of (HOMEAI_CONTEXT)
    share: float = 0.25
    threads: int = 0
    max_tokens: int = 64


def useful(text: str, calls: list[dict], words: tuple[str, ...], tool: str | None) -> bool:
    if calls:
        return tool is not None and any(call["name"] == tool for call in calls)
    return len(text.split()) >= 3 and any(word in text.lower() for word in words)


def run(cfg: ToolListsConfig, log=print) -> dict:
    tools = tuple(t["function"] for t in json.loads(cfg.tools_path.read_text()))
    # Room for all 36 tools (7,400 tokens with this model): the model was trained for 8,192.
    runner = Runner(
        RunnerConfig(model_path=cfg.model_path, n_ctx_seq=8192, n_slots=1, n_batch=512, n_threads=cfg.threads)
    )
    engine = Engine(runner=runner, scheduler=Scheduler(policy="chunked", n_slots=1, n_batch=512, token_budget=512))
    budget = int(cfg.context * cfg.share)
    rows = []
    start = time.monotonic()
    try:
        for mode in MODES:
            for i, (question, words, tool) in enumerate(QUESTIONS):
                offered = {"all": tools, "matching": matching_tools(tools, question, budget), "none": ()}[mode]
                seq = Sequence(
                    seq_id=len(rows) + 1,
                    messages=[{"role": "user", "content": question}],
                    params=SamplingParams(max_tokens=cfg.max_tokens, temperature=0.0),
                    clock=PhaseClock(t_arrive=now_ns()),
                    output=OutputSpec(tools=offered) if offered else None,
                )
                engine.submit(seq)
                final = _final(seq)
                if isinstance(final, ErrorEvent):
                    rows.append(
                        {"mode": mode, "q": i, "offered": len(offered), "error": final.message, "useful": False}
                    )
                    continue
                text, calls = parse_calls(final.text) if offered else (final.text, [])
                rows.append(
                    {
                        "mode": mode,
                        "q": i,
                        "offered": len(offered),
                        "prompt_tokens": final.metrics["prompt_tokens"],
                        "text": text,
                        "calls": [c["name"] for c in calls],
                        "useful": useful(text, calls, words, tool),
                    }
                )
                log(f"{mode} q{i}: {len(offered)} tools, useful={rows[-1]['useful']}: {final.text[:100]!r}")
    finally:
        engine.stop()
    return {
        "machine": machine(model=cfg.model_path.name, threads=cfg.threads, slots=1),
        "share": cfg.share,
        "context": cfg.context,
        "tools": len(tools),
        "questions": [q for q, _, _ in QUESTIONS],
        "rows": rows,
        "seconds": time.monotonic() - start,
    }


def markdown(result: dict) -> str:
    lines = []
    for mode in MODES:
        rows = [r for r in result["rows"] if r["mode"] == mode]
        prompts = [r["prompt_tokens"] for r in rows if "prompt_tokens" in r]
        lines.append(
            (
                mode,
                f"{sum(r['offered'] for r in rows) / len(rows):.1f}",
                f"{sum(prompts) / len(prompts):,.0f}" if prompts else "-",
                f"{sum(r['useful'] for r in rows)} of {len(rows)}",
                sum(bool(r.get("calls")) for r in rows),
                sum(not r.get("calls") and not (r.get("text") or "").strip() for r in rows),
            )
        )
    header = ("tools offered", "tools per question", "prompt tokens", "useful answers", "with a call", "empty")
    return "\n".join(table(header, lines))


def write(result: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "tool_lists.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    return path
