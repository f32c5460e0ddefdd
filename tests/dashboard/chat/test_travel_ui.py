"""Chats that travel, in Debian's Chromium: share a chat with one person from its dialog (they
read it with its markdown drawn, another person gets 404, Stop sharing ends the link), import
a ChatGPT export from the sidebar (and a file that is none, with its sentence), and download
the chat's JSON from the Export menu; and the docs' share screenshots (HOMEAI_SCREENSHOTS=1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from inference.models import Conversation
from tests.dashboard.chat import test_markdown

open_chat = test_markdown.open_chat  # the fixture: open_chat(user, path, **context options) -> a signed-in page

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[3]
EXPORTS = ROOT / "tests" / "inference" / "exports"


def test_a_chat_shared_with_bob_is_read_by_bob_alone_until_sharing_stops(open_chat, make_user):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    conversation = test_markdown.stored_answer(
        alice, "Lemons are **sour**.", prompt="Tell me about lemons."
    ).conversation
    page = open_chat(alice, f"/chat/{conversation.id}/")
    page.get_by_role("button", name="Share").click()
    dialog = page.get_by_role("dialog", name="Share this chat")
    expect(dialog).to_be_visible()
    dialog.get_by_role("checkbox", name="bob").check()
    dialog.get_by_role("button", name="Share", exact=True).click()
    link = dialog.get_by_role("textbox", name="Link")
    expect(link).to_be_visible()
    expect(link).not_to_have_value("")
    url = link.input_value()
    assert "/chat/shared/" in url

    reader = open_chat(bob, url)
    expect(reader.get_by_role("heading", name="Tell me about lemons.")).to_be_visible()
    expect(reader.locator(".message.assistant .message-text strong")).to_have_text("sour")
    expect(reader.locator(".message.user .message-text")).to_have_text("Tell me about lemons.")
    expect(reader.locator("#composer")).to_have_count(0)

    stranger = open_chat(carol, "/chat/")
    assert stranger.goto(url).status == 404

    dialog.get_by_role("button", name="Stop sharing").click()
    expect(dialog.get_by_role("textbox", name="Link")).to_be_hidden()
    assert reader.goto(url).status == 404


def test_a_chatgpt_export_imports_from_the_sidebar_and_a_bad_file_gets_a_sentence(open_chat, make_user, tmp_path):
    me = make_user("importer")
    page = open_chat(me, "/chat/")
    not_json = tmp_path / "notes.json"
    not_json.write_text("shopping: eggs, milk")
    page.set_input_files("#import-file", str(not_json))
    expect(page.get_by_role("alert")).to_have_text(
        "This file is not JSON: choose an export from HomeAI, ChatGPT (conversations.json) or Open WebUI."
    )
    assert not Conversation.objects.filter(user=me).exists()

    page.set_input_files("#import-file", str(EXPORTS / "chatgpt_conversations.json"))
    expect(page.get_by_role("heading", name="Sourdough starter help")).to_be_visible()
    expect(page.locator(".message.assistant").last).to_contain_text("Equal weights")
    # The answer ChatGPT showed is the second of two versions, and the switcher says so.
    expect(page.locator(".message.assistant .sibling-count").first).to_have_text("2 / 2")
    expect(page.locator("a.conversation-link", has_text="Packing list")).to_be_visible()

    with page.expect_download() as download:
        page.get_by_text("Export", exact=True).click()
        page.get_by_role("link", name="JSON: every version, settings and stats").click()
    document = json.loads(Path(download.value.path()).read_text())
    assert document["format"] == "homeai.chats"
    assert len(document["conversations"][0]["messages"]) == 5


@pytest.mark.skipif(not os.environ.get("HOMEAI_SCREENSHOTS"), reason="set HOMEAI_SCREENSHOTS=1 to refresh docs/")
def test_take_share_screenshots_for_the_docs(open_chat, make_user):
    """HOMEAI_SCREENSHOTS=1 pytest tests/dashboard/chat/test_travel_ui.py -k screenshots."""
    sam, ana = make_user("sam"), make_user("ana")
    make_user("leo")
    conversation = test_markdown.stored_answer(
        sam, test_markdown.MARKDOWN, prompt="Show me a Python greeting."
    ).conversation
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    page = open_chat(sam, f"/chat/{conversation.id}/", viewport={"width": 1280, "height": 800})
    page.get_by_role("button", name="Share").click()
    dialog = page.get_by_role("dialog", name="Share this chat")
    dialog.get_by_role("checkbox", name="ana").check()
    dialog.get_by_role("button", name="Share", exact=True).click()
    expect(dialog.get_by_role("textbox", name="Link")).not_to_have_value("")
    page.screenshot(path=str(out / "chat-share.png"))
    reader = open_chat(
        ana, dialog.get_by_role("textbox", name="Link").input_value(), viewport={"width": 1280, "height": 800}
    )
    expect(reader.locator(".message.assistant .code-block")).to_be_visible()
    reader.screenshot(path=str(out / "chat-shared.png"))
