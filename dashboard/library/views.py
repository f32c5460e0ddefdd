"""The model library page: every GGUF in the models folder, and what the workers run."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import formats
from django.utils.translation import gettext as _

from inference.dispatch import registry
from inference.model_library import scan as model_library_scan
from inference.models import EngineConfig
from inference.services import engine_control
from infra.errors import ClientError


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
    context = {
        "models": model_library_scan(),
        "config": config,
        "active": config.model_name or settings.HOMEAI_MODEL_PATH.name,
        "models_dir": settings.MODELS_DIR,
        "workers": list(registry.live_workers().values()),
        "defaults": {
            "context": settings.HOMEAI_CONTEXT,
            "threads": settings.HOMEAI_THREADS,
            "gpu_layers": settings.HOMEAI_GPU_LAYERS,
        },
    }
    return render(request, "library/models.html", context)
