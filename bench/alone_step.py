"""A question asked while a long prompt is read with nothing decoding, and a long prompt alone:
what cutting such steps to HOMEAI_STALL_BURST_MS (budget.py, _alone_budget) gives and costs.

    .venv/bin/python bench/alone_step.py [--model PATH] [--threads 2] [--rounds 3]

The engine in process on the chat model, chunked policy at the default stall factor, the cut on
(burst 500 ms) and off (burst 0), alternated per round. Scenario "question": a ~350-token prompt
(Open WebUI's follow-up task after an answer) and, once its prefill has begun, a one-line question;
the question's TTFT. Scenario "long": a ~2,000-token prompt alone; its TTFT. Prints medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homeai.settings")
django.setup()

from django.conf import settings  # noqa: E402  (after django.setup)

from inference.engine.budget import StepCostModel  # noqa: E402
from inference.engine.engine import Engine  # noqa: E402
from inference.engine.events import DoneEvent, PhaseEvent  # noqa: E402
from inference.engine.runner import Runner, RunnerConfig  # noqa: E402
from inference.engine.scheduler import Scheduler  # noqa: E402
from inference.engine.sequence import SamplingParams, Sequence  # noqa: E402
from inference.engine.timing import PhaseClock, now_ns  # noqa: E402

SLOTS = 4
ONE = SamplingParams(max_tokens=1, temperature=0.0)
TASK = " ".join(f"Suggest follow-up question {i} about network storage, backups and media." for i in range(26))
DOC = " ".join(f"Line {i}: the quick brown fox jumps over the lazy dog." for i in range(160))


def seq(i: int, text: str) -> Sequence:
    return Sequence(
        seq_id=i, messages=[{"role": "user", "content": text}], params=ONE, clock=PhaseClock(t_arrive=now_ns())
    )


def done(s: Sequence) -> DoneEvent:
    while True:
        ev = s.events.get(timeout=300)
        if isinstance(ev, DoneEvent):
            return ev


def prefill_begun(s: Sequence) -> None:
    while True:
        ev = s.events.get(timeout=300)
        if isinstance(ev, PhaseEvent) and ev.phase == "prefill":
            return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(settings.BUNDLED_CHAT_MODEL_PATH))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[tuple[float, str], list[float]] = {}
    n = 0
    for _ in range(args.rounds):
        for burst in (settings.HOMEAI_STALL_BURST_MS, 0.0):
            runner = Runner(
                RunnerConfig(
                    model_path=Path(args.model), n_ctx_seq=4096, n_slots=SLOTS, n_batch=512, n_threads=args.threads
                )
            )
            engine = Engine(
                runner=runner,
                scheduler=Scheduler(policy="chunked", n_slots=SLOTS, n_batch=512, token_budget=256),
                cost_model=StepCostModel(None, stall_factor=settings.HOMEAI_STALL_FACTOR, burst_ms=burst),
            )
            try:
                for i in range(3):  # warm up, and teach what a prompt read alone costs per token
                    n += 1
                    engine.submit(warm := seq(n, f"{i} {DOC}"))
                    done(warm)
                for i in range(3):
                    n += 2
                    task, question = seq(n, f"{i} {TASK}"), seq(n + 1, f"{i} What is a NAS good for?")
                    engine.submit(task)
                    prefill_begun(task)
                    question.clock = PhaseClock(t_arrive=now_ns())
                    engine.submit(question)
                    results.setdefault((burst, "question"), []).append(done(question).metrics["ttft_ms"])
                    done(task)
                    n += 1
                    engine.submit(long := seq(n, f"{i} again {DOC}"))
                    results.setdefault((burst, "long"), []).append(done(long).metrics["ttft_ms"])
            finally:
                engine.stop()
    for (burst, scenario), values in sorted(results.items()):
        each = ", ".join(f"{v:.0f}" for v in values)
        print(f"burst {burst:5.0f} ms  {scenario:8s}  TTFT median {statistics.median(values):7.1f} ms  ({each})")


if __name__ == "__main__":
    main()
