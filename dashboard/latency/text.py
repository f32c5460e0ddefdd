"""The latency dashboard's words: number formats, labels, and the sentences that explain the numbers.

Pure functions like dashboard.latency.stats, whose numbers they put into words: the fit's reading
of TTFT against prompt length, the "why is prompt tok/s so much higher than output tok/s" panel,
and how the scheduler sizes a long prompt's chunks. Number formats follow static/js/common.js
(HomeAI.fmtMs and friends), so a value reads the same in a sentence and in a table cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext_lazy

from dashboard.latency import stats
from inference import speed

PHASE_LABELS = {
    "queue": pgettext_lazy("phase", "Queue"),
    "retrieve": pgettext_lazy("phase", "Retrieve"),
    "load": pgettext_lazy("phase", "Load"),
    "prefill": pgettext_lazy("phase", "Prefill"),
    "decode": pgettext_lazy("phase", "Decode"),
    "tool": pgettext_lazy("phase", "Tools"),
    stats.OTHER: pgettext_lazy("phase", "Unfinished"),
}
STATUS_LABELS = {
    "queued": pgettext_lazy("answer status", "queued"),
    "running": pgettext_lazy("answer status", "running"),
    "done": pgettext_lazy("answer status", "done"),
    "cancelled": pgettext_lazy("answer status", "cancelled"),
    "interrupted": pgettext_lazy("answer status", "interrupted"),
    "error": pgettext_lazy("answer status", "error"),
}
# A request's row on the timeline; the page fills the same pattern for requests that arrive live.
ROW_LABEL = "#{id} {username}"


# --- numbers -----------------------------------------------------------------------------------------


def num(value: float, decimals: int = 0) -> str:
    """A number in the active language's format (grouping and decimal mark), rounded, not cut."""
    if decimals == 0:
        return formats.number_format(round(value), 0, force_grouping=True)
    return formats.number_format(round(value, decimals), decimals, force_grouping=True)


def fmt_ms(ms: float | None) -> str:
    """A duration: 0.1 ms steps below 10 ms, whole ms below a second, then seconds."""
    if ms is None:
        return "–"
    if ms == 0:
        return _("%(n)s ms") % {"n": num(0)}
    if abs(ms) < 10:
        return _("%(n)s ms") % {"n": num(ms, 1)}
    if abs(ms) < 1000:
        return _("%(n)s ms") % {"n": num(ms)}
    if abs(ms) < 10_000:
        return _("%(n)s s") % {"n": num(ms / 1000, 2)}
    return _("%(n)s s") % {"n": num(ms / 1000, 1)}


def fmt_rate(rate: float | None) -> str:
    if rate is None:
        return "–"
    return num(rate) if rate >= 100 else num(rate, 1)


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "–"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{num(n / size, 1) if n < 100 * size else num(n / size)} {unit}"
    return f"{num(n)} B"


def fmt_count(n: float | None) -> str:
    if n is None:
        return "–"
    for words, size in ((_("%(n)s billion"), 1e9), (_("%(n)s million"), 1e6)):
        if n >= size:
            return words % {"n": num(n / size) if n >= 100 * size else num(n / size, 1)}
    return num(n)


def row_label(row: dict) -> str:
    return ROW_LABEL.format(id=row["id"], username=row.get("username") or "").strip()


def phase_legend() -> list[tuple[str, str]]:
    """(phase, label) of each phase in order, for legends and the page's config."""
    return [(phase, str(PHASE_LABELS[phase])) for phase in stats.PHASES]


# --- time to first token against prompt length -----------------------------------------------------


def fit_text(fit: dict) -> str:
    """What a TTFT fit (stats.ttft_fit) says about prefill speed and fixed overhead, and how far to trust it."""
    slope, intercept, rate = fit["slope_ms_per_token"], fit["intercept_ms"], fit["prefill_tps"]
    values = {"slope": num(slope, 2), "rate": fmt_rate(rate), "fixed": fmt_ms(intercept)}
    if rate is not None and intercept >= 0:
        text = _(
            "Each prompt token adds %(slope)s ms → about %(rate)s tok/s of prefill; "
            "every request pays a fixed %(fixed)s (queue, load, first step) on top."
        )
    elif rate is not None:
        text = _(
            "Each prompt token adds %(slope)s ms → about %(rate)s tok/s of prefill; "
            "the fixed part is lost in the noise (the line meets zero tokens at %(fixed)s)."
        )
    else:
        text = _(
            "TTFT does not grow with prompt length here (slope %(slope)s ms/token): "
            "the fixed %(fixed)s of queueing and overhead dominates."
        )
    # Waiting in the queue does not depend on prompt length: when it varies, the line says so by R².
    if fit["r2"] < 0.5:
        trust = ngettext(
            "(Least squares over %(n)d warm request, R² = %(r2)s: waiting varies more than prompt length "
            "here, so read the slope with care.)",
            "(Least squares over %(n)d warm requests, R² = %(r2)s: waiting varies more than prompt length "
            "here, so read the slope with care.)",
            fit["n"],
        )
    else:
        trust = ngettext(
            "(Least squares over %(n)d warm request, R² = %(r2)s.)",
            "(Least squares over %(n)d warm requests, R² = %(r2)s.)",
            fit["n"],
        )
    return text % values + " " + trust % {"n": fit["n"], "r2": num(fit["r2"], 2)}


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
    hardware: str | None = None,
    layers: int | None = None,
    layer_ms: float | None = None,
) -> dict:
    """The "why" panel: stats.why_numbers, the hardware's label, and sentences saying what they
    mean. layers and layer_ms: the model's layers and what one costs a decode step here beside
    its weights (the worker's layer probe, inference/engine/layer_probe.py), when known."""
    info = stats.why_numbers(
        rows=rows, model_bytes=model_bytes, n_params=n_params, bandwidth_gbs=bandwidth_gbs, gflops=gflops
    )
    info.update(layers=layers or None, layer_ms=layer_ms or None)
    hardware = hardware or _("this machine")
    return {**info, "hardware": hardware, "sentences": why_sentences(info, hardware)}


def why_sentences(info: dict, hardware: str | None = None) -> list[str]:
    """The why panel's explanation of stats.why_numbers, one sentence per fact, saying what is missing."""
    hardware = hardware or _("this machine")
    prefill, decode, done = info["prefill_tps"], info["decode_tps"], info["done"]
    decode_ceiling, prefill_ceiling = info["decode_ceiling_tps"], info["prefill_ceiling_tps"]
    model_bytes, n_params = info["model_bytes"], info["n_params"]
    bandwidth_gbs, gflops = info["bandwidth_gbs"], info["gflops"]
    sentences = []
    if prefill and decode:
        sentences.append(
            ngettext(
                "Across %(n)d answer, prompts were read at a median %(prefill)s tok/s and answers written at "
                "%(decode)s tok/s: prefill ran %(ratio)s× faster than decode.",
                "Across %(n)d answers, prompts were read at a median %(prefill)s tok/s and answers written at "
                "%(decode)s tok/s: prefill ran %(ratio)s× faster than decode.",
                done,
            )
            % {"n": done, "prefill": fmt_rate(prefill), "decode": fmt_rate(decode), "ratio": num(prefill / decode, 1)}
        )
    elif not done:
        sentences.append(_("No finished answers in this range yet: chat a little and the numbers fill in."))
    if decode_ceiling:
        line = _(
            "Writing a token reads every weight once: %(bytes)s per token at %(bandwidth)s GB/s (%(hardware)s) "
            "allows at most ≈%(ceiling)s tok/s."
        ) % {
            "bytes": fmt_bytes(model_bytes),
            "bandwidth": num(bandwidth_gbs, 1),
            "hardware": hardware,
            "ceiling": fmt_rate(decode_ceiling),
        }
        if info["decode_pct"] is not None:
            line += " " + _("Decode reached %(rate)s tok/s, %(pct)s%% of that: %(verdict)s") % {
                "rate": fmt_rate(decode),
                "pct": num(info["decode_pct"]),
                "verdict": decode_verdict(info["decode_pct"]),
            }
        sentences.append(line)
        if info.get("layers") and info.get("layer_ms"):
            shape = speed.Shape(model_bytes, info["layers"])
            step = speed.step_ms(shape, bandwidth_gbs, info["layer_ms"])
            sentences.append(
                _(
                    "A token also passes the model's %(layers)s layers, and each costs ≈%(ms)s ms here besides "
                    "its weights (its small operations, and the threads waiting for one another at each: "
                    "measured when the worker started): %(total)s ms a token, so with the weights at most "
                    "≈%(rate)s tok/s."
                )
                % {
                    "layers": info["layers"],
                    "ms": num(info["layer_ms"], 3),
                    "total": num(shape.layers_ms(info["layer_ms"]), 1),
                    "rate": fmt_rate(1000 / step),
                }
            )
    if prefill_ceiling:
        line = _(
            "Reading a prompt token costs ≈ 2 × %(params)s parameters = %(gflop)s GFLOP; at %(gflops)s GFLOP/s "
            "(%(hardware)s) that allows ≈%(ceiling)s tok/s, because a prompt's tokens share each weight read "
            "in one batch of matrix products."
        ) % {
            "params": fmt_count(n_params),
            "gflop": num(2 * n_params / 1e9, 2),
            "gflops": num(gflops),
            "hardware": hardware,
            "ceiling": fmt_rate(prefill_ceiling),
        }
        if info["prefill_pct"] is not None:
            line += " " + _("Prefill reached %(rate)s tok/s, %(pct)s%% of it: %(verdict)s") % {
                "rate": fmt_rate(prefill),
                "pct": num(info["prefill_pct"]),
                "verdict": prefill_verdict(info["prefill_pct"]),
            }
        sentences.append(line)
    if decode_ceiling and prefill_ceiling:
        sentences.append(
            _(
                "The two ceilings differ by %(ratio)s× (≈%(prefill)s vs ≈%(decode)s tok/s): that gap, not a fault, "
                "is why prompt tok/s is always far above output tok/s."
            )
            % {
                "ratio": num(prefill_ceiling / decode_ceiling, 1),
                "prefill": fmt_rate(prefill_ceiling),
                "decode": fmt_rate(decode_ceiling),
            }
        )
    if bandwidth_gbs is None or gflops is None:
        sentences.append(_("The hardware probe has not reported yet: it runs about a second when a worker starts."))
    if model_bytes is None or n_params is None:
        sentences.append(_("The model's size and parameter count appear once a worker has loaded it."))
    return sentences


def decode_verdict(pct: float) -> str:
    """What decode reaching pct % of the bandwidth ceiling means."""
    if pct > 100:
        return _("above the estimate, so part of the model stays in the caches between tokens.")
    if pct >= 60:
        return _("it is memory-bound, limited by how fast the weights stream from memory.")
    if pct >= 25:
        return _(
            "memory bandwidth sets the ceiling, and the rest of each step goes to work besides reading "
            "weights (sampling, attention over the context, keeping threads in step)."
        )
    return _("far below the bandwidth ceiling, so work other than reading weights dominates each step.")


def prefill_verdict(pct: float) -> str:
    """What prefill reaching pct % of the compute ceiling means."""
    if pct > 100:
        return _(
            "above this float32 estimate, because llama.cpp multiplies quantised weights with faster integer "
            "instructions and the embedding table is a lookup, not a multiply."
        )
    if pct >= 50:
        return _("it is compute-bound, limited by arithmetic rather than memory.")
    return _("short prompts leave the matrix units idle part of the time, so per-step overhead weighs more.")


# --- how the scheduler sizes a long prompt ---------------------------------------------------------


def sizing_text(policy: str | None, sizing: dict | None) -> str:
    """How the scheduling policy treats a long prompt right now, with this machine's measured costs.

    policy and sizing are the system snapshot's (a worker's heartbeat); "" when there is nothing to say.
    """
    if policy == "continuous":
        return _(
            "Policy continuous: a waiting prompt goes in whole, so every answer being written waits for it "
            "(llama-server's schedule)."
        )
    if policy == "serial":
        return _("Policy serial: one request at a time; the others wait their turn.")
    z = sizing
    if not z:
        return ""
    n = z.get("n_decode")
    if not n:
        return _(
            "Policy chunked: nothing has been written yet; while no answer is being written, a prompt goes in whole."
        )
    values = {"n": n, "chunk": z.get("chunk"), "budget": z.get("token_budget")}
    if z.get("mode") == "fixed":
        return (
            ngettext(
                "Policy chunked, fixed budget: %(budget)s tokens a step, decodes first, so beside %(n)d answer "
                "a long prompt goes in %(chunk)s-token chunks.",
                "Policy chunked, fixed budget: %(budget)s tokens a step, decodes first, so beside %(n)d answers "
                "a long prompt goes in %(chunk)s-token chunks.",
                n,
            )
            % values
        )
    if z.get("mode") == "stall":
        aim = ngettext(
            "%(factor)s× the %(alone)s that %(n)d answer takes alone (%(target)s)",
            "%(factor)s× the %(alone)s that %(n)d answers take alone (%(target)s)",
            n,
        ) % {
            "factor": _factor(z.get("stall_factor")),
            "alone": fmt_ms(z.get("decode_ms")),
            "n": n,
            "target": fmt_ms(z.get("target_ms")),
        }
    else:
        aim = fmt_ms(z.get("target_ms"))
    values["aim"] = aim
    if z.get("prompt_token_ms") is None:
        return (
            _(
                "Policy chunked: steps aim at %(aim)s; the next long prompt's first %(chunk)s-token chunk "
                "measures what a prompt token costs here."
            )
            % values
        )
    values["token"] = fmt_ms(z["prompt_token_ms"])
    return (
        ngettext(
            "Policy chunked: with %(n)d answer being written, steps aim at %(aim)s; a prompt token adds "
            "%(token)s beside it on this machine, so a long prompt goes in %(chunk)s-token chunks.",
            "Policy chunked: with %(n)d answers being written, steps aim at %(aim)s; a prompt token adds "
            "%(token)s beside them on this machine, so a long prompt goes in %(chunk)s-token chunks.",
            n,
        )
        % values
    )


def _factor(value: float | None) -> str:
    return "–" if value is None else formats.number_format(Decimal(f"{value:g}"))
