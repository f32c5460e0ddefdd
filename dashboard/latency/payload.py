"""Reads for the latency dashboard: metric rows, engine steps, workers, hardware and the system strip.

Everyone signed in sees every request's metrics; text (prompt, answer, token text) only reaches
its owner and staff. That rule lives in `can_see_text`, and every read that returns text uses it.
"""

from __future__ import annotations

import json
import logging
import statistics
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import psutil
from django.conf import settings
from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext_lazy

from dashboard.latency import text
from inference import probe, redis_client, selectors
from inference.dispatch import registry
from inference.models import EmbeddingBatch, Generation, Message

log = logging.getLogger(__name__)

RANGES = {
    "15m": (gettext_lazy("Last 15 min"), 15 * 60),
    "1h": (gettext_lazy("Last hour"), 3600),
    "24h": (gettext_lazy("Last 24 h"), 86400),
    "all": (pgettext_lazy("time range", "All"), None),
}
DEFAULT_RANGE = "24h"
MAX_ROWS = 500  # charts over more requests than this read the newest ones
MAX_STEPS = 3000
PREVIEW_CHARS = 80

METRIC_FIELDS = Generation.METRIC_FIELDS
EXPORT_FIELDS = (
    "id",
    "created_at",
    "finished_at",
    "t_arrive_ns",
    "user_id",
    "username",
    "client",
    "model_name",
    "status",
    "worker",
    *METRIC_FIELDS,
    "token_times_ms",
    "itl_ms",
    "text_visible",
    "prompt",
    "answer",
)

CPU_SAMPLE_S = 1.0
_cpu_lock = threading.Lock()
_cpu = {"t": time.monotonic(), "times": psutil.cpu_times(), "percent": None}


def _cpu_total(times) -> float:
    # Linux counts guest time inside user and nice already.
    return sum(times) - getattr(times, "guest", 0) - getattr(times, "guest_nice", 0)


def cpu_percent() -> float | None:
    """Whole-machine CPU use over the last second or so, shared by every caller in this process.

    Not psutil.cpu_percent(interval=None): it remembers its previous call per thread, and the
    sockets ask from a thread pool, so most answers would be a meaningless 0 %.
    """
    with _cpu_lock:
        now = time.monotonic()
        if now - _cpu["t"] >= CPU_SAMPLE_S or _cpu["percent"] is None:
            times = psutil.cpu_times()
            prev = _cpu["times"]
            total = _cpu_total(times) - _cpu_total(prev)
            idle = (times.idle + getattr(times, "iowait", 0)) - (prev.idle + getattr(prev, "iowait", 0))
            if total > 0:
                _cpu.update(t=now, times=times, percent=round(100 * (total - idle) / total, 1))
        return _cpu["percent"]


@dataclass(frozen=True)
class Filters:
    range: str
    model: str

    @property
    def since(self) -> datetime | None:
        seconds = RANGES[self.range][1]
        return timezone.now() - timedelta(seconds=seconds) if seconds else None

    def query(self) -> str:
        """The filters as a query string, for links that keep them (exports, other ranges)."""
        return urlencode({"range": self.range, "model": self.model} if self.model else {"range": self.range})


def parse_filters(params) -> Filters:
    """Filters from a query string; unknown values fall back to the defaults instead of failing."""
    range_ = params.get("range", DEFAULT_RANGE)
    if range_ not in RANGES:
        range_ = DEFAULT_RANGE
    model = params.get("model", "")
    return Filters(range=range_, model=model[:255] if isinstance(model, str) else "")


def can_see_text(viewer, owner_id: int) -> bool:
    """Text belongs to its author; staff and superusers (the household's admins) see all of it."""
    return bool(viewer.is_staff or viewer.is_superuser or viewer.id == owner_id)


def _prompt_subquery() -> Subquery:
    # The answer's parent message is the turn it replies to.
    return Subquery(Message.objects.filter(children=OuterRef("message_id")).values("content")[:1])


def generations(filters: Filters) -> QuerySet[Generation]:
    qs = Generation.objects.select_related("user")
    since = filters.since
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    if filters.model:
        qs = qs.filter(model_name=filters.model)
    return qs


def embedding_rows(*, filters: Filters, viewer) -> list[dict]:
    """The embeddings requests in range, as plain data: every person's for staff, else the
    viewer's own (how much someone embeds says what they are building)."""
    qs = EmbeddingBatch.objects.all()
    if filters.since is not None:
        qs = qs.filter(created_at__gte=filters.since)
    if filters.model:
        qs = qs.filter(model_name=filters.model)
    if not (viewer.is_staff or viewer.is_superuser):
        qs = qs.filter(user=viewer)
    fields = ("model_name", "status", "inputs", "prompt_tokens", "compute_ms", "e2e_ms")
    return list(qs.order_by("-id").values(*fields)[:MAX_ROWS])


def model_names() -> list[str]:
    # order_by: the model's default ordering (id) would join the DISTINCT, one name per answer.
    return [n for n in Generation.objects.order_by("model_name").values_list("model_name", flat=True).distinct() if n]


def metric_row(g: Generation, *, tokens: bool = True) -> dict:
    """A generation as plain data, without any text (the charts' input)."""
    row = {
        "id": g.id,
        "user_id": g.user_id,
        "username": g.user.get_username(),
        "client": g.client,
        "model": g.model_name,
        "status": g.status,
        "worker": g.worker,
        "t_arrive": g.t_arrive_ns / 1e9,
        "t_end": g.finished_at.timestamp() if g.finished_at else None,
    }
    for name in METRIC_FIELDS:
        row[name] = getattr(g, name)
    if tokens:
        row["token_times_ms"] = list(g.token_times_ms or [])
        row["itl_ms"] = list(g.itl_ms or [])
    return row


def dashboard_rows(*, filters: Filters, viewer) -> list[dict]:
    """The newest MAX_ROWS requests in range, oldest first, with a prompt preview where the viewer may see it."""
    qs = generations(filters).annotate(prompt_text=_prompt_subquery()).order_by("-id")[:MAX_ROWS]
    rows = []
    for g in qs:
        row = metric_row(g)
        visible = can_see_text(viewer, g.user_id)
        row["text_visible"] = visible
        row["prompt_preview"] = _preview(g.prompt_text) if visible else None
        rows.append(row)
    rows.reverse()
    return rows


def _preview(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def generation_detail(*, viewer, generation_id: int) -> dict | None:
    """One request for its detail page: metrics, every token, and text only where the viewer may see it."""
    g = (
        Generation.objects.select_related("user", "message")
        .annotate(prompt_text=_prompt_subquery())
        .filter(id=generation_id)
        .first()
    )
    if g is None:
        return None
    visible = can_see_text(viewer, g.user_id)
    system = [m["content"] for m in selectors.prompt_messages(generation=g) if m["role"] == "system"] if visible else []
    row = metric_row(g)
    texts = list(getattr(g, "token_texts", None) or [])
    times = row["token_times_ms"]
    row["token_texts"] = texts if visible and len(texts) == len(times) else None
    tokens = []
    for i, ms in enumerate(times):
        tokens.append(
            {
                "n": i + 1,
                "t_ms": ms,
                "gap_ms": ms - times[i - 1] if i else None,
                "text": row["token_texts"][i] if row["token_texts"] else None,
            }
        )
    return {
        "generation": g,
        "row": row,
        "visible": visible,
        "prompt": g.prompt_text if visible else None,
        "system_prompt": "\n\n".join(system) if visible else None,
        "answer": g.message.content if visible else None,
        "tokens": tokens,
        "has_token_texts": bool(texts),
    }


def export_rows(*, filters: Filters, viewer):
    """Every request in range as plain values, oldest first; prompt and answer only where visible."""
    qs = (
        generations(filters)
        .select_related("message")
        .annotate(prompt_text=_prompt_subquery())
        .order_by("id")
        .iterator(chunk_size=500)
    )
    for g in qs:
        visible = can_see_text(viewer, g.user_id)
        yield {
            "id": g.id,
            "created_at": g.created_at.isoformat(),
            "finished_at": g.finished_at.isoformat() if g.finished_at else None,
            "t_arrive_ns": g.t_arrive_ns,
            "user_id": g.user_id,
            "username": g.user.get_username(),
            "client": g.client,
            "model_name": g.model_name,
            "status": g.status,
            "worker": g.worker,
            **{name: getattr(g, name) for name in METRIC_FIELDS},
            "token_times_ms": list(g.token_times_ms or []),
            "itl_ms": list(g.itl_ms or []),
            "text_visible": visible,
            "prompt": g.prompt_text if visible else None,
            "answer": g.message.content if visible else None,
        }


def steps(*, since: float | None = None, limit: int = MAX_STEPS) -> list[dict]:
    """The engine's newest step records (oldest first), from the Redis list the workers keep."""
    try:
        raw = redis_client.client().lrange(redis_client.STEPS_KEY, -limit, -1)
    except Exception:
        log.warning("could not read engine steps from Redis", exc_info=True)
        return []
    out = []
    for item in raw:
        try:
            step = json.loads(item)
        except ValueError:
            continue
        if isinstance(step, dict) and isinstance(step.get("t"), int | float) and (since is None or step["t"] >= since):
            out.append(step)
    return out


def steps_between(start: float, end: float) -> list[dict]:
    return [s for s in steps(limit=redis_client.STEPS_KEPT) if start - 1 <= s["t"] <= end + 1]


# --- workers, hardware and the system strip -----------------------------------------------------------


def live_workers() -> dict[str, dict]:
    try:
        return registry.live_workers()
    except Exception:
        log.warning("could not read worker heartbeats", exc_info=True)
        return {}


def host_of(worker_name: str) -> str:
    return worker_name.rsplit(":", 1)[0]


def model_info(workers: dict[str, dict]) -> dict:
    """What the workers report about the loaded model; before any load, what the file on disk says."""
    for beat in workers.values():
        info = beat.get("model_info")
        if info:
            return info
    path = settings.HOMEAI_MODEL_PATH
    size = path.stat().st_size if path.is_file() else None
    return {"name": path.name, "path": str(path), "size_bytes": size, "n_params": None}


def hardware(workers: dict[str, dict], probes: dict[str, dict]) -> dict:
    """Bandwidth and FLOP/s of the machine that runs the model: a worker's host, its GPU when layers are offloaded."""
    hosts = [host_of(name) for name in workers]
    host = next((h for h in hosts if h in probes), None) or next(iter(probes), None)
    found = probes.get(host) if host else None
    if not found:
        return {"bandwidth_gbs": None, "gflops": None, "label": _("not measured yet"), "host": None, "gpu": False}
    gpus = [g for g in found.get("gpus") or [] if g.get("bandwidth_gbs")]
    if gpus and settings.HOMEAI_GPU_LAYERS != 0:
        gpu = gpus[0]
        return {
            "bandwidth_gbs": gpu["bandwidth_gbs"],
            "gflops": gpu.get("gflops_fp32"),
            "label": _("%(gpu)s, from NVML") % {"gpu": gpu["name"]},
            "host": host,
            "gpu": True,
        }
    cores = found.get("cores")
    return {
        "bandwidth_gbs": found.get("bandwidth_gbs"),
        "gflops": found.get("gflops"),
        "layer_ms": found.get("layer_ms"),
        "label": (
            ngettext("measured on %(host)s, %(n)d core", "measured on %(host)s, %(n)d cores", cores)
            if cores
            else _("measured on %(host)s")
        )
        % {"host": host, "n": cores},
        "host": host,
        "gpu": False,
    }


SPEED_ANSWERS = 20  # a worker's speed: the median output tok/s of its last this many answers


def worker_list(workers: dict[str, dict]) -> list[dict]:
    """Each living worker, by host: the models it holds (and has loaded), how busy it is, and how
    fast it writes (its recent answers' median output tok/s; None before its first)."""
    rows = []
    for name, beat in sorted(workers.items(), key=lambda item: (host_of(item[0]), item[0])):
        engines = registry.engines_of(beat)
        recent = Generation.objects.filter(worker=name, status=Generation.Status.DONE, output_tps__isnull=False)
        speeds = list(recent.order_by("-id").values_list("output_tps", flat=True)[:SPEED_ANSWERS])
        loaded = {e.get("model") for e in engines if e.get("loaded")}
        rows.append(
            {
                "worker": name,
                "host": beat.get("host") or host_of(name),
                "models": [
                    {"name": m.get("alias") or m.get("name"), "file": m.get("name"), "loaded": m.get("name") in loaded}
                    for m in beat.get("models") or []
                ],
                "running": sum(int(e.get("running") or 0) for e in engines),
                "slots": beat.get("slots"),
                "cells": cells_of(engines),
                "gpu": bool(beat.get("n_gpu_layers")) and bool(beat.get("gpus")),
                "output_tps": statistics.median(speeds) if speeds else None,
            }
        )
    return rows


def cells_of(engines: list[dict]) -> dict | None:
    """The KV cells of the loaded engines, summed: all of them, those reserved for running
    answers, and those idle slots keep as reusable prefixes (Engine.cells); None when none is
    loaded."""
    reports = [e["cells"] for e in engines if e.get("loaded") and e.get("cells")]
    if not reports:
        return None
    return {key: sum(int(r.get(key) or 0) for r in reports) for key in ("total", "reserved", "cached")}


def system_snapshot(workers: dict[str, dict] | None = None) -> dict:
    """The live strip: requests in the engines, CPU and RAM of this host, GPUs, the model and its state."""
    workers = live_workers() if workers is None else workers
    memory = psutil.virtual_memory()
    beats = list(workers.values())
    loaded = [b for b in beats if b.get("loaded")]
    engines = [e for b in beats for e in registry.engines_of(b)]
    if not beats:
        state = "no worker"
    elif any(e.get("loaded") for e in engines):
        state = "warm"
    else:
        state = "cold"
    models = sorted({e.get("model") for e in engines if e.get("loaded") and e.get("model")}) or sorted(
        {b.get("model") for b in beats if b.get("model")}
    )
    policy = ", ".join(sorted({str(b["policy"]) for b in beats if b.get("policy")})) or None
    # How `chunked` sizes a long prompt's chunks on the first worker that chunks.
    sizing = next((b["sizing"] for b in loaded if b.get("sizing")), None)
    return {
        "t": time.time(),
        "workers": len(beats),
        "running": sum(int(e.get("running") or 0) for e in engines),
        "waiting": sum(int(e.get("waiting") or 0) for e in engines),
        "slots": sum(int(b.get("slots") or 0) for b in beats) or None,
        "cells": cells_of(engines),
        "policy": policy,
        "sizing": sizing,
        "sizing_text": text.sizing_text(policy, sizing),
        "cpu_percent": cpu_percent(),
        "cpu_count": psutil.cpu_count(),
        "ram_used_bytes": memory.total - memory.available,
        "ram_total_bytes": memory.total,
        "ram_percent": memory.percent,
        # A worker on another machine may report its own GPUs in its heartbeat; else this host's.
        "gpus": [g for b in beats for g in b.get("gpus") or []] or probe.gpu_live(),
        "model": ", ".join(models) or settings.HOMEAI_MODEL_PATH.name,
        "state": state,
        "worker_list": worker_list(workers),
    }
