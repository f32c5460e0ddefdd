"""One indexing job's run, on a worker: the collection's files compared with what was indexed,
the new and changed ones read, chunked and embedded, the deleted ones forgotten.

1. Claim the job (queued -> running, a conditional update: a second delivery does nothing).
2. Scan the folder and the uploads; forget the files that are gone.
3. For each file found: unchanged when its size and mtime are the ones indexed; when they
   differ, the same bytes (its SHA-256) only update the row; otherwise it is read, chunked
   and embedded (small files' chunks together, EMBED_BATCH to a call), and its document row
   and chunks replace the old ones in one transaction.
   A file that cannot be read gets a per-file error (on its row and in the job's report).
4. Progress goes to the job's row and to watchers (report) as it goes; a cancel is seen
   between files and between embedding batches.

Every file is committed whole or not at all, so a run killed anywhere is resumed by the next
(index_job_start) from the files committed, and no file is embedded twice. The embedding model
is passed in (embed): the worker's own (the web never loads it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from documents import chunking, folders, selectors, vectors
from documents.extraction import Extracted, ExtractionError, extract
from documents.models import Chunk, Collection, Document, IndexJob
from infra.errors import ClientError

log = logging.getLogger(__name__)

EMBED_BATCH = 32  # chunks per call to the embedding model
REPORT_EVERY_S = 0.5  # progress to the row and watchers at most this often (and at the end)
CANCEL_EVERY_S = 0.25
MAX_REPORTED_ERRORS = 500  # a folder of 100,000 broken files keeps the first ones in the job's row

Embed = Callable[[list[str]], list[list[float]]]
Report = Callable[[dict], None]


class Cancelled(Exception):
    pass


@dataclass(frozen=True)
class _Pending:
    item: folders.Found
    extracted: Extracted
    pieces: list[chunking.Piece]


class _Run:
    def __init__(self, job: IndexJob, embed: Embed, report: Report):
        self.job = job
        self.embed = embed
        self.report = report
        self.reported = 0.0
        self.cancel_checked = float("-inf")
        self.max_bytes = settings.HOMEAI_DOCUMENT_MAX_MB * 1_000_000

    def save(self, *, force: bool = False, **fields) -> None:
        """Progress into the row (never its cancel flag, which the web sets) and to watchers."""
        now = time.monotonic()
        if not force and now - self.reported < REPORT_EVERY_S:
            return
        self.reported = now
        job = self.job
        IndexJob.objects.filter(id=job.id).update(
            files_total=job.files_total,
            files_done=job.files_done,
            bytes_total=job.bytes_total,
            bytes_done=job.bytes_done,
            files_embedded=job.files_embedded,
            files_removed=job.files_removed,
            chunks=job.chunks,
            current_file=job.current_file,
            errors=job.errors,
            **fields,
        )
        for name, value in fields.items():
            setattr(job, name, value)
        try:
            self.report(selectors.job_progress(job))
        except Exception:
            log.exception("index job %s: its progress was not sent", job.id)

    def check_cancel(self, *, now: bool = False) -> None:
        """Cancelled cuts the run short; asked of the database at most every CANCEL_EVERY_S
        between files (a folder of tiny files would ask once a file), and before every call to
        the model."""
        at = time.monotonic()
        if not now and at - self.cancel_checked < CANCEL_EVERY_S:
            return
        self.cancel_checked = at
        if IndexJob.objects.filter(id=self.job.id, cancel_requested=True).exists():
            raise Cancelled

    def error(self, path: str, code: str, message: str) -> None:
        if len(self.job.errors) < MAX_REPORTED_ERRORS:
            self.job.errors.append({"path": path, "code": code, "message": message})

    def run(self) -> None:
        collection = self.job.collection
        found = folders.scan(collection)
        known = {(d.source, d.path): d for d in Document.objects.filter(collection=collection)}
        present = {(f.source, f.path) for f in found}
        gone = [d.id for key, d in known.items() if key not in present]
        if gone:
            with transaction.atomic():
                Document.objects.filter(id__in=gone).delete()
                Collection.objects.filter(id=collection.id).update(version=F("version") + 1)
        self.job.files_removed = len(gone)
        self.job.files_total = len(found)
        self.job.bytes_total = sum(f.size for f in found)
        self.save(force=True)
        pending: list[_Pending] = []  # read and chunked, to be embedded together
        for item in found:
            self.check_cancel()
            self.job.current_file = item.path
            self.save()
            ready = None
            if item.error_code:
                self.error(item.path, item.error_code, item.error)
            else:
                ready = self.one_file(collection, item, known.get((item.source, item.path)))
            if ready is None:
                self.job.files_done += 1
                self.job.bytes_done += item.size
                continue
            pending.append(ready)
            if sum(len(p.pieces) for p in pending) >= EMBED_BATCH:
                self.embed_and_commit(collection, pending)
                pending = []
        self.embed_and_commit(collection, pending)

    def one_file(self, collection: Collection, item: folders.Found, indexed: Document | None) -> _Pending | None:
        """The file read and chunked, to embed; None when it is done with (unchanged, the same
        bytes, or an error)."""
        if indexed is not None and (indexed.size, indexed.mtime_ns) == (item.size, item.mtime_ns):
            if indexed.status == Document.Status.ERROR:
                self.error(item.path, indexed.error_code, indexed.error)
            return None
        root = folders.source_root(collection, item.source)
        try:
            extracted = extract(root / item.path, max_bytes=self.max_bytes)
        except ExtractionError as exc:
            self.error(item.path, exc.code, exc.message)
            if exc.code == "vanished":
                Document.objects.filter(collection=collection, source=item.source, path=item.path).delete()
            else:
                Document.objects.update_or_create(
                    collection=collection,
                    source=item.source,
                    path=item.path,
                    defaults={
                        "size": item.size,
                        "mtime_ns": item.mtime_ns,
                        "sha256": "",
                        "status": Document.Status.ERROR,
                        "error_code": exc.code,
                        "error": exc.message,
                        "chunks_count": 0,
                    },
                )
                self._forget_chunks(collection, indexed)
            return None
        if indexed is not None and indexed.status == Document.Status.INDEXED and indexed.sha256 == extracted.sha256:
            Document.objects.filter(id=indexed.id).update(size=extracted.size, mtime_ns=extracted.mtime_ns)
            return None
        return _Pending(item, extracted, chunking.chunks(extracted.sections))

    def embed_and_commit(self, collection: Collection, pending: list[_Pending]) -> None:
        """Embed the chunks of these files together (small files share a call to the model),
        then commit each file whole, in its own transaction."""
        texts = [piece.text for one in pending for piece in one.pieces]
        embedded: list[bytes] = []
        for start in range(0, len(texts), EMBED_BATCH):
            self.check_cancel(now=True)
            embedded.extend(vectors.to_bytes(v) for v in self.embed(texts[start : start + EMBED_BATCH]))
        for one in pending:
            self.commit(collection, one, embedded[: len(one.pieces)])
            embedded = embedded[len(one.pieces) :]
            self.job.files_done += 1
            self.job.bytes_done += one.item.size

    def commit(self, collection: Collection, one: _Pending, embedded: list[bytes]) -> None:
        item, extracted, pieces = one.item, one.extracted, one.pieces
        with transaction.atomic():
            document, _ = Document.objects.update_or_create(
                collection=collection,
                source=item.source,
                path=item.path,
                defaults={
                    "size": extracted.size,
                    "mtime_ns": extracted.mtime_ns,
                    "sha256": extracted.sha256,
                    "status": Document.Status.INDEXED,
                    "error_code": "",
                    "error": "",
                    "chunks_count": len(pieces),
                },
            )
            Chunk.objects.filter(document=document).delete()
            Chunk.objects.bulk_create(
                Chunk(
                    collection=collection,
                    document=document,
                    position=p.position,
                    page=p.page,
                    section=p.heading[:300],
                    text=p.text,
                    embedding=vector,
                )
                for p, vector in zip(pieces, embedded, strict=True)
            )
            Collection.objects.filter(id=collection.id).update(version=F("version") + 1)
        if embedded:
            vectors.written(len(embedded[0]) // vectors.DTYPE.itemsize)
        self.job.files_embedded += 1
        self.job.chunks += len(pieces)

    def _forget_chunks(self, collection: Collection, indexed: Document | None) -> None:
        if indexed is not None and indexed.status == Document.Status.INDEXED:
            with transaction.atomic():
                Chunk.objects.filter(document_id=indexed.id).delete()
                Collection.objects.filter(id=collection.id).update(version=F("version") + 1)


def job_waiting(job_id: int) -> bool:
    """Whether the job still waits for a worker (a task for one that ran or ended is dropped)."""
    return IndexJob.objects.filter(id=job_id, status=IndexJob.Status.QUEUED).exists()


def job_claim(*, job_id: int, worker: str) -> IndexJob | None:
    claimed = IndexJob.objects.filter(id=job_id, status=IndexJob.Status.QUEUED).update(
        status=IndexJob.Status.RUNNING, worker=worker, started_at=timezone.now()
    )
    return IndexJob.objects.select_related("collection").get(id=job_id) if claimed == 1 else None


def job_run(*, job_id: int, worker: str, embed: Embed, report: Report) -> IndexJob | None:
    """Run one queued job to its end (done, cancelled or error); None when it was not queued."""
    job = job_claim(job_id=job_id, worker=worker)
    if job is None:
        return None
    run = _Run(job, embed, report)
    try:
        run.run()
    except Cancelled:
        job.current_file = ""
        run.save(force=True, status=IndexJob.Status.CANCELLED, ended_at=timezone.now())
    except ClientError as exc:  # the collection's folder is no longer inside the documents folder
        job.current_file = ""
        run.save(force=True, status=IndexJob.Status.ERROR, message=exc.message, ended_at=timezone.now())
    except Exception:
        log.exception("index job %s failed", job_id)
        job.current_file = ""
        message = gettext("Indexing stopped on an unexpected error; the worker's log says why. Start it again.")
        run.save(force=True, status=IndexJob.Status.ERROR, message=message, ended_at=timezone.now())
    else:
        job.current_file = ""
        run.save(force=True, status=IndexJob.Status.DONE, ended_at=timezone.now())
    return IndexJob.objects.get(id=job_id)
