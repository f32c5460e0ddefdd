"""The Scheduler: waiting and running sequences, their slots and KV cells, and the policy that
picks each model step's tokens (policies.py). Pure Python, no llama.cpp."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from inference.engine.policies import Policy, make_policy
from inference.engine.sequence import SeqStatus, Sequence
from inference.engine.step import Step

# admit(seq, free_slots, cache_room) -> the slot it starts in (see Scheduler).
AdmitHook = Callable[[Sequence, list[int], int | None], int]


class Scheduler:
    """Waiting and running sequences, and the choice of each step's tokens.

    `budget_fn(n_decode)`, when given, sizes each chunked step (decodes included) instead of
    the fixed `token_budget`: the engine passes its cost model's answer to "how many tokens fit
    the target step time", and as `burst_fn(n_decode)` how many more a step may take for prompts
    that then fit whole (budget.py's allowance). `admit(seq, free_slots, cache_room)` chooses
    the slot a sequence starts in and may set `seq.num_computed` for a prefix already cached
    there (the engine's prefix reuse), and keeps the cells the free slots' caches hold within
    `cache_room` (None: no limit); default: the lowest free slot, nothing cached.

    KV cells: the slots share one cache of `n_cells` cells (None: every free slot admits, as
    if each had a cache of its own). A sequence starts only when the cells it may fill
    (`cells_needed`: its prompt and max_tokens, at most the engine's per-request limit) fit
    beside those reserved for the running ones, oldest waiting first; while the oldest does not
    fit, no later one starts past it, so a long request waits for cells, never for ever.
    Reserved at admission and given back when it ends, the cells make three things hold at
    every step: the running sequences fill at most their reservations, the free slots' caches
    (reusable prefixes, which the admit hook evicts as needed) fit in what is left, so a
    sequence that grows always has its next cell and llama.cpp's cache is never over-committed.
    """

    current: Policy  # the policy object; `policy` is its name

    def __init__(
        self,
        *,
        policy: str,
        n_slots: int,
        n_batch: int,
        token_budget: int | None = None,
        budget_fn: Callable[[int], int | None] | None = None,
        burst_fn: Callable[[int], int] | None = None,
        admit: AdmitHook | None = None,
        n_cells: int | None = None,
    ):
        self.set_policy(policy)
        self.n_batch = n_batch
        self.token_budget = min(token_budget or n_batch, n_batch)
        self.budget_fn = budget_fn
        self.burst_fn = burst_fn
        self.admit_hook = admit
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self._free_slots = list(range(n_slots))
        self.n_cells = n_cells  # the KV cache's cells (the engine sets it once the model is loaded)
        self.cells_reserved = 0  # the running sequences' reservations (cells_needed), summed

    @property
    def policy(self) -> str:
        """The current policy's name (a key of POLICIES)."""
        return self.current.name

    def set_policy(self, policy: str) -> None:
        """Schedule the next steps with the policy of that name; ValueError for an unknown one."""
        self.current = make_policy(policy)

    def step_budget(self, n_decode: int) -> int:
        """Tokens allowed in the next chunked step, decodes included, within [1, n_batch]."""
        budget = self.budget_fn(n_decode) if self.budget_fn else None
        if budget is None:
            budget = self.token_budget
        return max(1, min(int(budget), self.n_batch))

    def step_burst(self, n_decode: int) -> int:
        """Tokens a chunked step may add past step_budget() for prompts that then fit whole."""
        return max(0, self.burst_fn(n_decode)) if self.burst_fn else 0

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
            self.cells_reserved -= cells_needed(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        if seq.slot is not None:
            self._free_slots.append(seq.slot)
            self._free_slots.sort()
        seq.status = SeqStatus.FINISHED

    def schedule(self) -> Step | None:
        """The next step by the current policy; None when nothing can run."""
        return self.current.schedule(self)

    @property
    def cells_free(self) -> int | None:
        """Cells no running sequence has reserved (free slots' caches may hold some)."""
        return None if self.n_cells is None else self.n_cells - self.cells_reserved

    def admit_waiting(self, limit: int | None = None) -> None:
        """Start waiting sequences, oldest first, in free slots while fewer than `limit` run
        and the oldest one's cells fit beside the running ones' (class docstring)."""
        while self.waiting and self._free_slots and (limit is None or len(self.running) < limit):
            seq = self.waiting[0]
            need = cells_needed(seq)
            room = None if self.n_cells is None else self.n_cells - self.cells_reserved - need
            if room is not None and room < 0:
                return  # it waits for cells; the ones behind it wait their turn
            self.waiting.popleft()
            slot = self.admit_hook(seq, list(self._free_slots), room) if self.admit_hook else self._free_slots[0]
            self._free_slots.remove(slot)
            seq.slot = slot
            seq.status = SeqStatus.RUNNING
            self.running.append(seq)
            self.cells_reserved += need


def cells_needed(seq: Sequence) -> int:
    """The KV cells a sequence may fill: its context (Sequence.n_ctx, set by the engine), else
    its prompt and max_tokens."""
    return seq.n_ctx or seq.prompt_len + seq.params.max_tokens
