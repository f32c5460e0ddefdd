"""Scheduling test helpers: bare sequences, and a fake engine that plays each step (no llama.cpp)."""

from __future__ import annotations

from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.speculation import PromptLookup
from inference.engine.step import Step
from inference.engine.timing import PhaseClock


def make_seq(seq_id: int, prompt_len: int, max_tokens: int = 5, *, speculative: bool = False) -> Sequence:
    """A bare sequence; a speculating one has a repetitive prompt (0 1 2 3 0 1 2 3 ...), so its
    drafts are never empty, and a context just past its prompt and answer."""
    seq = Sequence(seq_id=seq_id, messages=[], params=SamplingParams(max_tokens=max_tokens), clock=PhaseClock(0))
    seq.prompt_tokens = [i % 4 for i in range(prompt_len)] if speculative else list(range(prompt_len))
    if speculative:
        seq.speculator = PromptLookup(n_min=1)
        seq.speculator.extend(seq.prompt_tokens)
        seq.n_ctx = prompt_len + max_tokens + 1
    return seq


def fake_run(scheduler: Scheduler, max_steps: int = 10_000, decoders: list | None = None) -> list[Step]:
    """Play the engine: apply each step's effect, retire sequences at max_tokens.

    `decoders`, when given, receives per step the ids of running sequences past their prompt.
    """
    steps = []
    while scheduler.has_work() and len(steps) < max_steps:
        step = scheduler.schedule()
        assert step is not None
        steps.append(step)
        if decoders is not None:
            decoders.append({seq.seq_id for seq in scheduler.running if not seq.in_prefill})
        apply(scheduler, step)
    return steps


def apply(scheduler: Scheduler, step: Step) -> None:
    """What running a step does: prompts advance, a finished prompt or a decode yields a token."""
    for chunk in step.chunks:
        seq = chunk.seq
        if chunk.prefill:
            seq.num_computed += chunk.n_tokens
            if not seq.in_prefill:
                seq.output_tokens.append(0)
        else:  # every draft token accepted, then the token after them
            emitted = [*chunk.draft, len(seq.output_tokens) % 4]
            seq.output_tokens.extend(emitted)
            if seq.speculator is not None:
                seq.speculator.feedback(len(chunk.draft), len(chunk.draft))
                seq.speculator.extend(emitted)
        assert len(seq.output_tokens) <= seq.params.max_tokens, "a draft past max_tokens"
        assert seq.n_ctx == 0 or seq.position < seq.n_ctx, "a draft past the context"
        if len(seq.output_tokens) >= seq.params.max_tokens:
            scheduler.finish(seq)
