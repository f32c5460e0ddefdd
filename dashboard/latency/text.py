"""The latency dashboard's words: number formats, labels, and the sentences that explain the numbers.

Pure functions like dashboard.latency.stats, whose numbers they put into words: the fit's reading
of TTFT against prompt length, the "why is prompt tok/s so much higher than output tok/s" panel,
and how the scheduler sizes a long prompt's chunks. Number formats follow static/js/common.js
(HomeAI.fmtMs and friends), so a value reads the same in a sentence and in a table cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboard.latency import stats

PHASE_LABELS = {"queue": "Queue", "load": "Load", "prefill": "Prefill", "decode": "Decode", stats.OTHER: "Unfinished"}
# A request's row on the timeline; the page fills the same pattern for requests that arrive live.
ROW_LABEL = "#{id} {username}"


# --- numbers -----------------------------------------------------------------------------------------


def fmt_ms(ms: float | None) -> str:
    """A duration: 0.1 ms steps below 10 ms, whole ms below a second, then seconds."""
    if ms is None:
        return "–"
    if ms == 0:
        return "0 ms"
    if abs(ms) < 10:
        return f"{ms:.1f} ms"
    if abs(ms) < 1000:
        return f"{ms:.0f} ms"
    if abs(ms) < 10_000:
        return f"{ms / 1000:.2f} s"
    return f"{ms / 1000:.1f} s"


def fmt_rate(rate: float | None) -> str:
    if rate is None:
        return "–"
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.1f}"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "–"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:,.1f} {unit}" if n < 100 * size else f"{n / size:,.0f} {unit}"
    return f"{n:.0f} B"


def fmt_count(n: float | None) -> str:
    if n is None:
        return "–"
    for unit, size in (("billion", 1e9), ("million", 1e6)):
        if n >= size:
            return f"{n / size:,.0f} {unit}" if n >= 100 * size else f"{n / size:,.1f} {unit}"
    return f"{n:,.0f}"


def row_label(row: dict) -> str:
    return ROW_LABEL.format(id=row["id"], username=row.get("username") or "").strip()


def phase_legend() -> list[tuple[str, str]]:
    """(phase, label) of each phase in order, for legends and the page's config."""
    return [(phase, PHASE_LABELS[phase]) for phase in stats.PHASES]


# --- time to first token against prompt length -----------------------------------------------------


def fit_text(fit: dict) -> str:
    """What a TTFT fit (stats.ttft_fit) says about prefill speed and fixed overhead, and how far to trust it."""
    slope, intercept, rate = fit["slope_ms_per_token"], fit["intercept_ms"], fit["prefill_tps"]
    if rate is not None and intercept >= 0:
        text = (
            f"Each prompt token adds {slope:.2f} ms → about {fmt_rate(rate)} tok/s of prefill; "
            f"every request pays a fixed {fmt_ms(intercept)} (queue, load, first step) on top."
        )
    elif rate is not None:
        text = (
            f"Each prompt token adds {slope:.2f} ms → about {fmt_rate(rate)} tok/s of prefill; "
            f"the fixed part is lost in the noise (the line meets zero tokens at {fmt_ms(intercept)})."
        )
    else:
        text = (
            f"TTFT does not grow with prompt length here (slope {slope:.2f} ms/token): "
            f"the fixed {fmt_ms(intercept)} of queueing and overhead dominates."
        )
    # Waiting in the queue does not depend on prompt length: when it varies, the line says so by R².
    text += f" (Least squares over {fit['n']} warm requests, R² = {fit['r2']:.2f}"
    text += ": waiting varies more than prompt length here, so read the slope with care.)" if fit["r2"] < 0.5 else ".)"
    return text


def explained_fit(rows: Sequence[dict]) -> dict | None:
    """stats.ttft_fit over rows, with its reading in words under "text"; None where there is no fit."""
    fit = stats.ttft_fit(rows)
    return None if fit is None else {**fit, "text": fit_text(fit)}


# --- measured rates against the hardware's ceilings --------------------------------------------------


def why(
    *,
    rows: Sequence[dict],
    model_bytes: int | None,
    n_params: int | None,
    bandwidth_gbs: float | None,
    gflops: float | None,
    hardware: str = "this machine",
) -> dict:
    """The "why" panel: stats.why_numbers, the hardware's label, and sentences saying what they mean."""
    info = stats.why_numbers(
        rows=rows, model_bytes=model_bytes, n_params=n_params, bandwidth_gbs=bandwidth_gbs, gflops=gflops
    )
    return {**info, "hardware": hardware, "sentences": why_sentences(info, hardware)}


def why_sentences(info: dict, hardware: str = "this machine") -> list[str]:
    """The why panel's explanation of stats.why_numbers, one sentence per fact, saying what is missing."""
    prefill, decode, done = info["prefill_tps"], info["decode_tps"], info["done"]
    decode_ceiling, prefill_ceiling = info["decode_ceiling_tps"], info["prefill_ceiling_tps"]
    model_bytes, n_params = info["model_bytes"], info["n_params"]
    bandwidth_gbs, gflops = info["bandwidth_gbs"], info["gflops"]
    sentences = []
    answers = "answer" if done == 1 else "answers"
    if prefill and decode:
        sentences.append(
            f"Across {done} {answers}, prompts were read at a median {fmt_rate(prefill)} tok/s and answers "
            f"written at {fmt_rate(decode)} tok/s: prefill ran {prefill / decode:.1f}× faster than decode."
        )
    elif not done:
        sentences.append("No finished answers in this range yet: chat a little and the numbers fill in.")
    if decode_ceiling:
        line = (
            f"Writing a token reads every weight once: {fmt_bytes(model_bytes)} per token at "
            f"{bandwidth_gbs:,.1f} GB/s ({hardware}) allows at most ≈{fmt_rate(decode_ceiling)} tok/s."
        )
        if info["decode_pct"] is not None:
            line += f" Decode reached {fmt_rate(decode)} tok/s, {info['decode_pct']:.0f}% of that: "
            line += decode_verdict(info["decode_pct"])
        sentences.append(line)
    if prefill_ceiling:
        line = (
            f"Reading a prompt token costs ≈ 2 × {fmt_count(n_params)} parameters = "
            f"{2 * n_params / 1e9:,.2f} GFLOP; at {gflops:,.0f} GFLOP/s ({hardware}) that allows "
            f"≈{fmt_rate(prefill_ceiling)} tok/s, because a prompt's tokens share each weight read "
            "in one batch of matrix products."
        )
        if info["prefill_pct"] is not None:
            line += f" Prefill reached {fmt_rate(prefill)} tok/s, {info['prefill_pct']:.0f}% of it: "
            line += prefill_verdict(info["prefill_pct"])
        sentences.append(line)
    if decode_ceiling and prefill_ceiling:
        sentences.append(
            f"The two ceilings differ by {prefill_ceiling / decode_ceiling:,.1f}× "
            f"(≈{fmt_rate(prefill_ceiling)} vs ≈{fmt_rate(decode_ceiling)} tok/s): that gap, not a fault, "
            "is why prompt tok/s is always far above output tok/s."
        )
    if bandwidth_gbs is None or gflops is None:
        sentences.append("The hardware probe has not reported yet: it runs about a second when a worker starts.")
    if model_bytes is None or n_params is None:
        sentences.append("The model's size and parameter count appear once a worker has loaded it.")
    return sentences


def decode_verdict(pct: float) -> str:
    """What decode reaching pct % of the bandwidth ceiling means."""
    if pct > 100:
        return "above the estimate, so part of the model stays in the caches between tokens."
    if pct >= 60:
        return "it is memory-bound, limited by how fast the weights stream from memory."
    if pct >= 25:
        return (
            "memory bandwidth sets the ceiling, and the rest of each step goes to work besides reading "
            "weights (sampling, attention over the context, keeping threads in step)."
        )
    return "far below the bandwidth ceiling, so work other than reading weights dominates each step."


def prefill_verdict(pct: float) -> str:
    """What prefill reaching pct % of the compute ceiling means."""
    if pct > 100:
        return (
            "above this float32 estimate, because llama.cpp multiplies quantised weights with faster integer "
            "instructions and the embedding table is a lookup, not a multiply."
        )
    if pct >= 50:
        return "it is compute-bound, limited by arithmetic rather than memory."
    return "short prompts leave the matrix units idle part of the time, so per-step overhead weighs more."


# --- how the scheduler sizes a long prompt ---------------------------------------------------------


def sizing_text(policy: str | None, sizing: dict | None) -> str:
    """How the scheduling policy treats a long prompt right now, with this machine's measured costs.

    policy and sizing are the system snapshot's (a worker's heartbeat); "" when there is nothing to say.
    """
    if policy == "continuous":
        return (
            "Policy continuous: a waiting prompt goes in whole, so every answer being written waits for it "
            "(llama-server's schedule)."
        )
    if policy == "serial":
        return "Policy serial: one request at a time; the others wait their turn."
    z = sizing
    if not z:
        return ""
    n = z.get("n_decode")
    if not n:
        return "Policy chunked: nothing has been written yet; while no answer is being written, a prompt goes in whole."
    answers = "1 answer" if n == 1 else f"{n} answers"
    chunk = z.get("chunk")
    if z.get("mode") == "fixed":
        return (
            f"Policy chunked, fixed budget: {z.get('token_budget')} tokens a step, decodes first, "
            f"so beside {answers} a long prompt goes in {chunk}-token chunks."
        )
    if z.get("mode") == "stall":
        takes = "takes" if n == 1 else "take"
        aim = (
            f"{_factor(z.get('stall_factor'))}× the {fmt_ms(z.get('decode_ms'))} that {answers} {takes} alone "
            f"({fmt_ms(z.get('target_ms'))})"
        )
    else:
        aim = fmt_ms(z.get("target_ms"))
    if z.get("prompt_token_ms") is None:
        return (
            f"Policy chunked: steps aim at {aim}; the next long prompt's first {chunk}-token chunk "
            "measures what a prompt token costs here."
        )
    return (
        f"Policy chunked: with {answers} being written, steps aim at {aim}; a prompt token adds "
        f"{fmt_ms(z['prompt_token_ms'])} beside them on this machine, so a long prompt goes in {chunk}-token chunks."
    )


def _factor(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"
