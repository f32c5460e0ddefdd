"""The pages in Korean and Portuguese (Brazil), in Debian's Chromium: the chat, the dashboard,
the models and the settings pages show no English the catalogs translate; and the docs'
Korean screenshots (HOMEAI_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from inference.models import Conversation, Generation, Message
from tests import factories
from tests.dashboard.chat import test_markdown
from tests.dashboard.latency.test_dashboard import _chat_a_little
from tests.test_i18n import KEYS, LOCALE, SAME_EVERYWHERE, _entries

pytestmark = [pytest.mark.integration, pytest.mark.browser]

open_chat = test_markdown.open_chat  # the fixture: open_chat(user, path, **context options) -> a signed-in page

ROOT = Path(__file__).resolve().parents[2]
WAIT = 600_000  # a busy 2-core machine: wait on what the page shows, not on the clock
# Playwright's locale sets the browser's Accept-Language (and navigator.language).
BROWSER_LOCALES = {"ko": "ko-KR", "pt_BR": "pt-BR"}
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%\{[^}]*\}|%%|<[^>]+>|\{\{[^}]*\}\}")

# Everything a person reads: the text, the titles and labels, and the charts' SVG text.
VISIBLE_TEXT = """() => {
    // Proper names marked translate="no" (a licence's title) are left out, as a translator would.
    const names = [...document.querySelectorAll('[translate="no"]')];
    for (const node of names) node.style.setProperty("display", "none");
    const parts = [document.title, document.body.innerText];
    for (const node of names) node.style.removeProperty("display");
    for (const node of document.querySelectorAll("[placeholder], [title], [aria-label]")) {
        for (const name of ["placeholder", "title", "aria-label"]) {
            if (node.hasAttribute(name) && !node.closest(".modebar")) parts.push(node.getAttribute(name));
        }
    }
    for (const node of document.querySelectorAll("svg text")) parts.push(node.textContent);
    return parts.join("\\n");
}"""


def english_fragments(locale: str) -> set[str]:
    """The English the catalogs translate for this locale: each msgid's words between its
    placeholders and tags, less what the translations themselves say (units, names, and words
    the language borrows, as Portuguese does "tokens")."""
    entries = [
        e for domain in ("django", "djangojs") for e in _entries(LOCALE / locale / "LC_MESSAGES" / f"{domain}.po")
    ]
    translated = "\n".join(msgstr for _msgid, msgstr, _fuzzy in entries)
    found = set()
    for msgid, _msgstr, _fuzzy in entries[1:]:
        for fragment in PLACEHOLDER.split(msgid):
            fragment = fragment.strip(" .,:;·()→≈×/-")
            if len(re.findall(r"[A-Za-z]", fragment)) >= 3 and fragment not in SAME_EVERYWHERE | KEYS:
                found.add(fragment)
    return {f for f in found if not english_left(translated, {f})}


def english_left(text: str, fragments: set[str]) -> list[str]:
    return sorted(f for f in fragments if re.search(rf"(?<![A-Za-z_]){re.escape(f)}(?![A-Za-z_])", text))


@pytest.fixture
def browser(open_chat):
    """browser(user, path, locale, **context options) -> a signed-in page in that browser language."""

    def open_page(user, path, locale, **options):
        options.setdefault("viewport", {"width": 1400, "height": 1000})
        return open_chat(user, path, locale=BROWSER_LOCALES[locale], **options)

    return open_page


def _korean_chat(owner) -> Conversation:
    """A finished answer in markdown, in Korean, with the phases the chat draws under it."""
    generation = factories.finished_generation(
        owner,
        prompt="주말에 아이들과 할 만한 실내 놀이를 알려 주세요.",
        answer=(
            "비 오는 주말에 좋은 실내 놀이 세 가지입니다.\n\n"
            "1. **보물찾기**: 집 안 곳곳에 쪽지를 숨겨 두세요.\n"
            "2. **종이컵 탑 쌓기**: 누가 더 높이 쌓는지 겨뤄 보세요.\n"
            "3. **그림자 인형극**: 손전등 하나면 충분합니다.\n\n"
            "| 놀이 | 준비물 | 시간 |\n|---|---|---|\n| 보물찾기 | 종이, 펜 | 30분 |\n| 탑 쌓기 | 종이컵 | 20분 |"
        ),
        attempts=1,
    )
    Conversation.objects.filter(id=generation.conversation_id).update(title="주말 실내 놀이")
    for title in ("김치찌개 끓이는 법", "영어 단어 외우는 요령"):
        factories.finished_generation(owner, prompt=title, answer="…", attempts=1)
    Conversation.objects.filter(id=generation.conversation_id).update(title="주말 실내 놀이")  # newest on top
    return Conversation.objects.get(id=generation.conversation_id)


def _settled_dashboard(page) -> None:
    page.wait_for_function("() => document.querySelector('[data-chart=\"steps\"]').data")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
    page.wait_for_function("() => document.getElementById('sys-cpu').textContent !== '–'")  # a system frame


@pytest.mark.parametrize("locale", ["ko", "pt_BR"])
def test_the_main_pages_show_no_english_the_catalogs_translate(browser, locale, transactional_db):
    staff = get_user_model().objects.create_user("mina", password=factories.PASSWORD, is_staff=True)
    conversation = _korean_chat(staff)
    fragments = english_fragments(locale)
    assert len(fragments) > 300  # the check has the catalogs to compare against
    html_lang = "ko" if locale == "ko" else "pt-br"
    for path in ("/chat/", f"/chat/{conversation.id}/", "/dashboard/", "/models/", "/settings/"):
        page = browser(staff, path, locale)
        expect(page.locator("html")).to_have_attribute("lang", html_lang)
        if path.startswith("/chat/"):
            expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
        if path.startswith("/chat/") and path != "/chat/":
            expect(page.locator(".message.assistant .stats-line")).to_be_visible()
        if path == "/dashboard/":
            _settled_dashboard(page)
        assert english_left(page.evaluate(VISIBLE_TEXT), fragments) == [], path
        page.context.close()


def test_the_check_finds_english_between_placeholders():
    fragments = english_fragments("ko")
    assert english_left("보내기 · Send", fragments) == ["Send"]
    assert "Your message is over" not in english_left("메시지가 4,000자를 넘습니다.", fragments)
    assert english_left("12 tok/s · HomeAI", fragments) == []


@pytest.mark.skipif(not os.environ.get("HOMEAI_SCREENSHOTS"), reason="set HOMEAI_SCREENSHOTS=1 to refresh docs/")
def test_take_korean_screenshots_for_the_docs(browser, connect, make_user, worker):
    """HOMEAI_SCREENSHOTS=1 pytest tests/dashboard/test_languages.py -k screenshots."""
    owner = make_user("mina", is_staff=True)
    conversation = _korean_chat(owner)
    sam = make_user("sam")
    _chat_a_little(connect, owner, ["안녕하세요!", "Write a haiku about rain."])
    _chat_a_little(connect, sam, ["Summarise: " + " ".join(f"Lamp {i} is lit." for i in range(40)), "Thanks!"])
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    page = browser(owner, f"/chat/{conversation.id}/", "ko", viewport={"width": 1280, "height": 800})
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected", timeout=WAIT)
    expect(page.locator(".message.assistant table")).to_be_visible()
    page.locator(".message.assistant .message-text").last.hover()
    page.screenshot(path=str(out / "chat-ko.png"))
    page = browser(owner, "/dashboard/", "ko", viewport={"width": 1440, "height": 1000})
    _settled_dashboard(page)
    page.screenshot(path=str(out / "dashboard-ko.png"), full_page=True)
    assert Generation.objects.filter(status="done").count() >= 4 and Message.objects.exists()
