"""A collection's indexing, live on its page: the socket (/ws/documents/<id>/) sends a reader the
job as it stands, then each update; anyone who may not read the collection, a page of another
site and a signed-out visitor are refused, and signing out closes it. In Debian's Chromium, the page open while a real
worker indexes a folder redraws its line to "Done" and lists the files, without a reload; the
rate and time left come from successive updates, and an update older than the one shown is
dropped."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from playwright.sync_api import expect, sync_playwright
from websockets.exceptions import ConnectionClosed, InvalidStatus

from accounts.keys import api_key_create
from documents import selectors, services
from documents.models import Document, IndexJob
from homeai.routing import websocket_urlpatterns
from inference import broadcast, events
from inference.dispatch import registry
from tests import factories
from tests.support import ChatSocket, launch_chromium, session_cookie

EMBEDDING_MODEL = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
WAIT_MS = 600_000  # an upper bound on an event on a busy box, never a measurement
NOTES = 60

# Every change of the progress line, as [status, text], from the moment it is installed; and a
# mark that only a reload would wipe.
WATCH_THE_LINE = """() => {
    window.stayed = true;
    window.seen = [];
    const line = document.getElementById("index-progress");
    const note = () => window.seen.push([line.dataset.status, line.textContent.replace(/\\s+/g, " ").trim()]);
    new MutationObserver(note).observe(line, { subtree: true, childList: true, characterData: true, attributes: true });
}"""


def socket(user, collection_id: int) -> WebsocketCommunicator:
    """The collection's socket as the routing serves it, opened as this person."""
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/documents/{collection_id}/")
    communicator.scope["user"] = user
    return communicator


@pytest.fixture
def letters(transactional_db):
    """ada's private collection, with a job under way; bob is staff, but not one of its readers.
    Committed: the socket's reads close the connection they ran on, as a request's end does."""
    ada, bob = factories.user("ada"), factories.user("bob", is_staff=True)
    collection = services.collection_create(owner=ada, name="Letters")
    job = IndexJob.objects.create(
        collection=collection, status="running", files_total=10, files_done=3, bytes_total=10_000, bytes_done=3_000
    )
    return ada, bob, collection, job


def test_a_reader_hears_the_job_as_it_stands_then_each_update(letters):
    ada, _bob, collection, job = letters
    update = {**selectors.job_progress(job), "files_done": 4, "bytes_done": 4_000, "current_file": "d.txt"}

    async def run():
        communicator = socket(ada, collection.id)
        connected, _ = await communicator.connect()
        assert connected
        now = await communicator.receive_json_from(timeout=10)
        await sync_to_async(broadcast.publish_collection)(collection.id, [events.index_progress(update)])
        heard = await communicator.receive_json_from(timeout=10)
        await communicator.send_to(text_data="anything")  # ignored, the socket stays open
        await communicator.disconnect()
        return now, heard

    now, heard = async_to_sync(run)()
    assert now == {"type": "index.progress", **selectors.job_progress(job)}
    assert (now["status"], now["files_done"], now["files_total"]) == ("running", 3, 10)
    assert heard == {"type": "index.progress", **update}


def test_a_collection_never_indexed_says_so_and_a_named_reader_is_let_in(letters):
    ada, _bob, _collection, _job = letters
    cy = factories.user("cy")
    shared = services.collection_create(owner=ada, name="Recipes", visibility="people", readers=["cy"])

    async def run():
        communicator = socket(cy, shared.id)
        connected, _ = await communicator.connect()
        assert connected
        now = await communicator.receive_json_from(timeout=10)
        await communicator.disconnect()
        return now

    assert async_to_sync(run)() == {"type": "index.progress", "job": None, "status": "never"}


def test_anyone_who_may_not_read_the_collection_is_refused(letters):
    _ada, bob, collection, _job = letters

    async def attempt(user, collection_id: int):
        communicator = socket(user, collection_id)
        result = await communicator.connect()
        assert await communicator.receive_nothing()
        await communicator.disconnect()
        return result

    assert async_to_sync(attempt)(bob, collection.id) == (False, 4404)  # staff, but not a reader
    assert async_to_sync(attempt)(bob, collection.id + 1000) == (False, 4404)  # no such collection
    assert async_to_sync(attempt)(AnonymousUser(), collection.id) == (False, 4401)


def test_watchers_hear_a_queued_job_cancelled_from_the_page(letters):
    ada, _bob, collection, job = letters
    IndexJob.objects.filter(id=job.id).update(status="done")
    queued = IndexJob.objects.create(collection=collection)
    owner = Client()
    owner.force_login(ada)

    async def run():
        communicator = socket(ada, collection.id)
        connected, _ = await communicator.connect()
        assert connected
        now = await communicator.receive_json_from(timeout=10)
        await sync_to_async(owner.post)(f"/documents/{collection.id}/cancel/")
        heard = await communicator.receive_json_from(timeout=10)
        await communicator.disconnect()
        return now, heard

    now, heard = async_to_sync(run)()
    assert (now["job"], now["status"]) == (queued.id, "queued")
    assert (heard["job"], heard["status"]) == (queued.id, "cancelled")


def test_watchers_hear_a_job_started_and_cancelled_through_the_api(letters, monkeypatch):
    """The API's POST and DELETE on /v1/collections/<id>/index tell the page as its own buttons do."""
    ada, _bob, collection, job = letters
    IndexJob.objects.filter(id=job.id).update(status="done")
    monkeypatch.setattr(registry, "send_index", lambda *args, **kwargs: None)  # no worker: it stays queued
    _, raw = api_key_create(user=ada)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")

    async def run():
        communicator = socket(ada, collection.id)
        connected, _ = await communicator.connect()
        assert connected
        now = await communicator.receive_json_from(timeout=10)
        started = await sync_to_async(api.post)(f"/v1/collections/{collection.id}/index")
        queued = await communicator.receive_json_from(timeout=10)
        stopped = await sync_to_async(api.delete)(f"/v1/collections/{collection.id}/index")
        cancelled = await communicator.receive_json_from(timeout=10)
        await communicator.disconnect()
        return now, (started.status_code, stopped.status_code), queued, cancelled

    now, statuses, queued, cancelled = async_to_sync(run)()
    assert (now["job"], now["status"]) == (job.id, "done") and statuses == (202, 200)
    assert queued["status"] == "queued" and queued["job"] != job.id
    assert (cancelled["job"], cancelled["status"]) == (queued["job"], "cancelled")


def test_through_the_server_only_a_reader_on_this_sites_page_connects(live_server_url, make_user):
    ada, bob = make_user("ada"), make_user("bob")
    collection = services.collection_create(owner=ada, name="Letters")
    path = f"/ws/documents/{collection.id}/"
    reader = ChatSocket(live_server_url, session_cookie(ada), path=path)
    try:
        assert reader.recv() == {"type": "index.progress", "job": None, "status": "never"}
    finally:
        reader.close()
    with pytest.raises(InvalidStatus):
        ChatSocket(live_server_url, session_cookie(ada), origin="http://elsewhere.example", path=path)
    with pytest.raises(InvalidStatus):
        ChatSocket(live_server_url, session_cookie(bob), path=path)
    with pytest.raises(InvalidStatus):
        ChatSocket(live_server_url, None, path=path)


def test_signing_out_closes_the_sessions_collection_socket(live_server_url, make_user):
    ada = make_user("ada")
    collection = services.collection_create(owner=ada, name="Letters")
    browser = Client()
    assert browser.login(username="ada", password=factories.PASSWORD)
    sock = ChatSocket(live_server_url, browser.cookies["sessionid"].value, path=f"/ws/documents/{collection.id}/")
    try:
        assert sock.recv()["status"] == "never"
        browser.post("/accounts/logout/")
        with pytest.raises(ConnectionClosed) as closed:
            sock.recv(timeout=60)
        assert closed.value.rcvd.code == 4401
    finally:
        sock.close()


# --- in the browser ---------------------------------------------------------------------------------


@pytest.fixture
def open_page(live_server_url, monkeypatch):
    """open_page(user, path): a page of the live server in Debian's Chromium, signed in as user."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the test's ORM calls beside Playwright's loop
    with sync_playwright() as p:
        browser = launch_chromium(p)

        def open_as(user, path: str):
            context = browser.new_context(base_url=live_server_url)
            context.add_cookies([{"name": "sessionid", "value": session_cookie(user), "url": live_server_url}])
            page = context.new_page()
            page.goto(path)
            expect(page.locator("#index-connection")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
            return page

        yield open_as
        browser.close()


@pytest.mark.integration
@pytest.mark.browser
def test_the_page_follows_a_real_index_job_to_done_without_a_reload(open_page, worker, make_user, folder):
    ada = make_user("ada")
    for n in range(NOTES):
        (folder / f"note-{n:03d}.txt").write_text(f"Note {n}: the hedge needs trimming in June.")
    (folder / "junk.txt").write_bytes(b"\x00" * 64)
    collection = services.collection_create(owner=ada, name="Notes", folder=folder.name)
    job, _ = services.index_job_start(user=ada, collection=collection, live_workers=set())
    total = NOTES + 1

    page = open_page(ada, f"/documents/{collection.id}/")
    expect(page.locator("#index-status")).to_have_text("Waiting for a worker.")
    expect(page.locator("#index-actions button")).to_have_text(["Index again", "Cancel"])
    page.evaluate(WATCH_THE_LINE)
    registry.send_index(job.id, EMBEDDING_MODEL)  # once the page listens

    line = page.locator("#index-progress")
    expect(line).to_have_attribute("data-status", "done", timeout=WAIT_MS)
    expect(page.locator("#index-status")).to_have_text("Done")
    expect(page.locator("#index-facts")).to_contain_text(f"{total} of {total} files")
    expect(page.locator("#index-facts")).to_contain_text(f"{NOTES} read and embedded")
    expect(page.locator("#index-bar")).to_have_attribute("value", str(total))
    expect(page.locator("#index-errors")).to_contain_text("junk.txt: The file is not text")
    # Read again once the job ended: every file listed (junk.txt with its reason), no Cancel.
    expect(page.locator("#files tr[data-document-id]")).to_have_count(total, timeout=WAIT_MS)
    expect(page.locator("#files")).to_contain_text("note-059.txt")
    expect(page.locator("#index-actions button")).to_have_text(["Index again"])
    assert page.evaluate("window.stayed") is True  # the same document throughout: never reloaded
    seen = page.evaluate("window.seen")
    running = [text for status, text in seen if status == "running"]
    assert running and all(f"of {total} files" in text for text in running)
    assert seen[-1][0] == "done"
    assert IndexJob.objects.get(id=job.id).status == "done"


@pytest.mark.integration
@pytest.mark.browser
def test_the_line_shows_the_rate_and_time_left_and_drops_older_news(open_page, make_user):
    ada = make_user("ada")
    collection = services.collection_create(owner=ada, name="Letters")
    job = IndexJob.objects.create(
        collection=collection,
        status="running",
        files_total=4,
        files_done=1,
        bytes_total=4_000_000,
        bytes_done=1_000_000,
    )
    state = selectors.job_progress(job)

    def publish(**changes) -> None:
        state.update(changes)
        broadcast.publish_collection(collection.id, [events.index_progress(state)])

    page = open_page(ada, f"/documents/{collection.id}/")
    facts = page.locator("#index-facts")
    expect(facts).to_contain_text("1 of 4 files")
    expect(facts).not_to_contain_text("/s")  # no rate from one reading
    page.evaluate(WATCH_THE_LINE)

    errors = [{"path": "bad.txt", "code": "binary", "message": "It holds binary data."}]
    publish(files_done=2, bytes_done=2_000_000, current_file="c.txt", errors=errors)
    expect(facts).to_contain_text("2 of 4 files")
    expect(facts).to_contain_text("2.0 MB of 4.0 MB")
    expect(facts).to_contain_text(re.compile(r"\d (B|kB|MB|GB)/s · .+ left"))  # from two readings' bytes and times
    expect(facts).to_contain_text("reading c.txt")
    expect(page.locator("#index-bar")).to_have_attribute("value", "2")
    expect(page.locator("#index-bar")).to_have_attribute("max", "4")
    expect(page.locator("#index-errors li")).to_have_text(["bad.txt: It holds binary data."])

    publish(files_done=1, bytes_done=1_000_000, current_file="b.txt")  # older news: dropped
    publish(files_done=3, bytes_done=3_000_000, current_file="d.txt")
    expect(facts).to_contain_text("3 of 4 files")
    assert not any("reading b.txt" in text for _status, text in page.evaluate("window.seen"))

    # The job ends: the files it indexed are read again from the page, without a reload.
    Document.objects.create(
        collection=collection, source="upload", path="d.txt", size=1_000_000, mtime_ns=0, status="indexed"
    )
    IndexJob.objects.filter(id=job.id).update(status="done", files_done=4, bytes_done=4_000_000)
    publish(status="done", files_done=4, bytes_done=4_000_000, current_file="")
    expect(page.locator("#index-status")).to_have_text("Done")
    expect(facts).not_to_contain_text("left")
    expect(page.locator("#files tr[data-document-id]")).to_have_count(1)
    expect(page.locator("#files")).to_contain_text("d.txt")
    assert page.evaluate("window.stayed") is True
