"""KV slot bookkeeping for prefix reuse: what each slot's cache holds, and which slot to take.

A slot keeps the KV cells of the last sequence that ran in it. The next turn of that
conversation shares its history with them, so starting it in that slot skips evaluating the
shared prefix again. The Runner does the llama.cpp side (dropping cells); this is the pure
part, the tokens each slot holds, whose they are, and when it was last taken.

A cached prefix is reused only by its owner's next sequence: reuse shows in `cached_tokens`
and in the time to first token, so sharing it across people would let one guess another's
prompt token by token.
"""

from __future__ import annotations

import itertools

# A slot's cache is reused only when the shared prefix is at least this share of the shorter of
# the prompt and what the slot holds; otherwise the prompt takes an empty slot, else the least
# recently used one. Open WebUI's title and follow-up requests share only the chat template's
# first tokens with the chat they are about: taking the chat's slot for those would throw its
# history away, and its next message would read the whole conversation again. A regenerated
# answer (the prompt again, after a long answer) and a conversation's next turn share far more.
# (llama-server's --slot-prompt-similarity makes the same kind of choice, as a share of the
# new prompt.)
REUSE_SHARE = 0.5


class SlotCache:
    def __init__(self) -> None:
        self._tokens: dict[int, list[int]] = {}  # slot -> the tokens its KV cells hold, in order
        self._owner: dict[int, object] = {}  # slot -> whose tokens they are (a user id; None: nobody's)
        self._used: dict[int, int] = {}  # slot -> when it was last taken (a counter, higher is later)
        self._use_counter = itertools.count(1)
        self._offered: set[int] = set()  # slots whose history the KV store was offered already

    def common_prefix(self, slot: int, tokens: list[int], owner: object = None) -> int:
        """How many leading tokens of `tokens` the slot's cache holds for this owner."""
        if self._owner.get(slot) != owner:
            return 0
        n = 0
        for a, b in zip(self._tokens.get(slot, ()), tokens, strict=False):
            if a != b:
                break
            n += 1
        return n

    def _worth_reusing(self, slot: int, tokens: list[int], owner: object) -> int:
        """The prefix the prompt would reuse in the slot, when it is REUSE_SHARE of the shorter of
        the two; else 0."""
        n = self.common_prefix(slot, tokens, owner)
        return n if n >= REUSE_SHARE * min(self.cells(slot), len(tokens)) else 0

    def choose(self, free_slots: list[int], tokens: list[int], owner: object = None) -> tuple[int, int]:
        """The free slot that caches the longest prefix of the owner's prompt (counting only a
        prefix worth reusing, REUSE_SHARE), else an empty one, else the least recently used one;
        and how many of its cached tokens the prompt may reuse."""
        slot = max(
            free_slots,
            key=lambda s: (self._worth_reusing(s, tokens, owner), not self.cells(s), -self._used.get(s, 0)),
        )
        # At least one prompt token must be evaluated to get logits for the first answer token.
        return slot, min(self.common_prefix(slot, tokens, owner), len(tokens) - 1)

    def held(self, slot: int) -> tuple[list[int], object]:
        """The tokens the slot's cells hold, and whose they are."""
        return self._tokens.get(slot, []), self._owner.get(slot)

    def take(self, slot: int) -> None:
        """A sequence starts in the slot: what it caches is unknown until the sequence ends."""
        self._tokens[slot] = []
        self._used[slot] = next(self._use_counter)
        self._offered.discard(slot)

    def keep(self, slot: int, tokens: list[int], owner: object = None) -> None:
        """The owner's sequence that ran in the slot ended; its KV cells hold these tokens."""
        self._tokens[slot] = tokens
        self._owner[slot] = owner
        self._offered.discard(slot)

    def clear(self, slot: int) -> None:
        """The slot's KV cells were dropped."""
        self._tokens[slot] = []
        self._offered.discard(slot)

    def cells(self, slot: int) -> int:
        """The KV cells the slot's cache holds (one per token)."""
        return len(self._tokens.get(slot, ()))

    def cached_cells(self) -> int:
        """The cells all slots' caches hold (a running sequence's slot holds none until it ends)."""
        return sum(map(len, list(self._tokens.values())))  # list(): read whole, from any thread

    def eviction_order(self, idle: list[int], room: int) -> list[int]:
        """The idle slots whose caches to drop, least recently used first, so that the caches
        of the others hold at most `room` cells."""
        over = sum(self.cells(slot) for slot in idle) - room
        dropped = []
        for slot in sorted(idle, key=lambda slot: self._used.get(slot, 0)):
            if over <= 0:
                break
            if self.cells(slot):
                dropped.append(slot)
                over -= self.cells(slot)
        return dropped

    def offered(self, slot: int) -> bool:
        """Whether the KV store was offered the history the slot holds now (see mark_offered)."""
        return slot in self._offered

    def mark_offered(self, slot: int) -> None:
        """The KV store was offered the slot's history (it kept it, or it was too short)."""
        self._offered.add(slot)

    def not_offered(self) -> list[int]:
        """The free slots holding a history the KV store was not offered yet, oldest first."""
        held = [slot for slot, tokens in self._tokens.items() if tokens and slot not in self._offered]
        return sorted(held, key=lambda slot: self._used.get(slot, 0))
