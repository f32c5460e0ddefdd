"""Prompt-lookup drafting (pure Python): what is drafted, how long, and when it rests; and the
engine's sample-and-compare check of a draft, on a scripted runner."""

from __future__ import annotations

from inference.engine.budget import StepCostModel
from inference.engine.engine import Engine
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.speculation import DRAFT_MAX, PRIOR_SLOPE, PromptLookup, speculation_rates
from inference.engine.timing import PhaseClock
from tests.engine.fake_engine import make_seq


def lookup(tokens: list[int], **kwargs) -> PromptLookup:
    drafter = PromptLookup(**kwargs)
    drafter.extend(tokens)
    return drafter


def test_drafts_what_followed_the_longest_recent_suffix():
    # "7 8 9" appeared before, followed by 1 2; "8 9" alone is followed by 5 more recently.
    drafter = lookup([7, 8, 9, 1, 2, 3, 4, 8, 9, 5, 6, 7, 8, 9], k_start=2)
    assert drafter.draft(10) == [1, 2]


def test_the_latest_occurrence_wins_and_the_suffix_itself_is_not_a_match():
    drafter = lookup([1, 2, 3, 1, 2, 4, 1, 2], n_min=2, k_start=8)
    assert drafter.draft(8) == [4, 1, 2]  # after the latest earlier "1 2", up to the text's end
    assert lookup([5, 6, 7], n_min=2).draft(8) == []  # nothing repeats


def test_a_draft_is_no_longer_than_k_or_the_room():
    drafter = lookup(list(range(20)) + [0, 1], k_start=4)
    assert drafter.draft(10) == [2, 3, 4, 5]
    assert drafter.draft(2) == [2, 3]
    assert drafter.draft(0) == []


def test_k_grows_after_a_whole_draft_and_shrinks_to_what_was_kept():
    drafter = PromptLookup(k_start=4, k_max=8)
    drafter.feedback(4, 4)
    assert drafter.k == 8
    drafter.feedback(8, 8)
    assert drafter.k == 8
    drafter.feedback(8, 2)
    assert drafter.k == 3


def test_drafts_rest_after_misses_in_a_row():
    drafter = lookup([1, 2, 3, 1, 2], patience=2, rest=3)
    drafter.feedback(4, 0)
    assert drafter.draft(8)  # one miss: still drafting
    drafter.feedback(1, 0)
    assert [drafter.draft(8) for _ in range(3)] == [[], [], []]
    assert drafter.draft(8) == [3, 1, 2][: drafter.k]


def test_with_step_costs_a_draft_is_sized_by_what_it_pays():
    """k draft tokens promise 1 + p + ... + p^k tokens for a step of cost(1 + k): on a box where a
    step costs as many one-token steps as it has tokens nothing pays; where it costs about one
    step (a GPU), as long a draft as the text gives."""
    text = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2]
    cpu = lookup(text, step_cost=lambda n: 10.0 * n)
    cpu._hits, cpu._trials = 9.0, 10.0  # p = 0.9
    assert cpu.draft(16) == []
    gpu = lookup(text, k_max=DRAFT_MAX, step_cost=lambda n: 10.0 + 0.1 * n)
    gpu._hits, gpu._trials = 9.0, 10.0
    assert gpu.draft(16) == [3, 4, 5, 6, 7, 8, 9, 10, 1, 2]
    assert gpu.draft(4) == [3, 4, 5, 6]  # never past the room
    gpu._hits, gpu._trials = 1.0, 10.0  # p = 0.1: one token, for 1% more step time, pays 9%
    assert gpu.draft(16) == [3]
    gpu._hits, gpu._trials = 0.2, 10.0  # p = 0.02: even that is not worth it
    assert gpu.draft(16) == []


def test_the_draft_not_sent_is_judged_against_the_answer_for_free():
    drafter = lookup([1, 2, 3, 4, 1, 2], step_cost=lambda n: 10.0 * n)
    before = drafter.acceptance
    assert drafter.draft(8) == []  # not worth sending: it becomes the shadow
    drafter.extend([3, 4])  # the model wrote what the draft said
    assert drafter.acceptance > before
    drafter.draft(8)
    drafter.extend([9])  # and now it did not
    assert drafter.acceptance < 1.0


def test_unmeasured_step_sizes_are_interpolated_and_hoped_for_past_the_largest():
    drafter = PromptLookup(step_cost={1: 10.0, 4: 16.0}.get)
    costs = drafter._step_costs(1, 6)
    assert costs[:4] == [10.0, 12.0, 14.0, 16.0]  # 2 and 3 on the line from 1 to 4
    assert costs[4] == 16.0 + PRIOR_SLOPE * 10.0  # past 4: PRIOR_SLOPE of a step per token
    unmeasured_base = PromptLookup(step_cost={4: 16.0}.get)._step_costs(2, 4)
    assert unmeasured_base == [1.0, 1.0 + PRIOR_SLOPE / 2, 1.0 + PRIOR_SLOPE]  # the prior alone, not ms


def test_after_an_accepted_draft_the_next_one_copies_on_from_the_same_place():
    """An edit renames in place: the n-gram's latest occurrence would be the answer's previous
    line; the draft goes on from where the last one was copied, past the renamed token."""
    line = lambda n: [10, n, 11, 12, n, 13]  # noqa: E731  "part_n = x[n] ..." in tokens
    source = line(1) + line(2) + line(3)
    drafter = lookup([*source, 99, *line(1)[:2]], n_min=2, k_start=4)  # the answer: line 1 begun
    assert drafter.draft(4) == [11, 12, 1, 13]
    drafter.feedback(4, 2)  # 11 12 kept; the model wrote 7 where the source has 1 (a rename)
    drafter.extend([11, 12, 7])
    assert drafter.draft(4) == [13, 10, 2]  # the source's line 1 goes on, then its line 2 (k: 2 + 1)
    drafter.feedback(4, 0)
    drafter.extend([5])
    assert drafter._copy_lag is None  # nothing accepted: back to looking the n-gram up


def test_a_draft_not_sent_that_misses_ends_the_copying_too():
    """Where no draft pays, the cursor's draft is only judged (the shadow); when the answer leaves
    the copied text there, later drafts look the n-gram up again instead of the stale place."""
    drafter = lookup([1, 2, 3, 4, 5, 6, 1, 2], step_cost=lambda n: 10.0 * n)
    drafter._copy_lag = 6  # copying from tokens[2:], as after an accepted draft
    assert drafter.draft(4) == [] and drafter._shadow == [3, 4, 5, 6]
    drafter.extend([9])  # the answer went elsewhere
    assert drafter._copy_lag is None


def test_a_size_counts_as_measured_after_a_few_steps():
    model = StepCostModel(None, stall_factor=2.0)
    model.observe(n_prefill=0, n_decode=4, ms=90.0)  # a new size's first step: often slow
    assert model.measured_decode_ms(4) is None
    for ms in (40.0, 41.0):
        model.observe(n_prefill=0, n_decode=4, ms=ms)
    assert model.measured_decode_ms(4) == 41.0


def test_a_sequence_drafts_within_its_max_tokens_and_context():
    seq = make_seq(1, 40, max_tokens=6, speculative=True)
    seq.num_computed = seq.prompt_len
    seq.output_tokens = [0]
    seq.speculator.k = 8
    assert len(seq.draft(100)) == 4  # 6 - 1 emitted - 1 (the bonus token is the sixth)
    seq.n_ctx = seq.position + 3
    assert len(seq.draft(100)) == 1  # positions position+1 .. n_ctx-2
    assert make_seq(2, 40).draft(100) == ()  # not speculating


def test_rates():
    assert speculation_rates(10, 7, 30, 20) == {"acceptance": 0.7, "tokens_per_step": 1.5}
    assert speculation_rates(0, 0, 30, 30) == {"acceptance": None, "tokens_per_step": 1.0}
    assert speculation_rates(None, None, None, None) == {"acceptance": None, "tokens_per_step": None}


class ScriptedRunner:
    """What Engine._verify asks of a runner: the sampler's pick at each batch index (scripted),
    whether a token ends the turn, and dropping rejected KV cells."""

    def __init__(self, picks: dict[int, int]):
        self.picks = picks
        self.sampled: list[int] = []
        self.discarded_from: int | None = None

    def sample(self, seq, index: int) -> int:
        self.sampled.append(index)
        return self.picks[index]

    def is_eog(self, token: int) -> bool:
        return token == EOG

    def discard(self, seq, start: int) -> None:
        self.discarded_from = start

    def admit(self, seq, free_slots, cache_room):  # the engine wires it into the scheduler
        raise AssertionError("not used")

    def save_idle(self) -> bool:  # the engine's idle work
        return False

    def close(self) -> None:
        pass


EOG = 99


def verify(picks: dict[int, int], draft: tuple[int, ...]) -> tuple[list[int], ScriptedRunner, Sequence]:
    runner = ScriptedRunner(picks)
    engine = Engine(runner=runner, scheduler=Scheduler(policy="chunked", n_slots=1, n_batch=64, token_budget=64))
    try:
        seq = Sequence(seq_id=1, messages=[], params=SamplingParams(max_tokens=50), clock=PhaseClock(t_arrive=0))
        seq.num_computed, seq.output_tokens, seq.speculator = 10, [4], lookup([1, 2, 3, 1, 2])
        seq.n_ctx = 4096
        return engine._verify(seq, 0, draft), runner, seq
    finally:
        engine.stop()


def test_verification_keeps_the_samplers_picks_while_they_match_the_draft_and_drops_the_rest():
    tokens, runner, seq = verify({0: 5, 1: 6, 2: 8, 3: 1}, (5, 6, 7))
    assert tokens == [5, 6, 8]  # two drafts kept, then the sampler's own pick at the mismatch
    assert runner.sampled == [0, 1, 2]  # one sampler call per emitted token, none after
    assert (seq.drafted, seq.accepted) == (3, 2)
    assert runner.discarded_from == seq.position + 3  # the rejected draft token's cell


def test_a_whole_draft_kept_gives_one_token_more_and_drops_nothing():
    tokens, runner, seq = verify({0: 5, 1: 6, 2: 9}, (5, 6))
    assert tokens == [5, 6, 9] and runner.sampled == [0, 1, 2] and runner.discarded_from is None
    assert (seq.drafted, seq.accepted) == (2, 2)


def test_an_end_of_turn_picked_inside_the_draft_stops_the_sampling_there():
    tokens, runner, _ = verify({0: 5, 1: EOG, 2: 7}, (5, EOG, 7))
    assert tokens == [5, EOG] and runner.sampled == [0, 1]
