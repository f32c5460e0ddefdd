"""Prometheus metrics that stay right when web and workers are separate processes or machines.

Whoever ends an answer (a worker, or the sweep that marks a dead worker's answers
interrupted) records it into Redis: histogram buckets, sums and counts as hash fields,
counters with HINCRBY. /metrics, served by any web process, builds the metric families
from Redis with a custom collector. No process holds counts of its own, so a restart, a
second worker or a scrape landing on another web process loses or doubles nothing.
Running and waiting requests come from the workers' heartbeats.
"""

from __future__ import annotations

import bisect
import functools
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from inference import redis_client
from inference.dispatch import registry

log = logging.getLogger(__name__)

# Bump the version when buckets change: old fields would no longer add up.
PREFIX = "homeai:metrics:v1:"
MODELS_KEY = PREFIX + "models"
RECORDED_TTL_S = 7 * 24 * 3600
UNKNOWN_MODEL = "unknown"

# Seconds. Fine steps where a chat is felt (tens to hundreds of ms), coarse beyond.
TTFT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 40, 80, 160)
ITL_BUCKETS = (0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10)
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280)
LOAD_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320)


def _one(value) -> list[float]:
    return [] if value is None else [value]


@dataclass(frozen=True)
class HistogramSpec:
    name: str
    help: str
    buckets: tuple[float, ...]
    values_ms: Callable[[object], list[float]]  # a Generation's observations, in milliseconds

    @property
    def key_part(self) -> str:
        return f"hist:{self.name}:"


HISTOGRAMS = (
    HistogramSpec(
        "homeai_time_to_first_token_seconds",
        "Time from the request's arrival to its first output token (server side).",
        TTFT_BUCKETS,
        lambda g: _one(g.ttft_ms),
    ),
    HistogramSpec(
        "homeai_inter_token_latency_seconds",
        "Every gap between consecutive output tokens of an answer.",
        ITL_BUCKETS,
        lambda g: list(g.itl_ms or ()),
    ),
    HistogramSpec(
        "homeai_e2e_request_latency_seconds",
        "Time from the request's arrival to its last output token.",
        LATENCY_BUCKETS,
        lambda g: _one(g.e2e_ms),
    ),
    HistogramSpec(
        "homeai_queue_time_seconds",
        "Time a request waited before the engine started its prompt.",
        LATENCY_BUCKETS,
        lambda g: _one(g.queue_ms),
    ),
    HistogramSpec(
        "homeai_retrieve_time_seconds",
        "Time an answer drawn from documents spent on its query's embedding and the search.",
        LATENCY_BUCKETS,
        lambda g: _one(g.retrieve_ms),
    ),
    HistogramSpec(
        "homeai_prefill_time_seconds",
        "Time the engine spent evaluating a request's prompt (first to last prompt chunk).",
        LATENCY_BUCKETS,
        lambda g: _one(g.prefill_ms),
    ),
    HistogramSpec(
        "homeai_decode_time_seconds",
        "Time from a request's first output token to its last.",
        LATENCY_BUCKETS,
        lambda g: _one(g.decode_ms),
    ),
    HistogramSpec(
        "homeai_model_load_time_seconds",
        "Model load time paid by requests that arrived while the model was loading.",
        LOAD_BUCKETS,
        lambda g: _one(g.load_ms) if g.cold and g.load_ms else [],
    ),
)


@dataclass(frozen=True)
class CounterSpec:
    name: str  # without the _total suffix, which the exposition adds
    help: str
    amount: Callable[[object], int]


COUNTERS = (
    CounterSpec("homeai_prompt_tokens", "Prompt tokens of finished requests.", lambda g: g.prompt_tokens or 0),
    CounterSpec("homeai_generation_tokens", "Output tokens generated.", lambda g: g.output_tokens or 0),
    # Speculative decoding: acceptance rate = accepted / drafted; tokens per step = generation
    # tokens / decode steps (1 without speculation).
    CounterSpec(
        "homeai_speculative_drafted_tokens",
        "Draft tokens verified by speculative decoding.",
        lambda g: g.spec_drafted or 0,
    ),
    CounterSpec("homeai_speculative_accepted_tokens", "Draft tokens the sampler kept.", lambda g: g.spec_accepted or 0),
    CounterSpec("homeai_decode_steps", "Model steps that gave answers tokens.", lambda g: g.decode_steps or 0),
)
REQUESTS = CounterSpec("homeai_requests", "Requests that ended, by outcome: done, cancelled, error, interrupted.", None)


def _hist_key(spec: HistogramSpec, model: str) -> str:
    return f"{PREFIX}{spec.key_part}{model}"


def _counter_key(name: str, model: str) -> str:
    return f"{PREFIX}counter:{name}:{model}"


def _field(bound: float) -> str:
    """A bucket's field name in Redis (the exposition's `le` label is formatted at scrape time)."""
    return repr(float(bound))


def bucket_counts(buckets: tuple[float, ...], values: list[float]) -> dict[str, int]:
    """Per-bucket (not cumulative) counts: each value goes to the first bound >= it, else +Inf."""
    counts: dict[str, int] = {}
    for value in values:
        i = bisect.bisect_left(buckets, value)
        le = _field(buckets[i]) if i < len(buckets) else "+Inf"
        counts[le] = counts.get(le, 0) + 1
    return counts


def record_generation(generation) -> None:
    """Add one ended answer to the shared metrics (once per answer; never raises)."""
    try:
        _record(generation)
    except Exception:
        log.warning("could not record metrics for generation %s", getattr(generation, "id", None), exc_info=True)


def _record(generation) -> None:
    r = redis_client.client()
    if generation.id is not None:
        # A redelivered task or a second sweeper must not count the same answer twice. The
        # arrival time is in the key because SQLite hands out a deleted row's id again.
        key = f"{PREFIX}recorded:{generation.id}:{getattr(generation, 't_arrive_ns', '')}"
        if not r.set(key, 1, nx=True, ex=RECORDED_TTL_S):
            return
    model = generation.model_name or UNKNOWN_MODEL
    pipe = r.pipeline(transaction=False)
    pipe.sadd(MODELS_KEY, model)
    for spec in HISTOGRAMS:
        _add_histogram(pipe, spec, model, generation)
    for counter in COUNTERS:
        amount = counter.amount(generation)
        if amount:
            pipe.hincrby(_counter_key(counter.name, model), "total", amount)
    pipe.hincrby(_counter_key(REQUESTS.name, model), generation.status, 1)
    pipe.execute()


# Embeddings are their own kind of request: counted apart, so answers' rates stay answers'.
EMBEDDING_MODELS_KEY = PREFIX + "embedding-models"
EMBEDDING_COUNTERS = (
    CounterSpec("homeai_embedding_inputs", "Texts embedded by finished embedding requests.", lambda b: b.inputs),
    CounterSpec("homeai_embedding_tokens", "Tokens of the texts embedded.", lambda b: b.prompt_tokens or 0),
)
EMBEDDING_REQUESTS = CounterSpec(
    "homeai_embedding_requests", "Embedding requests that ended, by outcome: done, error, interrupted.", None
)
EMBEDDING_SECONDS = HistogramSpec(
    "homeai_embedding_request_seconds",
    "An embedding request's time, from its arrival to its vectors (queue, load and compute).",
    LATENCY_BUCKETS,
    lambda b: _one(b.e2e_ms),
)


def record_embedding(batch) -> None:
    """Add one ended embeddings request to the shared metrics (once per request; never raises)."""
    try:
        r = redis_client.client()
        if not r.set(f"{PREFIX}recorded-embedding:{batch.id}:{batch.t_arrive_ns}", 1, nx=True, ex=RECORDED_TTL_S):
            return
        model = batch.model_name or UNKNOWN_MODEL
        pipe = r.pipeline(transaction=False)
        pipe.sadd(EMBEDDING_MODELS_KEY, model)
        _add_histogram(pipe, EMBEDDING_SECONDS, model, batch)
        if batch.status == "done":
            for counter in EMBEDDING_COUNTERS:
                pipe.hincrby(_counter_key(counter.name, model), "total", counter.amount(batch))
        pipe.hincrby(_counter_key(EMBEDDING_REQUESTS.name, model), batch.status, 1)
        pipe.execute()
    except Exception:
        log.warning("could not record metrics for embedding batch %s", getattr(batch, "id", None), exc_info=True)


def _add_histogram(pipe, spec: HistogramSpec, model: str, row) -> None:
    values = [ms / 1000.0 for ms in spec.values_ms(row) if ms is not None]
    if not values:
        return
    key = _hist_key(spec, model)
    for le, n in bucket_counts(spec.buckets, values).items():
        pipe.hincrby(key, le, n)
    pipe.hincrbyfloat(key, "sum", sum(values))
    pipe.hincrby(key, "count", len(values))


class RedisCollector:
    """Builds every HomeAI metric family from Redis at scrape time."""

    def collect(self) -> Iterator:
        r = redis_client.client()
        yield from self._families(r, sorted(m.decode() for m in r.smembers(MODELS_KEY)), HISTOGRAMS, COUNTERS, REQUESTS)
        embedding_models = sorted(m.decode() for m in r.smembers(EMBEDDING_MODELS_KEY))
        yield from self._families(r, embedding_models, (EMBEDDING_SECONDS,), EMBEDDING_COUNTERS, EMBEDDING_REQUESTS)
        yield from self._gauges()

    def _families(self, r, models: list[str], histograms, counters, requests: CounterSpec) -> Iterator:
        """One kind of request's families (answers, embeddings), each labelled by model."""
        pipe = r.pipeline(transaction=False)
        for spec in histograms:
            for model in models:
                pipe.hgetall(_hist_key(spec, model))
        for name in [c.name for c in counters] + [requests.name]:
            for model in models:
                pipe.hgetall(_counter_key(name, model))
        results = iter(pipe.execute())

        for spec in histograms:
            family = HistogramMetricFamily(spec.name, spec.help, labels=["model"])
            for model in models:
                raw = {k.decode(): v for k, v in next(results).items()}
                if raw:
                    buckets, total = [], 0
                    for bound in [*spec.buckets, math.inf]:
                        total += int(raw.get(_field(bound) if math.isfinite(bound) else "+Inf", 0))
                        buckets.append((floatToGoString(bound), total))
                    family.add_metric([model], buckets, float(raw.get("sum", 0.0)))
            yield family
        for counter in counters:
            family = CounterMetricFamily(counter.name, counter.help, labels=["model"])
            for model in models:
                raw = next(results)
                if raw:
                    family.add_metric([model], float(raw.get(b"total", 0)))
            yield family
        family = CounterMetricFamily(requests.name, requests.help, labels=["model", "outcome"])
        for model in models:
            for outcome, n in sorted(next(results).items()):
                family.add_metric([model, outcome.decode()], float(n))
        yield family

    def _gauges(self) -> Iterator:
        running: dict[str, float] = {}
        waiting: dict[str, float] = {}
        workers: dict[str, float] = {}
        for status in registry.live_workers().values():
            model = status.get("model") or UNKNOWN_MODEL
            running[model] = running.get(model, 0) + (status.get("running") or 0)
            waiting[model] = waiting.get(model, 0) + (status.get("waiting") or 0)
            workers[model] = workers.get(model, 0) + 1
        for name, help_text, values in (
            ("homeai_requests_running", "Requests the engines are working on now.", running),
            ("homeai_requests_waiting", "Requests inside the engines waiting for a slot.", waiting),
            ("homeai_workers", "Workers whose heartbeat is fresh, by the model they serve.", workers),
        ):
            family = GaugeMetricFamily(name, help_text, labels=["model"])
            for model, value in sorted(values.items()):
                family.add_metric([model], value)
            yield family


@functools.cache
def _collector_registry() -> CollectorRegistry:
    collectors = CollectorRegistry(auto_describe=False)
    collectors.register(RedisCollector())
    return collectors


def exposition() -> tuple[bytes, str]:
    """The /metrics body and its content type."""
    return generate_latest(_collector_registry()), CONTENT_TYPE_LATEST
