"""The dashboard's Plotly figures (dashboard.latency.figures) and their registry, from synthetic rows."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.latency import figures, stats, text
from tests.dashboard.latency.rows import T0, done_row


def test_the_timeline_has_one_row_per_request_newest_first():
    rows = [done_row(i, prompt=50, ttft=100.0) for i in range(1, 4)]
    fig = figures.timeline_figure(rows)
    assert fig.layout.yaxis.categoryarray == ("#3 alice", "#2 alice", "#1 alice")
    by_phase = {t.meta: t for t in fig.data}
    assert set(by_phase) == {"queue", "load", "prefill", "decode"}
    assert list(by_phase["prefill"].customdata) == [3, 2, 1]
    assert by_phase["queue"].base[2] == "2027-01-15 08:00:01.000"  # T0 + 1 s, UTC
    assert by_phase["decode"].x[0] == pytest.approx(205.0)


def test_the_timeline_draws_a_request_that_never_ran_as_unfinished():
    cancelled = {"id": 5, "username": "bob", "t_arrive": T0, "t_end": T0 + 2.0, "ttft_ms": None, "queue_ms": None}
    fig = figures.timeline_figure([done_row(1, prompt=50, ttft=100.0), cancelled])
    other = next(t for t in fig.data if t.meta == stats.OTHER)
    assert list(other.customdata) == [5] and other.name == text.PHASE_LABELS[stats.OTHER]
    assert fig.layout.height == figures.timeline_height(2)


def test_the_timeline_config_is_what_the_page_needs_to_grow_bars_like_the_server():
    config = figures.timeline_config()
    assert config["phases"] == list(stats.PHASES)
    assert (config["rows"], config["window_s"]) == (stats.TIMELINE_ROWS, stats.TIMELINE_WINDOW_S)
    assert config["row_label"].format(id=3, username="alice") == text.row_label({"id": 3, "username": "alice"})
    size = config["height"]
    assert figures.timeline_height(0) == size["min"]
    assert figures.timeline_height(30) == size["base"] + 30 * size["per_row"]


def test_wall_clock_strings_are_in_the_given_zone_to_the_millisecond():
    assert figures.wall(T0 + 0.0125) == "2027-01-15 08:00:00.012"
    assert figures.wall(T0, timezone(timedelta(hours=2))) == "2027-01-15 10:00:00.000"


def test_the_throughput_chart_has_both_rates_and_their_ratio_per_request():
    rows = [done_row(i, prompt=50, ttft=100.0, prompt_tps=300.0 + i, output_tps=50.0) for i in range(3)]
    fig = figures.throughput_figure(rows)
    traces = {t.meta: t for t in fig.data}
    assert list(traces["prompt_tps"].y) == [300.0, 301.0, 302.0]
    assert list(traces["output_tps"].y) == [50.0] * 3
    assert list(traces["ratio"].y) == pytest.approx([6.0, 6.02, 6.04])


def test_the_speculation_chart_shows_acceptance_and_tokens_per_step_of_answers_that_drafted():
    rows = [
        done_row(1, prompt=50, ttft=100.0, spec_drafted=40, spec_accepted=30, output_tokens=60, decode_steps=30),
        done_row(2, prompt=50, ttft=100.0, spec_drafted=0, spec_accepted=0, output_tokens=60, decode_steps=60),
        done_row(3, prompt=50, ttft=100.0, spec_drafted=10, spec_accepted=0, output_tokens=20, decode_steps=20),
    ]
    traces = {t.meta: t for t in figures.speculation_figure(rows).data}
    assert list(traces["acceptance"].customdata) == [1, 3]  # request 2 drafted nothing
    assert list(traces["acceptance"].y) == [75.0, 0.0]
    assert list(traces["tokens_per_step"].y) == [2.0, 1.0]


def test_the_ttft_chart_splits_warm_and_cold_and_draws_the_fit():
    rows = [done_row(i, prompt=100 * i, ttft=50 + 2.0 * 100 * i) for i in range(1, 6)]
    rows.append(done_row(9, prompt=300, ttft=1500.0, cold=True))
    fig = figures.ttft_figure(rows, text.explained_fit(rows))
    warm, cold, line = fig.data
    assert list(warm.x) == [100, 200, 300, 400, 500] and list(cold.customdata) == [9]
    assert list(line.y) == pytest.approx([50.0, 50 + 2.0 * 500])
    assert line.name.startswith("Fit: 2.00 ms/token")
    assert len(figures.ttft_figure(rows[:2]).data) == 1  # no cold points, no fit: warm points only


def test_the_itl_chart_marks_p50_p90_and_p99():
    rows = [done_row(1, prompt=50, ttft=100.0, itl_ms=[float(v) for v in range(1, 101)])]
    fig = figures.itl_figure(rows)
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
    spans = stats.interference_spans(row, steps)
    assert spans == [(pytest.approx(start + 0.150), pytest.approx(start + 0.211), 128)]
    fig = figures.token_timeline_figure(row, steps)
    first_token, shading = fig.layout.shapes
    assert first_token.type == "line" and shading.type == "rect"
    assert list(fig.data[0].y) == [20.0] * 10  # the gaps; the first token's wait is the marked line
    assert "TTFT 100 ms" in fig.layout.annotations[0].text


def test_token_text_in_hover_labels_is_escaped():
    row = done_row(1, prompt=5, ttft=10.0, token_times_ms=[10.0, 20.0], itl_ms=[10.0], token_texts=["<b>", "\n"])
    fig = figures.token_timeline_figure(row, [])
    assert list(fig.data[0].text) == ["\\n"]
    assert fig.layout.annotations[0].text.endswith("&lt;b&gt;")


def test_the_steps_chart_splits_prompt_and_decode_tokens():
    steps = [
        {"t": T0 + k * 0.02, "ms": 20.0 + k, "prefill": 16 * (k % 2), "decode": 3, "seqs": [1], "policy": policy}
        for k, policy in enumerate(["chunked"] * 3 + ["continuous"] * 3)
    ]
    fig = figures.steps_figure(steps)
    traces = {t.meta: t for t in fig.data}
    assert list(traces["prefill"].y) == [0, 16, 0, 16, 0, 16]
    assert list(traces["decode"].y) == [3] * 6
    assert list(traces["ms"].y) == [20.0, 21.0, 22.0, 23.0, 24.0, 25.0]
    assert list(traces["ms"].customdata) == ["chunked"] * 3 + ["continuous"] * 3  # which schedule ran it
    assert list(traces["predicted_ms"].y) == [None] * 6  # records without a prediction: no points


def test_the_steps_chart_sets_the_predicted_step_time_beside_the_measured_one():
    steps = [
        {"t": T0, "ms": 18.0, "step_ms": 20.0, "predicted_ms": 21.5, "prefill": 16, "decode": 3, "seqs": [1]},
        {"t": T0 + 0.02, "ms": 19.0, "step_ms": 21.0, "predicted_ms": None, "prefill": 0, "decode": 3, "seqs": [1]},
    ]
    traces = {t.meta: t for t in figures.steps_figure(steps).data}
    assert list(traces["ms"].y) == [20.0, 21.0]  # the whole step, as the cost model learns it
    assert list(traces["predicted_ms"].y) == [21.5, None]
    assert traces["predicted_ms"].name == "Predicted step time"


def test_the_why_chart_sets_each_measured_rate_beside_its_ceiling():
    rows = [done_row(i, prompt=50, ttft=200.0, prompt_tps=300.0, output_tps=71.0) for i in range(5)]
    why = text.why(rows=rows, model_bytes=250_000_000, n_params=300_000_000, bandwidth_gbs=25.0, gflops=150.0)
    measured, ceiling = figures.why_figure(why).data
    assert list(measured.y) == ["Decode", "Prefill"] and list(measured.x) == [71.0, 300.0]
    assert list(ceiling.x) == pytest.approx([100.0, 250.0])
    assert list(ceiling.text) == ["≈100 tok/s ceiling", "≈250 tok/s ceiling"]


def test_log_axes_get_readable_one_two_five_labels():
    ticks = figures.log_ticks([15.0, 60.0])
    assert ticks["tickvals"][:3] == [1.0, 2.0, 5.0]
    assert {"20", "50", "100", "1k"} <= set(ticks["ticktext"])
    assert figures.log_ticks([None]) == {}


# --- the registry the dashboard draws from -------------------------------------------------------------


def _inputs(rows: list[dict]) -> dict:
    chosen = rows[-1] if rows else None
    why = text.why(rows=rows, model_bytes=None, n_params=None, bandwidth_gbs=None, gflops=None)
    return {"rows": rows, "steps": [], "fit": text.explained_fit(rows), "why": why, "row": chosen, "row_steps": []}


def test_every_registered_figure_builds_from_the_dashboards_inputs():
    rows = [done_row(i, prompt=50 * i, ttft=40.0 + 2 * 50 * i) for i in range(1, 6)]
    built = figures.build({**_inputs(rows), "tz": UTC})
    assert list(built) == list(figures.FIGURES)
    assert {"timeline", "throughput", "speculation", "ttft", "itl", "tokens", "steps", "why"} <= set(built)
    assert all(isinstance(fig["data"], list) and "layout" in fig for fig in built.values())
    assert built["tokens"] == figures.token_timeline_figure(rows[-1], []).to_plotly_json()


def test_every_registered_figure_builds_for_an_empty_range():
    built = figures.build(_inputs([]))
    assert set(built) == set(figures.FIGURES)


def test_build_can_draw_only_the_named_figures():
    row = done_row(1, prompt=5, ttft=10.0)
    assert list(figures.build({"row": row, "row_steps": []}, ["tokens"])) == ["tokens"]


def test_a_new_chart_is_one_registered_function(monkeypatch):
    monkeypatch.setattr(figures, "FIGURES", dict(figures.FIGURES))

    @figures.figure("example_queue_chart")
    def queue_figure(rows):
        return go.Figure(go.Bar(x=[r["id"] for r in rows], y=[r["queue_ms"] for r in rows]))

    built = figures.build(_inputs([done_row(1, prompt=5, ttft=10.0)]))
    assert built["example_queue_chart"]["data"][0]["y"] == [5.0]


def test_the_registry_refuses_unknown_inputs_and_a_second_figure_of_one_name(monkeypatch):
    monkeypatch.setattr(figures, "FIGURES", dict(figures.FIGURES))
    with pytest.raises(TypeError, match="user"):
        figures.figure("mine")(lambda rows, user: go.Figure())
    with pytest.raises(ValueError, match="ttft"):
        figures.figure("ttft")(lambda rows: go.Figure())
