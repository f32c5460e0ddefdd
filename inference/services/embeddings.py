"""Writes for one embeddings request: create its row, claim it (a worker), end it."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext

from inference.metrics import record_embedding
from inference.models import EmbeddingBatch
from inference.services.generations import check_daily_limits, lock_person
from infra.errors import ClientError

log = logging.getLogger(__name__)


def embedding_batch_create(*, user, client: str, model_name: str, inputs: int, t_arrive_ns: int) -> EmbeddingBatch:
    """A queued batch, once the person may send one: their daily limits (as for answers) and
    their place in line (as many waiting batches as answers, HOMEAI_MAX_WAITING_PER_USER)."""
    with transaction.atomic():
        lock_person(user)  # counted and written one request at a time (generations._check_room)
        check_daily_limits(user)
        waiting = EmbeddingBatch.objects.filter(user=user, status=EmbeddingBatch.Status.QUEUED).count()
        if waiting >= settings.HOMEAI_MAX_WAITING_PER_USER:
            raise ClientError(
                "busy",
                gettext(
                    "You already have %(n)s embedding requests waiting, as many as one person may; "
                    "send this once one of them has ended."
                )
                % {"n": waiting},
            )
        return EmbeddingBatch.objects.create(
            user=user, client=client, model_name=model_name, inputs=inputs, t_arrive_ns=t_arrive_ns
        )


def embedding_batch_claim(*, batch_id: int, worker: str) -> EmbeddingBatch | None:
    """The batch, now this worker's; None when it is not waiting any more (its request timed out,
    or another worker took a redelivered task)."""
    claimed = EmbeddingBatch.objects.filter(id=batch_id, status=EmbeddingBatch.Status.QUEUED, worker="").update(
        worker=worker
    )
    return EmbeddingBatch.objects.get(id=batch_id) if claimed == 1 else None


def embedding_batch_finish(
    *, batch_id: int, prompt_tokens: int, queue_ms: float, load_ms: float, compute_ms: float
) -> None:
    EmbeddingBatch.objects.filter(id=batch_id, status=EmbeddingBatch.Status.QUEUED).update(
        status=EmbeddingBatch.Status.DONE,
        prompt_tokens=prompt_tokens,
        queue_ms=queue_ms,
        load_ms=load_ms,
        compute_ms=compute_ms,
    )


def _end_queued(batch_id: int, **changes) -> bool:
    """End a batch that is still queued (its row changed, its end counted); False if it had ended."""
    ended = EmbeddingBatch.objects.filter(id=batch_id, status=EmbeddingBatch.Status.QUEUED).update(**changes)
    if ended:
        record_embedding(EmbeddingBatch.objects.get(id=batch_id))
    return bool(ended)


def embedding_batch_fail(*, batch_id: int, message: str) -> None:
    _end_queued(batch_id, status=EmbeddingBatch.Status.ERROR, error_message=message)


def embedding_batch_answered(*, batch_id: int, e2e_ms: float) -> None:
    """The web process handed the vectors to the client: the batch's time as the client saw it."""
    EmbeddingBatch.objects.filter(id=batch_id, status=EmbeddingBatch.Status.DONE, e2e_ms=None).update(e2e_ms=e2e_ms)
    record_embedding(EmbeddingBatch.objects.get(id=batch_id))


def embedding_batch_interrupt(*, batch_id: int) -> bool:
    """No worker answered in time, or the client went away: the batch ends, and a worker that
    takes its task later skips it (embedding_batch_claim)."""
    return _end_queued(batch_id, status=EmbeddingBatch.Status.INTERRUPTED)
