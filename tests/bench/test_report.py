"""The benchmark reports: the engine's two bounds are computed against the same run's rows, and the
helpers both reports share."""

from __future__ import annotations

import json

import pytest

from bench import engine, report


def _row(policy, *, ttft, p99, steady=30.0, budget=None, factor=None):
    return {
        "policy": policy,
        "budget": budget,
        "target_ms": None,
        "stall_factor": factor,
        "doc_ttft_ms": ttft,
        "doc_prefill_steps": 3,
        "doc_token_ms": 2.0,
        "chat_itl_steady_p50_ms": steady,
        "chat_itl_p50_ms": p99 and p99 * 0.8,
        "chat_itl_p99_ms": p99,
        "chat_itl_max_ms": p99,
    }


RESULT = {
    "model": "m.gguf",
    "throughput": [],
    "interference": [
        _row("serial", ttft=12000.0, p99=None),
        _row("continuous", ttft=3000.0, p99=1200.0),
        _row("chunked", ttft=5400.0, p99=84.0, budget=24),
        _row("chunked", ttft=6600.0, p99=72.0, factor=2.0),
    ],
    "question": [
        {"policy": "continuous", "stall_factor": None, "question_ttft_ms": 5000.0, "doc_ttft_ms": 5900.0},
        {"policy": "chunked", "stall_factor": 2.0, "question_ttft_ms": 1700.0, "doc_ttft_ms": 5500.0},
    ],
    "slices": [
        {
            "slice": 16,
            "steps": 96,
            "prompt_tokens": 1525,
            "ms_per_token": 2.5,
            "ms_per_token_first_quarter": 2.0,
            "ms_per_token_last_quarter": 3.0,
        }
    ],
}


def test_each_row_is_measured_against_continuous_and_its_own_undisturbed_pace():
    got = {x["label"]: (x["stall"], x["ttft"]) for x in engine.ratios(RESULT)}
    assert got["continuous"] == pytest.approx((40.0, 1.0))
    assert got["chunked, 24 tokens"] == pytest.approx((2.8, 1.8))
    assert got["chunked, 2x stall"] == pytest.approx((2.4, 2.2))
    assert got["serial"][0] is None  # serial never interleaves: no gap to measure


def test_the_report_names_every_setting_and_writes_its_files(tmp_path):
    table = engine.markdown(RESULT)
    assert "| chunked, 24 tokens | 30 | 67 / 84 / 84 | 2.8 | 5,400 | 1.80 |" in table
    assert "| 16 | 96 | 2.50 | 2.00 | 3.00 |" in table
    assert "| chunked (2x stall) | 1,700 | 5,500 |" in table
    json_path, html_path = engine.write_outputs(RESULT, tmp_path)
    assert json.loads(json_path.read_text())["interference"][2]["budget"] == 24
    assert "2x stall" in html_path.read_text()


def test_the_shared_helpers_format_tables_and_missing_values():
    assert report.table(("a", "b"), [(1, report.num(1234.5, 1)), ("x", report.num(None))]) == [
        "| a | b |",
        "|---|---|",
        "| 1 | 1,234.5 |",
        "| x | – |",
    ]
    assert report.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0 and report.percentile([], 99) is None
    assert {"platform", "processor", "threads"} <= report.machine(threads=2).keys()
