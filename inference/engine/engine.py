"""The Engine: one owner thread runs schedule -> decode -> sample -> emit -> retire.

Task threads call submit() and cancel() and read their sequence's events (events.py); only
the engine thread touches the Runner (llama.cpp is not thread-safe per context), so those calls
queue commands (commands.py) that it applies between steps. The model is loaded by that
thread on the first request, so the request that waited for it records the load.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable

from inference.engine.budget import StepCostModel, cells_attended
from inference.engine.commands import Cancel, Command, Load, Retire, SetPolicy, Stop, Submit
from inference.engine.errors import EngineError
from inference.engine.events import DoneEvent, EngineEvent, ErrorEvent, PhaseEvent, TokenEvent
from inference.engine.grammar import build_grammar
from inference.engine.policies import make_policy
from inference.engine.prompt import Prompt
from inference.engine.runner import Runner
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SeqStatus, Sequence, StopStringFilter
from inference.engine.speculation import DRAFT_MAX, PromptLookup
from inference.engine.step import Step
from inference.engine.timing import NS_PER_MS, now_ns, perf_to_wall_ns

log = logging.getLogger(__name__)

STEP_RING_SIZE = 2048
# A step that only reads prompts waits up to this long for answers already on their way to
# this engine (arriving(): the web has them, or the worker is building their prompts). At 50 ms,
# a 2-core box that took longer to check and store four requests sent together read the last
# one's prompt a whole step (~450 ms) after the others' in 2 of 8 rounds (docs/performance.md).
# It asks Redis again after each arrival, and at least this often.
GATHER_MAX_S = 0.15
GATHER_POLL_S = 0.01


class Engine:
    def __init__(
        self,
        *,
        runner: Runner,
        scheduler: Scheduler,
        cost_model: StepCostModel | None = None,
        on_step: Callable[[dict], None] | None = None,
        on_events: Callable[[list[tuple[Sequence, list[EngineEvent]]]], Collection[int]] | None = None,
        arriving: Callable[[], Collection[str]] | None = None,
        capture_first_logits: bool = False,
    ):
        """on_step: called with each step's record. on_events: called on the engine thread
        with each step's events, every sequence's at once, before they are queued; it returns
        the ids of the sequences whose events it has sent on itself (the worker publishes API
        tokens from there, one write per step), which are then queued without waking their task
        threads. It must not block: the next step waits for it. arriving: the tokens of the answers
        on their way to this engine (Sequence.arrival; see _gather_arrivals); those it has
        already are not waited for."""
        self.runner = runner
        self.scheduler = scheduler
        self.cost_model = cost_model or StepCostModel(target_ms=None)
        scheduler.budget_fn = self.cost_model.budget
        scheduler.burst_fn = self.cost_model.burst_tokens
        scheduler.admit_hook = runner.admit
        self.capture_first_logits = capture_first_logits
        self.steps: collections.deque[dict] = collections.deque(maxlen=STEP_RING_SIZE)
        self._on_step = on_step
        self._on_events = on_events
        self._arriving = arriving
        self._inbox: queue.Queue[Command] = queue.Queue()
        self._by_id: dict[int, Sequence] = {}
        self._thread = threading.Thread(target=self._run_forever, name="homeai-engine", daemon=True)
        self._stopping = False
        self._retiring = False
        # submit() and the thread's exit agree under this lock, so no sequence is handed to an
        # engine that will never run it (a model switch retires an engine a task just got).
        self._door = threading.Lock()
        self._closed = False
        self.load_error: EngineError | None = None
        self._thread.start()

    # --- called from other threads -----------------------------------------------------------
    def submit(self, seq: Sequence) -> bool:
        """Take a sequence; False when this engine is retiring or stopped (ask for the new one).

        Its prompt is built here, in the caller's thread, once the model is loaded: rendering
        and tokenizing a long conversation (a thousand turns take seconds) must not hold up
        every other answer's next token on the engine thread. The tokenizer only reads the
        vocabulary, and the door keeps the runner from closing meanwhile.
        """
        with self._door:
            if self._closed:
                return False
            if self.runner.loaded:
                seq.prepared = self._prepare(seq)
            self._inbox.put(Submit(seq))
            return True

    def preload(self) -> None:
        """Load the model now rather than on the first request (which then records no load)."""
        with self._door:
            if not self._closed:
                self._inbox.put(Load())

    @property
    def busy(self) -> bool:
        """Whether answers are being written or are on their way in (read from any thread)."""
        return bool(self.scheduler.running or self.scheduler.waiting or not self._inbox.empty())

    @property
    def thread_alive(self) -> bool:
        return self._thread.is_alive()

    def cancel(self, seq_id: int) -> None:
        self._inbox.put(Cancel(seq_id))

    def set_policy(self, policy: str) -> None:
        """Switch the scheduling policy from the next step on (for live experiments)."""
        make_policy(policy)  # a ValueError for an unknown name, in the caller's thread
        self._inbox.put(SetPolicy(policy))

    def retire(self) -> None:
        """Finish the sequences it holds, then unload (a newer engine takes new requests)."""
        with self._door:
            self._closed = True  # what was submitted before this still runs; nothing after
            self._inbox.put(Retire())

    def stop(self) -> None:
        with self._door:
            self._closed = True
            self._stopping = True
            self._inbox.put(Stop())
        self._thread.join(timeout=30)

    def status(self) -> dict:
        info = self.runner.info
        return {
            "model_info": dataclasses.asdict(info) if info else None,
            "loaded": self.runner.loaded,
            "model": info.name if info else self.runner.config.model_path.name,
            "running": len(self.scheduler.running),
            "waiting": len(self.scheduler.waiting),
            "policy": self.scheduler.policy,
            "sizing": self.sizing(),  # chunk sizing: budget, target, measured costs
            "slots": self.runner.config.n_slots,
            "cells": self.cells(),
        }

    def cells(self) -> dict:
        """The KV cache's cells: all of them, those reserved for the running answers, those the
        idle slots' reusable prefixes hold (given up when a request needs them), and the most
        one request may fill. Read from another thread, a snapshot as good as the last step."""
        return {
            "total": self.runner.n_cells,
            "reserved": self.scheduler.cells_reserved,
            "cached": self.runner.slots.cached_cells(),
            "per_request": self.runner.n_ctx_max,
        }

    def sizing(self) -> dict | None:
        """How `chunked` sizes a long prompt's chunks now: beside as many decodes as the latest
        step had, what those cost alone, the step time aimed at, what a prompt token adds, and
        the chunk that leaves. None for a policy whose steps the budget does not size."""
        if not self.scheduler.current.budgeted:
            return None
        n = self.cost_model.last_n_decode
        info = self.cost_model.describe(n)
        info["token_budget"] = self.scheduler.token_budget
        info["chunk"] = self.scheduler.step_budget(n) - n if n else None
        return info

    # --- the owner thread ----------------------------------------------------------------------
    def _run_forever(self) -> None:
        while not self._stopping and not (self._retiring and not self.scheduler.has_work()):
            try:
                idle = not self.scheduler.has_work()
                if idle and self._inbox.empty() and self.runner.save_idle():
                    continue  # one slot at a time: a request that arrives meanwhile waits for one copy
                self._drain_inbox(block=idle)
                self._gather_arrivals()
                if self.scheduler.has_work():
                    self._step()
            except Exception as exc:  # the engine thread must never die silently
                log.exception("engine step failed")
                self._fail_all(EngineError("engine_error", f"The engine failed: {exc}"))
        with self._door:
            self._closed = True
        self._fail_all(EngineError("worker_stopping", "The worker stopped before finishing this answer."))
        self._refuse_unread()
        self.runner.close()

    def _refuse_unread(self) -> None:
        """End the sequences still in the inbox when the thread exits: none is left waiting."""
        while True:
            try:
                command = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(command, Submit):
                command.seq.emit(ErrorEvent("worker_stopping", "The worker stopped before starting this answer."))

    def _gather_arrivals(self) -> None:
        """Before a step with nothing decoding, wait (GATHER_MAX_S at most) for the answers on
        their way here (the web is storing them, or the worker building their prompts):
        questions sent together then have their prompts read in one step. Without this the
        first one's prompt is read alone, and the others, handed over 1-7 ms later, wait for
        that whole step (measured on 2 cores: four sent at once had their first tokens at 180 ms
        for the first and 530 ms for the others; llama-server reads the four in one step).
        Nothing waits when nobody else is on the way (a lone request), nor beside decodes: there
        a step is short and the next one takes the newcomers."""
        if self._arriving is None or not self.scheduler.has_work():
            return
        if any(not seq.in_prefill for seq in self.scheduler.running):
            return
        deadline = time.monotonic() + GATHER_MAX_S
        while time.monotonic() < deadline and self._others_on_the_way():
            self._drain_inbox(block=True, timeout=GATHER_POLL_S)

    def _others_on_the_way(self) -> bool:
        """Whether an answer on its way (a token arriving() gives) is not yet this engine's."""
        here = {seq.arrival for seq in self._by_id.values()}
        return any(token not in here for token in self._arriving())

    def _drain_inbox(self, *, block: bool, timeout: float | None = None) -> None:
        """Apply the commands queued (block: waiting for the first, up to timeout if given)."""
        commands: list[Command] = []
        if block:
            try:
                commands.append(self._inbox.get(timeout=timeout))
            except queue.Empty:
                return
        while True:
            try:
                commands.append(self._inbox.get_nowait())
            except queue.Empty:
                break
        submitted = [command.seq for command in commands if isinstance(command, Submit)]
        preload = any(isinstance(command, Load) for command in commands)
        if (submitted or preload) and not self.runner.loaded:
            self._load(submitted)
        for command in commands:
            match command:
                case Submit(seq):
                    self._accept(seq)
                case Cancel(seq_id):
                    seq = self._by_id.get(seq_id)
                    if seq is not None:
                        self._finish(seq, "cancelled", now_ns())
                case Load():
                    pass  # loaded above, with any request that came with it
                case SetPolicy(name):
                    self.scheduler.set_policy(name)
                case Retire():
                    self._retiring = True
                case Stop():
                    pass  # it only woke the thread: _stopping is already set

    def _load(self, paying: list[Sequence]) -> None:
        for seq in paying:
            seq.emit(PhaseEvent("load", state="start"))
        start = now_ns()
        try:
            self.runner.load()
            self.load_error = None
        except EngineError as exc:
            self.load_error = exc
            log.error("model load failed: %s", exc.message)
            return
        load_ns = now_ns() - start
        self.scheduler.n_cells = self.runner.n_cells  # from now on the scheduler reserves cells
        for seq in paying:
            seq.clock.load_ns = load_ns
            seq.emit(PhaseEvent("load", state="done", ms=load_ns / NS_PER_MS))
            if self.runner.load_notice:
                seq.notice = self.runner.load_notice
                seq.emit(PhaseEvent("notice", message=seq.notice))

    def _accept(self, seq: Sequence) -> None:
        if not self.runner.loaded:
            err = self.load_error or EngineError("model_unusable", "The model could not be loaded.")
            seq.emit(ErrorEvent(err.code, err.message))
            return
        prompt = seq.prepared if seq.prepared is not None else self._prepare(seq)
        if isinstance(prompt, EngineError):
            seq.emit(ErrorEvent(prompt.code, prompt.message))
            return
        seq.prompt_tokens = prompt.tokens
        seq.stop_filter = StopStringFilter(tuple(seq.params.stop) + prompt.stop, prompt.hidden)
        seq.stop_tokens = prompt.stop_tokens
        if prompt.dropped_messages:
            dropped = (
                f"This conversation is longer than the model's context ({self.runner.n_ctx_max:,} "
                f"tokens): the oldest {prompt.dropped_messages} message(s) were left out of this answer."
            )
            seq.notice = f"{seq.notice} {dropped}".strip()
            seq.emit(PhaseEvent("notice", message=dropped))
        try:
            self.runner.new_sampler(seq.seq_id, seq.params, prompt.grammar)
        except EngineError as exc:
            seq.emit(ErrorEvent(exc.code, exc.message))
            return
        # No drafts under a grammar: the grammar sampler would have to accept and roll back
        # each draft token; a JSON answer or a tool call is decoded token by token.
        if seq.params.speculative and prompt.grammar is None:
            seq.speculator = PromptLookup(k_max=DRAFT_MAX, step_cost=self.cost_model.measured_decode_ms)
            seq.speculator.extend(seq.prompt_tokens)
        # The cells it may fill, reserved when it starts (scheduler.py): the answer may take its
        # max_tokens up to the per-request limit, where it ends with "length".
        seq.n_ctx = min(seq.prompt_len + seq.params.max_tokens, self.runner.n_ctx_max)
        self._by_id[seq.seq_id] = seq
        self.scheduler.add(seq)
        position = self.scheduler.queue_position(seq)
        if position > 1 or self.scheduler.running:
            seq.emit(PhaseEvent("queued", position=position))

    def _prepare(self, seq: Sequence) -> Prompt | EngineError:
        """The sequence's prompt, or the error that refuses it (one request's prompt must never
        fail the others)."""
        try:
            if seq.raw_prompt is not None:
                prompt = self.runner.prompts.build_raw(seq.raw_prompt)
            else:
                reserve = min(seq.params.max_tokens, self.runner.n_ctx_max // 2)
                tools = seq.output.tools if seq.output else ()
                prompt = self.runner.prompts.build(seq.messages, reserve=reserve, tools=tools)
            prompt.grammar = build_grammar(seq.output)
            return prompt
        except EngineError as exc:
            return exc
        except Exception as exc:
            log.exception("prompt for sequence %s failed", seq.seq_id)
            return EngineError("prompt_error", f"The prompt could not be built: {exc}")

    def _step(self) -> None:
        # Where the step stands, for the cost model to size a prompt slice at its depth: the
        # cells the decodes attend, and the deepest prompt being read.
        running = self.scheduler.running
        self.cost_model.at(
            decode_cells=sum(seq.position + 1 for seq in running if not seq.in_prefill),
            prompt_depth=max((seq.num_computed for seq in running if seq.in_prefill), default=0),
        )
        step = self.scheduler.schedule()
        if step is None:
            return
        # The step's events go to their relay threads together, once its sampling is done: a
        # relay woken by an event takes the interpreter at the engine's next ctypes call (each
        # releases it) and made the rest of the step wait; woken now, they run while the next
        # llama_decode holds no interpreter lock.
        for chunk in step.chunks:
            chunk.seq.hold_events()
        try:
            self._run_step(step)
        finally:
            self._deliver({chunk.seq.seq_id: chunk.seq for chunk in step.chunks}.values())

    def _deliver(self, seqs: Iterable[Sequence]) -> None:
        batch = [(seq, seq.take_held()) for seq in seqs]
        sent_on: Collection[int] = ()
        if self._on_events is not None:
            try:
                sent_on = self._on_events([(seq, events) for seq, events in batch if events])
            except Exception:
                log.exception("the step's events could not be sent on; their task threads send them")
        for seq, events in batch:
            seq.deliver(events, quiet=seq.seq_id in sent_on)

    def _run_step(self, step: Step) -> None:
        waiting_before = list(self.scheduler.waiting)
        attended = _cells(step)
        predicted = self.cost_model.predict(n_decode=step.decode_tokens, n_prefill=step.prefill_tokens, **attended)
        t0 = now_ns()
        try:
            to_sample = self.runner.decode(step)
        except EngineError as exc:
            for chunk in step.chunks:
                self._fail(chunk.seq, exc)
            return
        t1 = now_ns()
        for chunk in step.chunks:
            if chunk.prefill:
                seq = chunk.seq
                seq.clock.mark_prefill_chunk(t0, t1)
                seq.num_computed += chunk.n_tokens
                seq.emit(PhaseEvent("prefill", done=seq.num_computed, total=seq.prompt_len))
        for seq, index, draft in to_sample:
            if self.capture_first_logits and not seq.output_tokens:
                seq.first_logits = self.runner.logits(index)
            try:
                tokens = self._verify(seq, index, draft)
            except EngineError as exc:
                self._fail(seq, exc)
                continue
            t = now_ns()  # the tokens one step emits share its time
            if not self._ends_turn(seq, tokens[0]):
                seq.decode_steps += 1  # counted first: the answer's metrics may be taken below
            for token in tokens:
                self._on_token(seq, token, t)
                if seq.status is SeqStatus.FINISHED:
                    break
        # The cost model learns whole steps (sampling and events included): that is the gap a
        # chat sees between its tokens, which is what the stall target bounds.
        step_ms = (now_ns() - t0) / NS_PER_MS
        self.cost_model.observe(n_prefill=step.prefill_tokens, n_decode=step.decode_tokens, ms=step_ms, **attended)
        self._record_step(step, t0, t1, step_ms=step_ms, predicted_ms=predicted)
        if waiting_before != list(self.scheduler.waiting):
            for seq in self.scheduler.waiting:
                seq.emit(PhaseEvent("queued", position=self.scheduler.queue_position(seq)))

    def _verify(self, seq: Sequence, index: int, draft: tuple[int, ...]) -> list[int]:
        """The tokens this step gives the sequence, by sample-and-compare: its own sampler picks
        the token at the first logits; while that pick equals the draft's token there, the next
        position's logits are valid too and it picks again. Every emitted token is one sampler
        call on the logits decoding one token at a time would have given, so greedy and seeded
        answers are the same with or without a draft. The rejected draft tokens' KV cells go."""
        tokens: list[int] = []
        for j in range(len(draft) + 1):
            token = self.runner.sample(seq, index + j)
            tokens.append(token)
            if j == len(draft) or token != draft[j] or self._ends_turn(seq, token):
                break
        if draft:
            accepted = len(tokens) - 1
            seq.drafted += len(draft)
            seq.accepted += accepted
            seq.speculator.feedback(len(draft), accepted)
            if accepted < len(draft):
                # KV now holds the last token and the accepted drafts; the rest is dropped.
                self.runner.discard(seq, seq.position + len(tokens))
        return tokens

    def _ends_turn(self, seq: Sequence, token: int) -> bool:
        """Whether the token ends the answer before any text of its own (end of generation)."""
        return (self.runner.is_eog(token) or token in seq.stop_tokens) and not seq.params.ignore_eos

    def _on_token(self, seq: Sequence, token: int, t: int) -> None:
        if self._ends_turn(seq, token):
            self._finish(seq, "stop", t)
            return
        first = not seq.output_tokens
        seq.output_tokens.append(token)
        if seq.speculator is not None:
            seq.speculator.extend([token])
        seq.clock.mark_token(t)
        text = seq.stop_filter.feed(self.runner.piece(token))
        seq.text += text
        if first:
            seq.emit(PhaseEvent("decode"))
        seq.emit(TokenEvent(text, t_ms=seq.clock.since_arrival_ms(t)))
        if seq.stop_filter.stopped:
            self._finish(seq, "stop", t)
        elif len(seq.output_tokens) >= seq.params.max_tokens:
            self._finish(seq, "length", t)
        elif seq.position + 1 >= seq.n_ctx:
            self._finish(seq, "length", t)  # its reserved cells are full

    def _finish(self, seq: Sequence, reason: str, t: int) -> None:
        if seq.stop_filter is not None:
            seq.text += seq.stop_filter.flush()
        seq.clock.t_end = t
        seq.finish_reason = reason
        self.scheduler.finish(seq)
        self.runner.release(seq)
        self._by_id.pop(seq.seq_id, None)
        metrics = seq.clock.metrics(
            prompt_tokens=seq.prompt_len, cached_tokens=seq.num_cached, restored_tokens=seq.num_restored
        )
        metrics["finish_reason"] = reason
        metrics["kv_cells"] = seq.n_ctx  # the cells it had reserved
        metrics.update(spec_drafted=seq.drafted, spec_accepted=seq.accepted, decode_steps=seq.decode_steps)
        seq.emit(DoneEvent(text=seq.text, finish_reason=reason, notice=seq.notice, metrics=metrics))

    def _fail(self, seq: Sequence, exc: EngineError) -> None:
        self.scheduler.finish(seq)
        self.runner.release(seq, keep_cache=False)
        self._by_id.pop(seq.seq_id, None)
        seq.emit(ErrorEvent(exc.code, exc.message))

    def _fail_all(self, exc: EngineError) -> None:
        for seq in list(self._by_id.values()):
            self._fail(seq, exc)

    def _record_step(self, step: Step, t0: int, t1: int, *, step_ms: float, predicted_ms: float | None) -> None:
        record = {
            "t": perf_to_wall_ns(t0) / 1e9,
            "ms": (t1 - t0) / NS_PER_MS,  # llama_decode alone
            # The whole step (sampling and events too), as the cost model learns it, and what
            # the model predicted it would cost before it ran (None while it cannot yet).
            "step_ms": step_ms,
            "predicted_ms": predicted_ms,
            "prefill": step.prefill_tokens,
            "decode": step.decode_tokens,
            "draft": step.draft_tokens,
            "seqs": [c.seq.seq_id for c in step.chunks],
            "policy": self.scheduler.policy,
            # The KV cache after the step: cells reserved for the running answers, of all.
            "cells": self.scheduler.cells_reserved,
            "cells_total": self.scheduler.n_cells,
        }
        self.steps.append(record)
        if self._on_step is not None:
            self._on_step(record)


def _cells(step: Step) -> dict[str, int]:
    """The KV cells the step's decode and prompt tokens attend (budget.cells_attended)."""
    decode = prefill = 0
    for chunk in step.chunks:
        if chunk.prefill:
            prefill += cells_attended(chunk.seq.num_computed, chunk.n_tokens)
        else:
            decode += cells_attended(chunk.seq.position, chunk.n_tokens)
    return {"decode_cells": decode, "prefill_cells": prefill}
