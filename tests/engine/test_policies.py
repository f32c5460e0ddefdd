"""Scheduling policies, driven by a fake engine (no llama.cpp)."""

from __future__ import annotations

import random

import pytest

from inference.engine.policies import MIN_PREFILL_CHUNK, POLICIES, Chunked, Policy, make_policy
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import Sequence
from tests.engine.fake_engine import apply, fake_run, make_seq


def test_every_policy_is_registered_under_its_own_name():
    for name, policy in POLICIES.items():
        assert issubclass(policy, Policy) and policy.name == name
        assert isinstance(make_policy(name), policy)
    assert [name for name, policy in POLICIES.items() if policy.budgeted] == [Chunked.name]


def test_serial_runs_one_sequence_at_a_time_prompt_first():
    s = Scheduler(policy="serial", n_slots=4, n_batch=64)
    seqs = [make_seq(1, 100), make_seq(2, 10), make_seq(3, 30)]
    for seq in seqs:
        s.add(seq)
    steps = fake_run(s)
    order = [c.seq.seq_id for step in steps for c in step.chunks]
    assert all(len(step.chunks) == 1 for step in steps)
    assert order == sorted(order)  # never overlaps: 1 finishes before 2 starts, and so on
    first = [c for step in steps for c in step.chunks if c.seq.seq_id == 1]
    assert [c.n_tokens for c in first if c.prefill] == [64, 36]  # split by n_batch
    assert all(s.status.value == "finished" for s in seqs)


@pytest.mark.parametrize("budget", [8, 32, 100])
def test_chunked_never_exceeds_the_budget_and_puts_decodes_first(budget):
    s = Scheduler(policy="chunked", n_slots=4, n_batch=512, token_budget=budget)
    seqs = [make_seq(1, 5, 40), make_seq(2, 300, 10), make_seq(3, 150, 10), make_seq(4, 7, 20)]
    for seq in seqs:
        s.add(seq)
    steps = fake_run(s)
    for step in steps:
        kinds = [c.prefill for c in step.chunks]
        assert kinds == sorted(kinds)  # every decode before any prompt chunk
        if step.decode_tokens < budget:
            assert step.num_tokens <= budget
        else:
            assert step.prefill_tokens <= MIN_PREFILL_CHUNK
    assert all(seq.status.value == "finished" for seq in seqs)  # nobody starves


def test_chunked_takes_whole_prompts_past_the_budget_within_the_burst_and_slices_the_rest():
    """Three questions and a document wait beside one decode: the burst lets the questions in
    whole, shortest first; the document only gets what the budget leaves, never the burst."""
    s = Scheduler(policy="chunked", n_slots=5, n_batch=512, token_budget=17, burst_fn=lambda n: 200)
    writer = make_seq(1, 4, 300)  # answers long enough to write beside the whole document
    s.add(writer)
    apply(s, s.schedule())  # its prompt, alone
    doc = make_seq(2, 1500, 50)
    for seq in (doc, make_seq(3, 80, 300), make_seq(4, 70, 300), make_seq(5, 90, 300)):
        s.add(seq)
    step = s.schedule()
    chunks = [(c.seq.seq_id, c.n_tokens, c.prefill) for c in step.chunks]
    # The budget's room is 16: the 70-token prompt takes it and 54 of the burst, the 80-token one
    # 80 of the 146 left; the 90-token one no longer fits whole, and the step is full for it and
    # for the document.
    assert chunks == [(1, 1, False), (4, 70, True), (3, 80, True)]
    apply(s, step)
    step = s.schedule()  # the burst again (this fake's is never spent): the 90-token prompt whole
    assert [(c.seq.seq_id, c.n_tokens) for c in step.chunks if c.prefill] == [(5, 90)]
    apply(s, step)
    for _ in range(200):  # then the document, in slices of the budget alone, to its end
        step = s.schedule()
        assert [(c.seq.seq_id, c.n_tokens) for c in step.chunks if c.prefill] in ([(2, 17 - 4)], [(2, 1500 % 13)])
        apply(s, step)
        if not doc.in_prefill:
            break
    assert not doc.in_prefill  # its last 5 tokens fitted whole, yet took no burst: it had begun


def test_chunked_without_a_burst_keeps_every_step_to_the_budget():
    s = Scheduler(policy="chunked", n_slots=4, n_batch=512, token_budget=17)
    s.add(make_seq(1, 4, 30))
    apply(s, s.schedule())
    for seq in (make_seq(3, 80, 5), make_seq(4, 70, 5)):
        s.add(seq)
    step = s.schedule()
    assert [(c.seq.seq_id, c.n_tokens) for c in step.chunks] == [(1, 1), (4, 16)]


def test_chunked_reads_a_document_beside_questions_that_finish_only_as_far_as_the_budget_allows():
    """Nothing decodes yet: three questions go in whole (their first tokens come out of this
    step), and a document that arrived with them gets the slice a step beside three decodes
    allows, not the rest of the batch, which would hold their first tokens back."""
    budgets = {0: None, 3: 3 + 14}
    s = Scheduler(policy="chunked", n_slots=4, n_batch=512, token_budget=512, budget_fn=budgets.get)
    for seq in (make_seq(1, 1500, 5), make_seq(2, 80, 5), make_seq(3, 70, 5), make_seq(4, 90, 5)):
        s.add(seq)
    step = s.schedule()
    assert [(c.seq.seq_id, c.n_tokens) for c in step.chunks] == [(3, 70), (2, 80), (4, 90), (1, 14)]
    lone = Scheduler(policy="chunked", n_slots=1, n_batch=512, token_budget=512, budget_fn=budgets.get)
    lone.add(make_seq(1, 1500, 5))
    assert [c.n_tokens for c in lone.schedule().chunks] == [512]  # alone, nobody waits on it


def test_chunked_schedules_every_running_decode_each_step():
    s = Scheduler(policy="chunked", n_slots=4, n_batch=512, token_budget=16)
    seqs = [make_seq(i, 3, 50) for i in range(3)] + [make_seq(9, 400, 2)]
    for seq in seqs:
        s.add(seq)
    expected: list[set] = []
    steps = fake_run(s, decoders=expected)
    for step, past_prefill in zip(steps, expected, strict=True):
        assert {c.seq.seq_id for c in step.chunks if not c.prefill} == past_prefill
    long_prompt_steps = [st for st in steps if any(c.seq.seq_id == 9 and c.prefill for c in st.chunks)]
    assert len(long_prompt_steps) >= 400 // 16


def test_chunked_sizes_steps_with_the_budget_function_when_it_answers():
    answers = {0: None, 1: 9}  # None: not learnt yet, the fixed token budget applies
    s = Scheduler(policy="chunked", n_slots=2, n_batch=512, token_budget=32, budget_fn=answers.get)
    chat, doc = make_seq(1, 2, 50), make_seq(2, 400, 2)
    s.add(chat)
    apply(s, s.schedule())  # the chat's prompt, alone: the fixed budget
    s.add(doc)
    step = s.schedule()
    assert [(c.seq.seq_id, c.n_tokens, c.prefill) for c in step.chunks] == [(1, 1, False), (2, 8, True)]


def test_continuous_fills_the_batch_with_whole_prompts_like_llama_server():
    s = Scheduler(policy="continuous", n_slots=4, n_batch=256)
    short, long = make_seq(1, 3, 30), make_seq(2, 200, 5)
    s.add(short)
    first = s.schedule()
    assert [(c.seq.seq_id, c.n_tokens, c.prefill) for c in first.chunks] == [(1, 3, True)]
    short.num_computed = 3
    short.output_tokens.append(0)
    s.add(long)
    step = s.schedule()
    assert [(c.seq.seq_id, c.n_tokens, c.prefill) for c in step.chunks] == [(1, 1, False), (2, 200, True)]


def _reading_a_document(policy: str) -> tuple[Scheduler, Sequence]:
    s = Scheduler(policy=policy, n_slots=4, n_batch=256, token_budget=64)
    doc = make_seq(1, 2000, 3)
    s.add(doc)
    first = s.schedule()
    doc.num_computed += first.prefill_tokens
    return s, doc


def test_chunked_lets_a_question_asked_during_a_long_prompt_go_first():
    s, doc = _reading_a_document("chunked")
    question = make_seq(2, 12, 3)
    s.add(question)
    step = s.schedule()
    assert [(c.seq.seq_id, c.n_tokens) for c in step.chunks] == [(2, 12), (1, 64 - 12)]
    fake_run(s)
    assert doc.status.value == "finished" and question.status.value == "finished"


def test_continuous_serves_prompts_in_arrival_order_like_llama_server():
    s, _doc = _reading_a_document("continuous")
    s.add(make_seq(2, 12, 3))
    step = s.schedule()
    assert [(c.seq.seq_id, c.n_tokens) for c in step.chunks] == [(1, 256)]  # the question waits


@pytest.mark.parametrize("policy", list(POLICIES))
def test_random_workloads_keep_every_policy_invariant(policy):
    """Seeded random arrivals, prompt lengths and budgets: what must hold in every step, and
    that every request ends (no starvation, also with shortest-prompt-first)."""
    rng = random.Random(f"homeai-{policy}")
    total_drafted = 0
    for _ in range(150):
        n_slots, n_batch = rng.randint(1, 4), rng.choice([16, 64, 256])
        budget = rng.choice([4, 8, 24, 64, 300])
        s = Scheduler(policy=policy, n_slots=n_slots, n_batch=n_batch, token_budget=budget)
        arrivals = sorted(
            (
                (
                    rng.randint(0, 40),
                    make_seq(i, rng.choice([1, 5, 40, 300, 900]), rng.randint(1, 12), speculative=rng.random() < 0.5),
                )
                for i in range(rng.randint(1, 9))
            ),
            key=lambda arrival: (arrival[0], arrival[1].seq_id),
        )
        seqs = [seq for _, seq in arrivals]
        work = sum(seq.prompt_len + seq.params.max_tokens for seq in seqs)
        drafted = 0
        t = 0
        while (arrivals or s.has_work()) and t < 40 + 2 * work:
            while arrivals and arrivals[0][0] <= t:
                s.add(arrivals.pop(0)[1])
            t += 1
            decoding = [seq for seq in s.running if not seq.in_prefill]
            step = s.schedule()
            if step is None:
                continue
            ids = [c.seq.seq_id for c in step.chunks]
            assert len(ids) == len(set(ids)), "a sequence twice in one step"
            assert len(s.running) <= n_slots and step.num_tokens <= n_batch
            assert all(c.n_tokens <= c.seq.remaining_prompt for c in step.chunks if c.prefill)
            assert all(c.n_tokens == 1 + len(c.draft) for c in step.chunks if not c.prefill)
            drafted += step.draft_tokens
            if step.draft_tokens:  # drafts only fill room the step has: they never push it past its size
                size = min(budget, n_batch) if policy == "chunked" else n_batch
                assert step.decode_tokens <= size
            if policy == "serial":
                assert len(step.chunks) == 1
            else:
                kinds = [c.prefill for c in step.chunks]
                assert kinds == sorted(kinds), "a prompt chunk before a decode"
                assert {c.seq.seq_id for c in step.chunks if not c.prefill} == {q.seq_id for q in decoding}
            if policy == "chunked" and step.prefill_tokens:
                assert step.num_tokens <= min(budget, n_batch) or step.prefill_tokens <= MIN_PREFILL_CHUNK
            apply(s, step)
        assert all(seq.status.value == "finished" for seq in seqs), "a request never ended"
        total_drafted += drafted
    assert total_drafted > 0, "no workload speculated"
