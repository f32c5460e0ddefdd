"""Conversations that resume hot: the KV state of a conversation whose slot another sequence
takes is kept, and restored into a slot on its next turn instead of reading the history again.

A slot caches the last sequence that ran in it (slots.py); with more conversations than slots,
a returning person's slot has usually gone to someone else, and their whole history would be
prefilled again. The Runner saves that slot's cells first (llama.cpp's per-sequence state API)
and hands them here: kept in RAM within one budget, the least recently used spilled to a folder
within a second budget, the oldest beyond both dropped. Like the slots' prefix reuse, a saved
state serves only its owner's next sequence (reuse shows in time to first token).
"""

from __future__ import annotations

import itertools
import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


@dataclass
class SavedState:
    owner: object
    tokens: list[int]  # what the state's cells hold, in order
    size: int  # bytes
    data: np.ndarray | None = None  # the state's bytes, while in RAM
    path: Path | None = None  # its file, once spilled
    used: int = 0
    key: str = field(default_factory=lambda: uuid.uuid4().hex)


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class KVStore:
    def __init__(self, *, ram_bytes: int, disk_bytes: int = 0, folder: Path | None = None, min_tokens: int = 64):
        self.ram_bytes = ram_bytes
        self.disk_bytes = disk_bytes if folder is not None else 0
        self.folder = Path(folder) if folder is not None else None
        self.min_tokens = min_tokens
        self._states: dict[str, SavedState] = {}
        self._clock = itertools.count(1)

    @property
    def enabled(self) -> bool:
        return self.ram_bytes > 0 or self.disk_bytes > 0

    def worth_keeping(self, tokens: list[int]) -> bool:
        return self.enabled and len(tokens) >= self.min_tokens

    def put(self, owner: object, tokens: list[int], data: np.ndarray) -> None:
        """Keep a state (its bytes). A state that the new one extends (the same conversation,
        fewer turns) is dropped: the new one serves it."""
        for state in list(self._states.values()):
            if state.owner == owner and common_prefix(state.tokens, tokens) == len(state.tokens):
                self._drop(state)
        state = SavedState(owner=owner, tokens=list(tokens), size=data.size, data=data, used=next(self._clock))
        self._states[state.key] = state
        self._fit()

    def best(self, owner: object, prompt: list[int]) -> tuple[SavedState | None, int]:
        """The owner's saved state sharing the longest prefix with the prompt, and its length."""
        best, length = None, 0
        for state in self._states.values():
            if state.owner != owner:
                continue
            n = common_prefix(state.tokens, prompt)
            if n > length:
                best, length = state, n
        return best, length

    def take(self, state: SavedState) -> np.ndarray:
        """The state's bytes for a restore; it leaves the store (the slot now holds it, and
        saves it again when the slot is taken)."""
        del self._states[state.key]
        if state.data is not None:
            return state.data
        data = np.fromfile(state.path, dtype=np.uint8)
        state.path.unlink(missing_ok=True)
        return data

    def stats(self) -> dict:
        in_ram = [s for s in self._states.values() if s.data is not None]
        on_disk = [s for s in self._states.values() if s.path is not None]
        return {
            "states": len(self._states),
            "ram_bytes": sum(s.size for s in in_ram),
            "disk_bytes": sum(s.size for s in on_disk),
        }

    def clear(self) -> None:
        for state in list(self._states.values()):
            self._drop(state)

    def _fit(self) -> None:
        """Spill the least recently used states past the RAM budget, drop those past the disk's."""
        by_age = sorted(self._states.values(), key=lambda s: s.used)
        ram = sum(s.size for s in by_age if s.data is not None)
        for state in by_age:
            if ram <= self.ram_bytes:
                break
            if state.data is not None:
                ram -= state.size
                self._spill(state)
        disk = sum(s.size for s in by_age if s.path is not None)
        for state in by_age:
            if disk <= self.disk_bytes:
                break
            if state.path is not None:
                disk -= state.size
                self._drop(state)

    def _spill(self, state: SavedState) -> None:
        if self.disk_bytes < state.size:
            self._drop(state)
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"{state.key}.kv"
            state.data.tofile(path)
        except OSError as exc:
            log.warning("could not spill a saved conversation to %s: %s", self.folder, exc)
            self._drop(state)
            return
        state.path, state.data = path, None

    def drop(self, state: SavedState) -> None:
        """Forget a state (its slot holds all of it again)."""
        self._drop(state)

    def _drop(self, state: SavedState) -> None:
        self._states.pop(state.key, None)
        if state.path is not None:
            try:
                os.unlink(state.path)
            except OSError:
                pass
