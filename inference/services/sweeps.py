"""The web side's repairs for what a worker left behind, run every second by the watchdog:
interrupted answers, lost tasks, and the sentence people see while no worker is alive.

Each is idempotent by conditional update, so several web processes may sweep at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from inference import broadcast, events
from inference.metrics import record_generation
from inference.models import Generation
from inference.worker import registry

INTERRUPTED_MESSAGE = "The worker stopped while writing this answer; the text so far is kept."
LOST_MESSAGE = "The worker lost track of this answer; the text so far is kept."
NO_WORKER_MESSAGE = "No worker is running right now; this message will be answered as soon as one starts."


@dataclass
class SweepMemory:
    """What the sweeps remember between rounds (one per sweeping process)."""

    notified: set[int] = field(default_factory=set)  # answers told that no worker is alive
    resent: set[int] = field(default_factory=set)  # answers whose task was sent again
    suspects: dict[int, float] = field(default_factory=dict)  # see generations_interrupt_lost


def sweep(memory: SweepMemory) -> None:
    """One round of every repair, on one reading of the workers' heartbeats."""
    workers = registry.live_workers()
    generations_interrupt_orphans(workers=workers)
    generations_interrupt_lost(workers=workers, suspects=memory.suspects)
    generations_notify_no_worker(workers=workers, notified=memory.notified)
    generations_resend_stale(workers=workers, resent=memory.resent)


def generations_interrupt_orphans(*, workers: dict[str, dict]) -> list[Generation]:
    """Mark running answers whose worker stopped beating as interrupted, and tell their users."""
    alive = set(workers)
    orphans = Generation.objects.filter(status=Generation.Status.RUNNING).exclude(worker__in=alive)
    return [g for g in orphans.select_related("user") if _interrupt(g, INTERRUPTED_MESSAGE)]


def generations_interrupt_lost(*, workers: dict[str, dict], suspects: dict[int, float]) -> list[Generation]:
    """Mark running answers that their (living) worker no longer runs as interrupted.

    A worker's heartbeat lists the answers it runs. One that is missing may only have been
    claimed after that beat was written, so it is a suspect first, and is interrupted only when
    a later beat of the same worker still leaves it out. `suspects` (answer id -> the beat's
    time) is the caller's memory between sweeps.
    """
    running = Generation.objects.filter(status=Generation.Status.RUNNING, worker__in=list(workers))
    lost, seen = [], set()
    for generation in running.select_related("user"):
        beat = workers[generation.worker]
        if "answers" not in beat or generation.id in beat["answers"]:
            continue  # a worker too old to say, or the answer is being written
        seen.add(generation.id)
        first_missed = suspects.setdefault(generation.id, beat["time"])
        if beat["time"] > first_missed:
            seen.discard(generation.id)  # decided: forget it either way
            if _interrupt(generation, LOST_MESSAGE):
                lost.append(generation)
    for gid in set(suspects) - seen:
        del suspects[gid]
    return lost


def _interrupt(generation: Generation, message: str) -> bool:
    """Running -> interrupted (one sweeper wins the row), keeping the text; tell its client."""
    changed = Generation.objects.filter(id=generation.id, status=Generation.Status.RUNNING).update(
        status=Generation.Status.INTERRUPTED,
        error_code="interrupted",
        error_message=message,
        finish_reason="interrupted",
        finished_at=timezone.now(),
    )
    if not changed:
        return False
    generation.refresh_from_db()
    record_generation(generation)
    broadcast.publish_for(generation, [events.error(generation.id, "interrupted", message)])
    broadcast.publish_dashboard([events.request_done(generation)])
    return True


def generations_resend_stale(*, workers: dict[str, dict], resent: set[int]) -> None:
    """Send the task again, once, for answers queued too long while workers are alive.

    The web process stores an answer and then sends its task; if it died in between, nothing
    would ever run it. A second task for an answer that is merely waiting in a long line is
    harmless: the claim (queued -> running) lets only one of them run.
    """
    if not workers:
        return
    cutoff = timezone.now() - timezone.timedelta(seconds=settings.HOMEAI_RESEND_AFTER_S)
    stale = Generation.objects.filter(status=Generation.Status.QUEUED, created_at__lt=cutoff).exclude(id__in=resent)
    for generation_id in stale.values_list("id", flat=True):
        resent.add(generation_id)
        registry.send_generation(generation_id)


def generations_notify_no_worker(*, workers: dict[str, dict], notified: set[int]) -> None:
    """Tell people whose answers wait that no worker is alive (once per answer), so a stopped
    worker shows up as a sentence instead of an endless "queued"."""
    if workers:
        notified.clear()
        return
    cutoff = timezone.now() - timezone.timedelta(seconds=settings.HOMEAI_WORKER_TTL)
    waiting = Generation.objects.filter(status=Generation.Status.QUEUED, created_at__lt=cutoff).exclude(id__in=notified)
    for generation in waiting.select_related("user"):
        notified.add(generation.id)
        broadcast.publish_for(generation, [events.phase(generation.id, "notice", message=NO_WORKER_MESSAGE)])
