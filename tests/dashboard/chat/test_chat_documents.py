"""A chat's documents in Debian's Chromium (Playwright) over the real stack: a PDF attached in the
chat is indexed by the worker holding the embedding model, the question's retrieve phase finds
its page 3, and the answer shows that page among its Sources with a link that opens the file;
a second person sees neither the collection nor the file, and cannot name it through the API.

The bundled 135M model may not repeat the fact, so the assertions are on what was retrieved and
cited (the Sources list, the links), not on the model's wording."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from django.conf import settings
from playwright.sync_api import expect, sync_playwright

from documents.models import Collection, Document
from inference.models import Conversation, Generation, Message
from tests.api.test_collections_api import key_of
from tests.documents import files
from tests.support import launch_chromium, session_cookie

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ARTIFACTS = settings.DATA_DIR / "artifacts"
FACT = "The spare key of the garden shed is hidden under the blue flowerpot by the pond."


def filler(topic: str) -> str:
    """About 1,500 characters about something else: the file is too long to go into the prompt
    whole, so the question's page must be found by the search."""
    sentence = f"This page is about {topic}; it lists the household rules for {topic} in some detail. "
    return sentence * 16


@pytest.fixture
def browser(live_server_url, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the test's ORM reads beside Playwright's loop
    with sync_playwright() as p:
        chromium = launch_chromium(p)
        yield chromium
        chromium.close()


def signed_in(browser, base_url: str, user):
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 860})
    context.add_cookies([{"name": "sessionid", "value": session_cookie(user), "url": base_url}])
    page = context.new_page()
    page.set_default_timeout(30_000)
    return page


def test_a_pdf_attached_in_the_chat_is_cited_by_its_page_and_only_its_owner_reads_it(
    browser, live_server_url, worker, settled, make_user, tmp_path
):
    ada, bob = make_user("ada"), make_user("bob")
    pdf = files.write_pdf(
        tmp_path / "house-rules.pdf",
        [filler("the kitchen"), filler("the laundry"), FACT + " " + filler("the garden"), filler("the garage")],
    )
    page = signed_in(browser, live_server_url, ada)
    page.goto("/chat/")
    expect(page.locator("#connection-status")).to_contain_text(re.compile("connected", re.I))

    page.set_input_files("#attach-file", str(pdf))
    expect(page.locator("#composer-chips .chip-file")).to_have_text("house-rules.pdf")
    expect(page).to_have_url(re.compile(r"/chat/\d+/$"))  # the file made the chat
    expect(page.locator("#chat-heading")).to_have_text("house-rules.pdf")
    page.fill("#message-input", "Where is the spare key of the garden shed hidden?")
    page.fill("#max-tokens", "24")
    page.click("#send-button")

    expect(page.locator(".message.user .message-attachments .chip-file")).to_have_text("house-rules.pdf")
    expect(page.locator("#composer-chips")).to_be_hidden()  # the file went with that message
    answer = page.locator(".message.assistant").last
    expect(answer.locator(".stats-line")).to_be_visible(timeout=600_000)
    sources = answer.locator(".sources .source")
    expect(sources.first).to_be_visible()
    cited = answer.locator(".source", has_text="blue flowerpot")
    expect(cited).to_have_count(1)
    link = cited.locator("a.source-link")
    expect(link).to_contain_text(re.compile(r"^\[\d+\] house-rules\.pdf, page 3$"))
    href = link.get_attribute("href")
    conversation = Conversation.objects.get(user=ada)
    collection = conversation.files_collection
    document = Document.objects.get(collection=collection, path="house-rules.pdf")
    assert href == f"/documents/{collection.id}/files/{document.id}/#page=3"
    assert (collection.owner, collection.visibility) == (ada, Collection.Visibility.PRIVATE)
    # The retrieve phase is on the answer's phase bar, and stored with its milliseconds.
    expect(answer.locator(".phase-bar .seg-retrieve")).to_have_count(1)
    generation = Generation.objects.get(user=ada)
    assert generation.retrieve_ms > 0 and generation.collections == [collection.id]
    assert Message.objects.get(conversation=conversation, role="user").attachments == [{"name": "house-rules.pdf"}]

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-documents.png"), full_page=True)

    # The link opens the file (with the person's own session).
    opened = page.request.get(href.split("#")[0])
    assert opened.status == 200 and opened.body().startswith(b"%PDF")

    # A reload draws the same Sources from the stored answer.
    page.reload()
    expect(page.locator(".message.assistant .source", has_text="blue flowerpot")).to_have_count(1)

    # Bob: no such collection in his chat's picker or on his Documents page, 404 for the file,
    # and 404 when his API key names the collection in a chat completion.
    bob_page = signed_in(browser, live_server_url, bob)
    bob_page.goto("/chat/")
    config = json.loads(bob_page.locator("#chat-config").text_content())
    assert collection.id not in [c["id"] for c in config["collections"]]
    bob_page.fill("#message-input", "#")
    expect(bob_page.locator("#collection-picker")).to_be_visible()
    expect(bob_page.locator("#collection-picker .picker-item")).to_have_count(0)
    bob_page.goto("/documents/")
    expect(bob_page.locator("body")).not_to_contain_text(collection.name)
    assert bob_page.goto(href).status == 404
    assert bob_page.request.get(href.split("#")[0]).status == 404
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {key_of('bob')}"}) as api:
        asked = api.post(
            "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "Where is the key?"}], "collections": [collection.id]},
        )
        assert asked.status_code == 404 and asked.json()["error"]["code"] == "not_found"
        assert api.get(f"/v1/collections/{collection.id}/documents/{document.id}/file").status_code == 404


def test_collections_chosen_with_hash_are_stored_on_the_chat(browser, live_server_url, worker, settled, make_user):
    """ "#" opens the picker of the collections the person reads; the chosen one is a chip, sent
    with the message and kept on the chat (the next page load shows it again)."""
    ada = make_user("ada")
    Collection.objects.create(owner=ada, name="Recipes")
    page = signed_in(browser, live_server_url, ada)
    page.goto("/chat/")
    expect(page.locator("#connection-status")).to_contain_text(re.compile("connected", re.I))

    page.locator("#message-input").press_sequentially("#Rec")
    expect(page.locator("#collection-picker .picker-item")).to_have_count(1)
    page.keyboard.press("Enter")
    expect(page.locator("#composer-chips .chip-collection")).to_have_text(re.compile("Recipes"))
    assert page.input_value("#message-input") == ""
    page.fill("#message-input", "What can I bake?")
    page.fill("#max-tokens", "4")
    page.click("#send-button")
    expect(page.locator(".message.assistant .stats-line")).to_be_visible(timeout=600_000)

    conversation = Conversation.objects.get(user=ada)
    assert [c.name for c in conversation.collections.all()] == ["Recipes"]
    page.reload()
    expect(page.locator("#composer-chips .chip-collection")).to_have_text(re.compile("Recipes"))
