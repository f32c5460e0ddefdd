"""A chat answer's tool calls, in its task thread (never the engine thread): the first round's
calls read from its text, each shown as a card, an acting tool's call held for the person's
yes, each run (inference/tools/calls.py), and the second round's Sequence: the conversation
with the calls and their results (Hermes text, engine/tools.py), the answer continuing free.

One round of calls per answer: the second round is offered no tools, so the answer ends."""

from __future__ import annotations

import logging
import time

import redis
from django.conf import settings

from inference import broadcast, events, redis_client
from inference.engine.events import DoneEvent
from inference.engine.sequence import Sequence
from inference.engine.timing import PhaseClock, wall_to_perf_ns
from inference.engine.tools import MAX_PARALLEL_CALLS, OutputSpec, answer_calls, call_text, response_text
from inference.models import Generation
from inference.tools import calls as tool_calls
from inference.worker.cancels import Watched

CONFIRM_POLL_S = 0.2
REFUSED = "The person refused this call; it did not run."
UNANSWERED = "No one confirmed this call in time; it did not run."
UNKNOWN = "There is no tool of that name."
log = logging.getLogger(__name__)

# Summed over both rounds (prefill, decode and tokens: each round did its own); queue, load and
# TTFT are the first round's, the rates the last's.
_SUMMED = ("load_ms", "prefill_ms", "first_token_ms", "decode_ms", "prompt_tokens", "cached_tokens", "output_tokens")
_SUMMED_OPTIONAL = ("restored_tokens", "spec_drafted", "spec_accepted", "decode_steps")


class ToolRound:
    """The tool side of one chat answer: None from offered() when the answer has no tools."""

    def __init__(self, generation: Generation):
        self.generation = generation
        self.entries = {tool["name"]: tool for tool in generation.output.get("chat_tools", ())}
        self.spec = OutputSpec.from_dict(generation.output)
        self.first: DoneEvent | None = None
        self.visible = ""
        self.cards: list[dict] = []
        self.tool_ms = 0.0
        self.offset_ms = 0.0
        self.cancelled = False

    @classmethod
    def offered(cls, generation: Generation) -> ToolRound | None:
        return cls(generation) if generation.client == "chat" and generation.output.get("chat_tools") else None

    def next_sequence(self, seq: Sequence, final: DoneEvent, watched: Watched, feed) -> Sequence | None:
        """The second round's sequence when the first called tools (run here), else None."""
        if self.first is not None or final.finish_reason == "cancelled":
            return None
        content, calls = answer_calls(final.text, self.spec, final.finish_reason)
        if not calls:
            return None
        started = time.perf_counter()
        self.first, self.visible = final, content
        feed.tool()
        results = []
        for index, call in enumerate(calls[:MAX_PARALLEL_CALLS]):
            results.append(self._call(index, call, watched))
            if self.cancelled:
                break
        self.tool_ms = (time.perf_counter() - started) * 1000
        Generation.objects.filter(id=self.generation.id).update(tool_calls=self.cards, tool_ms=self.tool_ms)
        if self.cancelled:
            return None
        said = "\n".join(call_text(card["tool"], card["arguments"]) for card in self.cards)
        answers = "\n".join(response_text(result) for result in results)
        turns = [{"role": "assistant", "content": said}, {"role": "user", "content": answers}]
        clock = PhaseClock(t_arrive=time.perf_counter_ns())
        self.offset_ms = (clock.t_arrive - wall_to_perf_ns(self.generation.t_arrive_ns)) / 1e6
        return Sequence(
            seq_id=seq.seq_id, messages=[*seq.messages, *turns], params=seq.params, clock=clock, owner=seq.owner
        )

    def _call(self, index: int, call: dict, watched: Watched) -> str:
        """Run one call (after the person's yes, for an acting tool): what the model is told."""
        name, arguments = call["name"], call["arguments"]
        entry = self.entries.get(name)
        card = {"index": index, "tool": name, "arguments": arguments, "acts": bool(entry and entry["acts"])}
        self.cards.append(card)
        if entry is None:
            return self._end(card, "error", UNKNOWN, 0.0)
        if card["acts"]:
            self._show(card, "confirm")
            answer = self._confirmation(index, watched)
            if answer != "allow":
                self.cancelled = answer == "cancel"
                return self._end(card, "refused", UNANSWERED if answer == "timeout" else REFUSED, 0.0)
        self._show(card, "running")
        ran = tool_calls.run(self.generation.user, entry["key"], name, arguments)
        return self._end(card, ran["status"], ran["result"], ran["ms"])

    def _end(self, card: dict, status: str, result: str, ms: float) -> str:
        card.update(result=result, ms=round(ms, 1))
        self._show(card, status)
        return result

    def _show(self, card: dict, status: str) -> None:
        card["status"] = status
        broadcast.publish_for(self.generation, [events.tool(self.generation.id, dict(card), text=self.visible)])

    def _confirmation(self, index: int, watched: Watched) -> str:
        """ "allow" or "deny" from the person (chat.tool_confirm), "cancel" when they stop the
        answer, "timeout" after HOMEAI_TOOL_CONFIRM_S. Redis down reads as no answer yet."""
        key = redis_client.tool_confirm_key(self.generation.id, index)
        deadline = time.monotonic() + settings.HOMEAI_TOOL_CONFIRM_S
        while time.monotonic() < deadline:
            if watched.asked_at is not None:
                return "cancel"
            try:
                answer = redis_client.client().getdel(key)
            except redis.RedisError:
                answer = None
            if answer in (b"allow", b"deny"):
                return answer.decode()
            time.sleep(CONFIRM_POLL_S)
        return "timeout"

    def merged(self, final: DoneEvent) -> DoneEvent:
        """The answer's end over both rounds (final: the second's, or the first's when no
        second ran): its visible text, and metrics with the tool phase."""
        first = self.first
        if final is first:  # cancelled while the tools ran
            return DoneEvent(self.visible, "cancelled", first.notice, {**first.metrics, "token_times_ms": []})
        text = f"{self.visible}\n\n{final.text}" if self.visible else final.text
        one, two = first.metrics, final.metrics
        metrics = {**two, "queue_ms": one["queue_ms"], "ttft_ms": one["ttft_ms"], "cold": one["cold"] or two["cold"]}
        for name in _SUMMED:
            metrics[name] = (one.get(name) or 0) + (two.get(name) or 0)
        for name in _SUMMED_OPTIONAL:
            if one.get(name) is not None or two.get(name) is not None:
                metrics[name] = (one.get(name) or 0) + (two.get(name) or 0)
        shift = self.offset_ms
        metrics["token_times_ms"] = [shift + t for t in two.get("token_times_ms", [])]
        metrics["itl_ms"] = list(two.get("itl_ms", []))
        if two.get("e2e_ms") is not None:
            metrics["e2e_ms"] = shift + two["e2e_ms"]
        return DoneEvent(text, final.finish_reason, final.notice or first.notice, metrics)
