"""A Sequence: one request's state inside the engine, and the queue of events it sends back."""

from __future__ import annotations

import codecs
import enum
import queue
from dataclasses import dataclass, field

from inference.engine.events import DoneEvent, EngineEvent, ErrorEvent
from inference.engine.speculation import PromptLookup
from inference.engine.timing import PhaseClock
from inference.engine.tools import OutputSpec


class EventQueue(queue.Queue):
    """A sequence's events for its task thread. put_quiet() queues one without waking a reader
    blocked in get(): it finds it when its wait times out, or at the next put()."""

    def put_quiet(self, item: EngineEvent) -> None:
        with self.mutex:
            self._put(item)
            self.unfinished_tasks += 1


class SeqStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    seed: int = -1
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False  # benchmarks: always produce max_tokens
    speculative: bool = False  # draft by prompt lookup and verify (speculation.py); the worker's policy sets it


class StopStringFilter:
    """Turns token bytes into text, holding back what might be the start of a stop string.

    1. Bytes go through an incremental UTF-8 decoder, so a character split across tokens is
       emitted once whole.
    2. Text that could still grow into a stop string (or a hidden one) is held until it can't.
    3. When a stop string appears, the text before it is released and the sequence ends.
    4. Hidden strings are dropped wherever they appear (the first listed wins where two start
       at one place: list a longer one before its prefix).
    """

    def __init__(self, stop: tuple[str, ...], hidden: tuple[str, ...] = ()):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stop = tuple(s for s in stop if s)
        self._hidden = tuple(h for h in hidden if h)
        self._held = ""
        self.stopped = False

    def feed(self, piece: bytes) -> str:
        text = self._held + self._decoder.decode(piece)
        for s in self._stop:
            idx = text.find(s)
            if idx != -1:
                self.stopped = True
                self._held = ""
                return self._unhidden(text[:idx])
        cut = self._cut(text, len(text) - self._longest_prefix_suffix(text))
        self._held = text[cut:]
        return self._unhidden(text[:cut])

    def flush(self) -> str:
        text, self._held = self._held + self._decoder.decode(b"", final=True), ""
        return "" if self.stopped else self._unhidden(text)

    def _unhidden(self, text: str) -> str:
        for h in self._hidden:
            text = text.replace(h, "")
        return text

    def _cut(self, text: str, cut: int) -> int:
        """Where released text may end: not inside a hidden string (one that ends in the held
        part is released or held whole)."""
        for h in self._hidden:
            start = text.find(h, max(0, cut - len(h) + 1))
            if -1 < start < cut < start + len(h):
                cut = start
        return cut

    def _longest_prefix_suffix(self, text: str) -> int:
        best = 0
        for s in self._stop + self._hidden:
            for n in range(min(len(s) - 1, len(text)), best, -1):
                if text.endswith(s[:n]):
                    best = n
                    break
        return best


@dataclass(eq=False)
class Sequence:
    """Request state: prompt, progress, sampled tokens, timestamps; owned by the engine thread.

    Other threads only read `events` and call Engine.cancel(); everything else is touched by
    the engine thread alone.
    """

    seq_id: int
    messages: list[dict]
    params: SamplingParams
    clock: PhaseClock
    status: SeqStatus = SeqStatus.WAITING
    prompt_tokens: list[int] = field(default_factory=list)
    num_cached: int = 0  # prompt tokens whose KV was reused, not evaluated
    num_restored: int = 0  # of those, how many came back from a saved conversation (kvstore.py)
    num_computed: int = 0  # prompt tokens in the KV cache
    output_tokens: list[int] = field(default_factory=list)
    text: str = ""
    slot: int | None = None
    finish_reason: str | None = None
    notice: str = ""
    events: EventQueue = field(default_factory=EventQueue)
    stop_filter: StopStringFilter | None = None
    stop_tokens: frozenset[int] = frozenset()
    raw_prompt: str | None = None  # tokenized as is, without the chat template (completions)
    output: OutputSpec | None = None  # JSON or tool calls the answer must be (a grammar), else free text
    owner: object = None  # whose request (a user id): a cached prefix is reused by its owner only
    arrival: str = ""  # the token its request was announced with (worker.arrivals), if any
    first_logits: object = None  # numpy array, kept only when the engine is asked to (tests)
    # The prompt, built by Engine.submit in the submitting thread (a Prompt, or the EngineError
    # that refused it); None when the model was not loaded yet, and the engine thread builds it.
    prepared: object = None
    # Speculative decoding: the drafter (None: not speculating), and the answer's counts.
    speculator: PromptLookup | None = None
    # The KV cells it may fill: its prompt and max_tokens, at most the engine's per-request limit
    # (set by the engine; reserved for it at admission). The answer ends there, no draft runs past it.
    n_ctx: int = 0
    drafted: int = 0  # draft tokens put in decode steps
    accepted: int = 0  # of those, tokens the sampler picked too
    decode_steps: int = 0  # model steps that gave this answer tokens
    held: list[EngineEvent] | None = None  # events emitted but not sent yet (hold_events)

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_tokens)

    @property
    def in_prefill(self) -> bool:
        return self.num_computed < self.prompt_len

    @property
    def remaining_prompt(self) -> int:
        return self.prompt_len - self.num_computed

    @property
    def prompt_begun(self) -> bool:
        """Whether a slice of the prompt was evaluated already (a reused prefix does not count)."""
        return self.num_computed > self.num_cached

    @property
    def position(self) -> int:
        """The KV position the next token fed to the model will take."""
        return self.num_computed + max(len(self.output_tokens) - 1, 0)

    def draft(self, room: int, base: int = 1) -> tuple[int, ...]:
        """Draft tokens for this sequence's next decode step, at most `room`, none past its
        max_tokens or its context (the last emitted token and the draft all take KV positions)."""
        if self.speculator is None:
            return ()
        left = min(self.params.max_tokens - len(self.output_tokens), self.n_ctx - self.position - 1) - 1
        return tuple(self.speculator.draft(min(room, left), base))

    def emit(self, event: EngineEvent) -> None:
        if self.held is not None:
            self.held.append(event)
        else:
            self.events.put(event)

    def hold_events(self) -> None:
        """Keep what emit() is given until take_held() (the engine holds a step's events)."""
        if self.held is None:
            self.held = []

    def take_held(self) -> list[EngineEvent]:
        """The events held since hold_events(), which emit() queues directly again."""
        held, self.held = self.held, None
        return held or []

    def deliver(self, events: list[EngineEvent], *, quiet: bool = False) -> None:
        """Queue events for the task thread; quiet: without waking it (they were published
        already, and it picks them up on its own schedule). An answer's end always wakes it."""
        for event in events:
            if quiet and not isinstance(event, DoneEvent | ErrorEvent):
                self.events.put_quiet(event)
            else:
                self.events.put(event)
