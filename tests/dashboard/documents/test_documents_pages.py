"""The documents pages: make a collection, upload, index on a real worker, see the files and
their errors, download; another person gets 404 for every page and file of a private one."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.models import Collection, Document, IndexJob
from tests import factories
from tests.support import wait_until


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=factories.PASSWORD)
    return client


@pytest.fixture
def ada_collection(worker, settled):
    """ada, signed in, with a private collection holding two uploads, indexed by the worker."""
    ada = signed_in(factories.user("ada"))
    made = ada.post("/documents/", {"name": "Letters", "visibility": "private", "readers": "", "folder": ""})
    collection = Collection.objects.get(name="Letters")
    assert made.url == f"/documents/{collection.id}/"
    uploads = [
        SimpleUploadedFile("school.txt", b"The school trip to the zoo is on Friday."),
        SimpleUploadedFile("evil.html", b"<h1>Hi</h1><script>fetch('/settings/')</script>"),
        SimpleUploadedFile("junk.txt", bytes(range(256)) * 4),
    ]
    ada.post(f"/documents/{collection.id}/upload/", {"files": uploads})
    ada.post(f"/documents/{collection.id}/index/")
    assert wait_until(lambda: IndexJob.objects.filter(collection=collection, status="done").exists(), timeout=300)
    return ada, collection


def test_a_person_uploads_indexes_and_reads_their_files(ada_collection):
    ada, collection = ada_collection
    page = ada.get(f"/documents/{collection.id}/").content.decode()
    assert 'data-status="done"' in page
    assert f'data-ws-path="/ws/documents/{collection.id}/"' in page  # followed live (test_live_progress.py)
    assert "school.txt" in page and "evil.html" in page
    assert "The file is not text, whatever its name says" in page  # junk.txt's reason, as written
    assert "Letters" in ada.get("/documents/").content.decode()

    school = Document.objects.get(collection=collection, path="school.txt")
    download = ada.get(f"/documents/{collection.id}/files/{school.id}/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"The school trip to the zoo is on Friday."
    # An uploaded page is never shown as one of this site's pages.
    evil = Document.objects.get(collection=collection, path="evil.html")
    served = ada.get(f"/documents/{collection.id}/files/{evil.id}/")
    assert served["Content-Disposition"].startswith("attachment")
    assert served["Content-Security-Policy"] == "sandbox"


def test_another_person_gets_404_for_a_private_collection(ada_collection):
    _ada, collection = ada_collection
    bob = signed_in(factories.user("bob"))
    school = Document.objects.get(collection=collection, path="school.txt")
    assert "Letters" not in bob.get("/documents/").content.decode()
    assert bob.get(f"/documents/{collection.id}/").status_code == 404
    assert bob.get(f"/documents/{collection.id}/files/{school.id}/").status_code == 404
    upload = bob.post(f"/documents/{collection.id}/upload/", {"files": [SimpleUploadedFile("x.txt", b"x")]})
    assert upload.status_code == 404
    assert bob.post(f"/documents/{collection.id}/index/").status_code == 404
    assert bob.post(f"/documents/{collection.id}/cancel/").status_code == 404
    assert not Document.objects.filter(collection=collection, path="x.txt").exists()


def test_a_folder_outside_the_documents_folder_and_household_sharing_by_non_staff_are_refused(db):
    ada = signed_in(factories.user("ada"))
    outside = ada.post("/documents/", {"name": "Etc", "visibility": "private", "folder": "../../etc"})
    assert outside.status_code == 400
    assert "Choose a folder inside the documents folder" in outside.content.decode()
    household = ada.post("/documents/", {"name": "All", "visibility": "household", "folder": ""})
    assert household.status_code == 400
    assert "Only staff share a collection with the whole household." in household.content.decode()
    assert not Collection.objects.exists()


def test_pages_need_a_sign_in(db):
    factories.user("ada")  # past the first-run setup
    assert Client().get("/documents/").url.startswith("/accounts/login/")


def test_the_pages_speak_the_persons_language(db):
    factories.user("ada")
    korean = Client(headers={"accept-language": "ko"})
    assert korean.login(username="ada", password=factories.PASSWORD)
    page = korean.get("/documents/").content.decode()
    assert "새 모음" in page and "모음 만들기" in page  # New collection, Create collection
    refused = korean.post("/documents/", {"name": "Etc", "visibility": "private", "folder": "/etc"})
    assert "문서 폴더" in refused.content.decode()  # the folder's sentence, translated
