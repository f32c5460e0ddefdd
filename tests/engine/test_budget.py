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
    assert StepCostModel(target_ms=None, stall_factor=3).budget(2) is None  # no baseline to scale yet
    # A target but no prompt cost yet: a small first chunk, which teaches the cost.
    assert StepCostModel(target_ms=50).budget(2) == 2 + 16
    slow = StepCostModel(target_ms=20, min_chunk=16)
    feed(slow, base=30, per_decode=10, per_prompt=3)  # decodes alone exceed the target
    assert slow.budget(3) == 3 + 16


def test_one_slow_step_does_not_move_the_target():
    """A shared box has outliers; a median of recent steps ignores one, an average would not."""
    model = StepCostModel(target_ms=None, stall_factor=2)
    feed(model, base=10, per_decode=6, per_prompt=2)  # 3 decodes: 28 ms
    model.observe(n_prefill=0, n_decode=3, ms=120.0)
    assert model.target(3) == pytest.approx(56)
    model.observe(n_prefill=16, n_decode=3, ms=28 + 16 * 2 + 90)
    assert model.per_prompt_token_ms == pytest.approx(2, rel=0.01)


def test_prompt_only_steps_do_not_teach_the_cost_of_a_chunk():
    """A 500-token batch is cheaper per token than a chunk beside decodes; only chunks count."""
    model = StepCostModel(target_ms=None, stall_factor=2)
    for _ in range(5):
        model.observe(n_prefill=0, n_decode=3, ms=30.0)
        model.observe(n_prefill=500, n_decode=0, ms=500 * 1.5)
    assert model.per_prompt_token_ms is None
    assert model.budget(3) == 3 + 16  # first chunk: small
    model.observe(n_prefill=16, n_decode=3, ms=30 + 16 * 2.5)
    assert model.per_prompt_token_ms == pytest.approx(2.5)
    assert model.budget(3) == 3 + 16  # 30 ms of room at 2.5 ms a token is 12: the floor holds
    model.observe(n_prefill=16, n_decode=3, ms=30 + 16 * 1.0)
    model.observe(n_prefill=16, n_decode=3, ms=30 + 16 * 1.0)
    assert model.budget(3) == 3 + 30


def test_the_prompt_cost_follows_drift_within_a_few_steps():
    """Attention makes later chunks of a long document dearer; the estimate must follow."""
    model = StepCostModel(target_ms=100)
    model.observe(n_prefill=0, n_decode=2, ms=20.0)
    for _ in range(20):
        model.observe(n_prefill=20, n_decode=2, ms=20 + 20 * 2.0)
    for _ in range(5):
        model.observe(n_prefill=20, n_decode=2, ms=20 + 20 * 4.0)
    assert model.per_prompt_token_ms == pytest.approx(4.0)
    assert model.budget(2) == 2 + 20


def test_it_says_how_it_sized_a_chunk():
    model = StepCostModel(target_ms=None, stall_factor=2)
    assert model.describe(3)["decode_ms"] is None  # nothing measured yet
    feed(model, base=10, per_decode=6, per_prompt=2)
    assert model.last_n_decode == 3
    assert model.describe(3) == {
        "mode": "stall",
        "stall_factor": 2,
        "n_decode": 3,
        "decode_ms": pytest.approx(28),
        "target_ms": pytest.approx(56),
        "prompt_token_ms": pytest.approx(2),
        "burst_ms": 0.0,
        "allowance_ms": 0.0,
    }
    assert StepCostModel(target_ms=80).describe(1)["mode"] == "target"
    assert StepCostModel(target_ms=None).describe(1)["mode"] == "fixed"


def test_prompts_that_arrive_together_may_go_past_the_target_once_within_the_allowance():
    """Four questions at once: the first is read alone (nothing decodes), then the allowance is
    whole and lets the three others in beside its first decode; what that step took past its
    target is spent, and only steps under their target give it back."""
    model = StepCostModel(target_ms=None, stall_factor=2, burst_ms=500)
    feed(model, base=10, per_decode=4, per_prompt=2)  # 1 decode: 14 ms, target 28 ms
    model.observe(n_prefill=80, n_decode=0, ms=150.0)  # the first question, read alone
    assert model.allowance_ms == 500
    assert model.budget(1) == 1 + 16  # the target's own room: 14 ms is 7 tokens, the floor holds
    assert model.burst_tokens(1) == 250  # 500 ms at 2 ms a token: the three 80-token prompts fit
    model.observe(n_prefill=240, n_decode=1, ms=14 + 240 * 2)
    assert model.allowance_ms == pytest.approx(500 + 28 - 494)
    model.observe(n_prefill=0, n_decode=1, ms=14.0)
    assert model.allowance_ms == pytest.approx(34 + 14)
    for _ in range(40):
        model.observe(n_prefill=0, n_decode=1, ms=14.0)
    assert model.allowance_ms == 500  # never past burst_ms
    model.observe(n_prefill=0, n_decode=1, ms=900.0)  # a slow step (another process) spends it
    assert model.allowance_ms == 0 and model.burst_tokens(1) == 0


def test_no_allowance_without_a_target_or_a_prompt_tokens_cost():
    model = StepCostModel(target_ms=None, stall_factor=2, burst_ms=500)
    assert model.burst_tokens(1) == 0
    model.observe(n_prefill=0, n_decode=1, ms=14.0)
    assert model.burst_tokens(1) == 0  # a target, but no prompt token's cost yet
    model.observe(n_prefill=80, n_decode=0, ms=80 * 1.6)  # a question read alone stands in
    assert model.burst_tokens(1) == int(500 / 1.6)
    model.observe(n_prefill=16, n_decode=1, ms=14.0 + 16 * 2.5)  # until a chunk taught the cost
    assert model.burst_tokens(1) == int((500 + 28 - 54) / 2.5)  # that step went 26 ms past its target
    model = StepCostModel(target_ms=None, stall_factor=2)  # burst_ms 0: Sarathi-Serve's budget alone
    feed(model, base=10, per_decode=4, per_prompt=2)
    assert model.burst_tokens(1) == 0
