"""Plotly figures for the latency dashboard, and the small maths they rest on.

Everything here is a pure function of plain data (the row dicts of dashboard.selectors, step
records, probe and model figures): no database, no Redis, no request. Times arrive as epoch
seconds and are drawn as wall-clock strings in the given time zone, because plotly.js date
axes know no time zones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

import plotly.graph_objects as go
from plotly.subplots import make_subplots

PHASES = ("queue", "load", "prefill", "decode")
PHASE_LABELS = {"queue": "Queue", "load": "Load", "prefill": "Prefill", "decode": "Decode", "other": "Unfinished"}
# The chat page's phase colours (static/css/app.css), so a phase looks the same everywhere.
COLORS = {
    "queue": "#d99a1e",
    "load": "#9b59d0",
    "prefill": "#2b8fd6",
    "decode": "#22a06b",
    "other": "#9aa0ab",
    "ratio": "#3559d6",
    "fit": "#c9372c",
    "interference": "rgba(43, 143, 214, 0.22)",
}
GRID = "rgba(128, 128, 128, 0.18)"
TIMELINE_ROWS = 30
TIMELINE_WINDOW_S = 15 * 60  # requests within this span of the newest share the timeline
PERCENTILES = (50, 90, 99)
MIN_FIT_POINTS = 3  # two points always fit a line exactly, which says nothing


# --- maths ------------------------------------------------------------------------------------------


def _finite(values: Iterable) -> list[float]:
    return [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)]


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile with linear interpolation between order statistics (numpy's default)."""
    data = sorted(_finite(values))
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
    """TTFT = intercept + slope x prompt tokens over warm requests, in words as well as numbers.

    The slope is the time each prompt token adds (1 / prefill rate); the intercept is what every
    request pays regardless of length: queue, the first decode step, the relay.
    """
    warm, _ = ttft_points(rows)
    fit = fit_line([evaluated_tokens(r) for r in warm], [r["ttft_ms"] for r in warm])
    if fit is None or fit.n < MIN_FIT_POINTS:
        return None
    rate = 1000 / fit.slope if fit.slope > 0 else None
    if rate is not None and fit.intercept >= 0:
        text = (
            f"Each prompt token adds {fit.slope:.2f} ms → about {fmt_rate(rate)} tok/s of prefill; "
            f"every request pays a fixed {fmt_ms(fit.intercept)} (queue, load, first step) on top."
        )
    elif rate is not None:
        text = (
            f"Each prompt token adds {fit.slope:.2f} ms → about {fmt_rate(rate)} tok/s of prefill; "
            f"the fixed part is lost in the noise (the line meets zero tokens at {fmt_ms(fit.intercept)})."
        )
    else:
        text = (
            f"TTFT does not grow with prompt length here (slope {fit.slope:.2f} ms/token): "
            f"the fixed {fmt_ms(fit.intercept)} of queueing and overhead dominates."
        )
    # Waiting in the queue does not depend on prompt length: when it varies, the line says so by R².
    text += f" (Least squares over {fit.n} warm requests, R² = {fit.r2:.2f}"
    text += ": waiting varies more than prompt length here, so read the slope with care.)" if fit.r2 < 0.5 else ".)"
    return {
        "slope_ms_per_token": fit.slope,
        "intercept_ms": fit.intercept,
        "prefill_tps": rate,
        "r2": fit.r2,
        "n": fit.n,
        "text": text,
    }


def ceilings(
    *, bandwidth_gbs: float | None, gflops: float | None, model_bytes: int | None, n_params: int | None
) -> dict:
    """Upper bounds on tok/s: decode reads every weight per token, prefill does 2 x params FLOPs per token."""
    decode = bandwidth_gbs * 1e9 / model_bytes if bandwidth_gbs and model_bytes else None
    prefill = gflops * 1e9 / (2 * n_params) if gflops and n_params else None
    return {"decode_tps": decode, "prefill_tps": prefill}


def itl_histogram(values: Iterable[float], bins_per_decade: int = 20) -> tuple[list[float], list[int]]:
    """Counts of inter-token gaps in log-spaced bins (a stall of seconds and a 20 ms gap fit one axis).

    Returns (edges, counts) with len(edges) == len(counts) + 1.
    """
    data = [v for v in _finite(values) if v > 0]
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
    }


# --- words ------------------------------------------------------------------------------------------


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "–"
    if abs(ms) < 10:
        return f"{ms:.1f} ms"
    if abs(ms) < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


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


def why(
    *,
    rows: Sequence[dict],
    model_bytes: int | None,
    n_params: int | None,
    bandwidth_gbs: float | None,
    gflops: float | None,
    hardware: str = "this machine",
) -> dict:
    """The "why" panel: measured medians against the hardware's ceilings, and sentences saying so."""
    done = [r for r in rows if r.get("status") == "done"]
    prefill = median(r.get("prompt_tps") for r in done)
    decode = median(r.get("output_tps") for r in done)
    ceil = ceilings(bandwidth_gbs=bandwidth_gbs, gflops=gflops, model_bytes=model_bytes, n_params=n_params)
    decode_pct = 100 * decode / ceil["decode_tps"] if decode and ceil["decode_tps"] else None
    prefill_pct = 100 * prefill / ceil["prefill_tps"] if prefill and ceil["prefill_tps"] else None
    sentences = []
    answers = "answer" if len(done) == 1 else "answers"
    if prefill and decode:
        sentences.append(
            f"Across {len(done)} {answers}, prompts were read at a median {fmt_rate(prefill)} tok/s and answers "
            f"written at {fmt_rate(decode)} tok/s: prefill ran {prefill / decode:.1f}× faster than decode."
        )
    elif not done:
        sentences.append("No finished answers in this range yet: chat a little and the numbers fill in.")
    if ceil["decode_tps"]:
        line = (
            f"Writing a token reads every weight once: {fmt_bytes(model_bytes)} per token at "
            f"{bandwidth_gbs:,.1f} GB/s ({hardware}) allows at most ≈{fmt_rate(ceil['decode_tps'])} tok/s."
        )
        if decode_pct is not None:
            line += f" Decode reached {fmt_rate(decode)} tok/s, {decode_pct:.0f}% of that: " + _decode_verdict(
                decode_pct
            )
        sentences.append(line)
    if ceil["prefill_tps"]:
        line = (
            f"Reading a prompt token costs ≈ 2 × {fmt_count(n_params)} parameters = "
            f"{2 * n_params / 1e9:,.2f} GFLOP; at {gflops:,.0f} GFLOP/s ({hardware}) that allows "
            f"≈{fmt_rate(ceil['prefill_tps'])} tok/s, because a prompt's tokens share each weight read "
            "in one batch of matrix products."
        )
        if prefill_pct is not None:
            line += f" Prefill reached {fmt_rate(prefill)} tok/s, {prefill_pct:.0f}% of it: " + _prefill_verdict(
                prefill_pct
            )
        sentences.append(line)
    if ceil["decode_tps"] and ceil["prefill_tps"]:
        sentences.append(
            f"The two ceilings differ by {ceil['prefill_tps'] / ceil['decode_tps']:,.1f}× "
            f"(≈{fmt_rate(ceil['prefill_tps'])} vs ≈{fmt_rate(ceil['decode_tps'])} tok/s): that gap, not a fault, "
            "is why prompt tok/s is always far above output tok/s."
        )
    if bandwidth_gbs is None or gflops is None:
        sentences.append("The hardware probe has not reported yet: it runs about a second when a worker starts.")
    if model_bytes is None or n_params is None:
        sentences.append("The model's size and parameter count appear once a worker has loaded it.")
    return {
        "model_bytes": model_bytes,
        "n_params": n_params,
        "bandwidth_gbs": bandwidth_gbs,
        "gflops": gflops,
        "hardware": hardware,
        "decode_ceiling_tps": ceil["decode_tps"],
        "prefill_ceiling_tps": ceil["prefill_tps"],
        "decode_tps": decode,
        "prefill_tps": prefill,
        "decode_pct": decode_pct,
        "prefill_pct": prefill_pct,
        "ratio": prefill / decode if prefill and decode else None,
        "sentences": sentences,
    }


def _decode_verdict(pct: float) -> str:
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


def _prefill_verdict(pct: float) -> str:
    if pct > 100:
        return (
            "above this float32 estimate, because llama.cpp multiplies quantised weights with faster integer "
            "instructions and the embedding table is a lookup, not a multiply."
        )
    if pct >= 50:
        return "it is compute-bound, limited by arithmetic rather than memory."
    return "short prompts leave the matrix units idle part of the time, so per-step overhead weighs more."


# --- figures ------------------------------------------------------------------------------------------


def wall(epoch_s: float, tz: tzinfo = UTC) -> str:
    """A wall-clock string plotly.js reads as a date, to the millisecond."""
    return datetime.fromtimestamp(epoch_s, tz).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _layout(**overrides) -> dict:
    layout = {
        "template": "none",
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "font": {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", "size": 12, "color": "#6a717d"},
        "margin": {"l": 56, "r": 16, "t": 12, "b": 40},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "bgcolor": "rgba(0,0,0,0)"},
        "hoverlabel": {"font": {"size": 12}},
        "hovermode": "closest",
        "bargap": 0.25,
    }
    layout.update(overrides)
    return layout


def _axis(title: str = "", **extra) -> dict:
    axis = {"title": {"text": title, "standoff": 8}, "gridcolor": GRID, "zerolinecolor": GRID, "automargin": True}
    axis.update(extra)
    return axis


def log_ticks(values: Iterable[float]) -> dict:
    """Axis settings for a log axis labelled 1-2-5 (10, 20, 50, 100, ...) around the data.

    plotly.js labels minor log ticks with bare digits ("2 5 2 5"), unreadable at a glance; these
    ticks also cover a decade either side, so points added live still get labels.
    """
    data = [v for v in _finite(values) if v > 0]
    if not data:
        return {}
    lo = math.floor(math.log10(min(data))) - 1
    hi = math.ceil(math.log10(max(data))) + 1
    ticks = [m * 10.0**k for k in range(lo, hi + 1) for m in (1, 2, 5)]
    return {"tickvals": ticks, "ticktext": [_tick_label(t) for t in ticks]}


def _tick_label(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def phase_segments(row: dict) -> list[tuple[str, float, float]]:
    """(phase, start epoch s, duration ms) of a request; the first token's gap counts as decode.

    A request that never reached the engine (cancelled in the queue, interrupted, failed) gets one
    "other" segment from arrival to its end, so it still shows on the timeline.
    """
    t = row["t_arrive"]
    if row.get("ttft_ms") is None or row.get("queue_ms") is None:
        end = row.get("t_end")
        return [("other", t, (end - t) * 1000)] if end and end > t else []
    durations = {
        "queue": row.get("queue_ms") or 0.0,
        "load": row.get("load_ms") or 0.0,
        "prefill": row.get("prefill_ms") or 0.0,
        "decode": (row.get("first_token_ms") or 0.0) + (row.get("decode_ms") or 0.0),
    }
    segments = []
    for phase in PHASES:
        ms = max(durations[phase], 0.0)
        segments.append((phase, t, ms))
        t += ms / 1000
    return segments


def row_label(row: dict) -> str:
    return f"#{row['id']} {row.get('username') or ''}".strip()


def timeline_rows(rows: Sequence[dict], limit: int = TIMELINE_ROWS, window_s: float = TIMELINE_WINDOW_S) -> list[dict]:
    """The newest requests that share a readable time axis: at most `limit`, within `window_s` of the newest."""
    newest = sorted(rows, key=lambda r: r["t_arrive"], reverse=True)[:limit]
    if not newest:
        return []
    cutoff = newest[0]["t_arrive"] - window_s
    return [r for r in newest if r["t_arrive"] >= cutoff]


def timeline_figure(rows: Sequence[dict], *, tz: tzinfo = UTC) -> go.Figure:
    """One row per request (newest on top), its phases as bars on a shared wall-clock axis."""
    shown = timeline_rows(rows)
    labels = [row_label(r) for r in shown]
    traces: dict[str, dict[str, list]] = {p: {"y": [], "x": [], "base": [], "id": []} for p in (*PHASES, "other")}
    for row, label in zip(shown, labels, strict=True):
        for phase, start, ms in phase_segments(row):
            trace = traces[phase]
            trace["y"].append(label)
            trace["x"].append(round(ms, 3))
            trace["base"].append(wall(start, tz))
            trace["id"].append(row["id"])
    fig = go.Figure()
    for phase in (*PHASES, "other"):
        data = traces[phase]
        if phase == "other" and not data["y"]:
            continue
        fig.add_trace(
            go.Bar(
                name=PHASE_LABELS[phase],
                orientation="h",
                y=data["y"],
                x=data["x"],
                base=data["base"],
                customdata=data["id"],
                marker={"color": COLORS[phase], "line": {"width": 0}},
                hovertemplate=f"{PHASE_LABELS[phase]} %{{x:,.1f}} ms<br>request #%{{customdata}}<extra></extra>",
                meta=phase,
            )
        )
    fig.update_layout(
        **_layout(
            barmode="overlay",
            showlegend=False,  # the panel's own legend uses the page's phase colours
            height=max(220, 60 + 22 * len(shown)),
            xaxis=_axis("", type="date", tickformat="%H:%M:%S"),
            yaxis=_axis("", type="category", categoryorder="array", categoryarray=labels, autorange="reversed"),
            margin={"l": 80, "r": 16, "t": 12, "b": 36},
        )
    )
    return fig


def throughput_figure(rows: Sequence[dict], *, tz: tzinfo = UTC) -> go.Figure:
    """Prompt and output tok/s of each request by arrival time, and below them their ratio."""
    done = sorted((r for r in rows if r.get("prompt_tps") or r.get("output_tps")), key=lambda r: r["t_arrive"])
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.06)
    x = [wall(r["t_arrive"], tz) for r in done]
    ids = [r["id"] for r in done]
    for key, name, color in (
        ("prompt_tps", "Prompt tok/s", COLORS["prefill"]),
        ("output_tps", "Output tok/s", COLORS["decode"]),
    ):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[r.get(key) for r in done],
                customdata=ids,
                name=name,
                mode="lines+markers",
                line={"color": color, "width": 1.5},
                marker={"size": 6},
                connectgaps=True,
                hovertemplate=f"{name} %{{y:,.1f}}<br>request #%{{customdata}}<extra></extra>",
                meta=key,
            ),
            row=1,
            col=1,
        )
    ratios = [r["prompt_tps"] / r["output_tps"] if r.get("prompt_tps") and r.get("output_tps") else None for r in done]
    fig.add_trace(
        go.Scatter(
            x=x,
            y=ratios,
            customdata=ids,
            name="Prompt ÷ output",
            mode="lines+markers",
            line={"color": COLORS["ratio"], "width": 1.5, "dash": "dot"},
            marker={"size": 5},
            connectgaps=True,
            hovertemplate="prompt is %{y:.1f}× output<br>request #%{customdata}<extra></extra>",
            meta="ratio",
        ),
        row=2,
        col=1,
    )
    fig.update_layout(
        **_layout(
            height=360,
            xaxis=_axis("", type="date", tickformat="%H:%M:%S"),
            xaxis2=_axis("", type="date", tickformat="%H:%M:%S"),
            yaxis=_axis("tok/s", type="log", **log_ticks(r.get(k) for r in done for k in ("prompt_tps", "output_tps"))),
            yaxis2=_axis("ratio ×", rangemode="tozero"),
        )
    )
    return fig


def ttft_figure(rows: Sequence[dict], fit: dict | None = None) -> go.Figure:
    """TTFT against prompt tokens computed, with the least-squares line and what it means."""
    warm, cold = ttft_points(rows)
    fit = fit if fit is not None else ttft_fit(rows)
    fig = go.Figure()
    for points, name, color, symbol in (
        (warm, "Warm", COLORS["prefill"], "circle"),
        (cold, "Cold (model load)", COLORS["load"], "diamond"),
    ):
        if not points and name.startswith("Cold"):
            continue
        fig.add_trace(
            go.Scatter(
                x=[evaluated_tokens(r) for r in points],
                y=[r["ttft_ms"] for r in points],
                customdata=[r["id"] for r in points],
                name=name,
                mode="markers",
                marker={"color": color, "size": 8, "symbol": symbol, "opacity": 0.85},
                hovertemplate="%{x} prompt tokens → TTFT %{y:,.1f} ms<br>request #%{customdata}<extra></extra>",
            )
        )
    if fit is not None:
        top = max([evaluated_tokens(r) for r in warm] or [1])
        fig.add_trace(
            go.Scatter(
                x=[0, top],
                y=[fit["intercept_ms"], fit["intercept_ms"] + fit["slope_ms_per_token"] * top],
                name=f"Fit: {fit['slope_ms_per_token']:.2f} ms/token + {fmt_ms(fit['intercept_ms'])}",
                mode="lines",
                line={"color": COLORS["fit"], "width": 2, "dash": "dash"},
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        **_layout(
            height=330,
            xaxis=_axis("prompt tokens computed", rangemode="tozero"),
            yaxis=_axis("TTFT (ms)", rangemode="tozero"),
        )
    )
    return fig


def itl_figure(rows: Sequence[dict]) -> go.Figure:
    """Every inter-token gap of finished requests, log-binned, with p50/p90/p99 marked."""
    values = [v for r in rows for v in r.get("itl_ms") or ()]
    edges, counts = itl_histogram(values)
    fig = go.Figure(
        go.Scatter(
            x=edges,
            y=[*counts, counts[-1]] if counts else [],
            name="Gaps",
            mode="lines",
            line={"shape": "hv", "color": COLORS["decode"], "width": 1.5},
            fill="tozeroy",
            fillcolor="rgba(34, 160, 107, 0.25)",
            hovertemplate="from %{x:,.1f} ms: %{y} gaps<extra></extra>",
        )
    )
    shapes, annotations = [], []
    for q, dash in zip(PERCENTILES, ("solid", "dash", "dot"), strict=True):
        value = percentile(values, q)
        if value is None:
            continue
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": value,
                "x1": value,
                "y0": 0,
                "y1": 1,
                "line": {"color": COLORS["fit"], "width": 1.5, "dash": dash},
            }
        )
        # Stacked down the plot so close percentiles (a long tail) do not print over each other,
        # and written on the inner side of their line so the plot edge does not cut them.
        right_half = math.log10(value) > (math.log10(edges[0]) + math.log10(edges[-1])) / 2
        annotations.append(
            {
                "x": math.log10(value),
                "xref": "x",
                "y": 1 - 0.11 * len(annotations),
                "yref": "paper",
                "yanchor": "top",
                "xanchor": "right" if right_half else "left",
                "xshift": -4 if right_half else 4,
                "bgcolor": "rgba(128, 128, 128, 0.08)",
                "text": f"p{q} {fmt_ms(value)}",
                "showarrow": False,
                "font": {"size": 11, "color": COLORS["fit"]},
            }
        )
    fig.update_layout(
        **_layout(
            height=300,
            showlegend=False,
            margin={"l": 56, "r": 16, "t": 12, "b": 40},
            xaxis=_axis("gap between tokens (ms, log scale)", type="log", **log_ticks(values)),
            yaxis=_axis("gaps", rangemode="tozero"),
            shapes=shapes,
            annotations=annotations,
        )
    )
    return fig


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


def _hover_text(token: str) -> str:
    """A token as hover text: whitespace made visible, and markup escaped (plotly renders some HTML tags)."""
    shown = repr(str(token))[1:-1]
    return shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def token_timeline_figure(row: dict | None, steps: Iterable[dict] = (), *, tz: tzinfo = UTC) -> go.Figure:
    """One request's tokens: when each arrived and the gap before it, over other requests' prefill steps.

    The first token's wait (the TTFT) is a marked line rather than a point: it is often seconds
    where the gaps are milliseconds, and would flatten them.
    """
    fig = go.Figure()
    times = (row or {}).get("token_times_ms") or []
    shapes, annotations = [], []
    if row is not None and times:
        t0 = row["t_arrive"]
        texts = row.get("token_texts")
        texts = [_hover_text(t) for t in texts] if texts and len(texts) == len(times) else None
        fig.add_trace(
            go.Scatter(
                x=[wall(t0 + ms / 1000, tz) for ms in times[1:]],
                y=[b - a for a, b in zip(times, times[1:], strict=False)],
                customdata=[[i + 2, ms] for i, ms in enumerate(times[1:])],
                text=texts[1:] if texts else None,
                name=f"Request #{row['id']}: gap before each token",
                mode="lines+markers",
                # "vh": the level between two tokens is the gap before the later one.
                line={"color": COLORS["decode"], "width": 1, "shape": "vh"},
                marker={"size": 5},
                hovertemplate=(
                    "token %{customdata[0]} at %{customdata[1]:,.1f} ms<br>gap %{y:,.1f} ms"
                    + ("<br>%{text}" if texts else "")
                    + "<extra></extra>"
                ),
            )
        )
        first = wall(t0 + times[0] / 1000, tz)
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": first,
                "x1": first,
                "y0": 0,
                "y1": 1,
                "line": {"color": COLORS["prefill"], "width": 1.5, "dash": "dash"},
            }
        )
        label = f"first token · TTFT {fmt_ms(times[0])}" + (f": {texts[0]}" if texts else "")
        annotations.append(
            {
                "x": first,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "xanchor": "left",
                "yanchor": "top",
                "xshift": 4,
                "text": label,
                "showarrow": False,
                "font": {"size": 11, "color": COLORS["prefill"]},
            }
        )
        for start, end, n in interference_spans(row, steps):
            shapes.append(
                {
                    "type": "rect",
                    "xref": "x",
                    "yref": "paper",
                    "x0": wall(start, tz),
                    "x1": wall(end, tz),
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": COLORS["interference"],
                    "line": {"width": 0},
                    "layer": "below",
                    "name": f"{n} prompt tokens",
                }
            )
        # A legend entry for the shading (shapes have none of their own).
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                name="Other requests' prefill steps",
                mode="markers",
                marker={"symbol": "square", "size": 12, "color": COLORS["interference"]},
            )
        )
    fig.update_layout(
        **_layout(
            height=300,
            xaxis=_axis("", type="date", tickformat="%H:%M:%S.%L"),
            yaxis=_axis("gap before token (ms)", rangemode="tozero"),
            shapes=shapes,
            annotations=annotations,
        )
    )
    return fig


def steps_figure(steps: Sequence[dict], *, tz: tzinfo = UTC) -> go.Figure:
    """Engine steps: prompt and decode tokens in each (stacked), and how long each step took."""
    ordered = sorted(steps, key=lambda s: s["t"])
    x = [wall(s["t"], tz) for s in ordered]
    policy = [s.get("policy") or "" for s in ordered]  # shown on hover: staff switch it live
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.55, 0.45], vertical_spacing=0.08)
    for key, name, color in (
        ("prefill", "Prompt tokens", COLORS["prefill"]),
        ("decode", "Decode tokens", COLORS["decode"]),
    ):
        fig.add_trace(
            go.Bar(
                x=x,
                y=[s.get(key, 0) for s in ordered],
                customdata=policy,
                name=name,
                marker={"color": color, "line": {"width": 0}},
                hovertemplate=f"{name} %{{y}} · %{{customdata}}<extra></extra>",
                meta=key,
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[round(s["ms"], 3) for s in ordered],
            customdata=policy,
            name="Step time",
            mode="markers",
            marker={"color": COLORS["ratio"], "size": 4},
            hovertemplate="step %{y:,.1f} ms · %{customdata}<extra></extra>",
            meta="ms",
        ),
        row=2,
        col=1,
    )
    fig.update_layout(
        **_layout(
            height=340,
            barmode="stack",
            bargap=0,
            xaxis=_axis("", type="date", tickformat="%H:%M:%S"),
            xaxis2=_axis("", type="date", tickformat="%H:%M:%S"),
            yaxis=_axis("tokens / step", rangemode="tozero"),
            yaxis2=_axis("step (ms)", rangemode="tozero"),
        )
    )
    return fig


def why_figure(info: dict) -> go.Figure:
    """Measured median tok/s beside each phase's hardware ceiling, on a log axis (they differ by orders)."""
    fig = go.Figure()
    phases = (
        ("Decode", "decode_tps", "decode_ceiling_tps", "decode"),
        ("Prefill", "prefill_tps", "prefill_ceiling_tps", "prefill"),
    )
    kinds = (
        ("measured", "Measured median", 1.0, "{} tok/s measured"),
        ("ceiling", "Ceiling", 0.3, "≈{} tok/s ceiling"),
    )
    for kind, name, opacity, label in kinds:
        ys, xs, texts = [], [], []
        for phase, measured_key, ceiling_key, _ in phases:
            value = info.get(measured_key if kind == "measured" else ceiling_key)
            ys.append(phase)
            xs.append(value)
            texts.append(label.format(fmt_rate(value)) if value else "")
        fig.add_trace(
            go.Bar(
                name=name,
                orientation="h",
                y=ys,
                x=xs,
                text=texts,
                textposition="outside",
                cliponaxis=False,
                marker={"color": [COLORS[c] for *_, c in phases], "opacity": opacity, "line": {"width": 0}},
                hovertemplate="%{y}: %{x:,.1f} tok/s<extra>" + name + "</extra>",
                meta=kind,
            )
        )
    fig.update_layout(
        **_layout(
            height=200,
            barmode="group",
            bargap=0.3,
            bargroupgap=0.08,
            showlegend=False,  # each bar says what it is
            xaxis=_axis(
                "tokens per second (log scale)",
                type="log",
                **log_ticks(
                    info.get(k) for k in ("decode_tps", "prefill_tps", "decode_ceiling_tps", "prefill_ceiling_tps")
                ),
            ),
            yaxis=_axis("", autorange="reversed"),
            margin={"l": 64, "r": 110, "t": 8, "b": 40},
        )
    )
    return fig
