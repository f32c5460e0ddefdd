from __future__ import annotations

import pytest

from inference.engine.timing import NS_PER_MS, PHASES, PhaseClock, phase_ms

MS = NS_PER_MS


def test_the_phases_add_up_to_end_to_end_and_rates_follow_their_definitions():
    clock = PhaseClock(t_arrive=0, load_ns=300 * MS)
    clock.mark_prefill_chunk(350 * MS, 400 * MS)  # 50 ms queue before the load
    clock.mark_prefill_chunk(400 * MS, 500 * MS)
    for t in (502, 522, 542, 572):
        clock.mark_token(t * MS)
    m = clock.metrics(prompt_tokens=130, cached_tokens=30)
    assert m["queue_ms"] == 50 and m["load_ms"] == 300 and m["prefill_ms"] == 150
    assert m["first_token_ms"] == 2 and m["decode_ms"] == 70
    assert m["queue_ms"] + m["load_ms"] + m["prefill_ms"] + m["first_token_ms"] + m["decode_ms"] == m["e2e_ms"] == 572
    assert m["ttft_ms"] == 502
    assert m["itl_ms"] == [20, 20, 30]
    assert m["tpot_ms"] == pytest.approx(70 / 3)
    assert m["output_tps"] == pytest.approx(3 / 0.070)
    assert m["prompt_tps"] == pytest.approx(100 / 0.150)  # the cached prefix is not counted
    assert m["cold"] is True


def test_the_retrieve_phase_is_its_own_and_not_queue_time():
    clock = PhaseClock(t_arrive=0, retrieve_ns=30 * MS)  # the search, before the engine had it
    clock.mark_prefill_chunk(100 * MS, 150 * MS)
    clock.mark_token(160 * MS)
    m = clock.metrics(prompt_tokens=10, cached_tokens=0)
    assert (m["queue_ms"], m["retrieve_ms"], m["prefill_ms"]) == (70, 30, 50)
    assert m["queue_ms"] + m["retrieve_ms"] + m["prefill_ms"] + m["first_token_ms"] + m["decode_ms"] == m["e2e_ms"]
    assert phase_ms(m)["retrieve"] == 30
    assert PhaseClock(t_arrive=0).metrics(prompt_tokens=0, cached_tokens=0)["retrieve_ms"] is None


def test_a_worker_clock_ahead_of_the_web_clock_never_gives_a_negative_queue():
    clock = PhaseClock(t_arrive=1_000 * MS)  # "arrived" after the prefill started
    clock.mark_prefill_chunk(900 * MS, 950 * MS)
    clock.mark_token(960 * MS)
    m = clock.metrics(prompt_tokens=10, cached_tokens=0)
    assert m["queue_ms"] == 0
    assert m["e2e_ms"] == pytest.approx(m["prefill_ms"] + m["first_token_ms"] + m["decode_ms"])


def test_an_answer_with_no_tokens_ends_when_the_end_of_turn_is_sampled():
    clock = PhaseClock(t_arrive=0)
    clock.mark_prefill_chunk(10 * MS, 20 * MS)
    clock.t_end = 25 * MS
    m = clock.metrics(prompt_tokens=10, cached_tokens=0)
    assert m["output_tokens"] == 0 and m["ttft_ms"] == 25 and m["e2e_ms"] == 25
    assert m["output_tps"] is None and m["tpot_ms"] is None


def test_phase_ms_puts_the_first_token_in_decode_and_never_goes_negative():
    metrics = {"queue_ms": 5.0, "load_ms": None, "prefill_ms": 90.0, "first_token_ms": 7.0, "decode_ms": -1.0}
    assert phase_ms(metrics) == {"queue": 5.0, "retrieve": 0.0, "load": 0.0, "prefill": 90.0, "decode": 6.0}
    assert list(phase_ms(metrics)) == [phase for phase in PHASES if phase != "tool"]  # no tool call
    assert list(phase_ms({**metrics, "tool_ms": 12.5})) == list(PHASES)
