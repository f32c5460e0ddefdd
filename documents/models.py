"""The household's documents: collections (who may read them, where their files are), the files
in them, each file's chunks with their vectors, and the indexing jobs that keep them current."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Collection(models.Model):
    """Files a person gathered (uploads, and/or a folder under HOMEAI_DOCUMENTS_DIR), and who may
    read them: the owner alone, the whole household, or the owner and named people."""

    class Visibility(models.TextChoices):
        PRIVATE = "private"
        HOUSEHOLD = "household"
        PEOPLE = "people"  # the owner and `readers`

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="collections")
    name = models.CharField(max_length=200)
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.PRIVATE)
    readers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="shared_collections")
    # A folder relative to HOMEAI_DOCUMENTS_DIR ("" for uploads only); checked to stay inside it.
    folder = models.CharField(max_length=1000, blank=True)
    # Bumped whenever the collection's chunks change: the search's cached vectors are this version's.
    version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    """One file of a collection, as last indexed: where it is, what it was, and how that went."""

    class Source(models.TextChoices):
        FOLDER = "folder"  # under the collection's folder
        UPLOAD = "upload"  # uploaded into the collection's own folder in the data directory

    class Status(models.TextChoices):
        INDEXED = "indexed"
        ERROR = "error"  # code and a sentence in `error_code`, `error`

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    source = models.CharField(max_length=8, choices=Source.choices)
    path = models.CharField(max_length=1000)  # relative to its source's folder, with "/"
    size = models.BigIntegerField()
    mtime_ns = models.BigIntegerField()
    sha256 = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices)
    error_code = models.CharField(max_length=32, blank=True)
    error = models.TextField(blank=True)
    chunks_count = models.PositiveIntegerField(default=0)
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "source", "path"], name="documents_one_row_per_file")
        ]

    def __str__(self) -> str:
        return self.path


class Chunk(models.Model):
    """A piece of a document's text, where it came from (page, section), and its unit vector."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="chunks")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()  # its order in the document
    page = models.PositiveIntegerField(null=True)  # 1-based, for PDFs
    section = models.CharField(max_length=300, blank=True)  # the heading it falls under
    text = models.TextField()
    embedding = models.BinaryField()  # little-endian float32, unit length

    class Meta:
        ordering = ["document", "position"]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"


class IndexJob(models.Model):
    """One run of indexing a collection on a worker: its progress, per-file errors and end."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        CANCELLED = "cancelled"
        INTERRUPTED = "interrupted"  # its worker stopped; the next run goes on from the files committed
        ERROR = "error"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="jobs")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    worker = models.CharField(max_length=255, blank=True)
    cancel_requested = models.BooleanField(default=False)
    files_total = models.PositiveIntegerField(default=0)
    files_done = models.PositiveIntegerField(default=0)
    bytes_total = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    files_embedded = models.PositiveIntegerField(default=0)  # new or changed files read and embedded
    files_removed = models.PositiveIntegerField(default=0)  # files gone from disk, forgotten
    chunks = models.PositiveIntegerField(default=0)  # chunks embedded by this run
    current_file = models.CharField(max_length=1000, blank=True)
    errors = models.JSONField(default=list)  # [{path, code, message}]
    message = models.TextField(blank=True)  # why the run ended as error
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True)
    ended_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One job under way per collection, however many web processes start one at once.
            models.UniqueConstraint(
                fields=["collection"],
                condition=models.Q(status__in=["queued", "running"]),
                name="documents_one_active_job",
            )
        ]

    def __str__(self) -> str:
        return f"index job {self.id} ({self.status})"
