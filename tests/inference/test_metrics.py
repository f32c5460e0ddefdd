"""The Prometheus metrics kept in Redis: recording, the collector's maths, the endpoint's token."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.test import RequestFactory
from prometheus_client.parser import text_string_to_metric_families

from api.server import metrics as metrics_view
from inference import metrics, redis_client
from inference.dispatch import registry
from inference.models import Generation

MODEL = "test-model.gguf"


@pytest.fixture
def clean_metrics():
    r = redis_client.client()

    def wipe() -> None:
        keys = list(r.scan_iter(match=metrics.PREFIX + "*", count=500))
        if keys:
            r.delete(*keys)

    wipe()
    yield
    wipe()


def _generation(gid: int, **fields) -> Generation:
    base = dict(
        id=gid,
        model_name=MODEL,
        status="done",
        finish_reason="length",
        queue_ms=5.0,
        load_ms=0.0,
        prefill_ms=80.0,
        first_token_ms=20.0,
        decode_ms=60.0,
        ttft_ms=105.0,
        e2e_ms=165.0,
        prompt_tokens=12,
        cached_tokens=0,
        output_tokens=4,
        itl_ms=[20.0, 30.0, 10.0],
        cold=False,
    )
    base.update(fields)
    return Generation(**base)


def _scrape() -> dict:
    """{sample name: {label tuple: value}} of our model's samples."""
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    out: dict = {}
    for family in text_string_to_metric_families(body.decode()):
        assert family.name.startswith("homeai_") and ":" not in family.name
        for sample in family.samples:
            if sample.labels.get("model") != MODEL:
                continue
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "model"))
            out.setdefault(sample.name, {})[labels] = sample.value
    return out


def test_each_value_goes_to_the_first_bucket_at_or_above_it():
    buckets = (0.1, 0.5, 1.0)
    assert metrics.bucket_counts(buckets, [0.05, 0.1, 0.2, 0.5, 3.0, 1.0]) == {"0.1": 2, "0.5": 2, "1.0": 1, "+Inf": 1}
    assert metrics.bucket_counts(buckets, []) == {}


def test_recorded_answers_come_back_as_cumulative_histograms_and_counters(clean_metrics):
    metrics.record_generation(_generation(1))
    metrics.record_generation(
        _generation(
            2,
            ttft_ms=2500.0,
            itl_ms=[45.0],
            output_tokens=2,
            prompt_tokens=30,
            spec_drafted=8,
            spec_accepted=5,
            decode_steps=1,
        )
    )
    scraped = _scrape()

    ttft = scraped["homeai_time_to_first_token_seconds_bucket"]
    assert ttft[(("le", "0.1"),)] == 0
    assert ttft[(("le", "0.15"),)] == 1  # 105 ms
    assert ttft[(("le", "2.0"),)] == 1
    assert ttft[(("le", "3.0"),)] == 2  # 2.5 s
    assert ttft[(("le", "+Inf"),)] == 2
    assert scraped["homeai_time_to_first_token_seconds_count"][()] == 2
    assert scraped["homeai_time_to_first_token_seconds_sum"][()] == pytest.approx(0.105 + 2.5)

    # Every gap is one observation: 3 + 1.
    assert scraped["homeai_inter_token_latency_seconds_count"][()] == 4
    assert scraped["homeai_inter_token_latency_seconds_sum"][()] == pytest.approx(0.105)
    itl = scraped["homeai_inter_token_latency_seconds_bucket"]
    assert itl[(("le", "0.01"),)] == 1 and itl[(("le", "0.02"),)] == 2 and itl[(("le", "0.05"),)] == 4

    for name in ("e2e_request_latency", "queue_time", "prefill_time", "decode_time"):
        assert scraped[f"homeai_{name}_seconds_count"][()] == 2
    assert scraped["homeai_prefill_time_seconds_sum"][()] == pytest.approx(0.16)
    assert "homeai_model_load_time_seconds_count" not in scraped  # both were warm

    assert scraped["homeai_prompt_tokens_total"][()] == 42
    assert scraped["homeai_generation_tokens_total"][()] == 6
    assert scraped["homeai_speculative_drafted_tokens_total"][()] == 8
    assert scraped["homeai_speculative_accepted_tokens_total"][()] == 5
    assert scraped["homeai_decode_steps_total"][()] == 1
    assert scraped["homeai_requests_total"][(("outcome", "done"),)] == 2


def test_outcomes_are_counted_apart_and_only_paid_loads_are_observed(clean_metrics):
    metrics.record_generation(_generation(1, cold=True, load_ms=1500.0))
    metrics.record_generation(
        _generation(2, status="cancelled", finish_reason="cancelled", itl_ms=[], output_tokens=1, decode_ms=0.0)
    )
    metrics.record_generation(
        Generation(id=3, model_name=MODEL, status="interrupted", finish_reason="interrupted", itl_ms=[])
    )
    scraped = _scrape()
    requests = scraped["homeai_requests_total"]
    assert requests == {(("outcome", "done"),): 1, (("outcome", "cancelled"),): 1, (("outcome", "interrupted"),): 1}
    assert scraped["homeai_model_load_time_seconds_count"][()] == 1
    assert scraped["homeai_model_load_time_seconds_sum"][()] == pytest.approx(1.5)
    # The interrupted answer has no timings: it is counted, but observed nowhere.
    assert scraped["homeai_time_to_first_token_seconds_count"][()] == 2


def test_an_answer_recorded_twice_is_counted_once(clean_metrics):
    generation = _generation(7, t_arrive_ns=1_000)
    metrics.record_generation(generation)
    metrics.record_generation(generation)
    assert _scrape()["homeai_time_to_first_token_seconds_count"][()] == 1
    # SQLite gives a deleted row's id to the next row: a new answer with an old id still counts.
    metrics.record_generation(_generation(7, t_arrive_ns=2_000))
    assert _scrape()["homeai_time_to_first_token_seconds_count"][()] == 2


def test_running_and_waiting_requests_come_from_the_workers_heartbeats(clean_metrics):
    names = [f"metrics-test:{i}" for i in (1, 2)]
    registry.beat(names[0], {"model": MODEL, "running": 3, "waiting": 2}, ttl=30)
    registry.beat(names[1], {"model": MODEL, "running": 1, "waiting": 0}, ttl=30)
    try:
        scraped = _scrape()
    finally:
        for name in names:
            registry.withdraw(name)
    assert scraped["homeai_requests_running"][()] == 4
    assert scraped["homeai_requests_waiting"][()] == 2
    assert scraped["homeai_workers"][()] == 2


def test_a_failing_redis_never_breaks_the_answer_being_recorded(monkeypatch, caplog):
    def broken():
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(redis_client, "client", broken)
    with caplog.at_level("WARNING", logger="inference.metrics"):
        metrics.record_generation(_generation(9))  # raises nothing
    [record] = [r for r in caplog.records if r.name == "inference.metrics"]
    assert record.levelname == "WARNING" and "generation 9" in record.getMessage()
    assert record.exc_info and "Redis is down" in str(record.exc_info[1])


def test_the_endpoint_is_for_staff_or_the_token_and_closed_without_one(clean_metrics, settings):
    factory = RequestFactory()

    def as_staff(request):
        request.user = SimpleNamespace(is_active=True, is_staff=True)
        return request

    settings.HOMEAI_METRICS_TOKEN = ""
    refused = metrics_view(factory.get("/metrics"))
    assert refused.status_code == 401 and b"HOMEAI_METRICS_TOKEN" in refused.content
    assert metrics_view(factory.get("/metrics", HTTP_AUTHORIZATION="Bearer ")).status_code == 401
    assert metrics_view(as_staff(factory.get("/metrics"))).status_code == 200

    settings.HOMEAI_METRICS_TOKEN = "s3cret"
    refused = metrics_view(factory.get("/metrics"))
    assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
    assert metrics_view(factory.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong")).status_code == 401
    allowed = metrics_view(factory.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret"))
    assert allowed.status_code == 200 and b"homeai_requests_running" in allowed.content
