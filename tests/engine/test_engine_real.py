"""The engine on the bundled base model (Gemma 3 270M), in process: batching, KV isolation, cancel, prefix reuse."""

from __future__ import annotations

import ctypes
import dataclasses
import queue
import threading
import time

import llama_cpp
import numpy as np
import pytest
from django.conf import settings

from inference import model_library
from inference.engine import engine as engine_module
from inference.engine.budget import StepCostModel, cells_attended
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, EngineEvent, FinalEvent, PhaseEvent, TokenEvent
from inference.engine.runner import Runner, RunnerConfig, sampler_chain
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns

pytestmark = [pytest.mark.integration]

N_SLOTS = 4
GREEDY = SamplingParams(max_tokens=12, temperature=0.0, repeat_penalty=1.0)
DOCUMENT = " ".join(f"Line {i}: the quick brown fox jumps over the lazy dog." for i in range(120))


def make_engine(
    policy: str,
    *,
    budget: int = 256,
    target_ms: float | None = None,
    stall_factor: float | None = None,
    arriving=None,
) -> Engine:
    runner = Runner(
        RunnerConfig(
            model_path=settings.BUNDLED_BASE_MODEL_PATH, n_ctx_seq=2048, n_slots=N_SLOTS, n_batch=512, n_threads=2
        )
    )
    scheduler = Scheduler(policy=policy, n_slots=N_SLOTS, n_batch=512, token_budget=budget)
    cost_model = StepCostModel(target_ms, stall_factor=stall_factor)
    return Engine(
        runner=runner, scheduler=scheduler, cost_model=cost_model, arriving=arriving, capture_first_logits=True
    )


def make_seq(seq_id: int, text: str, params: SamplingParams = GREEDY, history: list | None = None) -> Sequence:
    messages = [*(history or []), {"role": "user", "content": text}]
    return Sequence(seq_id=seq_id, messages=messages, params=params, clock=PhaseClock(t_arrive=now_ns()))


def events_until_end(seq: Sequence, timeout: float = 120) -> list[EngineEvent]:
    deadline = time.monotonic() + timeout
    out = []
    while True:
        ev = seq.events.get(timeout=max(deadline - time.monotonic(), 0.01))
        out.append(ev)
        if isinstance(ev, FinalEvent):
            return out


def wait_event(seq: Sequence, predicate, timeout: float = 120) -> list[EngineEvent]:
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        try:
            ev = seq.events.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise TimeoutError(f"no matching event; saw {[type(e).__name__ for e in seen][-5:]}") from None
        seen.append(ev)
        if predicate(ev):
            return seen


def is_token(ev: EngineEvent) -> bool:
    return isinstance(ev, TokenEvent)


def is_prefill(ev: EngineEvent) -> bool:
    return isinstance(ev, PhaseEvent) and ev.phase == "prefill"


def assert_all_slots_free(engine: Engine) -> None:
    assert engine.scheduler.running == [] and not engine.scheduler.waiting
    assert sorted(engine.scheduler._free_slots) == list(range(N_SLOTS))


@pytest.fixture(scope="module")
def chunked():
    engine = make_engine("chunked", budget=64)
    yield engine
    engine.stop()


@pytest.mark.parametrize("policy", ["serial", "continuous", "chunked"])
def test_four_concurrent_generations_all_complete(policy):
    engine = make_engine(policy, budget=32)
    try:
        seqs = [make_seq(i, f"Tell me fact number {i} about the sea.") for i in range(1, 5)]
        for seq in seqs:
            engine.submit(seq)
        dones = [events_until_end(seq)[-1] for seq in seqs]
        assert all(isinstance(d, DoneEvent) for d in dones)
        assert all(d.metrics["output_tokens"] >= 1 for d in dones)
        steps = list(engine.steps)
        concurrent = max(len(set(s["seqs"])) for s in steps)
        assert concurrent == 1 if policy == "serial" else concurrent >= 2
        assert_all_slots_free(engine)
    finally:
        engine.stop()


def test_a_prompt_prefilled_beside_others_gets_its_own_logits_not_theirs(chunked):
    """No KV leaks between sequences: first-token logits stay within rounding of the alone-run.

    Measured on this model: about 0.6–0.95 max |Δlogit| from batch-shape rounding, against
    about 10 when another prompt's context leaks in.
    """
    alone = make_seq(10, "What is the capital of France?")
    chunked.submit(alone)
    events_until_end(alone)

    together = [
        make_seq(11, "Describe a thunderstorm over the mountains in great detail, please."),
        make_seq(12, "What is the capital of France?"),
        make_seq(13, "List three kinds of bread and how each is baked."),
    ]
    for seq in together:
        chunked.submit(seq)
    for seq in together:
        events_until_end(seq)
    batched = together[1]
    shared_steps = [s for s in chunked.steps if {11, 12, 13} <= set(s["seqs"])]
    assert shared_steps, "the three prompts were meant to be prefilled in one step"
    delta = np.abs(alone.first_logits - batched.first_logits).max()
    assert delta < 3.0
    assert int(alone.first_logits.argmax()) == int(batched.first_logits.argmax())
    # And the prompt next to it really is different: its logits are far from ours.
    assert np.abs(together[0].first_logits - batched.first_logits).max() > 3.0


def test_cancel_mid_prefill_frees_the_slot_within_a_step(chunked):
    seq = make_seq(20, "Summarise this document:\n" + DOCUMENT, SamplingParams(max_tokens=50, temperature=0))
    chunked.submit(seq)
    wait_event(seq, is_prefill)
    assert seq.in_prefill
    chunked.cancel(seq.seq_id)
    done = events_until_end(seq)[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "cancelled"
    assert done.metrics["output_tokens"] == 0
    assert_all_slots_free(chunked)
    after = make_seq(21, "Hello")
    chunked.submit(after)
    assert isinstance(events_until_end(after)[-1], DoneEvent)


def test_cancel_mid_decode_keeps_the_text_so_far_and_frees_the_slot(chunked):
    seq = make_seq(30, "Count from one to one hundred.", SamplingParams(max_tokens=400, temperature=0))
    chunked.submit(seq)
    seen = wait_event(seq, lambda e: isinstance(e, TokenEvent) and e.text.strip())
    chunked.cancel(seq.seq_id)
    rest = events_until_end(seq)
    done = rest[-1]
    tokens = [e for e in seen + rest if isinstance(e, TokenEvent)]
    assert done.finish_reason == "cancelled"
    assert done.text == "".join(e.text for e in tokens)
    assert 1 <= done.metrics["output_tokens"] < 400
    assert_all_slots_free(chunked)


def test_a_follow_up_reuses_the_cached_history_instead_of_evaluating_it_again(chunked):
    first = make_seq(40, "My favourite colour is green. Remember it.")
    chunked.submit(first)
    answer = events_until_end(first)[-1].text
    history = [
        {"role": "user", "content": "My favourite colour is green. Remember it."},
        {"role": "assistant", "content": answer},
    ]
    follow = make_seq(41, "What is my favourite colour?", history=history)
    chunked.submit(follow)
    metrics = events_until_end(follow)[-1].metrics
    assert metrics["cached_tokens"] >= first.prompt_len - 1
    assert metrics["prompt_tokens"] - metrics["cached_tokens"] < metrics["prompt_tokens"] // 2
    # Same prompt in a fresh engine state gives the same first-token choice.
    cold = make_seq(42, "What is my favourite colour?", history=history)
    fresh = make_engine("chunked")
    try:
        fresh.submit(cold)
        events_until_end(cold)
    finally:
        fresh.stop()
    assert int(cold.first_logits.argmax()) == int(follow.first_logits.argmax())
    assert np.abs(cold.first_logits - follow.first_logits).max() < 3.0


def test_plain_greedy_picks_what_llama_cpps_greedy_sampler_picks(chunked):
    """Unpenalised greedy answers read the highest logit in place (Runner.sample) instead of
    running llama.cpp's sampler chain over a copy of the vocabulary: the same token every time."""
    runner = chunked.runner
    picks: list[tuple[bool, int, int]] = []
    fast = runner.sample

    def both(seq, index):
        token = fast(seq, index)
        chain = runner._samplers[seq.seq_id]
        picks.append((seq.seq_id in runner._argmax, token, llama_cpp.llama_sampler_sample(chain, runner.ctx, index)))
        return token

    runner.sample = both
    try:
        seq = make_seq(
            45,
            "Name three rivers of Europe and one thing about each.",
            dataclasses.replace(GREEDY, max_tokens=32, ignore_eos=True),
        )
        chunked.submit(seq)
        events_until_end(seq)
    finally:
        del runner.sample
    assert len(picks) == 32
    assert all(argmax for argmax, _, _ in picks)
    assert [token for _, token, _ in picks] == [chain_token for _, _, chain_token in picks]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_repeat_penalty_applied_in_place_picks_what_llama_cpps_penalties_sampler_picks(chunked, temperature):
    """A repeat penalty alone is applied to the logits in place (runner._RepeatPenalty) instead of
    by llama.cpp's penalties sampler, which looks the whole vocabulary up: the same token as a
    chain with that sampler, every time, greedy or seeded."""
    runner = chunked.runner
    # ignore_eos: every box compares 40 picks (a seeded answer may end early where its logits
    # differ in the last bits: 15 picks on one CPU).
    params = SamplingParams(
        max_tokens=40, temperature=temperature, repeat_penalty=1.5, seed=7, speculative=False, ignore_eos=True
    )
    reference = sampler_chain(params, n_vocab=runner.n_vocab)  # with llama.cpp's penalties sampler
    data = np.zeros(runner.n_vocab, dtype=[("id", np.int32), ("logit", np.float32), ("p", np.float32)])
    picks: list[tuple[int, int, int]] = []
    fast = runner.sample

    def both(seq, index):
        raw = runner.logits(index)  # a copy, taken before the penalty changes them in place
        token = fast(seq, index)
        data["id"], data["logit"], data["p"] = np.arange(runner.n_vocab), raw, 0.0
        candidates = llama_cpp.llama_token_data_array(
            data.ctypes.data_as(llama_cpp.llama_token_data_p), runner.n_vocab, -1, False
        )
        llama_cpp.llama_sampler_apply(reference, ctypes.byref(candidates))
        expected = int(data["id"][candidates.selected])
        llama_cpp.llama_sampler_accept(reference, expected)
        picks.append((token, expected, int(raw.argmax())))
        return token

    runner.sample = both
    try:
        seq = make_seq(46 + int(temperature * 10), "Write a short poem about the sea, the sea, the sea.", params)
        chunked.submit(seq)
        events_until_end(seq)
    finally:
        del runner.sample
        llama_cpp.llama_sampler_free(reference)
    assert len(picks) == 40
    assert [token for token, _, _ in picks] == [expected for _, expected, _ in picks]
    if temperature <= 0:
        assert any(token != unpenalised for token, _, unpenalised in picks)  # the penalty changed a pick


def test_chunked_prefill_keeps_every_step_within_the_budget_while_others_decode(chunked):
    chatters = [
        make_seq(50 + i, f"Write a poem about the number {i}.", SamplingParams(max_tokens=60)) for i in range(3)
    ]
    for seq in chatters:
        chunked.submit(seq)
    for seq in chatters:
        wait_event(seq, is_token)
    doc = make_seq(60, "Summarise:\n" + DOCUMENT, SamplingParams(max_tokens=4, temperature=0))
    start = len(chunked.steps)
    chunked.submit(doc)
    events_until_end(doc)
    for seq in chatters:
        events_until_end(seq)
    steps = list(chunked.steps)[start:]
    doc_steps = [s for s in steps if 60 in s["seqs"] and s["prefill"]]
    assert len(doc_steps) >= doc.prompt_len // 64
    assert all(s["prefill"] + s["decode"] <= 64 or s["prefill"] <= 16 for s in doc_steps)
    assert any(s["decode"] >= 1 for s in doc_steps)  # the chats kept decoding during the prefill
    sizing = chunked.sizing()
    assert sizing["mode"] == "fixed" and sizing["n_decode"] >= 1
    assert sizing["chunk"] == 64 - sizing["n_decode"]


def test_a_stall_target_sizes_chunks_from_what_this_machine_measured():
    """With a relative target, the chunk follows the measured costs, and says how it got there."""
    engine = make_engine("chunked", budget=64, stall_factor=2.0)
    try:
        chatters = [make_seq(80 + i, f"Count from {i} to forty.", SamplingParams(max_tokens=80)) for i in range(3)]
        for seq in chatters:
            engine.submit(seq)
        for seq in chatters:
            for _ in range(4):
                wait_event(seq, is_token)
        doc = make_seq(90, "Summarise:\n" + DOCUMENT, SamplingParams(max_tokens=2, temperature=0))
        engine.submit(doc)
        events_until_end(doc)
        sizing = engine.sizing()  # the chats are still writing: the latest step had their decodes
        for seq in chatters:
            engine.cancel(seq.seq_id)
            events_until_end(seq)
    finally:
        engine.stop()
    n = sizing["n_decode"]
    assert sizing["mode"] == "stall" and n >= 1
    assert sizing["decode_ms"] > 0 and sizing["prompt_token_ms"] > 0
    assert sizing["target_ms"] == pytest.approx(2.0 * sizing["decode_ms"])
    room = sizing["target_ms"] - sizing["decode_ms"]
    # The largest slice from the prompt's depth whose cost (per token, plus the cells it
    # attends) fits the room; at least one token.
    per_cell = sizing["attend_us_per_cell"] / 1000

    def cost(c: int) -> float:
        return c * sizing["prompt_token_ms"] + per_cell * cells_attended(sizing["prompt_depth"], c)

    fits = max((c for c in range(1, 512) if cost(c) <= room), default=1)
    assert sizing["chunk"] == pytest.approx(min(fits, 512 - n), abs=1)


@pytest.mark.parametrize("policy", ["chunked", "continuous"])
def test_a_question_asked_while_a_document_is_read_goes_first_only_under_chunked(policy):
    engine = make_engine(policy, budget=64, stall_factor=2.0)
    try:
        doc = make_seq(95, "Summarise:\n" + DOCUMENT, SamplingParams(max_tokens=2, temperature=0))
        engine.submit(doc)
        wait_event(doc, is_prefill)
        question = make_seq(96, "What is two and two?", SamplingParams(max_tokens=2, temperature=0))
        engine.submit(question)
        events_until_end(question)
        events_until_end(doc)
    finally:
        engine.stop()
    question_first, doc_first = question.clock.token_times[0], doc.clock.token_times[0]
    if policy == "chunked":
        assert question_first < doc_first  # it went into the next step, beside the document
    else:
        assert question_first > doc_first  # llama-server's order: the document, then the question


def test_serial_tells_waiting_requests_their_queue_position():
    engine = make_engine("serial")
    try:
        seqs = [make_seq(70 + i, "Say hello.", SamplingParams(max_tokens=6, temperature=0)) for i in range(3)]
        for seq in seqs:
            engine.submit(seq)
        last = events_until_end(seqs[2])
        positions = [e.position for e in last if isinstance(e, PhaseEvent) and e.phase == "queued"]
        assert positions and positions[0] >= 1 and positions == sorted(positions, reverse=True)
        for seq in seqs[:2]:
            events_until_end(seq)
    finally:
        engine.stop()


def test_a_steps_events_reach_on_events_together_and_those_it_sent_on_are_queued_quietly():
    """on_events gets each step's events, every sequence's at once and in order; a sequence whose
    events it sent on gets them queued without a wake-up (its end always wakes its reader)."""
    batches: list[list[tuple[int, list[EngineEvent]]]] = []
    engine = make_engine("chunked", budget=32)

    def on_events(batch):
        batches.append([(seq.seq_id, list(events)) for seq, events in batch])
        return {1}  # sent on: sequence 1's; sequence 2 is queued as usual

    engine._on_events = on_events
    try:
        seqs = [make_seq(i, f"Tell me fact number {i} about the sea.") for i in (1, 2)]
        woken = {1: [], 2: []}
        for seq in seqs:
            notify = seq.events.not_empty.notify
            seq.events.not_empty.notify = lambda n=1, sid=seq.seq_id, notify=notify: (woken[sid].append(n), notify(n))
            engine.submit(seq)
        got = {seq.seq_id: events_until_end(seq) for seq in seqs}
        assert all(isinstance(got[i][-1], DoneEvent) for i in (1, 2))
        assert any(len(batch) == 2 for batch in batches)  # both answers' events in one call
        handed = {
            sid: [event for batch in batches for seq_id, events in batch if seq_id == sid for event in events]
            for sid in (1, 2)
        }
        for sid in (1, 2):
            tokens = [event for event in got[sid] if isinstance(event, TokenEvent)]
            assert len(tokens) >= 2 and [event for event in handed[sid] if isinstance(event, TokenEvent)] == tokens
        # Sequence 1's reader was woken only by events sent outside steps (load, queued) and
        # its end; sequence 2's by every event.
        outside = [event for event in got[1] if not any(event is h for h in handed[1])]
        assert len(woken[1]) == len(outside) + 1
        assert len(woken[2]) == len(got[2])
    finally:
        engine.stop()


def test_a_step_with_nothing_decoding_waits_for_answers_already_on_their_way(monkeypatch):
    """Two questions sent together, both announced: the first is submitted while the second is
    still on its way. The engine waits for it, so both prompts are read in one step; and it
    knows its own answers' tokens, so it does not wait for those (neither token is ever
    withdrawn here, and the wait's own bound is lifted: the test says when)."""
    monkeypatch.setattr(engine_module, "GATHER_MAX_S", 600.0)
    asked = threading.Event()  # the engine took the first and asked who else is coming

    def arriving() -> list[str]:
        asked.set()
        return ["first", "second"]

    engine = make_engine("chunked", arriving=arriving)
    try:
        first, second = make_seq(1, "Name a colour."), make_seq(2, "Name a fruit.")
        first.arrival, second.arrival = "first", "second"
        engine.submit(first)
        assert asked.wait(timeout=120)
        engine.submit(second)
        events_until_end(first), events_until_end(second)
        reading = [step for step in engine.steps if step["prefill"]]
        assert set(reading[0]["seqs"]) == {1, 2} and len(reading) == 1
        assert_all_slots_free(engine)
    finally:
        engine.stop()


def test_the_loaded_models_info_names_its_layers(chunked):
    """The worker's heartbeat carries the layer count (the dashboard's why panel counts each
    layer's cost): llama.cpp's, the same as the file's header says."""
    seq = make_seq(1, "Hi", dataclasses.replace(GREEDY, max_tokens=2))
    chunked.submit(seq)
    events_until_end(seq)
    assert chunked.runner.info.n_layers == model_library.inspect(settings.BUNDLED_BASE_MODEL_PATH).n_layers == 18
    assert chunked.status()["model_info"]["n_layers"] == 18
