"""Slots and context sized from the model's KV cost and the memory budget (HOMEAI_SLOTS=auto)."""

from __future__ import annotations

import pytest

from inference.engine.sizing import MAX_AUTO_SLOTS, MIN_CONTEXT, UNKNOWN_COST_SLOTS, Sizing, size_engine

MB = 2**20
SMOLLM2_135M = {"kv_bytes_per_token": 23_040, "weights_bytes": 94 * MB}  # 30 layers, 3 KV heads of 64
GEMMA3_270M = {"kv_bytes_per_token": 18_432, "weights_bytes": 241 * MB}  # 18 layers, 1 KV head of 256
LLAMA_8B_Q4 = {"kv_bytes_per_token": 131_072, "weights_bytes": 4_700 * MB}  # 32 layers, 8 KV heads of 128


@pytest.mark.parametrize(
    ("model", "budget_mb", "expected"),
    [
        (SMOLLM2_135M, 6_000, Sizing(slots=MAX_AUTO_SLOTS, context=4096)),  # a 24 GB box's share: the cap
        (SMOLLM2_135M, 400, Sizing(slots=3, context=4096)),  # 306 MB of room, 90 MB a slot
        (GEMMA3_270M, 6_000, Sizing(slots=MAX_AUTO_SLOTS, context=4096)),
        (LLAMA_8B_Q4, 6_000, Sizing(slots=2, context=4096)),  # 1.3 GB of room, 512 MB a slot
        (LLAMA_8B_Q4, 5_000, Sizing(slots=1, context=2304)),  # not one slot of 4096: a shorter one
        (LLAMA_8B_Q4, 4_000, Sizing(slots=1, context=MIN_CONTEXT)),  # no room at all: the least
    ],
)
def test_it_holds_as_many_slots_as_the_budget_holds_up_to_the_cap(model, budget_mb, expected):
    assert size_engine(**model, budget_bytes=budget_mb * MB, context=4096) == expected


def test_the_context_is_never_past_what_the_model_was_trained_for():
    sized = size_engine(**SMOLLM2_135M, budget_bytes=6_000 * MB, context=16_384, trained_context=8192)
    assert sized == Sizing(slots=MAX_AUTO_SLOTS, context=8192)


def test_a_shorter_context_buys_more_slots_within_the_same_budget():
    long = size_engine(**LLAMA_8B_Q4, budget_bytes=6_000 * MB, context=4096)
    short = size_engine(**LLAMA_8B_Q4, budget_bytes=6_000 * MB, context=1024)
    assert (long.slots, short.slots) == (2, MAX_AUTO_SLOTS)


def test_an_explicit_slot_count_wins_over_the_budget():
    assert size_engine(**LLAMA_8B_Q4, budget_bytes=64 * MB, context=4096, slots=6) == Sizing(slots=6, context=4096)


def test_a_model_whose_kv_cost_is_unknown_gets_the_old_fixed_count():
    unknown = size_engine(kv_bytes_per_token=0, weights_bytes=MB, budget_bytes=6_000 * MB, context=4096)
    assert unknown == Sizing(slots=UNKNOWN_COST_SLOTS, context=4096)


def test_the_slots_and_context_it_gives_fit_the_budget_whenever_one_slot_can():
    for budget_mb in range(100, 8_000, 97):
        for model in (SMOLLM2_135M, GEMMA3_270M, LLAMA_8B_Q4):
            sized = size_engine(**model, budget_bytes=budget_mb * MB, context=4096)
            cost = model["weights_bytes"] + model["kv_bytes_per_token"] * sized.slots * sized.context
            if model["weights_bytes"] + model["kv_bytes_per_token"] * MIN_CONTEXT <= budget_mb * MB:
                assert cost <= budget_mb * MB, (model, budget_mb, sized)
            assert 1 <= sized.slots <= MAX_AUTO_SLOTS and sized.context >= MIN_CONTEXT
