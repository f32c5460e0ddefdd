"""The dashboard's maths and figure builders, checked against synthetic data with known answers."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dashboard import charts

T0 = 1_800_000_000.0  # an epoch second; the figures draw it in UTC unless told a zone


def done_row(i: int, *, prompt: int, ttft: float, **extra) -> dict:
    row = {
        "id": i,
        "username": "alice",
        "model": "m.gguf",
        "status": "done",
        "t_arrive": T0 + i,
        "t_end": T0 + i + 1,
        "queue_ms": 5.0,
        "load_ms": 0.0,
        "prefill_ms": ttft - 10,
        "first_token_ms": 5.0,
        "decode_ms": 200.0,
        "ttft_ms": ttft,
        "prompt_tokens": prompt,
        "cached_tokens": 0,
        "output_tokens": 11,
        "prompt_tps": 300.0,
        "output_tps": 50.0,
        "cold": False,
        "token_times_ms": [ttft + 20.0 * k for k in range(11)],
        "itl_ms": [20.0] * 10,
    }
    row.update(extra)
    return row


@pytest.mark.parametrize("q", [0, 1, 25, 50, 90, 99, 100])
def test_percentiles_match_numpy(q):
    rng = random.Random(q)
    values = [rng.lognormvariate(3, 1) for _ in range(997)]
    assert charts.percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)


def test_percentiles_ignore_missing_values_and_say_none_for_nothing():
    assert charts.percentile([None, 3.0, float("nan"), 1.0, 2.0], 50) == 2.0
    assert charts.percentile([], 50) is None
    assert charts.median([None]) is None


def test_the_fitted_ttft_slope_recovers_a_known_prefill_rate():
    # 250 tok/s of prefill = 4 ms per prompt token, on top of 80 ms of fixed overhead, with noise.
    rng = random.Random(7)
    rows = []
    for i in range(60):
        prompt = rng.randint(10, 1500)
        rows.append(done_row(i, prompt=prompt, ttft=80 + 4.0 * prompt + rng.gauss(0, 15)))
    fit = charts.ttft_fit(rows)
    assert fit["prefill_tps"] == pytest.approx(250, rel=0.02)
    assert fit["slope_ms_per_token"] == pytest.approx(4.0, rel=0.02)
    assert fit["intercept_ms"] == pytest.approx(80, abs=15)
    assert fit["r2"] > 0.99
    assert "ms" in fit["text"] and "tok/s" in fit["text"]


def test_the_ttft_fit_leaves_out_cold_requests_and_cached_prefixes():
    rows = [done_row(i, prompt=100 * i, ttft=50 + 2.0 * 100 * i) for i in range(1, 6)]
    rows.append(done_row(9, prompt=300, ttft=1500.0, cold=True))  # a model load, not prefill
    rows.append(done_row(10, prompt=900, cached_tokens=600, ttft=50 + 2.0 * 300))  # only 300 computed
    fit = charts.ttft_fit(rows)
    assert fit["slope_ms_per_token"] == pytest.approx(2.0)
    assert fit["intercept_ms"] == pytest.approx(50)
    assert fit["n"] == 6


def test_the_fit_needs_prompts_of_different_lengths():
    assert charts.ttft_fit([done_row(i, prompt=40, ttft=100.0 + i) for i in range(5)]) is None
    assert charts.fit_line([1.0], [2.0]) is None


def test_the_ceilings_follow_from_the_probe_figures():
    got = charts.ceilings(bandwidth_gbs=25.0, gflops=150.0, model_bytes=250_000_000, n_params=300_000_000)
    assert got["decode_tps"] == pytest.approx(100.0)  # 25e9 B/s / 250e6 B per token
    assert got["prefill_tps"] == pytest.approx(250.0)  # 150e9 FLOP/s / (2 x 300e6 FLOP per token)
    assert charts.ceilings(bandwidth_gbs=None, gflops=150.0, model_bytes=None, n_params=300_000_000) == {
        "decode_tps": None,
        "prefill_tps": 250.0,
    }


def test_the_why_panel_states_the_measured_share_of_each_ceiling_in_numbers():
    rows = [done_row(i, prompt=50, ttft=200.0, prompt_tps=300.0, output_tps=71.0) for i in range(5)]
    info = charts.why(
        rows=rows, model_bytes=250_000_000, n_params=300_000_000, bandwidth_gbs=25.0, gflops=150.0, hardware="box"
    )
    assert info["decode_pct"] == pytest.approx(71.0)
    assert info["prefill_pct"] == pytest.approx(120.0)
    assert info["ratio"] == pytest.approx(300 / 71)
    text = " ".join(info["sentences"])
    assert "71%" in text and "memory-bound" in text
    assert "≈100 tok/s" in text and "≈250 tok/s" in text and "25.0 GB/s" in text and "150 GFLOP/s" in text
    assert "4.2× faster" in text


def test_the_why_panel_says_what_is_missing_instead_of_guessing():
    info = charts.why(rows=[], model_bytes=None, n_params=None, bandwidth_gbs=None, gflops=None)
    assert info["decode_ceiling_tps"] is None and info["prefill_ceiling_tps"] is None
    text = " ".join(info["sentences"])
    assert "probe" in text and "loaded" in text


def test_itl_histogram_counts_every_gap_once_in_log_bins():
    rng = random.Random(3)
    values = [rng.lognormvariate(3, 0.3) for _ in range(500)] + [2000.0, 0.5]
    edges, counts = charts.itl_histogram(values)
    assert sum(counts) == len(values)
    assert len(edges) == len(counts) + 1
    assert edges[0] <= min(values) and edges[-1] >= max(values)
    assert charts.itl_histogram([]) == ([], [])


def test_phase_segments_are_contiguous_and_sum_to_the_answer_time():
    row = done_row(1, prompt=100, ttft=400.0, load_ms=1200.0, queue_ms=30.0)
    segments = charts.phase_segments(row)
    assert [s[0] for s in segments] == ["queue", "load", "prefill", "decode"]
    for (_, start, ms), (_, next_start, _) in zip(segments, segments[1:], strict=False):
        assert next_start == pytest.approx(start + ms / 1000)
    assert sum(ms for *_, ms in segments) == pytest.approx(30 + 1200 + 390 + 5 + 200)


def test_a_request_that_never_ran_still_shows_on_the_timeline():
    row = {"id": 3, "t_arrive": T0, "t_end": T0 + 2.5, "ttft_ms": None, "queue_ms": None, "status": "cancelled"}
    assert charts.phase_segments(row) == [("other", T0, 2500.0)]


def test_the_timeline_has_one_row_per_request_newest_first():
    rows = [done_row(i, prompt=50, ttft=100.0) for i in range(1, 4)]
    fig = charts.timeline_figure(rows)
    assert fig.layout.yaxis.categoryarray == ("#3 alice", "#2 alice", "#1 alice")
    by_phase = {t.meta: t for t in fig.data}
    assert set(by_phase) == {"queue", "load", "prefill", "decode"}
    assert list(by_phase["prefill"].customdata) == [3, 2, 1]
    assert by_phase["queue"].base[2] == "2027-01-15 08:00:01.000"  # T0 + 1 s, UTC
    assert by_phase["decode"].x[0] == pytest.approx(205.0)


def test_the_timeline_keeps_only_requests_near_the_newest():
    rows = [done_row(1, prompt=50, ttft=100.0, t_arrive=T0 - 3600), done_row(2, prompt=50, ttft=100.0)]
    assert [r["id"] for r in charts.timeline_rows(rows)] == [2]


def test_the_throughput_chart_has_both_rates_and_their_ratio_per_request():
    rows = [done_row(i, prompt=50, ttft=100.0, prompt_tps=300.0 + i, output_tps=50.0) for i in range(3)]
    fig = charts.throughput_figure(rows)
    traces = {t.meta: t for t in fig.data}
    assert list(traces["prompt_tps"].y) == [300.0, 301.0, 302.0]
    assert list(traces["output_tps"].y) == [50.0] * 3
    assert list(traces["ratio"].y) == pytest.approx([6.0, 6.02, 6.04])


def test_the_itl_chart_marks_p50_p90_and_p99():
    rows = [done_row(1, prompt=50, ttft=100.0, itl_ms=[float(v) for v in range(1, 101)])]
    fig = charts.itl_figure(rows)
    marks = [s.x0 for s in fig.layout.shapes]
    assert marks == pytest.approx([np.percentile(range(1, 101), q) for q in (50, 90, 99)])
    assert [a.text.split()[0] for a in fig.layout.annotations] == ["p50", "p90", "p99"]


def test_the_token_timeline_shades_only_other_requests_prefill_during_this_decode():
    row = done_row(7, prompt=50, ttft=100.0)  # tokens from T0+7.100 s to T0+7.300 s
    start = row["t_arrive"]
    steps = [
        {"t": start + 0.050, "ms": 40.0, "prefill": 50, "decode": 0, "seqs": [7]},  # its own prefill
        {"t": start + 0.150, "ms": 30.0, "prefill": 64, "decode": 1, "seqs": [7, 8]},  # someone else's prompt
        {"t": start + 0.181, "ms": 30.0, "prefill": 64, "decode": 1, "seqs": [7, 8]},  # touching: merged
        {"t": start + 0.250, "ms": 20.0, "prefill": 0, "decode": 2, "seqs": [7, 8]},  # decode only
        {"t": start + 0.260, "ms": 20.0, "prefill": 32, "decode": 1, "seqs": [9]},  # another worker
    ]
    spans = charts.interference_spans(row, steps)
    assert spans == [(pytest.approx(start + 0.150), pytest.approx(start + 0.211), 128)]
    fig = charts.token_timeline_figure(row, steps)
    first_token, shading = fig.layout.shapes
    assert first_token.type == "line" and shading.type == "rect"
    assert list(fig.data[0].y) == [20.0] * 10  # the gaps; the first token's wait is the marked line
    assert "TTFT 100 ms" in fig.layout.annotations[0].text


def test_token_text_in_hover_labels_is_escaped():
    row = done_row(1, prompt=5, ttft=10.0, token_times_ms=[10.0, 20.0], itl_ms=[10.0], token_texts=["<b>", "\n"])
    fig = charts.token_timeline_figure(row, [])
    assert list(fig.data[0].text) == ["\\n"]
    assert fig.layout.annotations[0].text.endswith("&lt;b&gt;")


def test_the_steps_chart_splits_prompt_and_decode_tokens():
    steps = [
        {"t": T0 + k * 0.02, "ms": 20.0 + k, "prefill": 16 * (k % 2), "decode": 3, "seqs": [1], "policy": policy}
        for k, policy in enumerate(["chunked"] * 3 + ["continuous"] * 3)
    ]
    fig = charts.steps_figure(steps)
    traces = {t.meta: t for t in fig.data}
    assert list(traces["prefill"].y) == [0, 16, 0, 16, 0, 16]
    assert list(traces["decode"].y) == [3] * 6
    assert list(traces["ms"].y) == [20.0, 21.0, 22.0, 23.0, 24.0, 25.0]
    assert list(traces["ms"].customdata) == ["chunked"] * 3 + ["continuous"] * 3  # which schedule ran it


def test_the_summary_takes_medians_over_finished_requests():
    rows = [done_row(i, prompt=50, ttft=100.0 * i, prompt_tps=300.0, output_tps=60.0) for i in range(1, 6)]
    rows.append({**done_row(9, prompt=50, ttft=9999.0), "status": "error"})
    got = charts.summary(rows)
    assert got["requests"] == 6 and got["done"] == 5
    assert got["ttft_p50_ms"] == 300.0
    assert got["ratio_p50"] == pytest.approx(5.0)


def test_log_axes_get_readable_one_two_five_labels():
    ticks = charts.log_ticks([15.0, 60.0])
    assert ticks["tickvals"][:3] == [1.0, 2.0, 5.0]
    assert {"20", "50", "100", "1k"} <= set(ticks["ticktext"])
    assert charts.log_ticks([None]) == {}


def test_a_weak_ttft_fit_says_so():
    # Queueing (here alternating 0 and 2 s) dwarfs what prompt length adds.
    rows = [done_row(i, prompt=10 + i, ttft=100 + 2000 * (i % 2) + 3 * i) for i in range(8)]
    assert "read the slope with care" in charts.ttft_fit(rows)["text"]
