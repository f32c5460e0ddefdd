"""The web side's repairs for what a worker left behind, run every second by the watchdog:
interrupted answers, lost tasks, the sentence people see while no worker is alive, and the
documents' periodic re-scan.

Each is idempotent by conditional update, so several web processes may sweep at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from documents import services as document_services
from documents.models import IndexJob
from inference import broadcast, events
from inference.dispatch import registry
from inference.metrics import record_generation
from inference.models import Generation
from inference.services import indexing

INTERRUPTED_MESSAGE = "The worker stopped while writing this answer; the text so far is kept."
LOST_MESSAGE = "The worker lost track of this answer; the text so far is kept."
RETRY_MESSAGE = "The worker stopped before this answer began; it starts again."
MAX_ATTEMPTS = 2
RESCAN_CHECK_S = 60.0  # how often a sweeping process looks for collections due a re-scan
NO_WORKER_MESSAGE = "No worker is running right now; this message will be answered as soon as one starts."
NO_MODEL_WORKER_MESSAGE = (
    "No worker that holds {model} is running right now; this message will be answered as soon as one starts."
)


@dataclass
class SweepMemory:
    """What the sweeps remember between rounds (one per sweeping process)."""

    notified: set[int] = field(default_factory=set)  # answers told that no worker is alive
    resent: dict[int, float] = field(default_factory=dict)  # answer id -> when its task was last sent again
    suspects: dict[int, float] = field(default_factory=dict)  # see generations_interrupt_lost
    missing: dict[str, float] = field(default_factory=dict)  # see generations_interrupt_orphans
    redis_failed: bool = False  # Redis failed since the last resend: its queue may be gone
    rescan_checked: float = float("-inf")  # when documents_rescan last looked (monotonic)
    index_missing: dict[str, float] = field(default_factory=dict)  # see documents_resume_orphans


def sweep(memory: SweepMemory) -> None:
    """One round of every repair, on one reading of the workers' heartbeats.

    A failed reading (Redis down) raises, and the round is skipped; the next good one also
    sends again every waiting answer's task, since a Redis restart may have emptied the queue.
    """
    try:
        workers = registry.live_workers()
    except Exception:
        memory.redis_failed = True
        raise
    generations_interrupt_orphans(workers=workers, missing=memory.missing)
    generations_interrupt_lost(workers=workers, suspects=memory.suspects)
    generations_notify_no_worker(workers=workers, notified=memory.notified)
    if memory.redis_failed and workers:
        generations_resend_stale(workers=workers, resent=memory.resent, waited_s=0)
        memory.redis_failed = False
    else:
        generations_resend_stale(workers=workers, resent=memory.resent)
    documents_resume_orphans(workers=workers, missing=memory.index_missing)
    documents_rescan(workers=workers, memory=memory)


def _gone(absent: set[str], missing: dict[str, float]) -> list[str]:
    """The absent workers whose heartbeat has been missing for a whole TTL of this sweeper's own
    readings, not at the first reading without it: a Redis restart loses every heartbeat, and
    the living workers write theirs again within a quarter of the TTL. `missing` (worker -> when
    first seen missing, monotonic) is the caller's memory; workers back again leave it."""
    now = time.monotonic()
    for name in set(missing) - absent:
        del missing[name]
    return [name for name in absent if now - missing.setdefault(name, now) >= settings.HOMEAI_WORKER_TTL]


def _embedding_holders(workers: dict[str, dict]) -> set[str]:
    """The live workers whose heartbeat says they hold the embedding model."""
    name = indexing.embedding_model()
    return {w for w, beat in workers.items() if any(m.get("name") == name for m in beat.get("models") or [])}


def documents_resume_orphans(*, workers: dict[str, dict], missing: dict[str, float]) -> list[int]:
    """An index job whose worker died goes on without anyone pressing Index again: once that
    worker has been gone for a whole TTL (as for answers), the job ends as interrupted and a new
    one starts from the files already committed (documents.services.index_job_start), sent to a
    worker that holds the embedding model and told to the collection's page. With no such
    worker alive the job is left as it is for a later look. Returns the new jobs' ids."""
    running = IndexJob.objects.filter(status=IndexJob.Status.RUNNING).exclude(worker__in=list(workers))
    gone = _gone(set(running.values_list("worker", flat=True).distinct()), missing)
    holders = _embedding_holders(workers)
    if not gone or not holders:
        return []
    resumed = []
    for job in running.filter(worker__in=gone).select_related("collection", "requested_by"):
        new_job, new = indexing.index_start(user=job.requested_by, collection=job.collection, holders=holders)
        if new:
            resumed.append(new_job.id)
    return resumed


def documents_rescan(*, workers: dict[str, dict], memory: SweepMemory) -> list[int]:
    """HOMEAI_RESCAN_MINUTES: the collections' folders indexed again, looked for once a minute
    (documents.services.index_jobs_rescan; one job per collection whatever sweeps at once)."""
    minutes = settings.HOMEAI_RESCAN_MINUTES
    now = time.monotonic()
    if minutes <= 0 or now - memory.rescan_checked < RESCAN_CHECK_S:
        return []
    memory.rescan_checked = now
    holders = _embedding_holders(workers)
    jobs = document_services.index_jobs_rescan(minutes=minutes, live_workers=holders)
    for job in jobs:
        indexing.tell_watchers(job)
        indexing.send(job)
    return [job.id for job in jobs]


def generations_interrupt_orphans(*, workers: dict[str, dict], missing: dict[str, float]) -> list[Generation]:
    """Mark running answers whose worker stopped beating as interrupted, and tell their users.

    A worker counts as gone once its heartbeat has been missing for a whole TTL of this
    sweeper's own readings, not at the first reading without it: a Redis restart loses every
    heartbeat, and the living workers write theirs again within a quarter of the TTL.
    `missing` (worker -> when first seen missing, monotonic) is the caller's memory.
    """
    running = Generation.objects.filter(status=Generation.Status.RUNNING).exclude(worker__in=list(workers))
    gone = _gone(set(running.values_list("worker", flat=True).distinct()), missing)
    if not gone:
        return []
    orphans = running.filter(worker__in=gone).select_related("user", "message")
    return [g for g in orphans if not _retry(g) and _interrupt(g, INTERRUPTED_MESSAGE)]


def _retry(generation: Generation) -> bool:
    """Queue again an answer whose worker died before it wrote a word, once: nothing of it is
    lost by starting over, and the person gets an answer instead of an empty "interrupted"."""
    if generation.message.content or generation.attempts >= MAX_ATTEMPTS:
        return False
    changed = Generation.objects.filter(
        id=generation.id, status=Generation.Status.RUNNING, worker=generation.worker
    ).update(status=Generation.Status.QUEUED, worker="")
    if not changed:
        return False
    broadcast.publish_for(generation, [events.phase(generation.id, "notice", message=RETRY_MESSAGE)])
    registry.send_generation(generation.id, generation.model_name)
    return True


def generations_interrupt_lost(*, workers: dict[str, dict], suspects: dict[int, float]) -> list[Generation]:
    """Mark running answers that their (living) worker no longer runs as interrupted.

    A worker's heartbeat lists the answers it runs. One that is missing may only have been
    claimed after that beat was written, so it is a suspect first, and is interrupted only when
    a later beat of the same worker still leaves it out. `suspects` (answer id -> the beat's
    time) is the caller's memory between sweeps.
    """
    running = Generation.objects.filter(status=Generation.Status.RUNNING, worker__in=list(workers))
    decided, seen = [], set()
    # Ids and workers only: this runs every second while answers stream, and the whole rows are
    # wanted only for the rare answer found lost.
    for gid, worker in running.values_list("id", "worker"):
        beat = workers[worker]
        if "answers" not in beat or gid in beat["answers"]:
            continue  # a worker too old to say, or the answer is being written
        seen.add(gid)
        first_missed = suspects.setdefault(gid, beat["time"])
        if beat["time"] > first_missed:
            seen.discard(gid)  # decided: forget it either way
            decided.append(gid)
    for gid in set(suspects) - seen:
        del suspects[gid]
    if not decided:
        return []
    return [g for g in running.filter(id__in=decided).select_related("user") if _interrupt(g, LOST_MESSAGE)]


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
    broadcast.publish_for(generation, [events.final(generation, generation.id)])  # interrupted, with its saved text
    broadcast.publish_dashboard([events.request_done(generation)])
    return True


def generations_resend_stale(
    *, workers: dict[str, dict], resent: dict[int, float], waited_s: float | None = None
) -> None:
    """Send the task again for answers queued too long while workers are alive, and again every
    HOMEAI_RESEND_AFTER_S while they still wait.

    A task can be lost: the web process stores an answer and then sends its task, and may die in
    between; the broker was unreachable when it was sent; a Redis restart without persistence
    empties the queue. A second task for an answer that is merely waiting in a long line is
    harmless: the claim (queued -> running) lets only one of them run.

    waited_s: resend what has waited this long (default HOMEAI_RESEND_AFTER_S); 0 after Redis
    failed, when every waiting answer's task may be gone.
    """
    if not workers:
        return
    every = settings.HOMEAI_RESEND_AFTER_S
    cutoff = timezone.now() - timezone.timedelta(seconds=every if waited_s is None else waited_s)
    now = time.monotonic()
    if waited_s is not None:
        resent.clear()
    held = registry.held_models(workers)
    queued = Generation.objects.filter(status=Generation.Status.QUEUED, created_at__lt=cutoff)
    # Only answers some living worker can write: the others wait in their model's queue.
    stale = {gid: model for gid, model in queued.values_list("id", "model_name") if model in held}
    for generation_id in set(resent) - set(stale):
        del resent[generation_id]
    for generation_id in sorted(stale):
        if now - resent.get(generation_id, -every) >= every:
            resent[generation_id] = now
            registry.send_generation(generation_id, stale[generation_id])


def generations_notify_no_worker(*, workers: dict[str, dict], notified: set[int]) -> None:
    """Tell people whose answers wait that no worker is alive, or none that holds their answer's
    model (once per answer while it lasts), so a stopped worker shows up as a sentence instead
    of an endless "queued"."""
    cutoff = timezone.now() - timezone.timedelta(seconds=settings.HOMEAI_WORKER_TTL)
    held = registry.held_models(workers)
    waiting = Generation.objects.filter(status=Generation.Status.QUEUED, created_at__lt=cutoff).exclude(
        model_name__in=held
    )
    unserved = set(waiting.values_list("id", flat=True))
    notified &= unserved  # an answer whose worker came back (and went again) is told again
    untold = unserved - notified
    if not untold:
        return
    for generation in waiting.filter(id__in=untold).select_related("user"):
        notified.add(generation.id)
        message = NO_WORKER_MESSAGE if not workers else NO_MODEL_WORKER_MESSAGE.format(model=generation.model_name)
        broadcast.publish_for(generation, [events.phase(generation.id, "notice", message=message)])
