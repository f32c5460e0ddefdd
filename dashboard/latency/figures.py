"""The latency dashboard's Plotly figures, and the registry the dashboard draws them from.

Each figure is a function registered with @figure("name"), where name is the `data-chart`
attribute of its element on the page (templates/latency/dashboard.html). The view builds every
registered figure into payload["figures"], and static/js/dashboard.js draws each [data-chart]
element from figures[name]: adding a chart is one function here and one block in the template.

Builders are pure functions of plain data (see INPUTS), drawing numbers from
dashboard.latency.stats and words from dashboard.latency.text. Times arrive as epoch seconds and
are drawn as wall-clock strings in the given time zone, because plotly.js date axes know no time
zones.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, tzinfo
from decimal import Decimal

import plotly.graph_objects as go
from django.utils import formats
from django.utils.translation import gettext as _
from plotly.subplots import make_subplots

from dashboard.latency import stats, text
from dashboard.latency.stats import PERCENTILES, PHASES, evaluated_tokens, percentile
from dashboard.latency.text import PHASE_LABELS, fmt_ms, fmt_rate, num
from inference.engine.speculation import speculation_rates

# The chat page's phase colours (static/css/app.css), so a phase looks the same everywhere.
COLORS = {
    "queue": "#d99a1e",
    "retrieve": "#c0567a",
    "load": "#9b59d0",
    "prefill": "#2b8fd6",
    "decode": "#22a06b",
    "tool": "#c2410c",
    stats.OTHER: "#9aa0ab",
    "ratio": "#3559d6",
    "fit": "#c9372c",
    "interference": "rgba(43, 143, 214, 0.22)",
}
GRID = "rgba(128, 128, 128, 0.18)"
TIMELINE_HEIGHT = {"min": 220, "base": 60, "per_row": 22}  # pixels


# --- the registry ----------------------------------------------------------------------------------

Builder = Callable[..., go.Figure]
FIGURES: dict[str, Builder] = {}
# What a builder may ask for, by naming it as a parameter:
INPUTS = {
    "rows": "the requests in range (payload.dashboard_rows), oldest first",
    "steps": "the engine's step records over the timeline's stretch of time, oldest first",
    "fit": "text.explained_fit(rows): the TTFT fit with its wording, or None",
    "why": "text.why(...): the why panel's numbers and sentences",
    "row": "the selected request, with its token times (and texts where visible), or None",
    "row_steps": "the engine's step records around the selected request",
    "tz": "the viewer's time zone",
}


def figure(name: str) -> Callable[[Builder], Builder]:
    """Register a builder as the figure for the page's `data-chart="name"` element.

    The builder's parameters name the INPUTS it reads; the view passes each one by keyword.
    """

    def register(builder: Builder) -> Builder:
        unknown = set(inspect.signature(builder).parameters) - set(INPUTS)
        if unknown:
            raise TypeError(f"figure {name!r} asks for {sorted(unknown)}, not among {sorted(INPUTS)}")
        if name in FIGURES:
            raise ValueError(f"two figures are registered as {name!r}")
        FIGURES[name] = builder
        return builder

    return register


def build(inputs: dict, names: Iterable[str] | None = None) -> dict[str, dict]:
    """The named figures (by default every registered one) as plotly JSON, each given the inputs it names."""
    out = {}
    for name in FIGURES if names is None else names:
        builder = FIGURES[name]
        wanted = inspect.signature(builder).parameters
        out[name] = builder(**{key: value for key, value in inputs.items() if key in wanted}).to_plotly_json()
    return out


def timeline_config() -> dict:
    """What the page needs to grow unfinished requests' bars beside the server's finished ones.

    The finished bars, their colours and labels come in the timeline figure itself; this is the
    rest, so that the page's script mirrors no constant of this package.
    """
    return {
        "phases": list(PHASES),
        "rows": stats.TIMELINE_ROWS,
        "window_s": stats.TIMELINE_WINDOW_S,
        "row_label": text.ROW_LABEL,
        "height": TIMELINE_HEIGHT,
    }


def timeline_height(n_rows: int) -> int:
    """The timeline's height in pixels for n_rows requests (the page grows it by the same rule)."""
    return max(TIMELINE_HEIGHT["min"], TIMELINE_HEIGHT["base"] + TIMELINE_HEIGHT["per_row"] * n_rows)


# --- layout helpers --------------------------------------------------------------------------------


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
        # plotly.js's number format marks (decimal, thousands) in the page's language.
        "separators": formats.get_format("DECIMAL_SEPARATOR") + formats.get_format("THOUSAND_SEPARATOR"),
    }
    layout.update(overrides)
    return layout


def _axis(title: str = "", **extra) -> dict:
    axis = {"title": {"text": title, "standoff": 8}, "gridcolor": GRID, "zerolinecolor": GRID, "automargin": True}
    axis.update(extra)
    return axis


def _stacked_clock_axes() -> dict:
    """The x axes of a two-row figure whose rows share one wall clock."""
    return {
        "xaxis": _axis("", type="date", tickformat="%H:%M:%S"),
        "xaxis2": _axis("", type="date", tickformat="%H:%M:%S"),
    }


def log_ticks(values: Iterable[float]) -> dict:
    """Axis settings for a log axis labelled 1-2-5 (10, 20, 50, 100, ...) around the data.

    plotly.js labels minor log ticks with bare digits ("2 5 2 5"), unreadable at a glance; these
    ticks also cover a decade either side, so points added live still get labels.
    """
    data = [v for v in stats.finite(values) if v > 0]
    if not data:
        return {}
    lo = math.floor(math.log10(min(data))) - 1
    hi = math.ceil(math.log10(max(data))) + 1
    ticks = [m * 10.0**k for k in range(lo, hi + 1) for m in (1, 2, 5)]
    return {"tickvals": ticks, "ticktext": [_tick_label(t) for t in ticks]}


def _tick_label(value: float) -> str:
    if value >= 1000:
        return formats.number_format(Decimal(f"{value / 1000:g}")) + "k"
    return formats.number_format(Decimal(f"{value:g}"))


# --- figures, in the order the page shows them ---------------------------------------------------


@figure("timeline")
def timeline_figure(rows: Sequence[dict], *, tz: tzinfo = UTC) -> go.Figure:
    """One row per request (newest on top), its phases as bars on a shared wall-clock axis."""
    shown = stats.timeline_rows(rows)
    labels = [text.row_label(r) for r in shown]
    traces: dict[str, dict[str, list]] = {p: {"y": [], "x": [], "base": [], "id": []} for p in (*PHASES, stats.OTHER)}
    for row, label in zip(shown, labels, strict=True):
        for phase, start, ms in stats.phase_segments(row):
            trace = traces[phase]
            trace["y"].append(label)
            trace["x"].append(round(ms, 3))
            trace["base"].append(wall(start, tz))
            trace["id"].append(row["id"])
    fig = go.Figure()
    for phase in (*PHASES, stats.OTHER):
        data = traces[phase]
        if phase in (stats.OTHER, "retrieve", "tool") and not data["y"]:  # drawn only when some request had one
            continue
        fig.add_trace(
            go.Bar(
                name=str(PHASE_LABELS[phase]),
                orientation="h",
                y=data["y"],
                x=data["x"],
                base=data["base"],
                customdata=data["id"],
                marker={"color": COLORS[phase], "line": {"width": 0}},
                hovertemplate=_("%(phase)s %%{x:,.1f} ms<br>request #%%{customdata}") % {"phase": PHASE_LABELS[phase]}
                + "<extra></extra>",
                meta=phase,
            )
        )
    fig.update_layout(
        **_layout(
            barmode="overlay",
            showlegend=False,  # the panel's own legend uses the page's phase colours
            height=timeline_height(len(shown)),
            xaxis=_axis("", type="date", tickformat="%H:%M:%S"),
            yaxis=_axis("", type="category", categoryorder="array", categoryarray=labels, autorange="reversed"),
            margin={"l": 80, "r": 16, "t": 12, "b": 36},
        )
    )
    return fig


@figure("throughput")
def throughput_figure(rows: Sequence[dict], *, tz: tzinfo = UTC) -> go.Figure:
    """Prompt and output tok/s of each request by arrival time, and below them their ratio."""
    done = sorted((r for r in rows if r.get("prompt_tps") or r.get("output_tps")), key=lambda r: r["t_arrive"])
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.06)
    x = [wall(r["t_arrive"], tz) for r in done]
    ids = [r["id"] for r in done]
    for key, name, color in (
        ("prompt_tps", _("Prompt tok/s"), COLORS["prefill"]),
        ("output_tps", _("Output tok/s"), COLORS["decode"]),
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
                hovertemplate=_("%(name)s %%{y:,.1f}<br>request #%%{customdata}") % {"name": name} + "<extra></extra>",
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
            name=_("Prompt ÷ output"),
            mode="lines+markers",
            line={"color": COLORS["ratio"], "width": 1.5, "dash": "dot"},
            marker={"size": 5},
            connectgaps=True,
            hovertemplate=_("prompt is %{y:.1f}× output<br>request #%{customdata}") + "<extra></extra>",
            meta="ratio",
        ),
        row=2,
        col=1,
    )
    fig.update_layout(
        **_layout(
            height=360,
            **_stacked_clock_axes(),
            yaxis=_axis("tok/s", type="log", **log_ticks(r.get(k) for r in done for k in ("prompt_tps", "output_tps"))),
            yaxis2=_axis(_("ratio ×"), rangemode="tozero"),
        )
    )
    return fig


@figure("speculation")
def speculation_figure(rows: Sequence[dict], *, tz: tzinfo = UTC) -> go.Figure:
    """Speculative decoding per request that drafted, by arrival time: the share of draft tokens
    the sampler kept, and below, output tokens per model step (1 is decoding without drafts)."""
    drafted = sorted((r for r in rows if r.get("spec_drafted")), key=lambda r: r["t_arrive"])
    rates = [
        speculation_rates(r["spec_drafted"], r.get("spec_accepted"), r.get("output_tokens"), r.get("decode_steps"))
        for r in drafted
    ]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.5, 0.5], vertical_spacing=0.08)
    x = [wall(r["t_arrive"], tz) for r in drafted]
    ids = [r["id"] for r in drafted]
    for row, key, y, name, color, hover in (
        (
            1,
            "acceptance",
            [100 * rate["acceptance"] for rate in rates],
            _("Drafts accepted"),
            COLORS["decode"],
            _("%{y:.0f}% of draft tokens accepted<br>request #%{customdata}"),
        ),
        (
            2,
            "tokens_per_step",
            [rate["tokens_per_step"] for rate in rates],
            _("Tokens per step"),
            COLORS["ratio"],
            _("%{y:.2f} tokens per model step<br>request #%{customdata}"),
        ),
    ):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                customdata=ids,
                name=name,
                mode="markers",
                marker={"size": 7, "color": color},
                hovertemplate=hover + "<extra></extra>",
                meta=key,
            ),
            row=row,
            col=1,
        )
    fig.update_layout(
        **_layout(
            height=320,
            **_stacked_clock_axes(),
            yaxis=_axis(_("accepted %"), range=[0, 105]),
            yaxis2=_axis(_("tokens / step"), rangemode="tozero"),
        )
    )
    return fig


@figure("ttft")
def ttft_figure(rows: Sequence[dict], fit: dict | None = None) -> go.Figure:
    """TTFT against prompt tokens computed, with the least-squares line and what it means."""
    warm, cold = stats.ttft_points(rows)
    fit = fit if fit is not None else stats.ttft_fit(rows)
    fig = go.Figure()
    for points, name, color, symbol in (
        (warm, _("Warm"), COLORS["prefill"], "circle"),
        (cold, _("Cold (model load)"), COLORS["load"], "diamond"),
    ):
        if not points and points is cold:
            continue
        fig.add_trace(
            go.Scatter(
                x=[evaluated_tokens(r) for r in points],
                y=[r["ttft_ms"] for r in points],
                customdata=[r["id"] for r in points],
                name=name,
                mode="markers",
                marker={"color": color, "size": 8, "symbol": symbol, "opacity": 0.85},
                hovertemplate=_("%{x} prompt tokens → TTFT %{y:,.1f} ms<br>request #%{customdata}") + "<extra></extra>",
            )
        )
    if fit is not None:
        top = max([evaluated_tokens(r) for r in warm] or [1])
        fig.add_trace(
            go.Scatter(
                x=[0, top],
                y=[fit["intercept_ms"], fit["intercept_ms"] + fit["slope_ms_per_token"] * top],
                name=_("Fit: %(slope)s ms/token + %(fixed)s")
                % {"slope": num(fit["slope_ms_per_token"], 2), "fixed": fmt_ms(fit["intercept_ms"])},
                mode="lines",
                line={"color": COLORS["fit"], "width": 2, "dash": "dash"},
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        **_layout(
            height=330,
            xaxis=_axis(_("prompt tokens computed"), rangemode="tozero"),
            yaxis=_axis(_("TTFT (ms)"), rangemode="tozero"),
        )
    )
    return fig


@figure("itl")
def itl_figure(rows: Sequence[dict]) -> go.Figure:
    """Every inter-token gap of finished requests, log-binned, with p50/p90/p99 marked."""
    values = [v for r in rows for v in r.get("itl_ms") or ()]
    edges, counts = stats.itl_histogram(values)
    fig = go.Figure(
        go.Scatter(
            x=edges,
            y=[*counts, counts[-1]] if counts else [],
            name=_("Gaps"),
            mode="lines",
            line={"shape": "hv", "color": COLORS["decode"], "width": 1.5},
            fill="tozeroy",
            fillcolor="rgba(34, 160, 107, 0.25)",
            hovertemplate=_("from %{x:,.1f} ms: %{y} gaps") + "<extra></extra>",
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
            xaxis=_axis(_("gap between tokens (ms, log scale)"), type="log", **log_ticks(values)),
            yaxis=_axis(_("gaps"), rangemode="tozero"),
            shapes=shapes,
            annotations=annotations,
        )
    )
    return fig


def _hover_text(token: str) -> str:
    """A token as hover text: whitespace made visible, and markup escaped (plotly renders some HTML tags)."""
    shown = repr(str(token))[1:-1]
    return shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@figure("tokens")
def token_timeline_figure(row: dict | None, row_steps: Iterable[dict] = (), *, tz: tzinfo = UTC) -> go.Figure:
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
                name=_("Request #%(id)s: gap before each token") % {"id": row["id"]},
                mode="lines+markers",
                # "vh": the level between two tokens is the gap before the later one.
                line={"color": COLORS["decode"], "width": 1, "shape": "vh"},
                marker={"size": 5},
                hovertemplate=(
                    _("token %{customdata[0]} at %{customdata[1]:,.1f} ms<br>gap %{y:,.1f} ms")
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
        label = _("first token · TTFT %(ttft)s") % {"ttft": fmt_ms(times[0])} + (f": {texts[0]}" if texts else "")
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
        for start, end, n in stats.interference_spans(row, row_steps):
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
                    "name": _("%(n)s prompt tokens") % {"n": n},
                }
            )
        # A legend entry for the shading (shapes have none of their own).
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                name=_("Other requests' prefill steps"),
                mode="markers",
                marker={"symbol": "square", "size": 12, "color": COLORS["interference"]},
            )
        )
    fig.update_layout(
        **_layout(
            height=300,
            xaxis=_axis("", type="date", tickformat="%H:%M:%S.%L"),
            yaxis=_axis(_("gap before token (ms)"), rangemode="tozero"),
            shapes=shapes,
            annotations=annotations,
        )
    )
    return fig


@figure("steps")
def steps_figure(steps: Sequence[dict], *, tz: tzinfo = UTC) -> go.Figure:
    """Engine steps: prompt and decode tokens in each (stacked), how long each step took, and
    what the engine's cost model predicted it would take before it ran (budget.py): where the two
    part, the chunks it sized miss their target."""
    ordered = sorted(steps, key=lambda s: s["t"])
    x = [wall(s["t"], tz) for s in ordered]
    policy = [s.get("policy") or "" for s in ordered]  # shown on hover: staff switch it live
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.55, 0.45], vertical_spacing=0.08)
    for key, name, color in (
        ("prefill", _("Prompt tokens"), COLORS["prefill"]),
        ("decode", _("Decode tokens"), COLORS["decode"]),
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
            # The whole step where the record has it (what the model predicts), else llama_decode's part.
            y=[round(s.get("step_ms") or s["ms"], 3) for s in ordered],
            customdata=policy,
            name=_("Step time"),
            mode="markers",
            marker={"color": COLORS["ratio"], "size": 4},
            hovertemplate=_("step %{y:,.1f} ms · %{customdata}") + "<extra></extra>",
            meta="ms",
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[None if s.get("predicted_ms") is None else round(s["predicted_ms"], 3) for s in ordered],
            customdata=policy,
            name=_("Predicted step time"),
            mode="markers",
            marker={
                "color": COLORS["fit"],
                "size": 4,
                "symbol": "x-thin",
                "line": {"width": 1, "color": COLORS["fit"]},
            },
            hovertemplate=_("predicted %{y:,.1f} ms · %{customdata}") + "<extra></extra>",
            meta="predicted_ms",
        ),
        row=2,
        col=1,
    )
    fig.update_layout(
        **_layout(
            height=340,
            barmode="stack",
            bargap=0,
            **_stacked_clock_axes(),
            yaxis=_axis(_("tokens / step"), rangemode="tozero"),
            yaxis2=_axis(_("step (ms)"), rangemode="tozero"),
        )
    )
    return fig


@figure("why")
def why_figure(why: dict) -> go.Figure:
    """Measured median tok/s beside each phase's hardware ceiling, on a log axis (they differ by orders)."""
    fig = go.Figure()
    phases = (
        (str(PHASE_LABELS["decode"]), "decode_tps", "decode_ceiling_tps", "decode"),
        (str(PHASE_LABELS["prefill"]), "prefill_tps", "prefill_ceiling_tps", "prefill"),
    )
    kinds = (
        ("measured", _("Measured median"), 1.0, _("%(rate)s tok/s measured")),
        ("ceiling", _("Ceiling"), 0.3, _("≈%(rate)s tok/s ceiling")),
    )
    for kind, name, opacity, label in kinds:
        ys, xs, texts = [], [], []
        for phase, measured_key, ceiling_key, _color in phases:
            value = why.get(measured_key if kind == "measured" else ceiling_key)
            ys.append(phase)
            xs.append(value)
            texts.append(label % {"rate": fmt_rate(value)} if value else "")
        fig.add_trace(
            go.Bar(
                name=name,
                orientation="h",
                y=ys,
                x=xs,
                text=texts,
                textposition="outside",
                cliponaxis=False,
                marker={"color": [COLORS[c] for *_rest, c in phases], "opacity": opacity, "line": {"width": 0}},
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
                _("tokens per second (log scale)"),
                type="log",
                **log_ticks(
                    why.get(k) for k in ("decode_tps", "prefill_tps", "decode_ceiling_tps", "prefill_ceiling_tps")
                ),
            ),
            yaxis=_axis("", autorange="reversed"),
            margin={"l": 64, "r": 110, "t": 8, "b": 40},
        )
    )
    return fig
