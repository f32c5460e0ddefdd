from __future__ import annotations

import pytest

from inference.engine.budget import StepCostModel


def feed(model: StepCostModel, base: float, per_decode: float, per_prompt: float) -> None:
    """Synthetic box: a step costs base + per_decode*n_d + per_prompt*n_p exactly."""
    for _ in range(30):
        for n_decode in (1, 2, 3):
            model.observe(n_prefill=0, n_decode=n_decode, ms=base + per_decode * n_decode)
            model.observe(n_prefill=64, n_decode=n_decode, ms=base + per_decode * n_decode + per_prompt * 64)


def test_it_learns_the_cost_of_a_prompt_token_and_sizes_chunks_to_the_target():
    model = StepCostModel(target_ms=100)
    feed(model, base=10, per_decode=5, per_prompt=3)
    assert model.per_prompt_token_ms == pytest.approx(3, rel=0.01)
    # 3 decodes cost 25 ms; 75 ms are left for prompt tokens at 3 ms each.
    assert model.budget(3) == 3 + 25


def test_the_same_target_gives_a_gpu_a_much_bigger_chunk():
    cpu, gpu = StepCostModel(target_ms=50), StepCostModel(target_ms=50)
    feed(cpu, base=10, per_decode=5, per_prompt=3)
    feed(gpu, base=2, per_decode=0.5, per_prompt=0.02)
    assert gpu.budget(2) > 50 * cpu.budget(2)


def test_a_relative_target_bounds_how_much_slower_the_chats_get():
    model = StepCostModel(target_ms=None, stall_factor=4)
    feed(model, base=10, per_decode=5, per_prompt=3)
    # 3 decodes alone take 25 ms; 4x that is 100 ms, leaving 75 ms for 25 prompt tokens.
    assert model.target(3) == pytest.approx(100)
    assert model.budget(3) == 3 + 25


def test_with_nobody_decoding_a_prompt_goes_in_whole():
    model = StepCostModel(target_ms=None, stall_factor=2.5)
    assert model.budget(0) >= 1 << 20
    assert StepCostModel(target_ms=None).budget(0) is None  # fixed-budget mode stays fixed


def test_without_target_or_data_it_defers_to_the_fixed_budget_and_never_starves():
    assert StepCostModel(target_ms=None).budget(2) is None
    assert StepCostModel(target_ms=50).budget(2) is None
    assert StepCostModel(target_ms=None, stall_factor=3).budget(2) is None
    slow = StepCostModel(target_ms=20, min_chunk=16)
    feed(slow, base=30, per_decode=10, per_prompt=3)  # decodes alone exceed the target
    assert slow.budget(3) == 3 + 16
