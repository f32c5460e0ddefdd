from __future__ import annotations

import pytest

from inference.engine.budget import StepCostModel, cells_attended


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
    assert model.budget(3) == 3 + 12  # 30 ms of room at 2.5 ms a token: 12, no floor past the first chunk
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
        "attend_us_per_cell": 0.0,  # every step at depth 0: no slope to learn
        "decode_cells": 0,
        "prompt_depth": 0,
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
    assert model.budget(1) == 1 + 7  # the target's own room: 14 ms is 7 tokens
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


# --- depth: a step's attention grows with the cells its tokens attend ---------------------------

# A synthetic box whose steps cost what llama.cpp's CPU path does in shape: a fixed part, a part
# per decode and per prompt token, and attention per cell a token attends (its own sequence's).
BASE, PER_DECODE, PER_PROMPT, PER_CELL = 10.0, 4.0, 1.5, 0.003


def law(n_decode: int, n_prefill: int, decode_cells: int, prefill_cells: int) -> float:
    return BASE + PER_DECODE * n_decode + PER_PROMPT * n_prefill + PER_CELL * (decode_cells + prefill_cells)


def read_document_beside_chats(model: StepCostModel, doc_tokens: int = 2000, outlier_every: int = 0) -> list[dict]:
    """Three chats decode (20 steps alone first), then a document is read in the chunks the
    model sizes beside them, as the engine would: at() before each step, observe() after. Every
    `outlier_every`-th step takes 60 ms longer (another process had the core)."""
    chats = [120, 300, 60]  # each chat's cells so far
    depth, steps, n = 0, [], 0

    def run(chunk: int) -> dict:
        nonlocal depth, n
        decode_cells = sum(cells_attended(p, 1) for p in chats)
        prefill_cells = cells_attended(depth, chunk)
        ms = law(3, chunk, decode_cells, prefill_cells)
        predicted = model.predict(n_decode=3, n_prefill=chunk, decode_cells=decode_cells, prefill_cells=prefill_cells)
        n += 1
        measured = ms + (60.0 if outlier_every and n % outlier_every == 0 else 0.0)
        model.observe(n_prefill=chunk, n_decode=3, ms=measured, decode_cells=decode_cells, prefill_cells=prefill_cells)
        record = {"depth": depth, "chunk": chunk, "ms": ms, "predicted": predicted, "alone": law(3, 0, decode_cells, 0)}
        chats[:] = [p + 1 for p in chats]
        depth += chunk
        return record

    for _ in range(20):
        model.at(decode_cells=sum(p + 1 for p in chats), prompt_depth=0)
        run(0)
    while depth < doc_tokens:
        model.at(decode_cells=sum(p + 1 for p in chats), prompt_depth=depth)
        steps.append(run(min(model.budget(3) - 3, doc_tokens - depth)))
    return steps


def test_the_chunk_shrinks_as_the_document_gets_deeper_and_every_step_keeps_to_the_stall_factor():
    """Without the depth term a per-token price learned early in a document makes its late
    slices far dearer than budgeted; with it, each slice's step stays within stall_factor x
    what the chats' step alone costs at that moment, at every depth, and takes nearly all of it."""
    model = StepCostModel(target_ms=None, stall_factor=3)
    steps = read_document_beside_chats(model)
    learnt = steps[3:]  # the first chunks teach: min_chunk, then the slope needs two depths
    for step in learnt:
        assert step["ms"] <= 3 * step["alone"] * 1.02, step
    full = learnt[:-1]  # the last slice is what is left of the document
    assert min(s["ms"] / (3 * s["alone"]) for s in full) > 0.9  # the document gets the time the factor allows
    assert model.attend_ms == pytest.approx(PER_CELL, rel=0.02)
    assert model.per_prompt_token_ms == pytest.approx(PER_PROMPT, rel=0.02)
    shallow = next(s["chunk"] for s in learnt if s["depth"] >= 200)
    deep = next(s["chunk"] for s in learnt if s["depth"] >= 1800)
    assert deep < shallow * 0.6
    for step in learnt:
        assert step["predicted"] == pytest.approx(step["ms"], rel=0.03)


def test_the_depth_term_holds_with_outliers_among_the_steps():
    """One step in seven 60 ms slow (a preempted step): the slope and the medians ignore them."""
    model = StepCostModel(target_ms=None, stall_factor=3)
    steps = read_document_beside_chats(model, outlier_every=7)
    assert model.attend_ms == pytest.approx(PER_CELL, rel=0.1)
    for step in steps[10:]:  # once ten slices have taught it, outliers among them
        assert step["ms"] <= 3 * step["alone"] * 1.05, step


def test_the_decode_cost_follows_the_decodes_depth():
    """The chats' step alone is priced at their depth now, not at the median of past steps: after
    a document turns into a decode 2,000 cells deep, the target is what that step costs."""
    model = StepCostModel(target_ms=None, stall_factor=3)
    read_document_beside_chats(model)
    deep = 3 * 400 + 2001  # three chats' cells and the document's, one decode each
    assert model.decode_cost(3, deep) == pytest.approx(law(3, 0, deep, 0), rel=0.02)
    model.at(decode_cells=deep, prompt_depth=0)
    assert model.target(3) == pytest.approx(3 * law(3, 0, deep, 0), rel=0.02)
    assert model.measured_decode_ms(3) == pytest.approx(law(3, 0, deep, 0), rel=0.02)


def test_a_burst_is_priced_with_the_attention_of_the_prompts_it_takes_whole():
    model = StepCostModel(target_ms=None, stall_factor=3, burst_ms=500)
    read_document_beside_chats(model)
    cells = 3 * 400
    for _ in range(20):  # steps under their target: the allowance fills
        model.observe(n_prefill=0, n_decode=3, ms=law(3, 0, cells, 0), decode_cells=cells)
    assert model.allowance_ms == 500
    n = model.burst_tokens(3)
    assert model.slice_cost(n, 0) <= 500 < model.slice_cost(n + 1, 0)
    assert n < 500 / PER_PROMPT * 0.85  # the prompts' own attention is paid for


def test_steps_at_one_depth_teach_no_slope():
    """Noise between steps of nearly the same depth is no slope: it stays 0 until steps lie
    MIN_DEPTH_APART cells apart (a per-token price alone, as before)."""
    model = StepCostModel(target_ms=None, stall_factor=3)
    for i in range(30):
        model.observe(n_prefill=0, n_decode=2, ms=20.0 + (i % 3), decode_cells=200 + 2 * i)
    assert model.attend_ms == 0.0


def test_a_slope_that_takes_a_slices_whole_cost_leaves_a_prompt_token_its_price():
    """Noise that grows as a document is read (the box getting busier while its slices get
    deeper) can tilt the attention slope until it explains a slice's whole cost and a prompt
    token's share reads 0. That split is wrong, and it used to read as "unknown": the document
    went on in min_chunk slices however much room the chats left. The prompt-only steps' price
    stands in, and the chunk fills the room by it."""
    model = StepCostModel(target_ms=None, stall_factor=3)
    model.observe(n_prefill=400, n_decode=0, ms=400 * 1.2)  # the chats' questions, read alone
    for i in range(12):
        model.observe(n_prefill=0, n_decode=3, ms=30.0, decode_cells=300 + 3 * i)
    for depth in range(0, 1600, 100):  # each slice's cost all depth, none per token
        chunk = 40
        cells = cells_attended(depth, chunk)
        model.observe(n_prefill=chunk, n_decode=3, ms=30.0 + 0.004 * cells - 2.0, decode_cells=330, prefill_cells=cells)
    assert model.attend_ms > 0
    assert model.per_prompt_token_ms == pytest.approx(1.2)
    model.at(decode_cells=330, prompt_depth=200)  # a shallower prompt: room for more than min_chunk
    chunk = model.budget(3) - 3
    assert chunk > model.min_chunk
    assert model.slice_cost(chunk, 200) <= model.target(3) - model.decode_cost(3) < model.slice_cost(chunk + 1, 200)
