"""The Scheduler: which sequences run in the next model step. Pure Python, no llama.cpp.

Policies:
- serial: one sequence at a time, prompt first (llama-cpp-python's server).
- continuous: every running sequence decodes, waiting prompts fill the rest of the batch
  (llama-server: a long prompt stalls every active chat for its whole prefill).
- chunked: decodes first, then prompt chunks up to a token budget per step (Sarathi-Serve),
  shortest remaining prompt first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from inference.engine.sequence import SeqStatus, Sequence

POLICIES = ("serial", "continuous", "chunked")
# With decodes filling the whole budget, a waiting prompt still advances by this much per step.
MIN_PREFILL_CHUNK = 16


@dataclass(frozen=True)
class Chunk:
    seq: Sequence
    n_tokens: int
    prefill: bool


@dataclass
class Step:
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return sum(c.n_tokens for c in self.chunks)

    @property
    def prefill_tokens(self) -> int:
        return sum(c.n_tokens for c in self.chunks if c.prefill)

    @property
    def decode_tokens(self) -> int:
        return sum(c.n_tokens for c in self.chunks if not c.prefill)


AdmitHook = Callable[[Sequence, list[int]], int]


class Scheduler:
    """Waiting and running sequences, and the choice of each step's tokens.

    `budget_fn(n_decode)`, when given, sizes each chunked step (decodes included) instead of
    the fixed `token_budget`: the engine passes its cost model's answer to "how many tokens fit
    the target step time". `admit(seq, free_slots)` chooses the slot a sequence starts in and
    may set `seq.num_computed` for a prefix already cached there (the engine's prefix reuse);
    default: the lowest free slot, nothing cached.
    """

    def __init__(
        self,
        *,
        policy: str,
        n_slots: int,
        n_batch: int,
        token_budget: int | None = None,
        budget_fn: Callable[[int], int | None] | None = None,
        admit: AdmitHook | None = None,
    ):
        self.set_policy(policy)
        self.n_batch = n_batch
        self.token_budget = min(token_budget or n_batch, n_batch)
        self.budget_fn = budget_fn
        self.admit_hook = admit
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self._free_slots = list(range(n_slots))

    def set_policy(self, policy: str) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
        self.policy = policy

    def step_budget(self, n_decode: int) -> int:
        """Tokens allowed in the next chunked step, decodes included, within [1, n_batch]."""
        budget = self.budget_fn(n_decode) if self.budget_fn else None
        if budget is None:
            budget = self.token_budget
        return max(1, min(int(budget), self.n_batch))

    def add(self, seq: Sequence) -> None:
        seq.status = SeqStatus.WAITING
        self.waiting.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def queue_position(self, seq: Sequence) -> int:
        """1 for the next sequence to start, 0 once it runs."""
        try:
            return self.waiting.index(seq) + 1
        except ValueError:
            return 0

    def finish(self, seq: Sequence) -> None:
        """Retire a sequence (done, stopped or cancelled) and give its slot back."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        if seq.slot is not None:
            self._free_slots.append(seq.slot)
            self._free_slots.sort()
        seq.status = SeqStatus.FINISHED

    def schedule(self) -> Step | None:
        if self.policy == "serial":
            step = self._schedule_serial()
        else:
            step = self._schedule_batched()
        return step if step.chunks else None

    def _admit(self, limit: int) -> None:
        while self.waiting and self._free_slots and len(self.running) < limit:
            seq = self.waiting.popleft()
            slot = self.admit_hook(seq, list(self._free_slots)) if self.admit_hook else self._free_slots[0]
            self._free_slots.remove(slot)
            seq.slot = slot
            seq.status = SeqStatus.RUNNING
            self.running.append(seq)

    def _schedule_serial(self) -> Step:
        self._admit(limit=1)
        step = Step()
        if self.running:
            seq = self.running[0]
            if seq.in_prefill:
                step.chunks.append(Chunk(seq, min(seq.remaining_prompt, self.n_batch), True))
            else:
                step.chunks.append(Chunk(seq, 1, False))
        return step

    def _schedule_batched(self) -> Step:
        self._admit(limit=len(self.running) + len(self._free_slots))
        step = Step()
        for seq in self.running:
            if not seq.in_prefill:
                step.chunks.append(Chunk(seq, 1, False))
        cap = self.n_batch if self.policy == "continuous" else self.step_budget(step.num_tokens)
        room = cap - step.num_tokens
        prompts = [seq for seq in self.running if seq.in_prefill]  # admission order
        if self.policy == "chunked":
            # Shortest remaining prompt first (ties: the oldest): a question asked while a long
            # document is being read waits a step, not the whole document. The document still
            # moves on in every step the short prompts leave room in, and a short prompt soon
            # turns into a decode, so nothing starves.
            prompts.sort(key=lambda seq: seq.remaining_prompt)
        for seq in prompts:
            if room <= 0:
                if self.policy == "chunked" and step.prefill_tokens == 0:
                    # No starvation: decodes filled the budget, still move the first prompt on.
                    room = min(MIN_PREFILL_CHUNK, self.n_batch - step.num_tokens)
                if room <= 0:
                    break
            n = min(seq.remaining_prompt, room)
            step.chunks.append(Chunk(seq, n, True))
            room -= n
        return step
