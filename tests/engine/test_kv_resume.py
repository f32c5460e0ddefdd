"""Conversations that resume hot (the chat model, in process): a conversation whose slot other
people's answers took comes back from its saved KV state, and reads on as if its slot had never
been lost; the store keeps RAM and disk within their budgets."""

from __future__ import annotations

import time

import llama_cpp
import numpy as np
import pytest
from django.conf import settings

from inference.engine.budget import StepCostModel
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent
from inference.engine.kvstore import KVStore
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns

GREEDY = SamplingParams(max_tokens=8, temperature=0.0, repeat_penalty=1.0)
HISTORY = " ".join(f"Note {i}: the garden needs water on day {i}." for i in range(60))


def make_engine(tmp_path, n_slots: int = 2) -> Engine:
    config = RunnerConfig(
        model_path=settings.BUNDLED_CHAT_MODEL_PATH,
        n_ctx_seq=2048,
        n_slots=n_slots,
        n_batch=512,
        n_threads=2,
        kv_ram_bytes=256 * 2**20,
        kv_disk_bytes=256 * 2**20,
        kv_dir=tmp_path / "kv",
    )
    scheduler = Scheduler(policy="chunked", n_slots=n_slots, n_batch=512, token_budget=512)
    return Engine(runner=Runner(config), scheduler=scheduler, cost_model=StepCostModel(None), capture_first_logits=True)


def ask(engine: Engine, seq_id: int, owner: int, messages: list[dict]) -> tuple[Sequence, DoneEvent]:
    seq = Sequence(seq_id=seq_id, messages=messages, params=GREEDY, clock=PhaseClock(t_arrive=now_ns()), owner=owner)
    assert engine.submit(seq)
    while True:
        event = seq.events.get(timeout=600)
        if isinstance(event, DoneEvent):
            return seq, event


def wait_for_idle_copy(engine: Engine) -> None:
    """Until the idle engine has copied the finished conversation to the store."""
    deadline = time.monotonic() + 120
    while engine.runner.kv.stats()["states"] < 1:
        assert time.monotonic() < deadline, "the idle engine never kept the finished conversation"
        time.sleep(0.01)


def conversation(engine: Engine, *, lose_the_slot: bool) -> tuple[Sequence, DoneEvent]:
    """One person's two turns; between them, maybe, two other people's answers take both slots."""
    first = [{"role": "user", "content": f"{HISTORY}\nWhich day is the last note about?"}]
    _, answer = ask(engine, 1, owner=1, messages=first)
    if lose_the_slot:
        for seq_id, owner in ((2, 2), (3, 3)):
            ask(
                engine, seq_id, owner, [{"role": "user", "content": f"{HISTORY}\nPerson {owner} asks: how many notes?"}]
            )
    follow_up = [*first, {"role": "assistant", "content": answer.text}, {"role": "user", "content": "And the first?"}]
    return ask(engine, 4, owner=1, messages=follow_up)


@pytest.mark.integration
def test_a_conversation_whose_slot_was_taken_resumes_from_its_saved_state_and_answers_the_same(tmp_path):
    kept_engine = make_engine(tmp_path / "a")
    try:
        kept, kept_done = conversation(kept_engine, lose_the_slot=False)
    finally:
        kept_engine.stop()
    engine = make_engine(tmp_path / "b")
    try:
        resumed, resumed_done = conversation(engine, lose_the_slot=True)
        stats = engine.runner.kv.stats()
    finally:
        engine.stop()
    assert kept.num_restored == 0 and kept.num_cached > 500  # the slot was never lost: plain reuse
    assert resumed.num_restored == kept.num_cached == resumed.num_cached  # the same prefix, restored
    assert resumed_done.metrics["restored_tokens"] == resumed.num_restored
    # The restored cells are the kept ones, byte for byte; other people's cells elsewhere in the
    # shared cache change only the order of the attention's sums (the same bound as batching).
    assert int(resumed.first_logits.argmax()) == int(kept.first_logits.argmax())
    assert np.abs(resumed.first_logits - kept.first_logits).max() < 3.0
    assert resumed_done.text and kept_done.text
    assert stats["states"] >= 1  # the others' conversations were kept in turn


@pytest.mark.integration
def test_an_idle_engine_keeps_a_finished_conversation_before_anyone_needs_its_slot(tmp_path):
    engine = make_engine(tmp_path, n_slots=1)
    saved: list[object] = []
    save = engine.runner._save
    engine.runner._save = lambda slot, tokens, owner: (saved.append(owner), save(slot, tokens, owner))
    try:
        ask(engine, 1, owner=1, messages=[{"role": "user", "content": f"{HISTORY}\nWhich day is the last note about?"}])
        # Nobody has asked for the slot: the engine, idle, copies the conversation out on its own.
        wait_for_idle_copy(engine)
        _, done = ask(engine, 2, owner=2, messages=[{"role": "user", "content": f"{HISTORY}\nHow many notes?"}])
    finally:
        engine.stop()
    assert done.text
    assert saved.count(1) == 1  # kept once, while idle: taking the slot copied nothing more


@pytest.mark.integration
def test_a_conversation_back_in_its_own_slot_frees_its_saved_copy(tmp_path):
    engine = make_engine(tmp_path)
    dropped: list[object] = []
    drop = engine.runner.kv.drop
    engine.runner.kv.drop = lambda state: (dropped.append(state.owner), drop(state))
    try:
        first = [{"role": "user", "content": f"{HISTORY}\nWhich day is the last note about?"}]
        _, answer = ask(engine, 1, owner=1, messages=first)
        wait_for_idle_copy(engine)
        follow_up = [
            *first,
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": "And the first?"},
        ]
        seq, _ = ask(engine, 2, owner=1, messages=follow_up)
    finally:
        engine.stop()
    assert seq.num_cached > 500 and seq.num_restored == 0  # its own slot, reused in place
    assert dropped == [1]


@pytest.mark.integration
def test_an_idle_history_leaves_the_cache_when_another_prompt_starts_and_comes_back_restored(tmp_path):
    """With a store, a prompt starts beside no idle history (llama.cpp's flash attention pays
    for every masked cell of the cache in a prompt's slices); its owner's next turn restores it."""
    engine = make_engine(tmp_path)
    try:
        first = [{"role": "user", "content": f"{HISTORY}\nWhich day is the last note about?"}]
        one, answer = ask(engine, 1, owner=1, messages=first)
        memory = llama_cpp.llama_get_memory(engine.runner.ctx)
        assert llama_cpp.llama_memory_seq_pos_max(memory, one.slot) > 500  # kept in its slot
        other, _ = ask(engine, 2, owner=2, messages=[{"role": "user", "content": "Hello there."}])
        assert other.slot != one.slot  # an empty slot, not the history's
        assert llama_cpp.llama_memory_seq_pos_max(memory, one.slot) == -1  # out of the cache
        assert engine.runner.kv.stats()["states"] >= 1  # and in the store
        follow_up = [
            *first,
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": "And the first?"},
        ]
        back, _ = ask(engine, 3, owner=1, messages=follow_up)
    finally:
        engine.stop()
    assert back.num_restored > 500 and back.num_cached == back.num_restored


def buffer(n: int) -> np.ndarray:
    data = np.zeros(n, dtype=np.uint8)
    data[0] = n % 251
    return data


def test_the_store_spills_past_its_ram_budget_and_drops_past_its_disk_budget(tmp_path):
    store = KVStore(ram_bytes=2000, disk_bytes=2000, folder=tmp_path, min_tokens=1)
    for owner in range(4):
        store.put(owner, [owner, 1, 2], buffer(1000))
    stats = store.stats()
    assert stats == {"states": 4, "ram_bytes": 2000, "disk_bytes": 2000}
    store.put(9, [9], buffer(1000))  # the oldest on disk goes
    assert store.best(0, [0, 1, 2]) == (None, 0) and len(list(tmp_path.iterdir())) == 2
    state, n = store.best(1, [1, 1, 2, 3])
    assert n == 3 and state.path is not None  # spilled, still found
    data = store.take(state)
    assert data[0] == 1000 % 251 and len(list(tmp_path.iterdir())) == 1


def test_a_saved_state_serves_only_its_owner_and_a_longer_turn_replaces_the_shorter(tmp_path):
    store = KVStore(ram_bytes=10_000, min_tokens=1)
    store.put("ann", [1, 2, 3], buffer(10))
    assert store.best("bob", [1, 2, 3, 4]) == (None, 0)
    store.put("ann", [1, 2, 3, 4, 5], buffer(10))  # the same conversation, one turn on
    assert store.stats()["states"] == 1 and store.best("ann", [1, 2, 3, 4, 9])[1] == 4
