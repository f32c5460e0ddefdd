"""Collections and uploads: names kept inside the collection's folder, the size limit while
writing, sharing by name with people who exist."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from documents import folders, selectors, services
from documents.models import Collection, IndexJob
from infra.errors import ClientError
from tests import factories


def test_an_upload_keeps_only_its_file_name_inside_the_collections_folder(db):
    ada = factories.user("ada")
    collection = services.collection_create(owner=ada, name="Uploads")
    kept = services.upload_add(collection=collection, name="../../../etc/cron.d/evil.txt", chunks=[b"hello"])
    assert kept == "evil.txt"
    assert (folders.uploads_path(collection) / "evil.txt").read_bytes() == b"hello"
    assert sorted(p.name for p in folders.uploads_path(collection).iterdir()) == ["evil.txt"]
    for name in ("", ".hidden.txt", "photo.jpg"):
        with pytest.raises(ClientError):
            services.upload_add(collection=collection, name=name, chunks=[b"x"])


def test_an_upload_past_the_limit_is_refused_while_written_and_leaves_nothing(db, settings):
    settings.HOMEAI_DOCUMENT_MAX_MB = 1
    ada = factories.user("ada")
    collection = services.collection_create(owner=ada, name="Uploads")
    with pytest.raises(ClientError) as caught:
        services.upload_add(collection=collection, name="big.txt", chunks=[b"a" * 600_000] * 2)
    assert caught.value.code == "too_large"
    assert "1 MB" in caught.value.message
    assert list(folders.uploads_path(collection).iterdir()) == []


def test_sharing_names_people_who_exist_and_reads_follow_it(db):
    ada, bob, cy = factories.user("ada"), factories.user("bob"), factories.user("cy")
    with pytest.raises(ClientError) as caught:
        services.collection_create(owner=ada, name="Shared", visibility="people", readers=["bob", "nobody"])
    assert caught.value.message == "No such person: nobody."
    shared = services.collection_create(owner=ada, name="Shared", visibility="people", readers=["bob"])
    private = services.collection_create(owner=ada, name="Mine")
    household = services.collection_create(
        owner=factories.user("sam", is_staff=True), name="House", visibility="household"
    )
    assert set(selectors.readable_collections(ada)) == {shared, private, household}
    assert set(selectors.readable_collections(bob)) == {shared, household}
    assert set(selectors.readable_collections(cy)) == {household}
    with pytest.raises(ClientError):
        selectors.collection_for_owner(bob, shared.id)  # bob reads it; only ada changes it
    assert Collection.objects.count() == 3


def test_a_collection_has_one_indexing_job_under_way_whoever_starts_it(db):
    ada = factories.user("ada")
    collection = services.collection_create(owner=ada, name="Notes")
    job, new = services.index_job_start(user=ada, collection=collection, live_workers={"worker-1"})
    again, new_again = services.index_job_start(user=ada, collection=collection, live_workers={"worker-1"})
    assert (new, new_again, again.id) == (True, False, job.id)
    with pytest.raises(IntegrityError):  # what a second web process meets if it gets past the check
        with transaction.atomic():
            IndexJob.objects.create(collection=collection)
    # A job running on a worker that is gone is interrupted, and a new one starts.
    IndexJob.objects.filter(id=job.id).update(status="running", worker="worker-1")
    fresh, new = services.index_job_start(user=ada, collection=collection, live_workers={"worker-2"})
    assert new and fresh.id != job.id
    assert IndexJob.objects.get(id=job.id).status == IndexJob.Status.INTERRUPTED
