"""Dashboard pages: the live latency dashboard, its data for live refreshes, request detail, exports."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.html import json_script
from django.views.decorators.http import require_GET
from plotly.utils import PlotlyJSONEncoder

from dashboard import charts, selectors
from inference import probe
from inference.engine.scheduler import POLICIES

LIGHT_DROP = ("token_times_ms", "itl_ms")


def _int_param(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _pick_selected(rows: list[dict], selected: int | None) -> dict | None:
    """The request whose tokens the token-timeline shows: the asked-for one, else the newest with tokens."""
    with_tokens = [r for r in rows if len(r.get("token_times_ms") or ()) >= 2]
    if selected is not None:
        found = next((r for r in rows if r["id"] == selected), None)
        if found is not None:
            return found
    return with_tokens[-1] if with_tokens else None


def _token_figure(row: dict | None, tz) -> dict:
    if row is None:
        return charts.token_timeline_figure(None, tz=tz).to_plotly_json()
    end = row["t_arrive"] + (row["token_times_ms"][-1] / 1000 if row.get("token_times_ms") else 0)
    steps = selectors.steps_between(row["t_arrive"], end)
    return charts.token_timeline_figure(row, steps, tz=tz).to_plotly_json()


def dashboard_payload(*, viewer, filters: selectors.Filters, selected: int | None = None) -> dict:
    """Everything the dashboard draws, as plain data: the page embeds it, live refreshes fetch it again."""
    tz = timezone.get_current_timezone()
    rows = selectors.dashboard_rows(filters=filters, viewer=viewer)
    # Steps over the same stretch of time as the timeline, so the two charts line up.
    shown = charts.timeline_rows(rows)
    since = min(r["t_arrive"] for r in shown) - 5 if shown else filters.since.timestamp() if filters.since else None
    steps = selectors.steps(since=since)
    workers = selectors.live_workers()
    info = selectors.model_info(workers)
    hardware = selectors.hardware(workers, probe.read_all())
    # The ceilings belong to the loaded model, so its own answers are what to compare with them.
    same_model = [r for r in rows if r["model"] == info.get("name")] or rows
    why = charts.why(
        rows=same_model,
        model_bytes=info.get("size_bytes"),
        n_params=info.get("n_params"),
        bandwidth_gbs=hardware["bandwidth_gbs"],
        gflops=hardware["gflops"],
        hardware=hardware["label"],
    )
    fit = charts.ttft_fit(rows)
    chosen = _pick_selected(rows, selected)
    figures = {
        "timeline": charts.timeline_figure(rows, tz=tz),
        "throughput": charts.throughput_figure(rows, tz=tz),
        "ttft": charts.ttft_figure(rows, fit),
        "itl": charts.itl_figure(rows),
        "steps": charts.steps_figure(steps, tz=tz),
        "why": charts.why_figure(why),
    }
    figures = {name: fig.to_plotly_json() for name, fig in figures.items()}
    figures["tokens"] = _token_figure(chosen, tz)
    offset = timezone.localtime().utcoffset()
    return {
        "filters": {"range": filters.range, "model": filters.model, "query": filters.query()},
        "utc_offset_s": offset.total_seconds() if offset else 0,
        "rows": [{k: v for k, v in r.items() if k not in LIGHT_DROP} for r in rows],
        "selected": chosen["id"] if chosen else None,
        "figures": figures,
        "summary": charts.summary(rows),
        "fit": fit,
        "why": why,
        "model_info": info,
        "hardware": hardware,
        "system": selectors.system_snapshot(workers),
        "max_steps": selectors.MAX_STEPS,
    }


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    filters = selectors.parse_filters(request.GET)
    payload = dashboard_payload(viewer=request.user, filters=filters, selected=_int_param(request.GET.get("selected")))
    models = selectors.model_names()
    if filters.model and filters.model not in models:
        models.append(filters.model)
    context = {
        "filters": filters,
        "ranges": [(key, label) for key, (label, _) in selectors.RANGES.items()],
        "models": models,
        "payload_script": json_script(payload, "dashboard-data", encoder=PlotlyJSONEncoder),
        "payload": payload,
        "policies": POLICIES,  # staff switch between them live, from the Engine steps panel
    }
    return render(request, "dashboard/dashboard.html", context)


@login_required
@require_GET
def dashboard_data(request: HttpRequest) -> JsonResponse:
    """The same payload as the page, fetched when the live feed says a request finished."""
    filters = selectors.parse_filters(request.GET)
    payload = dashboard_payload(viewer=request.user, filters=filters, selected=_int_param(request.GET.get("selected")))
    return JsonResponse(payload, encoder=PlotlyJSONEncoder)


@login_required
@require_GET
def request_detail(request: HttpRequest, generation_id: int) -> HttpResponse:
    detail = selectors.generation_detail(viewer=request.user, generation_id=generation_id)
    if detail is None:
        raise Http404("No such request.")
    row = detail["row"]
    tz = timezone.get_current_timezone()
    itl = row["itl_ms"]
    gap_p50 = charts.median(itl)
    for token in detail["tokens"]:
        # A gap three times the typical one is a stall worth a glance (often another prompt's prefill).
        token["stall"] = bool(gap_p50 and token["gap_ms"] is not None and token["gap_ms"] > 3 * gap_p50)
        token["bar"] = min(100.0, 100 * token["gap_ms"] / (4 * gap_p50)) if gap_p50 and token["gap_ms"] else 0
    segments = [(phase, ms) for phase, _, ms in charts.phase_segments(row)]
    total = sum(ms for _, ms in segments) or 1
    context = {
        **detail,
        "arrived": datetime.fromtimestamp(row["t_arrive"], UTC),
        "segments": [
            {"phase": phase, "label": charts.PHASE_LABELS[phase], "ms": ms, "pct": 100 * ms / total}
            for phase, ms in segments
        ],
        "itl_p50": gap_p50,
        "itl_p90": charts.percentile(itl, 90),
        "itl_p99": charts.percentile(itl, 99),
        "client_delta_ms": (
            row["client_ttft_ms"] - row["ttft_ms"]
            if row["client_ttft_ms"] is not None and row["ttft_ms"] is not None
            else None
        ),
        "figure_script": json_script(
            _token_figure(row if row["token_times_ms"] else None, tz), "token-figure", encoder=PlotlyJSONEncoder
        ),
    }
    return render(request, "dashboard/request_detail.html", context)


def _filename(filters: selectors.Filters, ext: str) -> str:
    return f"homeai-metrics-{filters.range}-{timezone.localtime():%Y%m%d-%H%M}.{ext}"


def csv_value(value) -> str:
    """One CSV cell: empty for no value, JSON for lists, true/false for booleans, repr-exact floats."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


@login_required
@require_GET
def export_csv(request: HttpRequest) -> HttpResponse:
    # Built whole rather than streamed: under ASGI Django buffers a synchronous stream anyway,
    # and a household's history is megabytes at most.
    filters = selectors.parse_filters(request.GET)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(filters, "csv")}"'
    writer = csv.writer(response)
    writer.writerow(selectors.EXPORT_FIELDS)
    for row in selectors.export_rows(filters=filters, viewer=request.user):
        writer.writerow([csv_value(row[name]) for name in selectors.EXPORT_FIELDS])
    return response


@login_required
@require_GET
def export_json(request: HttpRequest) -> JsonResponse:
    filters = selectors.parse_filters(request.GET)
    data = {
        "exported_at": timezone.now().isoformat(),
        "range": filters.range,
        "model": filters.model or None,
        "fields": list(selectors.EXPORT_FIELDS),
        "generations": list(selectors.export_rows(filters=filters, viewer=request.user)),
    }
    response = JsonResponse(data, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{_filename(filters, "json")}"'
    return response
