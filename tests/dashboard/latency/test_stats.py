"""The dashboard's numbers (dashboard.latency.stats), checked against synthetic data with known answers."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dashboard.latency import stats
from tests.dashboard.latency.rows import T0, done_row, known_prefill_rows


@pytest.mark.parametrize("q", [0, 1, 25, 50, 90, 99, 100])
def test_percentiles_match_numpy(q):
    rng = random.Random(q)
    values = [rng.lognormvariate(3, 1) for _ in range(997)]
    assert stats.percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)


def test_percentiles_ignore_missing_values_and_say_none_for_nothing():
    assert stats.percentile([None, 3.0, float("nan"), 1.0, 2.0], 50) == 2.0
    assert stats.percentile([], 50) is None
    assert stats.median([None]) is None


def test_only_real_finite_numbers_count():
    assert stats.finite([1, 2.5, None, True, float("inf"), float("nan"), "3"]) == [1.0, 2.5]


def test_a_line_through_exact_points_is_found_exactly():
    fit = stats.fit_line([0.0, 1.0, 2.0, 3.0], [1.0, 3.0, 5.0, 7.0])
    assert (fit.slope, fit.intercept, fit.r2, fit.n) == (pytest.approx(2.0), pytest.approx(1.0), pytest.approx(1.0), 4)
    assert stats.fit_line([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]) is None  # x does not vary


def test_the_fitted_ttft_slope_recovers_a_known_prefill_rate():
    # 250 tok/s of prefill = 4 ms per prompt token, on top of 80 ms of fixed overhead, with noise.
    fit = stats.ttft_fit(known_prefill_rows())
    assert fit["prefill_tps"] == pytest.approx(250, rel=0.02)
    assert fit["slope_ms_per_token"] == pytest.approx(4.0, rel=0.02)
    assert fit["intercept_ms"] == pytest.approx(80, abs=15)
    assert fit["r2"] > 0.99


def test_the_ttft_fit_leaves_out_cold_requests_and_cached_prefixes():
    rows = [done_row(i, prompt=100 * i, ttft=50 + 2.0 * 100 * i) for i in range(1, 6)]
    rows.append(done_row(9, prompt=300, ttft=1500.0, cold=True))  # a model load, not prefill
    rows.append(done_row(10, prompt=900, cached_tokens=600, ttft=50 + 2.0 * 300))  # only 300 computed
    fit = stats.ttft_fit(rows)
    assert fit["slope_ms_per_token"] == pytest.approx(2.0)
    assert fit["intercept_ms"] == pytest.approx(50)
    assert fit["n"] == 6


def test_the_fit_needs_prompts_of_different_lengths():
    assert stats.ttft_fit([done_row(i, prompt=40, ttft=100.0 + i) for i in range(5)]) is None
    assert stats.fit_line([1.0], [2.0]) is None


def test_the_fit_needs_three_warm_requests():
    rows = [done_row(1, prompt=10, ttft=50.0), done_row(2, prompt=20, ttft=70.0)]
    assert stats.ttft_fit(rows) is None


def test_a_ttft_that_falls_with_prompt_length_gives_no_prefill_rate():
    rows = [done_row(i, prompt=10 * i, ttft=500.0 - i) for i in range(1, 6)]
    assert stats.ttft_fit(rows)["prefill_tps"] is None


def test_a_cached_prefix_costs_no_prefill_and_unknown_prompts_are_left_out():
    assert stats.evaluated_tokens({"prompt_tokens": 900, "cached_tokens": 600}) == 300
    assert stats.evaluated_tokens({"prompt_tokens": 90, "cached_tokens": None}) == 90
    assert stats.evaluated_tokens({"prompt_tokens": None}) is None
    warm, cold = stats.ttft_points(
        [
            done_row(1, prompt=10, ttft=50.0),
            done_row(2, prompt=10, ttft=900.0, cold=True),
            {**done_row(3, prompt=10, ttft=50.0), "ttft_ms": None},
            done_row(4, prompt=None, ttft=50.0),
        ]
    )
    assert [r["id"] for r in warm] == [1] and [r["id"] for r in cold] == [2]


def test_the_ceilings_follow_from_the_probe_figures():
    got = stats.ceilings(bandwidth_gbs=25.0, gflops=150.0, model_bytes=250_000_000, n_params=300_000_000)
    assert got["decode_tps"] == pytest.approx(100.0)  # 25e9 B/s / 250e6 B per token
    assert got["prefill_tps"] == pytest.approx(250.0)  # 150e9 FLOP/s / (2 x 300e6 FLOP per token)
    assert stats.ceilings(bandwidth_gbs=None, gflops=150.0, model_bytes=None, n_params=300_000_000) == {
        "decode_tps": None,
        "prefill_tps": 250.0,
    }


def test_the_why_numbers_compare_finished_requests_medians_with_the_ceilings():
    rows = [done_row(i, prompt=50, ttft=200.0, prompt_tps=300.0, output_tps=71.0) for i in range(5)]
    rows.append({**done_row(9, prompt=50, ttft=200.0, prompt_tps=1.0, output_tps=1.0), "status": "error"})
    info = stats.why_numbers(rows=rows, model_bytes=250_000_000, n_params=300_000_000, bandwidth_gbs=25.0, gflops=150.0)
    assert info["done"] == 5
    assert (info["prefill_tps"], info["decode_tps"]) == (300.0, 71.0)
    assert info["decode_pct"] == pytest.approx(71.0) and info["prefill_pct"] == pytest.approx(120.0)
    empty = stats.why_numbers(rows=[], model_bytes=None, n_params=None, bandwidth_gbs=None, gflops=None)
    assert empty["decode_pct"] is None and empty["ratio"] is None and empty["done"] == 0


def test_itl_histogram_counts_every_gap_once_in_log_bins():
    rng = random.Random(3)
    values = [rng.lognormvariate(3, 0.3) for _ in range(500)] + [2000.0, 0.5]
    edges, counts = stats.itl_histogram(values)
    assert sum(counts) == len(values)
    assert len(edges) == len(counts) + 1
    assert edges[0] <= min(values) and edges[-1] >= max(values)
    assert stats.itl_histogram([]) == ([], [])


def test_the_summary_takes_medians_over_finished_requests():
    rows = [done_row(i, prompt=50, ttft=100.0 * i, prompt_tps=300.0, output_tps=60.0) for i in range(1, 6)]
    rows.append({**done_row(9, prompt=50, ttft=9999.0), "status": "error"})
    got = stats.summary(rows)
    assert got["requests"] == 6 and got["done"] == 5
    assert got["ttft_p50_ms"] == 300.0
    assert got["ratio_p50"] == pytest.approx(5.0)
    assert got["speech_first_p50_ms"] is None and got["speech_readings"] == 0


def test_the_summary_takes_the_median_time_to_first_audio_of_answers_read_aloud():
    rows = [{**done_row(i, prompt=50, ttft=100.0), "speech_first_ms": 200.0 * i} for i in range(1, 4)]
    rows.append(done_row(9, prompt=50, ttft=100.0))
    got = stats.summary(rows)
    assert got["speech_first_p50_ms"] == 400.0 and got["speech_readings"] == 3


def test_phase_segments_are_contiguous_and_sum_to_the_answer_time():
    row = done_row(1, prompt=100, ttft=400.0, load_ms=1200.0, queue_ms=30.0)
    segments = stats.phase_segments(row)
    assert [s[0] for s in segments] == ["queue", "load", "prefill", "decode"]
    for (_, start, ms), (_, next_start, _) in zip(segments, segments[1:], strict=False):
        assert next_start == pytest.approx(start + ms / 1000)
    assert sum(ms for *_, ms in segments) == pytest.approx(30 + 1200 + 390 + 5 + 200)


def test_an_answer_drawn_from_documents_has_its_retrieve_segment_after_the_queue():
    row = {**done_row(1, prompt=100, ttft=400.0, queue_ms=30.0), "retrieve_ms": 12.0}
    segments = stats.phase_segments(row)
    assert [s[0] for s in segments] == ["queue", "retrieve", "load", "prefill", "decode"]
    assert segments[1][1:] == (pytest.approx(row["t_arrive"] + 0.030), 12.0)


def test_a_request_that_never_ran_still_shows_on_the_timeline():
    row = {"id": 3, "t_arrive": T0, "t_end": T0 + 2.5, "ttft_ms": None, "queue_ms": None, "status": "cancelled"}
    assert stats.phase_segments(row) == [("other", T0, 2500.0)]


def test_a_request_still_in_flight_has_no_segments_of_the_servers():
    row = {"id": 4, "t_arrive": T0, "t_end": None, "ttft_ms": None, "queue_ms": None, "status": "running"}
    assert stats.phase_segments(row) == []


def test_the_timeline_keeps_only_requests_near_the_newest():
    rows = [done_row(1, prompt=50, ttft=100.0, t_arrive=T0 - 3600), done_row(2, prompt=50, ttft=100.0)]
    assert [r["id"] for r in stats.timeline_rows(rows)] == [2]


def test_the_timeline_shows_at_most_its_row_limit_newest_first():
    rows = [done_row(i, prompt=50, ttft=100.0) for i in range(stats.TIMELINE_ROWS + 5)]
    shown = stats.timeline_rows(rows)
    assert len(shown) == stats.TIMELINE_ROWS and shown[0]["id"] == stats.TIMELINE_ROWS + 4
    assert stats.timeline_rows([]) == []


def test_interference_needs_a_decode_to_interfere_with():
    row = done_row(1, prompt=5, ttft=10.0, token_times_ms=[10.0])
    assert stats.interference_spans(row, [{"t": T0 + 1.0, "ms": 5.0, "prefill": 8, "seqs": [1]}]) == []
