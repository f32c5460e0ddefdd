"""The dashboard's words (dashboard.latency.text): formats, labels and the sentences about the numbers."""

from __future__ import annotations

import pytest

from dashboard.latency import stats, text
from tests.dashboard.latency.rows import done_row, known_prefill_rows


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (None, "–"),
        (0, "0 ms"),
        (4.26, "4.3 ms"),
        (-3.0, "-3.0 ms"),
        (412.25, "412 ms"),
        (1234.0, "1.23 s"),
        (12_345.0, "12.3 s"),
    ],
)
def test_durations_read_like_the_pages_fmtMs(ms, shown):
    # static/js/common.js HomeAI.fmtMs uses the same steps.
    assert text.fmt_ms(ms) == shown


def test_rates_bytes_and_counts_are_short_and_readable():
    assert [text.fmt_rate(r) for r in (None, 7.26, 250.0, 12_345.6)] == ["–", "7.3", "250", "12,346"]
    assert [text.fmt_bytes(n) for n in (None, 512, 253_000_000, 2.5e9, 150e9)] == [
        "–",
        "512 B",
        "253 MB",
        "2.5 GB",
        "150 GB",
    ]
    assert [text.fmt_count(n) for n in (None, 950, 268_000_000, 1.5e9)] == ["–", "950", "268 million", "1.5 billion"]


def test_a_timeline_row_is_labelled_by_id_and_user():
    assert text.row_label({"id": 7, "username": "alice"}) == "#7 alice"
    assert text.row_label({"id": 8, "username": None}) == "#8"
    assert text.ROW_LABEL.format(id=7, username="alice") == "#7 alice"  # the page fills the same pattern


def test_every_phase_has_a_label_in_order():
    assert [phase for phase, _ in text.phase_legend()] == list(stats.PHASES)
    assert set(text.PHASE_LABELS) == {*stats.PHASES, stats.OTHER}


def test_the_fit_text_gives_the_prefill_rate_and_the_fixed_part():
    fit = text.explained_fit(known_prefill_rows())  # 250 tok/s of prefill on top of 80 ms
    assert fit["prefill_tps"] == pytest.approx(250, rel=0.02)
    assert "ms" in fit["text"] and "tok/s" in fit["text"]
    assert "about 25" in fit["text"] and "fixed" in fit["text"] and "R² = 1.00." in fit["text"]


def test_a_weak_ttft_fit_says_so():
    # Queueing (here alternating 0 and 2 s) dwarfs what prompt length adds.
    rows = [done_row(i, prompt=10 + i, ttft=100 + 2000 * (i % 2) + 3 * i) for i in range(8)]
    assert "read the slope with care" in text.explained_fit(rows)["text"]


def test_the_fit_text_says_when_the_fixed_part_or_the_slope_is_lost_in_noise():
    base = {"slope_ms_per_token": 2.0, "intercept_ms": -30.0, "prefill_tps": 500.0, "r2": 0.9, "n": 5}
    assert "lost in the noise" in text.fit_text(base) and "-30.0 ms" not in text.fit_text(base)
    flat = {**base, "slope_ms_per_token": -0.5, "intercept_ms": 800.0, "prefill_tps": None}
    assert "does not grow with prompt length" in text.fit_text(flat) and "800 ms" in text.fit_text(flat)
    assert text.explained_fit([]) is None


def test_the_why_panel_states_the_measured_share_of_each_ceiling_in_numbers():
    rows = [done_row(i, prompt=50, ttft=200.0, prompt_tps=300.0, output_tps=71.0) for i in range(5)]
    info = text.why(
        rows=rows, model_bytes=250_000_000, n_params=300_000_000, bandwidth_gbs=25.0, gflops=150.0, hardware="box"
    )
    assert info["decode_pct"] == pytest.approx(71.0)
    assert info["prefill_pct"] == pytest.approx(120.0)
    assert info["ratio"] == pytest.approx(300 / 71)
    text_ = " ".join(info["sentences"])
    assert "71%" in text_ and "memory-bound" in text_
    assert "≈100 tok/s" in text_ and "≈250 tok/s" in text_ and "25.0 GB/s" in text_ and "150 GFLOP/s" in text_
    assert "4.2× faster" in text_


def test_the_why_panel_says_what_is_missing_instead_of_guessing():
    info = text.why(rows=[], model_bytes=None, n_params=None, bandwidth_gbs=None, gflops=None)
    assert info["decode_ceiling_tps"] is None and info["prefill_ceiling_tps"] is None
    text_ = " ".join(info["sentences"])
    assert "probe" in text_ and "loaded" in text_


@pytest.mark.parametrize(
    ("pct", "decode", "prefill"),
    [
        (120, "caches", "integer"),
        (70, "memory-bound", "compute-bound"),
        (40, "rest of each step", "idle"),
        (10, "far below", "idle"),
    ],
)
def test_each_share_of_a_ceiling_gets_its_own_verdict(pct, decode, prefill):
    assert decode in text.decode_verdict(pct)
    assert prefill in text.prefill_verdict(pct)


STALL = {
    "mode": "stall",
    "stall_factor": 2.0,
    "n_decode": 3,
    "decode_ms": 41.5,
    "target_ms": 83.0,
    "prompt_token_ms": 1.27,
    "chunk": 33,
    "token_budget": 64,
}


@pytest.mark.parametrize(
    ("policy", "sizing", "says"),
    [
        ("continuous", None, "Policy continuous: a waiting prompt goes in whole"),
        ("serial", STALL, "Policy serial: one request at a time"),
        ("chunked", None, ""),
        ("chunked", {**STALL, "n_decode": 0}, "Policy chunked: nothing has been written yet"),
        ("chunked", {**STALL, "mode": "fixed"}, "fixed budget: 64 tokens a step, decodes first, so beside 3 answers"),
        (
            "chunked",
            STALL,
            "Policy chunked: with 3 answers being written, steps aim at 2× the 42 ms that 3 answers take alone "
            "(83 ms); a prompt token adds 1.3 ms beside them on this machine, "
            "so a long prompt goes in 33-token chunks.",
        ),
        ("chunked", {**STALL, "n_decode": 1}, "1 answer takes alone"),
        ("chunked", {**STALL, "mode": "target"}, "steps aim at 83 ms;"),
        ("chunked", {**STALL, "prompt_token_ms": None}, "first 33-token chunk measures what a prompt token costs"),
    ],
)
def test_the_sizing_text_says_how_a_long_prompt_is_scheduled(policy, sizing, says):
    got = text.sizing_text(policy, sizing)
    assert says in got if says else got == ""


def test_the_why_panel_counts_each_layers_cost_where_the_worker_measured_it():
    rows = [done_row(i, prompt=50, ttft=200.0, prompt_tps=300.0, output_tps=71.0) for i in range(5)]
    figures = {"model_bytes": 250_000_000, "n_params": 300_000_000, "bandwidth_gbs": 25.0, "gflops": 150.0}
    info = text.why(rows=rows, hardware="box", layers=18, layer_ms=0.05, **figures)
    text_ = " ".join(info["sentences"])
    # 250 MB at 25 GB/s is 10 ms a token; 18 layers at 0.05 ms add 0.9 ms: at most 1000 / 10.9.
    assert "18 layers" in text_ and "≈0.050 ms" in text_ and "0.9 ms a token" in text_
    assert f"≈{1000 / 10.9:.1f} tok/s" in text_
    without = " ".join(text.why(rows=rows, hardware="box", **figures)["sentences"])
    assert "layers" not in without
