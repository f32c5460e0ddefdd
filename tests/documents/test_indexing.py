"""A folder indexed by a real worker with the real embedding model: what it reads, what it
refuses and why, and a re-scan that re-embeds only what changed and forgets what is gone."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

import pytest
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone

from documents import folders, selectors, services
from documents.models import Chunk, Collection, Document, IndexJob
from inference import broadcast
from inference.dispatch import registry
from inference.services import sweeps
from infra.errors import ClientError
from tests.documents import files
from tests.support import wait_until

EMBEDDING_MODEL = settings.BUNDLED_EMBEDDING_MODEL_PATH.name


def run_index(user, collection: Collection) -> IndexJob:
    """Start the collection's indexing as the API does, and wait for its job to end."""
    job, new = services.index_job_start(user=user, collection=collection, live_workers=set())
    assert new
    registry.send_index(job.id, EMBEDDING_MODEL)
    assert wait_until(lambda: IndexJob.objects.get(id=job.id).status not in IndexJob.ACTIVE, timeout=300)
    return IndexJob.objects.get(id=job.id)


def test_a_folder_is_indexed_and_a_rescan_re_embeds_only_the_changed_file(worker, make_user, settled, folder):
    owner = make_user("ada")
    (folder / "boiler.txt").write_text("The boiler was serviced in March by Jensen Heating.")
    (folder / "recipes.md").write_text("# Bread\nFlour, water, salt and a long rise.\n")
    files.write_pdf(folder / "lease.pdf", ["Lease", "Parties", "The deposit is 1200 euros, paid in May."])
    files.write_docx(folder / "school.docx", "Zoo trip", ["Bring a packed lunch and a raincoat."])
    (folder / "manual.html").write_text("<h1>Dishwasher</h1><p>Clean the filter every month.</p>")
    (folder / "sub").mkdir()
    (folder / "sub" / "garden.csv").write_text("plant,water\ntomato,daily\n")
    (folder / "photo.txt").write_bytes(os.urandom(2048))
    files.write_pdf(folder / "scan.pdf", ["", ""])
    (folder / "passwords.txt").symlink_to("/etc/passwd")
    (folder / "song.mp3").write_bytes(b"ID3 not a document")  # a type that is not read: left out
    collection = services.collection_create(owner=owner, name="House papers", folder=folder.name)

    job = run_index(owner, collection)

    assert job.status == IndexJob.Status.DONE, job.message
    assert (job.files_total, job.files_done, job.files_embedded, job.files_removed) == (9, 9, 6, 0)
    assert sorted((e["path"], e["code"]) for e in job.errors) == [
        ("passwords.txt", "outside_documents"),
        ("photo.txt", "binary"),
        ("scan.pdf", "no_text"),
    ]
    indexed = dict(Document.objects.filter(collection=collection).values_list("path", "status"))
    assert indexed == {
        "boiler.txt": "indexed",
        "lease.pdf": "indexed",
        "manual.html": "indexed",
        "recipes.md": "indexed",
        "school.docx": "indexed",
        "sub/garden.csv": "indexed",
        "photo.txt": "error",
        "scan.pdf": "error",
    }
    lease = Chunk.objects.get(document__path="lease.pdf", page=3)
    assert "deposit is 1200 euros" in lease.text
    assert len(bytes(lease.embedding)) == 384 * 4  # all-MiniLM-L6-v2's 384 float32s
    before = {c.id for c in Chunk.objects.filter(collection=collection).exclude(document__path="boiler.txt")}
    recipes = set(Chunk.objects.filter(document__path="recipes.md").values_list("id", flat=True))

    (folder / "boiler.txt").write_text("The boiler was replaced in October; the warranty runs five years.")
    (folder / "recipes.md").unlink()
    job = run_index(owner, collection)

    assert job.status == IndexJob.Status.DONE, job.message
    assert (job.files_total, job.files_embedded, job.files_removed) == (8, 1, 1)
    assert not Document.objects.filter(collection=collection, path="recipes.md").exists()
    assert "warranty runs five years" in Chunk.objects.get(document__path="boiler.txt").text
    after = {c.id for c in Chunk.objects.filter(collection=collection).exclude(document__path="boiler.txt")}
    assert recipes and after == before - recipes  # the other files' chunks are the same rows
    # The errors are reported again, without reading those files again.
    assert {e["code"] for e in job.errors} == {"outside_documents", "binary", "no_text"}

    hits = selectors.search(owner, collection.id, "how much is the deposit", None, limit=3)
    assert (hits[0].chunk.document.path, hits[0].chunk.page) == ("lease.pdf", 3)


def test_a_touched_file_with_the_same_bytes_is_not_embedded_again(worker, make_user, settled, folder):
    owner = make_user("ada")
    note = folder / "note.txt"
    note.write_text("Water the ferns on Sundays.")
    collection = services.collection_create(owner=owner, name="Notes", folder=folder.name)
    assert run_index(owner, collection).files_embedded == 1
    chunk_ids = list(Chunk.objects.filter(collection=collection).values_list("id", flat=True))

    stat = note.stat()
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    job = run_index(owner, collection)

    assert (job.files_embedded, job.files_done) == (0, 1)
    assert list(Chunk.objects.filter(collection=collection).values_list("id", flat=True)) == chunk_ids
    assert Document.objects.get(collection=collection).mtime_ns == stat.st_mtime_ns + 5_000_000_000


def test_a_folder_outside_the_documents_folder_is_refused(make_user):
    owner = make_user("ada")
    for outside in ("/etc", "../", "a/../../etc"):
        with pytest.raises(ClientError) as caught:
            services.collection_create(owner=owner, name="Sneaky", folder=outside)
        assert caught.value.code == "outside_documents"
        assert caught.value.field == "folder"


def test_a_linked_folder_leading_out_is_not_followed(make_user, folder):
    owner = make_user("ada")
    (folder / "etc").symlink_to("/etc", target_is_directory=True)
    (folder / "kept.txt").write_text("kept")
    collection = services.collection_create(owner=owner, name="Links", folder=folder.name)
    found = folders.scan(collection)
    assert [(f.path, f.error_code) for f in found] == [("etc", "outside_documents"), ("kept.txt", "")]


# Enough files that a run cannot end between the test seeing its first files committed and
# stopping it (a batch of 32 small files is embedded per call to the model).
MANY = 600


def many_notes(folder, count: int = MANY) -> None:
    for n in range(count):
        (folder / f"note-{n:03d}.txt").write_text(f"Note {n}: the hedge needs trimming in June.")


def committed(collection: Collection) -> dict[str, tuple[int, list[int]]]:
    """path -> (document id, its chunk ids): what indexing has committed so far."""
    out = {}
    for document in Document.objects.filter(collection=collection):
        out[document.path] = (document.id, sorted(document.chunks.values_list("id", flat=True)))
    return out


def test_a_worker_killed_mid_index_is_resumed_without_embedding_any_file_twice(worker, make_user, settled, folder):
    owner = make_user("ada")
    many_notes(folder)
    collection = services.collection_create(owner=owner, name="Notes", folder=folder.name)
    first, _ = services.index_job_start(user=owner, collection=collection, live_workers=set())
    registry.send_index(first.id, EMBEDDING_MODEL)
    assert wait_until(lambda: Document.objects.filter(collection=collection).count() >= 5, timeout=300)
    worker.kill()
    before = committed(collection)
    assert 5 <= len(before) < MANY

    worker.start()
    second = run_index(owner, collection)

    assert IndexJob.objects.get(id=first.id).status == IndexJob.Status.INTERRUPTED
    assert second.status == IndexJob.Status.DONE
    assert second.files_embedded == MANY - len(before)
    after = committed(collection)
    assert len(after) == MANY
    assert {path: after[path] for path in before} == before  # the same rows: none embedded again


def test_a_cancelled_job_stops_between_files_and_the_next_run_goes_on(worker, make_user, settled, folder):
    owner = make_user("ada")
    many_notes(folder)
    collection = services.collection_create(owner=owner, name="Notes", folder=folder.name)
    job, _ = services.index_job_start(user=owner, collection=collection, live_workers=set())
    registry.send_index(job.id, EMBEDDING_MODEL)
    assert wait_until(lambda: Document.objects.filter(collection=collection).count() >= 5, timeout=300)
    services.index_job_cancel(collection=collection)
    assert wait_until(lambda: IndexJob.objects.get(id=job.id).status not in IndexJob.ACTIVE, timeout=300)

    cancelled = IndexJob.objects.get(id=job.id)
    assert cancelled.status == IndexJob.Status.CANCELLED
    assert cancelled.files_done == len(committed(collection)) < MANY
    assert cancelled.current_file == ""
    again = run_index(owner, collection)
    assert again.files_embedded == MANY - cancelled.files_done
    assert Document.objects.filter(collection=collection).count() == MANY


def test_a_queued_job_that_is_cancelled_never_runs(worker, make_user, settled, folder):
    owner = make_user("ada")
    many_notes(folder, 1)
    collection = services.collection_create(owner=owner, name="Notes", folder=folder.name)
    job, _ = services.index_job_start(user=owner, collection=collection, live_workers=set())
    services.index_job_cancel(collection=collection)
    registry.send_index(job.id, EMBEDDING_MODEL)
    # The task is taken and does nothing: the job is not queued any more. A job sent after it
    # runs, so once that one is done the first task has been seen too (one queue, in order).
    assert run_index(owner, collection).files_embedded == 1
    assert IndexJob.objects.get(id=job.id).status == IndexJob.Status.CANCELLED
    assert IndexJob.objects.get(id=job.id).started_at is None


def watched_run(user, collection: Collection) -> list[dict]:
    """Start the collection's indexing once listening to its group, as a page would, and
    return every event heard until the job's end."""
    job, new = services.index_job_start(user=user, collection=collection, live_workers=set())
    assert new

    async def watch() -> list[dict]:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(broadcast.collection_group(collection.id), channel)
        try:
            registry.send_index(job.id, EMBEDDING_MODEL)  # once listening
            heard = []
            while not heard or heard[-1]["status"] == "running":
                message = await asyncio.wait_for(layer.receive(channel), timeout=600)
                assert message["type"] == broadcast.COLLECTION_RELAY_TYPE
                heard.extend(message["events"])
            return heard
        finally:
            await layer.group_discard(broadcast.collection_group(collection.id), channel)

    heard = asyncio.run(watch())
    assert {e["job"] for e in heard} == {job.id}
    return heard


def test_watchers_of_a_collection_hear_its_progress_to_the_end(worker, make_user, settled, folder):
    owner = make_user("ada")
    many_notes(folder, 40)
    (folder / "junk.txt").write_bytes(b"\x00" * 64)
    collection = services.collection_create(owner=owner, name="Notes", folder=folder.name)

    heard = watched_run(owner, collection)
    assert {e["type"] for e in heard} == {"index.progress"}
    assert heard[0]["files_total"] == 41
    assert [e["files_done"] for e in heard] == sorted(e["files_done"] for e in heard)
    last = heard[-1]
    assert (last["status"], last["files_done"], last["files_embedded"], last["current_file"]) == ("done", 41, 40, "")
    assert last["errors"] == [
        {
            "path": "junk.txt",
            "code": "binary",
            "message": "The file is not text, whatever its name says: it holds binary data.",
        }
    ]


def test_the_periodic_rescan_indexes_a_due_folder_once(worker, make_user, settled, folder, settings):
    settings.HOMEAI_RESCAN_MINUTES = 5
    owner = make_user("ada")
    (folder / "note.txt").write_text("The smoke alarm battery was changed in January.")
    collection = services.collection_create(owner=owner, name="Notes", folder=folder.name)
    services.collection_create(owner=owner, name="Uploads only")  # no folder: never re-scanned
    workers = registry.live_workers()

    def rescan() -> list[int]:
        return sweeps.documents_rescan(workers=workers, memory=sweeps.SweepMemory())  # a fresh sweeper

    def ended(job_id: int) -> IndexJob:
        assert wait_until(lambda: IndexJob.objects.get(id=job_id).status not in IndexJob.ACTIVE, timeout=300)
        return IndexJob.objects.get(id=job_id)

    first = rescan()  # never indexed: due at once
    assert [IndexJob.objects.get(id=i).collection_id for i in first] == [collection.id]
    again = rescan()  # a second sweeper meanwhile: the same job (sent again while it waits), never two
    assert again in ([], first)
    assert IndexJob.objects.filter(collection=collection).count() == 1
    assert ended(first[0]).files_embedded == 1
    assert rescan() == []  # just ended: not due for 5 minutes

    IndexJob.objects.filter(id=first[0]).update(ended_at=timezone.now() - timedelta(minutes=6))
    (folder / "note.txt").write_text("The smoke alarm battery was changed in July.")
    second = rescan()
    assert len(second) == 1
    assert ended(second[0]).files_embedded == 1
    assert "July" in Chunk.objects.get(collection=collection).text

    # A job a dead worker left running is interrupted by the next look, and a new one goes on.
    IndexJob.objects.filter(id=second[0]).update(status="running", worker="gone:1", ended_at=None)
    third = rescan()
    assert len(third) == 1
    assert IndexJob.objects.get(id=second[0]).status == IndexJob.Status.INTERRUPTED
    assert ended(third[0]).files_embedded == 0


def test_collections_started_together_are_indexed_one_after_the_other_to_the_end(worker, make_user, settled, folder):
    owner = make_user("ada")
    jobs = []
    for n in range(3):
        (folder / f"part{n}").mkdir()
        many_notes(folder / f"part{n}", 40)
        collection = services.collection_create(owner=owner, name=f"Part {n}", folder=f"{folder.name}/part{n}")
        job, _ = services.index_job_start(user=owner, collection=collection, live_workers=set())
        jobs.append(job.id)
    for job_id in jobs:  # sent together: the worker runs one, and the others' tasks come back later
        registry.send_index(job_id, EMBEDDING_MODEL)
    assert wait_until(lambda: not IndexJob.objects.filter(id__in=jobs, status__in=IndexJob.ACTIVE).exists(), 300)
    ended = IndexJob.objects.filter(id__in=jobs)
    assert sorted((j.status, j.files_embedded) for j in ended) == [("done", 40)] * 3
    runs = sorted((j.started_at, j.ended_at) for j in ended)
    assert all(before[1] <= after[0] for before, after in zip(runs, runs[1:], strict=False))  # never two at once


def mixed_folder(folder, count: int) -> None:
    """count small files of every kind a household keeps: notes, recipes, tables, pages, code,
    and a few PDFs and Word files, in ten sub-folders."""
    kinds = ("txt", "md", "csv", "html", "py")
    for n in range(count):
        sub = folder / f"box{n % 10}"
        sub.mkdir(exist_ok=True)
        if n % 100 == 0:
            files.write_pdf(sub / f"letter-{n:04d}.pdf", [f"Letter {n}", f"The meeting {n} is on a Tuesday."])
        elif n % 100 == 50:
            files.write_docx(sub / f"form-{n:04d}.docx", f"Form {n}", [f"Sign form {n} before Friday."])
        else:
            kind = kinds[n % len(kinds)]
            text = {
                "txt": f"Note {n}: the hedge needs trimming in June.",
                "md": f"# Recipe {n}\nFlour, water, salt and {n} minutes in the oven.\n",
                "csv": f"item,count\nscrews,{n}\n",
                "html": f"<h1>Manual {n}</h1><p>Clean filter {n} every month.</p>",
                "py": f"def size_{n}():\n    return {n}\n",
            }[kind]
            (sub / f"file-{n:04d}.{kind}").write_text(text)


def test_a_folder_of_a_thousand_mixed_files_is_indexed_with_live_progress_and_rescanned(
    worker, make_user, settled, folder
):
    """Done when 2 of issue 41: 1,000 mixed files indexed while a watcher hears the progress;
    one file edited and one deleted, the re-scan embeds exactly the edited one and forgets the
    deleted one, every other file's chunks staying the same rows."""
    owner = make_user("ada")
    mixed_folder(folder, 1000)
    collection = services.collection_create(owner=owner, name="The house", folder=folder.name)

    heard = watched_run(owner, collection)

    last = heard[-1]
    assert (last["status"], last["files_total"], last["files_done"], last["files_embedded"]) == (
        "done",
        1000,
        1000,
        1000,
    )
    assert last["errors"] == []
    running = [e for e in heard if e["status"] == "running"]
    assert len({e["files_done"] for e in running}) >= 3  # heard as it went, not only at the end
    assert [e["files_done"] for e in heard] == sorted(e["files_done"] for e in heard)
    assert any(e["current_file"] for e in running)
    assert Document.objects.filter(collection=collection, status="indexed").count() == 1000
    edited, deleted = "box1/file-0001.md", "box4/file-0004.py"
    others = Chunk.objects.filter(collection=collection).exclude(document__path__in=[edited, deleted])
    before = set(others.values_list("id", flat=True))

    (folder / edited).write_text("# Recipe 1\nRye flour, water, salt and a night in the fridge.\n")
    (folder / deleted).unlink()
    heard = watched_run(owner, collection)

    last = heard[-1]
    assert (last["status"], last["files_total"], last["files_embedded"], last["files_removed"]) == ("done", 999, 1, 1)
    assert not Document.objects.filter(collection=collection, path=deleted).exists()
    assert "night in the fridge" in Chunk.objects.get(collection=collection, document__path=edited).text
    assert set(others.values_list("id", flat=True)) == before  # nothing else embedded again
