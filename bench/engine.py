"""Engine benchmarks on the real model, in process: throughput per policy and the interference test.

Ratios from one run on one machine are what matter: the machines are shared and noisy, so
every configuration is measured in the same invocation, back to back.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import plotly.graph_objects as go

from bench.report import axes, figure, machine, num, percentile, table, write
from inference.engine.budget import StepCostModel
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, EngineEvent, ErrorEvent, PhaseEvent, TokenEvent
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import NS_PER_MS, PhaseClock, now_ns

CHAT_PROMPT = "Write a long story about a lighthouse keeper and the sea."
DOC_LINE = "Quarterly report line {i}: revenue grew, costs fell, and the team shipped the new release."
SLICE_QUARTERS = ("ms_per_token_first_quarter", "ms_per_token_last_quarter")


@dataclass(frozen=True)
class BenchConfig:
    model_path: Path
    threads: int = 0
    gpu_layers: int = 0
    slots: int = 4
    n_batch: int = 512
    stream_counts: tuple[int, ...] = (1, 2, 4)
    output_tokens: int = 64
    doc_tokens: int = 1500
    chat_tokens: int = 200
    budgets: tuple[int, ...] = (32, 64, 128)
    target_ms: float = 150.0
    stall_factors: tuple[float, ...] = (2.5,)
    slice_sizes: tuple[int, ...] = (16, 32, 64, 128, 512)
    default_stall_factor: float = 2.0  # what `chunked` runs with in the question scenario
    throughput: bool = True
    repeats: int = 3


def _engine(
    cfg: BenchConfig, policy: str, budget: int = 256, target_ms: float | None = None, factor: float | None = None
) -> Engine:
    runner = Runner(
        RunnerConfig(
            model_path=cfg.model_path,
            n_ctx_seq=4096,
            n_slots=cfg.slots,
            n_batch=cfg.n_batch,
            n_threads=cfg.threads,
            n_gpu_layers=cfg.gpu_layers,
        )
    )
    scheduler = Scheduler(policy=policy, n_slots=cfg.slots, n_batch=cfg.n_batch, token_budget=budget)
    return Engine(runner=runner, scheduler=scheduler, cost_model=StepCostModel(target_ms, stall_factor=factor))


def _seq(seq_id: int, text: str, max_tokens: int) -> Sequence:
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, repeat_penalty=1.0, ignore_eos=True)
    return Sequence(
        seq_id=seq_id, messages=[{"role": "user", "content": text}], params=params, clock=PhaseClock(now_ns())
    )


def _until(seq: Sequence, kinds: tuple[type[EngineEvent], ...], timeout: float = 600) -> list[EngineEvent]:
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        ev = seq.events.get(timeout=max(deadline - time.monotonic(), 0.01))
        seen.append(ev)
        if isinstance(ev, kinds):
            return seen


def _warm(engine: Engine) -> None:
    seq = _seq(0, "Hello", 4)
    engine.submit(seq)
    _until(seq, (DoneEvent, ErrorEvent))


def _document(engine: Engine, tokens: int) -> str:
    """A report of about `tokens` tokens (the model's own count) and a request to summarise it."""
    lines, text = 0, ""
    while len(engine.runner.tokenize(text)) < tokens:
        lines += 1
        text = "Summarise this report in one sentence.\n" + "\n".join(DOC_LINE.format(i=i) for i in range(lines))
    return text


def _chat_gaps(steady: list[float], gaps: list[float]) -> dict:
    """The chats' pace before the document (steady) and their gaps while it was read."""
    return {
        "chat_itl_steady_p50_ms": percentile(steady, 50),
        "chat_itl_p50_ms": percentile(gaps, 50),
        "chat_itl_p99_ms": percentile(gaps, 99),
        "chat_itl_max_ms": max(gaps) if gaps else None,
        "chat_tokens_during_prefill": len(gaps),
    }


def throughput(cfg: BenchConfig, policy: str) -> list[dict]:
    """Aggregate output tokens/s with 1, 2, 4 streams of the same length."""
    engine = _engine(cfg, policy)
    rows = []
    try:
        _warm(engine)
        for n in cfg.stream_counts:
            seqs = [_seq(100 * n + i, CHAT_PROMPT, cfg.output_tokens) for i in range(n)]
            start = now_ns()
            for seq in seqs:
                engine.submit(seq)
            metrics = [_until(seq, (DoneEvent,))[-1].metrics for seq in seqs]
            end = max(seq.clock.token_times[-1] for seq in seqs)
            total = sum(m["output_tokens"] for m in metrics)
            rows.append(
                {
                    "policy": policy,
                    "streams": n,
                    "output_tokens": total,
                    "seconds": (end - start) / 1e9,
                    "aggregate_tps": total / ((end - start) / 1e9),
                    "per_stream_tps": statistics.mean(m["output_tps"] for m in metrics),
                    "ttft_ms_mean": statistics.mean(m["ttft_ms"] for m in metrics),
                }
            )
    finally:
        engine.stop()
    return rows


def slice_cost(cfg: BenchConfig) -> list[dict]:
    """What a prompt token costs when the document goes in as slices of n tokens, alone.

    llama.cpp's batch is set to n, so every step evaluates one slice. The first and the last
    quarter of the document are reported apart: late tokens attend to everything before them,
    and attention is where llama.cpp's CPU kernels differ most between small and large batches.
    """
    rows = []
    for n in cfg.slice_sizes:
        engine = _engine(dataclasses.replace(cfg, n_batch=n), "serial")
        try:
            _warm(engine)
            doc = _seq(60, _document(engine, cfg.doc_tokens), 1)
            engine.submit(doc)
            _until(doc, (DoneEvent,))
            steps = [s for s in engine.steps if 60 in s["seqs"] and s["prefill"]]
            quarter = doc.prompt_len // 4
            first, last, done = [0.0, 0], [0.0, 0], 0
            for s in steps:  # a step's time is shared among its tokens
                for part, lo, hi in ((first, 0, quarter), (last, doc.prompt_len - quarter, doc.prompt_len)):
                    inside = max(0, min(done + s["prefill"], hi) - max(done, lo))
                    part[0] += s["ms"] * inside / s["prefill"]
                    part[1] += inside
                done += s["prefill"]
            total_ms = sum(s["ms"] for s in steps)
            rows.append(
                {
                    "slice": n,
                    "steps": len(steps),
                    "prompt_tokens": doc.prompt_len,
                    "ms_per_token": total_ms / doc.prompt_len,
                    "ms_per_token_first_quarter": first[0] / max(first[1], 1),
                    "ms_per_token_last_quarter": last[0] / max(last[1], 1),
                }
            )
        finally:
            engine.stop()
    return rows


def question_during_document(cfg: BenchConfig, policy: str) -> dict:
    """Nobody else busy: a long document starts being read, and a short question arrives just
    after. The question's TTFT and the document's (median of cfg.repeats runs)."""
    runs = []
    for _ in range(cfg.repeats):
        engine = _engine(cfg, policy, factor=cfg.default_stall_factor if policy == "chunked" else None)
        try:
            _warm(engine)
            doc = _seq(70, _document(engine, 2 * cfg.doc_tokens), 8)
            engine.submit(doc)
            while True:  # until the first slice of the document has been read
                ev = doc.events.get(timeout=600)
                if isinstance(ev, PhaseEvent) and ev.phase == "prefill":
                    break
            question = _seq(71, "What is the capital of France? Answer in one word.", 8)
            engine.submit(question)
            asked = _until(question, (DoneEvent,))[-1].metrics
            read = _until(doc, (DoneEvent,))[-1].metrics
            runs.append((asked["ttft_ms"], read["ttft_ms"], doc.prompt_len))
        finally:
            engine.stop()
    return {
        "policy": policy,
        "stall_factor": cfg.default_stall_factor if policy == "chunked" else None,
        "doc_prompt_tokens": runs[0][2],
        "question_ttft_ms": statistics.median(r[0] for r in runs),
        "doc_ttft_ms": statistics.median(r[1] for r in runs),
        "repeats": len(runs),
    }


def _interference_once(
    cfg: BenchConfig, policy: str, budget: int = 256, target_ms: float | None = None, factor: float | None = None
) -> dict:
    """Three chats decoding while a long document arrives: their stalls, and the document's TTFT.

    1. Start three chats and let each produce a few tokens (steady decoding).
    2. Submit a document of about cfg.doc_tokens tokens asking for a short answer.
    3. Record every chat gap that ends inside the document's prefill (first chunk start ->
       first answer token), then stop the chats.
    """
    engine = _engine(cfg, policy, budget=budget, target_ms=target_ms, factor=factor)
    try:
        _warm(engine)
        if target_ms or factor:  # let the cost model learn this box before the measured part
            learn = [_seq(900 + i, CHAT_PROMPT + " " + DOC_LINE.format(i=i) * 8, 12) for i in range(3)]
            for seq in learn:
                engine.submit(seq)
            for seq in learn:
                _until(seq, (DoneEvent,))
        # Long enough to outlast any policy's document prefill; serial runs them one by one.
        chats = [_seq(1 + i, CHAT_PROMPT, cfg.chat_tokens) for i in range(3)]
        for seq in chats:
            engine.submit(seq)
        for seq in chats[:1] if policy == "serial" else chats:
            for _ in range(8):
                _until(seq, (TokenEvent,))
        doc = _seq(50, _document(engine, cfg.doc_tokens), 8)
        engine.submit(doc)
        done = _until(doc, (DoneEvent,))[-1]
        window = (doc.clock.t_prefill_start, doc.clock.token_times[0])
        for seq in chats:
            engine.cancel(seq.seq_id)
        for seq in chats:
            _until(seq, (DoneEvent,))  # each sequence ends exactly once, cancelled or not
        gaps = []
        for seq in chats:
            times = seq.clock.token_times
            gaps += [(b - a) / NS_PER_MS for a, b in zip(times, times[1:], strict=False) if window[0] < b <= window[1]]
        steady = []
        for seq in chats:
            times = [t for t in seq.clock.token_times if t < window[0]]
            steady += [(b - a) / NS_PER_MS for a, b in zip(times[2:], times[3:], strict=False)]
        steps = [s for s in engine.steps if 50 in s["seqs"] and s["prefill"]]
        # What a document token added to its steps: step time less what the same step's
        # decodes cost alone (median decode-only step of this run with as many decodes).
        alone: dict[int, list[float]] = {}
        for s in engine.steps:
            if not s["prefill"] and s["decode"]:
                alone.setdefault(s["decode"], []).append(s["ms"])
        added = sum(s["ms"] - (statistics.median(alone[s["decode"]]) if s["decode"] in alone else 0.0) for s in steps)
        return (
            gaps,
            steady,
            {
                "policy": policy,
                "budget": budget if policy == "chunked" and not (target_ms or factor) else None,
                "target_ms": target_ms if policy == "chunked" else None,
                "stall_factor": factor if policy == "chunked" else None,
                "doc_prompt_tokens": doc.prompt_len,
                "doc_ttft_ms": done.metrics["ttft_ms"],
                "doc_prefill_ms": done.metrics["prefill_ms"],
                "doc_prefill_steps": len(steps),
                "doc_token_ms": added / max(sum(s["prefill"] for s in steps), 1),
                **_chat_gaps(steady, gaps),
            },
        )
    finally:
        engine.stop()


def interference(
    cfg: BenchConfig, policy: str, budget: int = 256, target_ms: float | None = None, factor: float | None = None
) -> dict:
    """The scenario below, cfg.repeats times; chat gaps pooled (so p99 is not just the one worst
    gap of a single run), the document's TTFT as the median run."""
    gaps: list[float] = []
    steady: list[float] = []
    runs = []
    for _ in range(cfg.repeats):
        g, st, run = _interference_once(cfg, policy, budget=budget, target_ms=target_ms, factor=factor)
        gaps += g
        steady += st
        runs.append(run)
    result = sorted(runs, key=lambda r: r["doc_ttft_ms"])[len(runs) // 2]
    result.update(
        doc_token_ms=statistics.median(r["doc_token_ms"] for r in runs),
        repeats=cfg.repeats,
        **_chat_gaps(steady, gaps),
    )
    return result


def run_all(cfg: BenchConfig, log=print) -> dict:
    started = time.time()
    result: dict = {
        "machine": machine(threads=cfg.threads),
        "model": cfg.model_path.name,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in cfg.__dict__.items()},
        "throughput": [],
        "interference": [],
        "slices": [],
        "question": [],
    }
    for policy in ("serial", "continuous", "chunked") if cfg.throughput else ():
        log(f"throughput: {policy}")
        result["throughput"] += throughput(cfg, policy)
    runs = [("serial", 256, None, None), ("continuous", 256, None, None)]
    runs += [("chunked", b, None, None) for b in cfg.budgets]
    runs += [("chunked", 64, cfg.target_ms, None)] if cfg.target_ms else []
    runs += [("chunked", 64, None, f) for f in cfg.stall_factors]
    for policy, budget, target, factor in runs:
        log(f"interference: {policy} budget={budget} target={target} factor={factor}")
        result["interference"].append(interference(cfg, policy, budget=budget, target_ms=target, factor=factor))
    for policy in ("serial", "continuous", "chunked"):
        log(f"question during a document: {policy}")
        result["question"].append(question_during_document(cfg, policy))
    if cfg.slice_sizes:
        log(f"prompt cost by slice size: {', '.join(map(str, cfg.slice_sizes))}")
        result["slices"] = slice_cost(cfg)
    result["seconds"] = time.time() - started
    return result


def label(r: dict) -> str:
    """How a row of the interference table is named: policy and what sizes its chunks."""
    if r["policy"] != "chunked":
        return r["policy"]
    if r["target_ms"]:
        return f"chunked, {r['target_ms']:.0f} ms steps"
    if r["stall_factor"]:
        return f"chunked, {r['stall_factor']:g}x stall"
    return f"chunked, {r['budget']} tokens"


def ratios(result: dict) -> list[dict]:
    """Each interference row's two bounds: chats' p99 gap over their undisturbed median, and the
    document's TTFT over what `continuous` gave it in the same run."""
    cont = next((r for r in result["interference"] if r["policy"] == "continuous"), None)
    rows = []
    for r in result["interference"]:
        stall = r["chat_itl_p99_ms"] / r["chat_itl_steady_p50_ms"] if r["chat_itl_p99_ms"] else None
        ttft = r["doc_ttft_ms"] / cont["doc_ttft_ms"] if cont else None
        rows.append({"label": label(r), "stall": stall, "ttft": ttft, "row": r})
    return rows


def _interference_cells(x: dict) -> tuple:
    r = x["row"]
    during = f"{num(r['chat_itl_p50_ms'])} / {num(r['chat_itl_p99_ms'])} / {num(r['chat_itl_max_ms'])}"
    return (
        x["label"],
        num(r["chat_itl_steady_p50_ms"]),
        during,
        num(x["stall"], 1),
        num(r["doc_ttft_ms"]),
        num(x["ttft"], 2),
        r["doc_prefill_steps"],
        num(r.get("doc_token_ms"), 2),
    )


def markdown(result: dict) -> str:
    out = table(
        ("policy", "streams", "aggregate output tok/s", "per-stream tok/s", "mean TTFT ms"),
        (
            (r["policy"], r["streams"], num(r["aggregate_tps"], 1), num(r["per_stream_tps"], 1), num(r["ttft_ms_mean"]))
            for r in result["throughput"]
        ),
    )
    out += [""] + table(
        (
            "policy",
            "chats' ITL before (p50)",
            "chats' ITL during document prefill p50 / p99 / max ms",
            "p99 ÷ before",
            "document TTFT ms",
            "TTFT ÷ continuous",
            "prefill steps",
            "ms per document token",
        ),
        map(_interference_cells, ratios(result)),
    )
    if result.get("question"):
        out += [""] + table(
            ("policy", "question's TTFT ms", "document's TTFT ms"),
            (
                (
                    f"chunked ({r['stall_factor']:g}x stall)" if r["stall_factor"] else r["policy"],
                    num(r["question_ttft_ms"]),
                    num(r["doc_ttft_ms"]),
                )
                for r in result["question"]
            ),
        )
    if result.get("slices"):
        out += [""] + table(
            ("slice (tokens per step)", "steps", "ms per prompt token", "first quarter", "last quarter"),
            (
                (r["slice"], r["steps"], *(num(r[k], 2) for k in ("ms_per_token", *SLICE_QUARTERS)))
                for r in result["slices"]
            ),
        )
    return "\n".join(out)


def write_outputs(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """engine.json and engine.html (throughput, the interference trade-off, slice costs)."""
    fig = figure(
        (
            "Aggregate output tokens/s by streams",
            "The trade-off: chats' stall against the document's wait",
            "Cost of a prompt token by slice size",
        ),
        cols=3,
    )
    for policy in ("serial", "continuous", "chunked"):
        rows = [r for r in result["throughput"] if r["policy"] == policy]
        fig.add_trace(
            go.Bar(name=policy, x=[str(r["streams"]) for r in rows], y=[r["aggregate_tps"] for r in rows]), 1, 1
        )
    # The goal: chats' p99 gap within 3x of normal, the document's TTFT within 2x of continuous.
    fig.add_shape(type="rect", x0=1, x1=3, y0=0, y1=2, fillcolor="rgba(60,160,90,0.12)", line_width=0, row=1, col=2)
    points = [x for x in ratios(result) if x["stall"] is not None and x["ttft"] is not None]
    fig.add_trace(
        go.Scatter(
            x=[x["stall"] for x in points],
            y=[x["ttft"] for x in points],
            mode="markers+text",
            text=[x["label"].replace("chunked, ", "") for x in points],
            textposition="middle right",
            textfont={"size": 10},
            name="interference",
            showlegend=False,
        ),
        1,
        2,
    )
    slices = result.get("slices") or []
    for key, name in zip(SLICE_QUARTERS, ("first quarter", "last quarter"), strict=True):
        fig.add_trace(
            go.Scatter(
                x=[str(r["slice"]) for r in slices], y=[r[key] for r in slices], mode="lines+markers", name=name
            ),
            1,
            3,
        )
    axes(fig, 1, x="concurrent streams", y="tokens/s")
    axes(
        fig,
        2,
        x="chats' p99 gap ÷ their undisturbed median (log)",
        y="document TTFT ÷ continuous's",
        x_options={"type": "log", "range": [0, 2]},
        y_options={"rangemode": "tozero"},
    )
    axes(
        fig,
        3,
        x="tokens per step",
        y="ms per prompt token",
        x_options={"type": "category"},
        y_options={"rangemode": "tozero"},
    )
    title = f"HomeAI engine on {result['model']}"
    return write(result, fig, out_dir, "engine", title=title, size=(1500, 520))
