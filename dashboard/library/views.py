"""The model library page: every GGUF in the models folder, and what the workers run."""

from __future__ import annotations

import json
import time

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils import formats
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from dashboard.latency.stats import ceilings
from dashboard.library.curated import recommended
from inference import forecast as model_forecast
from inference import probe, selectors
from inference.dispatch import pulls, registry
from inference.model_library import scan as model_library_scan
from inference.models import EngineConfig
from inference.services import engine_control
from inference.speed import Shape, speed_of
from infra.errors import ClientError
from infra.pull.errors import PullError
from infra.pull.names import parse as parse_model_name

ENDED_SHOWN_S = 600  # an ended pull stays on the page this long
FORECAST_CLOSE_PCT = 25  # a forecast this close to the measured figure is called close (issue 39)


def _optional_int(raw: str | None, name: str, low: int, high: int) -> int | None:
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ClientError("bad_request", _("%(name)s must be a whole number.") % {"name": name}) from None
    if not low <= value <= high:
        raise ClientError(
            "bad_request",
            _("%(name)s must be from %(low)s to %(high)s.")
            % {
                "name": name,
                "low": formats.number_format(low),
                "high": formats.number_format(high, force_grouping=True),
            },
        )
    return value


def _with_speeds(models: list) -> list[dict]:
    """Each model with its decode forecast here (inference/forecast.py: from the other models'
    measured answers, else the roofline's ceiling) and, once it has answered, the median tok/s
    its answers measured and how far the forecast was from it."""
    measured = selectors.decode_rates()
    speeds = model_forecast.decode_speeds(models)
    rows = []
    for m in models:
        speed, got = speeds[m.name], measured.get(m.name)
        off = round(100 * (speed.tps - got) / got) if speed.tps and got else None
        rows.append(
            {
                **m.as_dict(),
                "forecast_tps": speed.tps,
                "forecast_basis": speed.basis,
                "measured_tps": got,
                "forecast_off_pct": off,
                "forecast_close": off is not None and abs(off) <= FORECAST_CLOSE_PCT,
            }
        )
    return rows


def _recommended(models: list, share: int) -> list[dict]:
    """The curated models with what this box says of them before a download: whether their
    weights fit one model's share of a worker's memory, and their decode forecast here."""
    shapes = {m.name: Shape(m.size_bytes, m.n_layers) for m in models if m.kind == "chat"}
    measured = selectors.decode_rates()
    box = probe.box()
    rows = []
    for r in recommended():
        size = r.size_mb * 10**6
        speed = speed_of(r.name, Shape(size, r.layers), shapes, measured, box)
        rows.append(
            {
                **vars(r),
                "size_bytes": size,
                "fits": size <= share,
                "forecast_tps": speed.tps,
                "forecast_basis": speed.basis,
            }
        )
    return rows


@staff_member_required
def model_library(request: HttpRequest) -> HttpResponse:
    """The models folder: every GGUF described from its header; choose what the workers run."""
    if request.method == "POST":
        try:
            config = engine_control.engine_config_set(
                model_name=request.POST.get("model", ""),
                context=_optional_int(request.POST.get("context"), _("Context"), 256, 131072),
                threads=_optional_int(request.POST.get("threads"), _("Threads"), 0, 512),
                gpu_layers=_optional_int(request.POST.get("gpu_layers"), _("GPU layers"), -1, 999),
            )
        except ClientError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request, _("Workers will load %(model)s on the next request.") % {"model": config.model_name}
            )
        return redirect("model_library")
    config = EngineConfig.current()
    models = model_library_scan()
    share = model_forecast.share_bytes()
    context = {
        "models": _with_speeds(models),
        "recommended": _recommended(models, share),
        "share_bytes": share,
        "config": config,
        "active": config.model_name or settings.HOMEAI_MODEL_PATH.name,
        "models_dir": settings.MODELS_DIR,
        "workers": list(registry.live_workers().values()),
        "machines": _machines(),
        "defaults": {
            "context": settings.HOMEAI_CONTEXT,
            "threads": settings.HOMEAI_THREADS,
            "gpu_layers": settings.HOMEAI_GPU_LAYERS,
        },
    }
    return render(request, "library/models.html", context)


# --- pulls ------------------------------------------------------------------------------------


def _pull_sentence(end: dict, name: str) -> str:
    """A pull's end in the page's language (the worker's sentence is the API's, in English)."""
    code = end.get("code")
    sentences = {
        "not_found": _(
            "There is no model %(name)s: check its spelling (names look like llama3.2, qwen3:4b or "
            "hf.co/user/repo:Q4_K_M)."
        ),
        "unreachable": _(
            "The registry does not answer: check this server's network connection, then pull %(name)s "
            "again; it resumes where it stopped."
        ),
        "digest_mismatch": _("The download of %(name)s does not match its checksum; nothing was kept. Pull it again."),
        "not_gguf": _("%(name)s is not a GGUF model; HomeAI runs GGUF files only."),
        "disk_full": _(
            "The models folder's disk has no room for %(name)s: delete a model you no longer use, then pull again."
        ),
        "cancelled": _("The pull of %(name)s was cancelled."),
    }
    if code in sentences:
        return sentences[code] % {"name": name}
    return _("The pull of %(name)s failed: %(reason)s") % {"name": name, "reason": end.get("error", "")}


def _pull_shown(state: dict) -> dict:
    """A pull as the page draws it: its layers' bytes, where it stands, and how it ended."""
    end = state.get("end") or {}
    return {
        "id": state["id"],
        "name": state["name"],
        "status": state.get("status", ""),
        "layers": [{"digest": d, "total": t, "completed": c} for d, (t, c) in state.get("layers", {}).items()],
        "running": pulls.alive(state),
        "ok": end.get("status") == "success",
        "error": _pull_sentence(end, state["name"]) if "error" in end else "",
    }


@staff_member_required
@require_GET
def pull_list(request: HttpRequest) -> HttpResponse:
    """The pulls running, and those that ended in the last ENDED_SHOWN_S (everyone watching sees them)."""
    now = time.time()
    shown = [
        _pull_shown(s)
        for s in pulls.every()
        if pulls.alive(s) or (s.get("end") and now - s.get("updated", 0) < ENDED_SHOWN_S)
    ]
    return JsonResponse({"pulls": shown})


def _json_body(request: HttpRequest) -> dict:
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


@staff_member_required
@require_POST
def pull_start(request: HttpRequest) -> HttpResponse:
    """Start a pull on a worker (or join the one of that name)."""
    text = str(_json_body(request).get("name", "")).strip()
    try:
        name = parse_model_name(text).short
    except PullError:
        message = _("%(name)s is not a model name: use a name such as llama3.2, qwen3:4b or hf.co/user/repo:Q4_K_M.")
        return JsonResponse(
            {"code": "bad_name", "message": message % {"name": text[:200]}, "field": "name"}, status=400
        )
    machine = str(_json_body(request).get("machine", "")).strip()
    if machine and machine not in _machines():
        message = _("No worker runs on %(machine)s now: choose another machine, or any worker.")
        return JsonResponse(
            {"code": "bad_machine", "message": message % {"machine": machine[:200]}, "field": "machine"}, status=400
        )
    state, started = pulls.start(name)
    if state is None:
        message = _("%(n)s pulls are running already: wait for one to end, then pull again.")
        return JsonResponse(
            {"code": "too_many_pulls", "message": message % {"n": settings.HOMEAI_MAX_PULLS}}, status=429
        )
    if started:
        pulls.send(state, machine)
    return JsonResponse({"pull": _pull_shown(state)})


def _machines() -> list[str]:
    """The machines workers run on now (where a pull may be sent)."""
    return sorted({registry.machine_of(name) for name in registry.live_workers()})


@staff_member_required
@require_POST
def pull_cancel(request: HttpRequest) -> HttpResponse:
    """Stop a pull (its worker removes the partial file)."""
    pid = str(_json_body(request).get("id", ""))
    if pulls.read(pid) is None:
        return JsonResponse({"code": "not_found", "message": _("There is no such pull.")}, status=404)
    pulls.cancel(pid)
    return JsonResponse({"ok": True})


def _bad_name(text: str) -> JsonResponse:
    message = _("%(name)s is not a model name: use a name such as llama3.2, qwen3:4b or hf.co/user/repo:Q4_K_M.")
    return JsonResponse({"code": "bad_name", "message": message % {"name": text[:200]}, "field": "name"}, status=400)


@staff_member_required
@require_GET
def pull_forecast(request: HttpRequest) -> HttpResponse:
    """Before a pull: whether the model fits a worker's share of memory, and how fast it should
    answer here (the roofline from the box's measured bandwidth and FLOP/s, as the dashboard draws it)."""
    text = request.GET.get("name", "").strip()
    try:
        name = parse_model_name(text).short
    except PullError:
        return _bad_name(text)
    try:
        f = model_forecast.forecast(name)
    except PullError as exc:
        message = _pull_sentence({"error": exc.message, "code": exc.code}, name)
        return JsonResponse({"code": exc.code, "message": message}, status=exc.status)
    values = {
        "name": name,
        "memory": filesizeformat(f.memory_bytes),
        "weights": filesizeformat(f.size_bytes),
        "context": formats.number_format(f.context, force_grouping=True),
        "share": filesizeformat(f.share_bytes),
    }
    if f.fits:
        fit = _(
            "%(name)s needs %(memory)s (weights %(weights)s and a %(context)s-token KV cache); "
            "one model's share of a worker's memory is %(share)s: it fits."
        )
    else:
        fit = _(
            "%(name)s needs %(memory)s (weights %(weights)s and a %(context)s-token KV cache); "
            "one model's share of a worker's memory is %(share)s: it does not fit."
        )
    ceil = ceilings(bandwidth_gbs=f.bandwidth_gbs, gflops=f.gflops, model_bytes=f.size_bytes, n_params=f.n_params)
    if f.decode_basis == "answers" and ceil["prefill_tps"]:
        speed = _(
            "On this box about %(decode)s tokens/s written (the rate this box's models read their "
            "weights at, and the measured cost of each of its layers) and at best %(prefill)s tokens/s "
            "read (the measured FLOP/s)."
        ) % {
            "decode": formats.number_format(round(f.decode_tps), force_grouping=True),
            "prefill": formats.number_format(round(ceil["prefill_tps"]), force_grouping=True),
        }
    elif f.decode_tps and ceil["prefill_tps"]:
        speed = _(
            "On this box at best about %(decode)s tokens/s written and %(prefill)s tokens/s read "
            "(the measured memory bandwidth and FLOP/s over the model's size)."
        ) % {
            "decode": formats.number_format(round(f.decode_tps), force_grouping=True),
            "prefill": formats.number_format(round(ceil["prefill_tps"]), force_grouping=True),
        }
    else:
        speed = _("No worker has measured this box's bandwidth yet: no speed forecast.")
    return JsonResponse({"forecast": f.as_dict(), "fits": f.fits, "message": fit % values, "speed": speed})
