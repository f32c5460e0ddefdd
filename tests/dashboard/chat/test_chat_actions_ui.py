"""The chat's actions in Debian's Chromium: regenerate and edit with the "2 / 2" switcher, two tabs
on one chat, rename, search, delete, the settings dialog (its system prompt reaching the request's
page), the shortcuts overlay, and the docs' chat screenshots (HOMEAI_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from inference.models import Conversation, Generation, Message, Preset
from tests import factories
from tests.dashboard.chat import test_markdown

open_chat = test_markdown.open_chat  # the fixture: open_chat(user, path, **context options) -> a signed-in page
MARKDOWN = test_markdown.MARKDOWN  # an answer with a list, a code block and a table

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[3]
WAIT = 600_000  # a busy 2-core machine: wait on what the page shows, not on the clock


def send(page, text: str, max_tokens: int = 4) -> None:
    """Type a message in the composer and send it; return once its answer has its stats."""
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
    page.fill("#max-tokens", str(max_tokens))
    page.fill("#message-input", text)
    page.click("#send-button")
    expect(page.locator(".message.assistant .stats-line").last).to_be_visible(timeout=WAIT)
    expect(page.locator("#stop-button")).to_be_hidden(timeout=WAIT)


def answered(page, count: int) -> None:
    """Wait until the branch on show ends with a finished answer (count answers in all)."""
    expect(page.locator(".message.assistant")).to_have_count(count, timeout=WAIT)
    expect(page.locator(".message.assistant").last.locator(".stats-line")).to_be_visible(timeout=WAIT)
    expect(page.locator(".message.assistant .action-button", has_text="Regenerate").last).to_be_enabled(timeout=WAIT)


def test_regenerate_adds_a_second_answer_and_the_switcher_goes_back_to_the_first(open_chat, make_user, worker, settled):
    page = open_chat(make_user(), "/chat/")
    send(page, "Name a fruit.")
    first = page.locator(".message.assistant .message-text").last.inner_text()
    first_id = page.locator(".message.assistant").last.get_attribute("data-message")

    page.locator(".message.assistant").last.hover()
    page.get_by_role("button", name="Write this answer again").click()
    answered(page, 1)
    answer = page.locator(".message.assistant").last
    expect(answer.locator(".sibling-count")).to_have_text("2 / 2")
    expect(answer).not_to_have_attribute("data-message", first_id)
    expect(answer.get_by_role("button", name="Next version of this answer")).to_be_disabled()

    answer.get_by_role("button", name="Previous version of this answer").click()
    answer = page.locator(".message.assistant").last
    expect(answer).to_have_attribute("data-message", first_id, timeout=WAIT)
    expect(answer.locator(".sibling-count")).to_have_text("1 / 2")
    expect(answer.locator(".message-text")).to_have_text(first)
    # The branch on show is stored: a reload shows the first answer still.
    page.reload()
    expect(page.locator(".message.assistant").last).to_have_attribute("data-message", first_id)
    expect(page.locator(".message.assistant .sibling-count")).to_have_text("1 / 2")


def test_edit_and_resend_shows_the_new_text_with_a_switcher_on_the_message(open_chat, make_user, worker, settled):
    page = open_chat(make_user(), "/chat/")
    send(page, "Name a colour.")
    user_message = page.locator(".message.user").last
    user_message.hover()
    user_message.get_by_role("button", name="Edit this message and send it again").click()
    editor = page.get_by_role("textbox", name="Edit your message")
    expect(editor).to_have_value("Name a colour.")
    editor.fill("Name an animal.")
    page.get_by_role("button", name="Save & send").click()
    answered(page, 1)
    user_message = page.locator(".message.user").last
    expect(user_message.locator(".message-text")).to_have_text("Name an animal.")
    expect(user_message.locator(".sibling-count")).to_have_text("2 / 2")
    expect(page.locator(".message-editor")).to_have_count(0)

    user_message.get_by_role("button", name="Previous version of this message").click()
    expect(page.locator(".message.user .message-text")).to_have_text("Name a colour.", timeout=WAIT)
    expect(page.locator(".message.user .sibling-count")).to_have_text("1 / 2")

    # Cancel leaves the message as it was.
    page.locator(".message.user").hover()
    page.get_by_role("button", name="Edit this message and send it again").click()
    page.get_by_role("textbox", name="Edit your message").fill("Something else")
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator(".message.user .message-text")).to_have_text("Name a colour.")
    assert Message.objects.filter(role="user").count() == 2


def test_a_second_tab_on_the_same_chat_shows_the_new_question_and_its_answer(open_chat, make_user, worker, settled):
    user = make_user()
    conversation = Conversation.objects.create(user=user, title="Two tabs")
    here = open_chat(user, f"/chat/{conversation.id}/")
    there = open_chat(user, f"/chat/{conversation.id}/")
    elsewhere = open_chat(user, "/chat/")  # a tab on another (new) chat draws nothing of it
    for tab in (there, elsewhere):
        expect(tab.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)

    send(here, "Name a bird.", max_tokens=8)
    expect(there.locator(".message.user .message-text")).to_have_text("Name a bird.", timeout=WAIT)
    answer = there.locator(".message.assistant").last
    expect(answer).to_have_attribute("data-status", "done", timeout=WAIT)
    expect(answer.locator(".message-text")).to_have_text(here.locator(".message.assistant .message-text").inner_text())
    # The tab on another chat stays as it was, and each tab still sends its own messages.
    expect(elsewhere.locator(".message")).to_have_count(0)
    send(there, "Name a tree.", max_tokens=8)
    expect(here.locator(".message.assistant")).to_have_count(2, timeout=WAIT)
    expect(here.locator(".message.assistant").last).to_have_attribute("data-status", "done", timeout=WAIT)


def test_rename_search_and_delete_a_conversation(open_chat, make_user, live_server_url):
    owner = make_user()
    kept = factories.finished_generation(owner, prompt="Tell me about lighthouses", answer="A beacon of light.")
    other = factories.finished_generation(owner, prompt="Plan a picnic", answer="Bring some marmalade sandwiches.")
    page = open_chat(owner, f"/chat/{kept.conversation_id}/")

    page.get_by_role("button", name="Rename this conversation").click()
    title = page.get_by_role("textbox", name="Conversation name")
    title.fill("Lighthouse notes")
    title.press("Enter")
    expect(page.locator("#chat-heading")).to_have_text("Lighthouse notes")
    link = page.locator(f'.conversation-link[data-conversation="{kept.conversation_id}"]')
    expect(link).to_contain_text("Lighthouse notes")
    expect(page).to_have_title(re.compile("^Lighthouse notes"))
    page.reload()
    expect(page.locator("#chat-heading")).to_have_text("Lighthouse notes")
    expect(link).to_contain_text("Lighthouse notes")

    # Ctrl+K, a word from the other chat's answer: its title and the snippet around the word.
    page.locator("#messages").click()
    page.keyboard.press("Control+k")
    expect(page.locator("#conversation-search")).to_be_focused()
    page.keyboard.type("marmalade")
    result = page.locator(".search-result")
    expect(result).to_have_count(1)
    expect(result.locator(".search-title")).to_have_text("Plan a picnic")
    expect(result.locator(".search-snippet")).to_contain_text("marmalade sandwiches")
    expect(page.locator("#conversation-nav")).to_be_hidden()
    page.keyboard.press("Escape")
    expect(page.locator("#conversation-search")).to_have_value("")
    expect(page.locator("#search-results")).to_be_hidden()
    expect(page.locator("#conversation-nav")).to_be_visible()
    page.fill("#conversation-search", "no such words anywhere")
    expect(page.locator("#search-status")).to_have_text("No chats match.")
    page.fill("#conversation-search", "marmalade")
    page.locator(".search-result").click()
    expect(page).to_have_url(re.compile(rf"/chat/{other.conversation_id}/$"))

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page).to_have_url(re.compile(r"/chat/$"))
    expect(page.locator(".conversation-link")).to_have_count(1)
    assert list(Conversation.objects.values_list("id", flat=True)) == [kept.conversation_id]


def test_the_shortcuts_overlay_opens_with_a_question_mark_and_closes_with_escape(open_chat, make_user):
    page = open_chat(make_user(), "/chat/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
    page.locator("#messages").click()
    page.keyboard.press("?")
    overlay = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(overlay).to_be_visible()
    for shortcut in ("New chat", "Search conversations", "Copy the last answer", "Regenerate the last answer"):
        expect(overlay).to_contain_text(shortcut)
    page.keyboard.press("Escape")
    expect(overlay).to_be_hidden()
    # Typed in the composer, "?" is just a character.
    page.locator("#message-input").press("?")
    expect(overlay).to_be_hidden()
    expect(page.locator("#message-input")).to_have_value("?")
    page.get_by_role("button", name="Keyboard shortcuts").click()
    expect(overlay).to_be_visible()
    overlay.get_by_role("button", name="Close").click()
    expect(overlay).to_be_hidden()
    expect(page.get_by_role("button", name="Keyboard shortcuts")).to_be_focused()


def test_settings_saved_in_the_dialog_reach_the_answer_and_its_request_page(open_chat, make_user, worker, settled):
    owner = make_user()
    page = open_chat(owner, "/chat/")
    page.get_by_role("button", name=re.compile("Chat settings")).click()
    dialog = page.get_by_role("dialog", name="Chat settings")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("System prompt")).to_be_focused()
    dialog.get_by_label("Preset", exact=True).select_option(label="Precise")
    expect(dialog.get_by_label("Temperature")).to_have_value("0.2")
    dialog.get_by_label("System prompt").fill("You are a ship's cook. Answer briefly.")
    expect(dialog.locator("#system-prompt-count")).to_contain_text("38 / 4,000")
    # A value out of range is refused in the dialog.
    dialog.get_by_label("Top p").fill("3")
    dialog.get_by_role("button", name="Save", exact=True).click()
    expect(dialog.get_by_role("alert")).to_contain_text("Top p must be a number from 0 to 1")
    dialog.get_by_label("Top p").fill("0.9")
    # Save as preset: the user's own, in the picker at once and stored.
    dialog.get_by_role("button", name="Save as preset…").click()
    dialog.get_by_label("Preset name").fill("Cook")
    dialog.get_by_role("button", name="Save preset").click()
    picker = dialog.get_by_label("Preset", exact=True)
    expect(picker.locator("option:checked")).to_have_text("Cook", timeout=WAIT)
    assert picker.input_value() == str(Preset.objects.get(user=owner, name="Cook").id)
    dialog.get_by_role("button", name="Save", exact=True).click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#settings-summary")).to_have_text("Cook")

    send(page, "What is for dinner?")  # a new chat: its first chat.send carries the settings
    generation = Generation.objects.get()
    assert generation.system_prompt == "You are a ship's cook. Answer briefly."
    conversation = generation.conversation
    assert (conversation.temperature, conversation.top_p) == (0.2, 0.9)

    # Reset to defaults on a stored chat goes over the socket (chat.settings).
    page.reload()
    expect(page.locator("#settings-summary")).to_have_text("Cook")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
    page.get_by_role("button", name=re.compile("Chat settings")).click()
    page.get_by_role("button", name="Reset to defaults").click()
    expect(dialog.get_by_label("System prompt")).to_have_value("")
    dialog.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#settings-summary")).to_have_text("Default settings", timeout=WAIT)
    conversation.refresh_from_db()
    assert conversation.system_prompt == "" and conversation.temperature is None

    page.goto(f"/dashboard/requests/{generation.id}/")
    expect(page.get_by_text("You are a ship's cook. Answer briefly.")).to_be_visible()


# --- screenshots for the docs (run on purpose, not with the suite) -------------------------------------


def _stored_chat(owner) -> Conversation:
    """A conversation with a markdown answer (a code block) regenerated once: "2 / 2" on show."""
    conversation = Conversation.objects.create(
        user=owner, title="Greeting helper in Python", temperature=0.2, top_p=0.9, system_prompt="Be concise."
    )
    question = Message.objects.create(
        conversation=conversation, role="user", content="Write a Python function that greets someone by name."
    )
    earlier = "```python\ndef greet(name):\n    print('Hello', name)\n```"
    for text in (earlier, MARKDOWN):
        reply = Message.objects.create(conversation=conversation, parent=question, role="assistant", content=text)
        Generation.objects.create(
            user=owner, conversation=conversation, message=reply, max_tokens=256, t_arrive_ns=1,
            **factories.generation_metrics(token_texts=[""] * 8),
        )  # fmt: skip
    Conversation.objects.filter(id=conversation.id).update(current_leaf=reply)
    for title in ("Weekend plans", "Sourdough starter tips", "Why is prefill faster than decode?"):
        factories.finished_generation(owner, prompt=title, answer="…")
    Conversation.objects.filter(id=conversation.id).update(title=conversation.title)  # newest: top of the list
    return conversation


@pytest.mark.skipif(not os.environ.get("HOMEAI_SCREENSHOTS"), reason="set HOMEAI_SCREENSHOTS=1 to refresh docs/")
def test_take_chat_screenshots_for_the_docs(open_chat, make_user):
    """HOMEAI_SCREENSHOTS=1 pytest tests/dashboard/chat/test_chat_actions_ui.py -k screenshots."""
    owner = make_user("sam")
    conversation = _stored_chat(owner)
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    views = [
        ("chat.png", {"color_scheme": "light", "viewport": {"width": 1280, "height": 800}}),
        ("chat-dark.png", {"color_scheme": "dark", "viewport": {"width": 1280, "height": 800}}),
        ("chat-phone.png", {"color_scheme": "light", "viewport": {"width": 390, "height": 844}, "is_mobile": True}),
    ]
    for name, options in views:
        page = open_chat(owner, f"/chat/{conversation.id}/", **options)
        expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
        expect(page.locator(".message.assistant .code-block")).to_be_visible()
        expect(page.locator(".sibling-count")).to_have_text("2 / 2")
        page.locator(".message.assistant .message-text").hover()  # its actions show, as they do to a reader
        page.screenshot(path=str(out / name))
