"""Scheduling policies: which tokens of which running sequences go into the next model step.

- serial: one sequence at a time, prompt first (llama-cpp-python's server).
- continuous: every running sequence decodes, waiting prompts fill the rest of the batch
  (llama-server: a long prompt stalls every active chat for its whole prefill).
- chunked: decodes first, then prompt chunks up to a token budget per step (Sarathi-Serve),
  shortest remaining prompt first; past the budget, prompts not begun yet go in whole within a
  burst allowance (budget.py).

A policy is a class with a `name` and `schedule(state) -> Step | None`, listed in POLICIES;
adding one is a class here and its test. A speculating sequence's decode carries draft tokens
(step.decode_chunk), which count against the step's tokens like any other. Pure Python, no llama.cpp.
"""

from __future__ import annotations

import abc
from typing import ClassVar, Protocol

from inference.engine.sequence import Sequence
from inference.engine.step import Chunk, Step, decode_chunk

# With decodes filling the whole budget, a waiting prompt still advances by this much per step.
MIN_PREFILL_CHUNK = 16


class SchedulerState(Protocol):
    """What a policy sees of the Scheduler: the running sequences, the batch, and admission."""

    running: list[Sequence]  # admission order
    n_batch: int

    def admit_waiting(self, limit: int | None = None) -> None:
        """Start waiting sequences in free slots while fewer than `limit` run (None: no limit)."""

    def step_budget(self, n_decode: int) -> int:
        """Tokens allowed in a budgeted step beside n_decode decodes, decodes included."""

    def step_burst(self, n_decode: int) -> int:
        """Tokens a budgeted step may add past step_budget() for prompts that then fit whole."""


class Policy(abc.ABC):
    """Chooses each step's tokens. Stateless: everything it decides from is in the state."""

    name: ClassVar[str]
    # True when step_budget() sizes the steps, so the engine's sizing report means something.
    budgeted: ClassVar[bool] = False

    @abc.abstractmethod
    def schedule(self, state: SchedulerState) -> Step | None:
        """Admit what may start, then the next step; None when nothing can run."""


class Serial(Policy):
    """One sequence at a time, its prompt in batch-sized pieces, then its tokens one by one."""

    name = "serial"

    def schedule(self, state: SchedulerState) -> Step | None:
        state.admit_waiting(limit=1)
        if not state.running:
            return None
        seq = state.running[0]
        if seq.in_prefill:
            return Step([Chunk(seq, min(seq.remaining_prompt, state.n_batch), True)])
        return Step([decode_chunk(seq, state.n_batch - 1)])


class Batched(Policy):
    """Every running sequence decodes in every step; prompts fill the room the step has left.

    Subclasses say how big a step may be, which prompt goes first, and what a prompt may
    still take when the decodes alone fill the step.
    """

    def schedule(self, state: SchedulerState) -> Step | None:
        state.admit_waiting()
        decoding = [seq for seq in state.running if not seq.in_prefill]
        room = self.step_tokens(state, len(decoding)) - len(decoding)
        step = Step()
        base = len(decoding)  # the step's decode tokens: one per decode, then the drafts
        for seq in decoding:  # speculating sequences' drafts take room before the prompts
            chunk = decode_chunk(seq, room, base)
            step.chunks.append(chunk)
            room -= len(chunk.draft)
            base += len(chunk.draft)
        burst = self.burst_room(state, len(decoding))
        firsts = 0  # prompts this step finishes: their first tokens come out of it
        for seq in self.prompt_order([seq for seq in state.running if seq.in_prefill]):
            need, have = seq.remaining_prompt, max(room, 0)
            whole = have < need <= have + burst and not seq.prompt_begun
            if whole and step.num_tokens + need <= state.n_batch:
                burst -= need - have  # the whole prompt, with the burst allowance
                room = need
            if room <= 0:
                room = self.starved_room(state, step)
                if room <= 0:
                    break
            n = min(need, room)
            if n < need and firsts and not decoding:
                n = min(n, self.beside_first_tokens(state, firsts))
                if n <= 0:
                    break
            step.chunks.append(Chunk(seq, n, True))
            room -= n
            firsts += n == need
        return step if step.chunks else None

    @abc.abstractmethod
    def step_tokens(self, state: SchedulerState, n_decode: int) -> int:
        """Tokens this step may hold beside n_decode decodes, decodes included."""

    def prompt_order(self, prompts: list[Sequence]) -> list[Sequence]:
        """Which prompts get the room first; default: admission order."""
        return prompts

    def starved_room(self, state: SchedulerState, step: Step) -> int:
        """Prompt tokens allowed once the step is full; default: none, the prompts wait."""
        return 0

    def burst_room(self, state: SchedulerState, n_decode: int) -> int:
        """Tokens past step_tokens() for prompts that then go in whole; default: none."""
        return 0

    def beside_first_tokens(self, state: SchedulerState, firsts: int) -> int:
        """In a step nothing decodes in, the slice a prompt that does not finish may take
        beside `firsts` prompts that do (whose first tokens wait for the step); default: the
        room the step has."""
        return state.n_batch


class Continuous(Batched):
    """Whole batches: a prompt goes in as far as the batch allows, in arrival order."""

    name = "continuous"

    def step_tokens(self, state: SchedulerState, n_decode: int) -> int:
        return state.n_batch


class Chunked(Batched):
    """Steps sized to a token budget (fixed, or the cost model's for a target step time)."""

    name = "chunked"
    budgeted = True

    def step_tokens(self, state: SchedulerState, n_decode: int) -> int:
        return state.step_budget(n_decode)

    def beside_first_tokens(self, state: SchedulerState, firsts: int) -> int:
        # A document read beside questions that finish in this step would delay their first
        # tokens by its whole slice (measured with three chats and a 1,500-token document on 2
        # cores: first tokens at about 900 ms, against 125 ms with this); it gets what the
        # budget allows beside that many decodes, as it will in the steps after.
        return state.step_budget(firsts) - firsts

    def burst_room(self, state: SchedulerState, n_decode: int) -> int:
        # Prompts that arrived together start together: prompts not begun yet may go past the
        # budget whole, within the cost model's allowance (budget.py). A document goes in
        # slices from its first to its last: its tail never takes the allowance either.
        return state.step_burst(n_decode)

    def prompt_order(self, prompts: list[Sequence]) -> list[Sequence]:
        # Shortest remaining prompt first (ties: the oldest): a question asked while a long
        # document is being read waits a step, not the whole document. The document still
        # moves on in every step the short prompts leave room in, and a short prompt soon
        # turns into a decode, so nothing starves.
        return sorted(prompts, key=lambda seq: seq.remaining_prompt)

    def starved_room(self, state: SchedulerState, step: Step) -> int:
        # No starvation: decodes filled the budget, still move the first prompt on.
        if step.prefill_tokens:
            return 0
        return min(MIN_PREFILL_CHUNK, state.n_batch - step.num_tokens)


POLICIES: dict[str, type[Policy]] = {policy.name: policy for policy in (Serial, Continuous, Chunked)}


def make_policy(name: str) -> Policy:
    """The policy called `name`; a ValueError that lists the choices for any other name."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}") from None
