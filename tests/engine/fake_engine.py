"""Scheduling test helpers: bare sequences, and a fake engine that plays each step (no llama.cpp)."""

from __future__ import annotations

from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.step import Step
from inference.engine.timing import PhaseClock


def make_seq(seq_id: int, prompt_len: int, max_tokens: int = 5) -> Sequence:
    seq = Sequence(seq_id=seq_id, messages=[], params=SamplingParams(max_tokens=max_tokens), clock=PhaseClock(0))
    seq.prompt_tokens = list(range(prompt_len))
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
        else:
            seq.output_tokens.append(0)
        if len(seq.output_tokens) >= seq.params.max_tokens:
            scheduler.finish(seq)
