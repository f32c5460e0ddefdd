"""KV cells: slots share one cache; a request reserves the cells it may fill when it starts,
waits while they are short, and one longer than the model reads is refused with the numbers."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from inference.engine.errors import EngineError
from inference.engine.prompt import PromptBuilder
from inference.engine.runner import RunnerConfig, request_limit
from inference.engine.scheduler import Scheduler, cells_needed
from inference.engine.slots import SlotCache
from tests.engine.fake_engine import apply, make_seq


def run_checked(scheduler: Scheduler, max_steps: int = 100_000) -> list[set[int]]:
    """Play the engine step by step, checking the cache after each: the reservations fit in
    it, and no sequence fills more cells than it reserved. Returns who ran in each step."""
    running = []
    while scheduler.has_work() and len(running) < max_steps:
        step = scheduler.schedule()
        assert step is not None, "work left, yet nothing may run: a request would wait for ever"
        apply(scheduler, step)
        running.append({chunk.seq.seq_id for chunk in step.chunks})
        assert scheduler.cells_reserved <= scheduler.n_cells
        assert scheduler.cells_reserved == sum(cells_needed(seq) for seq in scheduler.running)
        for seq in scheduler.running:
            # The cells it holds: its prompt so far and every answer token but the newest.
            assert seq.num_computed + max(len(seq.output_tokens) - 1, 0) <= cells_needed(seq)
    return running


def test_two_long_requests_at_once_one_waits_for_cells_then_runs():
    """8 slots, 10,000 cells: two requests of 6,000 + 100 cannot run together; the second
    starts once the first has given its cells back, and both end."""
    s = Scheduler(policy="chunked", n_slots=8, n_batch=512, token_budget=512, n_cells=10_000)
    first, second = make_seq(1, 6000, 100), make_seq(2, 6000, 100)
    s.add(first)
    s.add(second)
    s.schedule()
    assert s.running == [first] and list(s.waiting) == [second]  # a slot is free, the cells are not
    assert s.queue_position(second) == 1 and s.cells_free == 10_000 - 6100
    steps = run_checked(s)
    assert not s.has_work() and s.cells_reserved == 0
    last_first = max(i for i, ids in enumerate(steps) if 1 in ids)
    first_second = min(i for i, ids in enumerate(steps) if 2 in ids)
    assert first_second == last_first + 1  # it ran as soon as the cells were free


def test_requests_that_fit_borrow_past_a_slots_share_and_run_together():
    """Shares of 4,096 on 8 slots: two requests of 7,100 cells each run side by side."""
    s = Scheduler(policy="chunked", n_slots=8, n_batch=512, token_budget=512, n_cells=8 * 4096)
    a, b = make_seq(1, 7000, 100), make_seq(2, 7000, 100)
    s.add(a)
    s.add(b)
    s.schedule()
    assert s.running == [a, b] and s.cells_reserved == 14_200
    run_checked(s)


def test_a_short_request_behind_a_waiting_long_one_waits_its_turn():
    """Oldest first: a chat that would fit does not pass the document waiting for cells, so the
    document cannot be starved by a stream of chats."""
    s = Scheduler(policy="continuous", n_slots=4, n_batch=512, n_cells=1000)
    running, document, chat = make_seq(1, 500, 50), make_seq(2, 700, 50), make_seq(3, 10, 5)
    for seq in (running, document, chat):
        s.add(seq)
    s.schedule()
    assert s.running == [running] and list(s.waiting) == [document, chat]
    steps = run_checked(s)
    start = {seq_id: min(i for i, ids in enumerate(steps) if seq_id in ids) for seq_id in (2, 3)}
    assert start[2] <= start[3]


@pytest.mark.parametrize("policy", ["serial", "continuous", "chunked"])
@pytest.mark.parametrize("seed", range(6))
def test_random_workloads_never_over_commit_the_cache_and_every_request_ends(policy, seed):
    rng = random.Random(seed)
    n_cells = rng.choice([600, 1000, 2500])
    s = Scheduler(policy=policy, n_slots=rng.randint(1, 6), n_batch=128, token_budget=48, n_cells=n_cells)
    seqs = []
    for i in range(rng.randint(3, 14)):
        seq = make_seq(i, rng.randint(1, 400), rng.randint(1, 60), speculative=rng.random() < 0.3)
        seq.n_ctx = min(seq.prompt_len + seq.params.max_tokens, n_cells)  # as the engine caps it
        seqs.append(seq)
        s.add(seq)
    run_checked(s)
    assert all(seq.slot is not None and not seq.in_prefill for seq in seqs)
    assert s.cells_reserved == 0


def test_without_a_cache_size_every_free_slot_admits():
    """Before the model is loaded the engine knows no cache size: slots alone limit."""
    s = Scheduler(policy="continuous", n_slots=2, n_batch=64)
    a, b = make_seq(1, 50_000, 5), make_seq(2, 50_000, 5)
    s.add(a)
    s.add(b)
    s.schedule()
    assert s.running == [a, b] and s.cells_free is None


def test_the_admit_hook_is_told_the_cells_the_idle_caches_may_keep():
    rooms = []

    def admit(seq, free_slots, cache_room):
        rooms.append(cache_room)
        return free_slots[0]

    s = Scheduler(policy="continuous", n_slots=3, n_batch=64, admit=admit, n_cells=1000)
    for seq in (make_seq(1, 100, 50), make_seq(2, 300, 50)):
        s.add(seq)
    s.schedule()
    assert rooms == [1000 - 150, 1000 - 150 - 350]


# --- the idle slots' caches ----------------------------------------------------------------


def test_idle_caches_are_dropped_least_recently_used_first_until_the_rest_fit():
    cache = SlotCache()
    for slot, n in ((0, 300), (1, 200), (2, 100)):
        cache.take(slot)
        cache.keep(slot, list(range(n)), owner=1)
    assert cache.cached_cells() == 600
    assert cache.eviction_order([0, 1, 2], room=600) == []
    assert cache.eviction_order([0, 1, 2], room=350) == [0]  # the oldest alone frees enough
    assert cache.eviction_order([0, 1, 2], room=50) == [0, 1, 2]
    assert cache.eviction_order([1, 2], room=100) == [1]  # the slot being taken is not offered


# --- the per-request limit ------------------------------------------------------------------


def config(share: int, slots: int) -> RunnerConfig:
    return RunnerConfig(model_path=Path("m.gguf"), n_ctx_seq=share, n_slots=slots)


def test_a_request_may_use_the_trained_context_when_the_cache_has_the_cells():
    assert request_limit(config(4096, 8), n_cells=32_768, n_ctx_train=8192) == (8192, "it was trained for 8,192")


def test_a_small_cache_limits_a_request_and_says_what_to_change():
    limit, why = request_limit(config(2048, 2), n_cells=4096, n_ctx_train=8192)
    assert limit == 4096
    assert "4,096 cells (2 slots of 2,048)" in why and "8,192" in why and "HOMEAI_CONTEXT" in why


def test_a_share_past_the_trained_context_is_kept():
    limit, why = request_limit(config(4096, 2), n_cells=8192, n_ctx_train=2048)
    assert limit == 4096 and "2,048" in why and "HOMEAI_CONTEXT" in why
    assert request_limit(config(1024, 2), n_cells=2048, n_ctx_train=0)[0] == 2048  # no trained context known


class Digits:
    """A tokenizer with one token per character."""

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]:
        return [ord(c) for c in text]


def test_a_prompt_longer_than_the_model_reads_is_refused_with_the_numbers():
    limit, why = request_limit(config(4096, 8), n_cells=32_768, n_ctx_train=8192)
    builder = PromptBuilder(Digits(), None, n_ctx=limit, why=why)
    assert len(builder.build_raw("7" * 8000).tokens) == 8000  # past a slot's share, within the limit
    with pytest.raises(EngineError) as caught:
        builder.build_raw("9" * 9000)
    assert caught.value.code == "context_overflow"
    assert caught.value.message == (
        "The prompt is 9,000 tokens; this model's context holds 8,192 (it was trained for 8,192). "
        "Shorten the message or start a new conversation."
    )
