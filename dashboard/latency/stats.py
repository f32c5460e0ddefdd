"""The latency dashboard's numbers: percentiles, fits, hardware ceilings and request phases.

Pure functions of plain data (the row dicts of dashboard.latency.payload, engine step records,
probe and model figures): no database, no Redis, no request, no wording, no plotting. Times are
epoch seconds, durations milliseconds. The sentences about these numbers live in
dashboard.latency.text, the figures drawn from them in dashboard.latency.figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from inference.engine.timing import PHASES as PHASES  # re-exported: the dashboard reads phases here
from inference.engine.timing import phase_ms

# The dashboard's page reads the phases (and the timeline's cut below) from the config the view
# embeds, so the browser mirrors nothing by hand.
OTHER = "other"  # one segment for a request that never reached the engine
TIMELINE_ROWS = 30
TIMELINE_WINDOW_S = 15 * 60  # requests within this span of the newest share the timeline
PERCENTILES = (50, 90, 99)
MIN_FIT_POINTS = 3  # two points always fit a line exactly, which says nothing


def finite(values: Iterable) -> list[float]:
    """The real, finite numbers among values (None, NaN, infinities and booleans left out)."""
    return [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)]


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile with linear interpolation between order statistics (numpy's default)."""
    data = sorted(finite(values))
    if not data:
        return None
    pos = (len(data) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Iterable[float]) -> float | None:
    return percentile(values, 50)


@dataclass(frozen=True)
class LineFit:
    slope: float
    intercept: float
    r2: float
    n: int


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LineFit | None:
    """Ordinary least squares y = slope * x + intercept; None when x does not vary."""
    points = [(float(x), float(y)) for x, y in zip(xs, ys, strict=True)]
    n = len(points)
    if n < 2:
        return None
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    if sxx <= 1e-12:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    ss_tot = sum((y - mean_y) ** 2 for _, y in points)
    ss_res = sum((y - (slope * x + intercept)) ** 2 for x, y in points)
    r2 = 1 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return LineFit(slope=slope, intercept=intercept, r2=r2, n=n)


# --- time to first token against prompt length -----------------------------------------------------


def evaluated_tokens(row: dict) -> int | None:
    """Prompt tokens actually computed (a reused cached prefix costs no prefill)."""
    prompt = row.get("prompt_tokens")
    if prompt is None:
        return None
    return prompt - (row.get("cached_tokens") or 0)


def ttft_points(rows: Iterable[dict]) -> tuple[list[dict], list[dict]]:
    """Finished requests with a TTFT, split into warm ones (fitted) and cold ones (a model load inside)."""
    warm, cold = [], []
    for row in rows:
        if row.get("ttft_ms") is None or evaluated_tokens(row) is None:
            continue
        (cold if row.get("cold") else warm).append(row)
    return warm, cold


def ttft_fit(rows: Iterable[dict]) -> dict | None:
    """TTFT = intercept + slope x prompt tokens over warm requests; None below MIN_FIT_POINTS or without spread.

    The slope is the time each prompt token adds (1 / prefill rate); the intercept is what every
    request pays regardless of length: queue, the first decode step, the relay.
    """
    warm, _ = ttft_points(rows)
    fit = fit_line([evaluated_tokens(r) for r in warm], [r["ttft_ms"] for r in warm])
    if fit is None or fit.n < MIN_FIT_POINTS:
        return None
    return {
        "slope_ms_per_token": fit.slope,
        "intercept_ms": fit.intercept,
        "prefill_tps": 1000 / fit.slope if fit.slope > 0 else None,
        "r2": fit.r2,
        "n": fit.n,
    }


# --- measured rates against the hardware's ceilings --------------------------------------------------


def ceilings(
    *, bandwidth_gbs: float | None, gflops: float | None, model_bytes: int | None, n_params: int | None
) -> dict:
    """Upper bounds on tok/s: decode reads every weight per token, prefill does 2 x params FLOPs per token."""
    decode = bandwidth_gbs * 1e9 / model_bytes if bandwidth_gbs and model_bytes else None
    prefill = gflops * 1e9 / (2 * n_params) if gflops and n_params else None
    return {"decode_tps": decode, "prefill_tps": prefill}


def why_numbers(
    *,
    rows: Sequence[dict],
    model_bytes: int | None,
    n_params: int | None,
    bandwidth_gbs: float | None,
    gflops: float | None,
) -> dict:
    """The "why" panel's numbers: median prefill and decode rates of finished requests against their ceilings."""
    done = [r for r in rows if r.get("status") == "done"]
    prefill = median(r.get("prompt_tps") for r in done)
    decode = median(r.get("output_tps") for r in done)
    ceil = ceilings(bandwidth_gbs=bandwidth_gbs, gflops=gflops, model_bytes=model_bytes, n_params=n_params)
    return {
        "done": len(done),
        "model_bytes": model_bytes,
        "n_params": n_params,
        "bandwidth_gbs": bandwidth_gbs,
        "gflops": gflops,
        "decode_ceiling_tps": ceil["decode_tps"],
        "prefill_ceiling_tps": ceil["prefill_tps"],
        "decode_tps": decode,
        "prefill_tps": prefill,
        "decode_pct": 100 * decode / ceil["decode_tps"] if decode and ceil["decode_tps"] else None,
        "prefill_pct": 100 * prefill / ceil["prefill_tps"] if prefill and ceil["prefill_tps"] else None,
        "ratio": prefill / decode if prefill and decode else None,
    }


# --- gaps between tokens and the headline numbers --------------------------------------------------


def itl_histogram(values: Iterable[float], bins_per_decade: int = 20) -> tuple[list[float], list[int]]:
    """Counts of inter-token gaps in log-spaced bins (a stall of seconds and a 20 ms gap fit one axis).

    Returns (edges, counts) with len(edges) == len(counts) + 1.
    """
    data = [v for v in finite(values) if v > 0]
    if not data:
        return [], []
    lo = math.floor(math.log10(min(data)) * bins_per_decade)
    hi = math.floor(math.log10(max(data)) * bins_per_decade) + 1
    edges = [10 ** (k / bins_per_decade) for k in range(lo, hi + 1)]
    counts = [0] * (hi - lo)
    for v in data:
        index = min(int(math.floor(math.log10(v) * bins_per_decade)) - lo, len(counts) - 1)
        counts[max(index, 0)] += 1
    return edges, counts


def summary(rows: Sequence[dict]) -> dict:
    """Headline numbers over finished requests."""
    done = [r for r in rows if r.get("status") == "done"]
    prompt = median(r.get("prompt_tps") for r in done)
    output = median(r.get("output_tps") for r in done)
    return {
        "requests": len(rows),
        "done": len(done),
        "ttft_p50_ms": median(r.get("ttft_ms") for r in done),
        "ttft_p90_ms": percentile((r.get("ttft_ms") for r in done), 90),
        "prompt_tps_p50": prompt,
        "output_tps_p50": output,
        "ratio_p50": prompt / output if prompt and output else None,
        "itl_p50_ms": median(v for r in done for v in r.get("itl_ms") or ()),
        "itl_p99_ms": percentile((v for r in done for v in r.get("itl_ms") or ()), 99),
        # Answers read aloud: from the first sentence's end to its audio (docs/speech.md).
        "speech_first_p50_ms": median(r.get("speech_first_ms") for r in rows),
        "speech_readings": sum(1 for r in rows if r.get("speech_first_ms") is not None),
    }


# --- the request timeline ------------------------------------------------------------------------


def phase_segments(row: dict) -> list[tuple[str, float, float]]:
    """(phase, start epoch s, duration ms) of a request, back to back from its arrival.

    A request that never reached the engine (cancelled in the queue, interrupted, failed) gets one
    OTHER segment from arrival to its end, so it still shows on the timeline; one still in flight
    (no end yet) gets none: the page grows its bar from the live feed.
    """
    t = row["t_arrive"]
    if row.get("ttft_ms") is None or row.get("queue_ms") is None:
        end = row.get("t_end")
        return [(OTHER, t, (end - t) * 1000)] if end and end > t else []
    segments = []
    for phase, ms in phase_ms(row).items():
        if phase == "retrieve" and not ms:  # only answers drawn from documents have one
            continue
        segments.append((phase, t, ms))
        t += ms / 1000
    return segments


def timeline_rows(rows: Sequence[dict], limit: int = TIMELINE_ROWS, window_s: float = TIMELINE_WINDOW_S) -> list[dict]:
    """The newest requests that share a readable time axis: at most `limit`, within `window_s` of the newest."""
    newest = sorted(rows, key=lambda r: r["t_arrive"], reverse=True)[:limit]
    if not newest:
        return []
    cutoff = newest[0]["t_arrive"] - window_s
    return [r for r in newest if r["t_arrive"] >= cutoff]


def interference_spans(row: dict, steps: Iterable[dict], merge_gap_s: float = 0.002) -> list[tuple[float, float, int]]:
    """(start, end, prompt tokens) of engine steps that prefilled someone else's prompt while this request decoded.

    A step that holds this request after its first token and also carries prompt tokens made
    this request wait for another one's prefill. Touching steps merge into one span.
    """
    times = row.get("token_times_ms") or []
    if len(times) < 2:
        return []
    first = row["t_arrive"] + times[0] / 1000
    last = row["t_arrive"] + times[-1] / 1000
    spans: list[list] = []
    for step in sorted(steps, key=lambda s: s["t"]):
        if not step.get("prefill") or step["t"] < first - 0.0005 or step["t"] > last:
            continue
        seqs = step.get("seqs")
        if seqs is not None and row["id"] not in seqs:
            continue
        start, end = step["t"], step["t"] + step["ms"] / 1000
        if spans and start - spans[-1][1] <= merge_gap_s:
            spans[-1][1] = max(spans[-1][1], end)
            spans[-1][2] += step["prefill"]
        else:
            spans.append([start, end, step["prefill"]])
    return [(s, e, n) for s, e, n in spans]


def embedding_summary(rows: Sequence[dict]) -> list[dict]:
    """Per embedding model: requests, inputs and tokens embedded, the median request's time,
    and tokens per second of encoding (the finished requests')."""
    out = []
    for model in sorted({r["model_name"] for r in rows}):
        mine = [r for r in rows if r["model_name"] == model]
        done = [r for r in mine if r["status"] == "done"]
        tokens = sum(r["prompt_tokens"] or 0 for r in done)
        compute_ms = sum(finite(r["compute_ms"] for r in done))
        out.append(
            {
                "model": model,
                "requests": len(mine),
                "done": len(done),
                "inputs": sum(r["inputs"] for r in done),
                "tokens": tokens,
                "e2e_p50_ms": median(r["e2e_ms"] for r in done),
                "tokens_per_s": tokens / compute_ms * 1000 if compute_ms > 0 else None,
            }
        )
    return out
