"""Dashboard pages: the live latency dashboard, its data for live refreshes, request detail,
exports, and staff's engine controls (policy switch, demo)."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.html import json_script
from django.views.decorators.http import require_GET, require_POST
from plotly.utils import PlotlyJSONEncoder

from dashboard.latency import figures, payload, stats, text
from inference import probe, selectors
from inference.engine.policies import POLICIES
from inference.models import Generation
from inference.services import demo, engine_control
from infra.env import redis_exposed_host
from infra.errors import ClientError

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


def _row_steps(row: dict | None) -> list[dict]:
    """The engine steps around one request's tokens, for the token timeline's shading."""
    times = (row or {}).get("token_times_ms")
    if not times:
        return []
    return payload.steps_between(row["t_arrive"], row["t_arrive"] + times[-1] / 1000)


def page_config() -> dict:
    """What the dashboard's script reads rather than mirrors: the timeline's phases and cut, the active statuses."""
    return {
        "timeline": figures.timeline_config(),
        "active": [str(status) for status in Generation.ACTIVE],
        "status_labels": {status: str(label) for status, label in text.STATUS_LABELS.items()},
    }


def dashboard_payload(*, viewer, filters: payload.Filters, selected: int | None = None) -> dict:
    """Everything the dashboard draws, as plain data: the page embeds it, live refreshes fetch it again."""
    tz = timezone.get_current_timezone()
    rows = payload.dashboard_rows(filters=filters, viewer=viewer)
    # Steps over the same stretch of time as the timeline, so the two charts line up.
    shown = stats.timeline_rows(rows)
    since = min(r["t_arrive"] for r in shown) - 5 if shown else filters.since.timestamp() if filters.since else None
    steps = payload.steps(since=since)
    workers = payload.live_workers()
    info = payload.model_info(workers)
    hardware = payload.hardware(workers, probe.read_all())
    # The ceilings belong to the loaded model, so its own answers are what to compare with them.
    same_model = [r for r in rows if r["model"] == info.get("name")] or rows
    why = text.why(
        rows=same_model,
        model_bytes=info.get("size_bytes"),
        n_params=info.get("n_params"),
        bandwidth_gbs=hardware["bandwidth_gbs"],
        gflops=hardware["gflops"],
        hardware=hardware["label"],
        layers=info.get("n_layers"),
        layer_ms=hardware.get("layer_ms"),
    )
    fit = text.explained_fit(rows)
    chosen = _pick_selected(rows, selected)
    # Every registered figure, each given the inputs it names (see figures.INPUTS).
    inputs = {"rows": rows, "steps": steps, "fit": fit, "why": why, "row": chosen, "row_steps": _row_steps(chosen)}
    offset = timezone.localtime().utcoffset()
    return {
        "filters": {"range": filters.range, "model": filters.model, "query": filters.query()},
        "utc_offset_s": offset.total_seconds() if offset else 0,
        "rows": [{k: v for k, v in r.items() if k not in LIGHT_DROP} for r in rows],
        "selected": chosen["id"] if chosen else None,
        "figures": figures.build({**inputs, "tz": tz}),
        "summary": stats.summary(rows),
        "fit": fit,
        "why": why,
        "model_info": info,
        "hardware": hardware,
        "system": payload.system_snapshot(workers),
        "max_steps": payload.MAX_STEPS,
    }


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    filters = payload.parse_filters(request.GET)
    data = dashboard_payload(viewer=request.user, filters=filters, selected=_int_param(request.GET.get("selected")))
    models = payload.model_names()
    if filters.model and filters.model not in models:
        models.append(filters.model)
    context = {
        "filters": filters,
        "ranges": [(key, label) for key, (label, _) in payload.RANGES.items()],
        "models": models,
        "phases": text.phase_legend(),
        "config_script": json_script(page_config(), "dashboard-config"),
        "payload_script": json_script(data, "dashboard-data", encoder=PlotlyJSONEncoder),
        "payload": data,
        "policies": POLICIES,  # staff switch between them live, from the Engine steps panel
        "usage_today": _usage_today() if request.user.is_staff else None,
        # Staff are told when Redis (every chat as it streams, the workers' tasks) asks no password
        # on a host other than this machine.
        "redis_exposed": redis_exposed_host(settings.REDIS_URL) if request.user.is_staff else None,
        "embeddings": stats.embedding_summary(payload.embedding_rows(filters=filters, viewer=request.user)),
    }
    return render(request, "latency/dashboard.html", context)


def _usage_today() -> list[dict]:
    """Each person's use since midnight, most tokens first: the People page's numbers, for staff."""
    usage = selectors.usage_by_user(since=selectors.day_start())
    names = dict(get_user_model().objects.filter(id__in=usage).values_list("id", "username"))
    people = [{"username": names.get(user_id, "?"), **used} for user_id, used in usage.items()]
    return sorted(people, key=lambda p: (-p["tokens"], p["username"]))


@login_required
@require_GET
def dashboard_data(request: HttpRequest) -> JsonResponse:
    """The same payload as the page, fetched when the live feed says a request finished."""
    filters = payload.parse_filters(request.GET)
    data = dashboard_payload(viewer=request.user, filters=filters, selected=_int_param(request.GET.get("selected")))
    return JsonResponse(data, encoder=PlotlyJSONEncoder)


@login_required
@require_GET
def request_detail(request: HttpRequest, generation_id: int) -> HttpResponse:
    detail = payload.generation_detail(viewer=request.user, generation_id=generation_id)
    if detail is None:
        raise Http404("No such request.")
    row = detail["row"]
    tz = timezone.get_current_timezone()
    itl = row["itl_ms"]
    gap_p50 = stats.median(itl)
    for token in detail["tokens"]:
        # A gap three times the typical one is a stall worth a glance (often another prompt's prefill).
        token["stall"] = bool(gap_p50 and token["gap_ms"] is not None and token["gap_ms"] > 3 * gap_p50)
        token["bar"] = min(100.0, 100 * token["gap_ms"] / (4 * gap_p50)) if gap_p50 and token["gap_ms"] else 0
    segments = [(phase, ms) for phase, _, ms in stats.phase_segments(row)]
    total = sum(ms for _, ms in segments) or 1
    # The page's [data-chart] elements, drawn by static/js/dashboard.js like the dashboard's.
    inputs = {"row": row if row["token_times_ms"] else None, "row_steps": _row_steps(row), "tz": tz}
    context = {
        **detail,
        "arrived": datetime.fromtimestamp(row["t_arrive"], UTC),
        "status_label": text.STATUS_LABELS.get(row["status"], row["status"]),
        "segments": [
            {"phase": phase, "label": text.PHASE_LABELS[phase], "ms": ms, "pct": 100 * ms / total}
            for phase, ms in segments
        ],
        "itl_p50": gap_p50,
        "itl_p90": stats.percentile(itl, 90),
        "itl_p99": stats.percentile(itl, 99),
        "client_delta_ms": (
            row["client_ttft_ms"] - row["ttft_ms"]
            if row["client_ttft_ms"] is not None and row["ttft_ms"] is not None
            else None
        ),
        "figures_script": json_script(figures.build(inputs, ["tokens"]), "chart-figures", encoder=PlotlyJSONEncoder),
    }
    return render(request, "latency/request_detail.html", context)


def _filename(filters: payload.Filters, ext: str) -> str:
    return f"homeai-metrics-{filters.range}-{timezone.localtime():%Y%m%d-%H%M}.{ext}"


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_value(value) -> str:
    """One CSV cell: empty for no value, JSON for lists, true/false for booleans, repr-exact floats,
    and text that a spreadsheet would read as a formula quoted."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value  # a spreadsheet would run it as a formula (a client name is anyone's text)
    return str(value)


@login_required
@require_GET
def export_csv(request: HttpRequest) -> HttpResponse:
    # Built whole rather than streamed: under ASGI Django buffers a synchronous stream anyway,
    # and a household's history is megabytes at most.
    filters = payload.parse_filters(request.GET)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(filters, "csv")}"'
    writer = csv.writer(response)
    writer.writerow(payload.EXPORT_FIELDS)
    for row in payload.export_rows(filters=filters, viewer=request.user):
        writer.writerow([csv_value(row[name]) for name in payload.EXPORT_FIELDS])
    return response


@login_required
@require_GET
def export_json(request: HttpRequest) -> JsonResponse:
    filters = payload.parse_filters(request.GET)
    data = {
        "exported_at": timezone.now().isoformat(),
        "range": filters.range,
        "model": filters.model or None,
        "fields": list(payload.EXPORT_FIELDS),
        "generations": list(payload.export_rows(filters=filters, viewer=request.user)),
    }
    response = JsonResponse(data, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{_filename(filters, "json")}"'
    return response


# --- staff's engine controls, from the Engine steps panel --------------------------------------


@staff_member_required
@require_POST
def engine_policy(request: HttpRequest) -> HttpResponse:
    """Switch the scheduling policy of every worker (staff only): serial, continuous or chunked."""
    try:
        engine_control.engine_policy_set(policy=request.POST.get("policy", ""))
    except ClientError as exc:
        return JsonResponse({"error": exc.message}, status=400)
    return JsonResponse({"policy": request.POST["policy"]})


@staff_member_required
@require_POST
def engine_demo(request: HttpRequest) -> HttpResponse:
    """Start the shared-machine scenario (staff only: it keeps the engine busy for a while)."""
    try:
        chats = demo.demo_start(user=request.user)
    except ClientError as exc:
        return JsonResponse({"error": exc.message}, status=400 if exc.code == "bad_request" else 503)
    return JsonResponse({"generations": [g.id for g in chats]})
