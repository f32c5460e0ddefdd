"""Answers drawn as markdown, in Debian's Chromium: highlighted code, tables, copy buttons, nothing
a model writes able to run or load, the streamed answer drawn like the stored one, and the pages
on a phone."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect, sync_playwright

from inference.models import Generation, Message
from tests import factories
from tests.support import launch_chromium, markdown_html, session_cookie

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ARTIFACTS = Path(settings.DATA_DIR) / "artifacts"
PHONE = {"width": 390, "height": 844}

CODE = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"'
MARKDOWN = f"""Here is what you asked for:

- first **point**
- second point with `inline code`

```python
{CODE}
```

| Planet | Moons |
|:-------|------:|
| Earth  |     1 |
| Mars   |     2 |
"""


@pytest.fixture
def open_chat(live_server_url, monkeypatch):
    """open_chat(user, path, **context options) -> a page on path, signed in as user."""

    # Playwright's sync API keeps an event loop in this thread; the test's ORM calls are blocking.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = launch_chromium(p)

        def open_page(user, path, **options):
            options.setdefault("viewport", {"width": 1280, "height": 860})
            context = browser.new_context(base_url=live_server_url, **options)
            context.add_cookies([{"name": "sessionid", "value": session_cookie(user), "url": live_server_url}])
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.goto(path)
            return page

        yield open_page
        browser.close()


def stored_answer(owner, answer: str, prompt: str = "Show me") -> Generation:
    generation = factories.finished_generation(owner, prompt=prompt, answer=answer)
    # The chat shows one branch of the conversation's message tree: the answer replies to the prompt.
    question = generation.conversation.messages.get(role=Message.Role.USER)
    Message.objects.filter(pk=generation.message_id).update(parent=question)
    return generation


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def clipboard_text(page) -> str:
    return page.evaluate("() => navigator.clipboard.readText()")


def test_a_stored_answer_renders_lists_highlighted_code_and_tables_with_copy_buttons(open_chat, make_user):
    me = make_user("reader")
    generation = stored_answer(me, MARKDOWN, prompt="Plain **text**\n<b>stays</b>")
    page = open_chat(me, f"/chat/{generation.conversation_id}/", permissions=["clipboard-read", "clipboard-write"])

    answer = page.locator(".message.assistant .message-text")
    expect(answer.locator("ul > li")).to_have_count(2)
    expect(answer.locator("ul strong")).to_have_text("point")
    code = answer.locator("pre > code.hljs.language-python")
    expect(code).to_have_text(CODE)
    expect(code.locator(".hljs-keyword").first).to_have_text("def")
    expect(answer.locator("table th")).to_have_text(["Planet", "Moons"])
    expect(answer.locator("table tbody tr")).to_have_count(2)
    expect(answer.locator("table td.align-right").first).to_have_text("1")
    # The user's message is text as typed, line break kept; never markdown or HTML.
    user_text = page.locator(".message.user .message-text")
    assert user_text.inner_text() == "Plain **text**\n<b>stays</b>"
    expect(user_text.locator("b, strong")).to_have_count(0)

    copy = page.locator(".code-block .copy-button")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert clipboard_text(page) == CODE
    expect(copy).to_have_text("Copy", timeout=5_000)

    # Each message's own copy button gives its source: the answer's markdown, the user's text.
    page.locator(".message.assistant .message-actions .copy-button").click()
    assert clipboard_text(page) == MARKDOWN
    page.locator(".message.user .message-actions .copy-button").click()
    assert clipboard_text(page) == "Plain **text**\n<b>stays</b>"
    shot(page, "markdown-light")


def test_copying_works_without_navigator_clipboard_as_over_plain_http_on_a_lan(open_chat, make_user):
    me = make_user("lan")
    generation = stored_answer(me, MARKDOWN)
    page = open_chat(me, f"/chat/{generation.conversation_id}/")
    # On http://192.168.x.y the browser has no navigator.clipboard; the fallback selects a
    # textarea and runs execCommand("copy"), whose copy event carries the selected text.
    page.evaluate(
        """() => {
            Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});
            document.addEventListener('copy', () => {
                const area = document.activeElement;
                window.__copied = area.value.slice(area.selectionStart, area.selectionEnd);
            });
        }"""
    )
    copy = page.locator(".code-block .copy-button")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("window.__copied") == CODE
    expect(page.locator(".clipboard-helper")).to_have_count(0)


class CountingHandler(BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self):
        self.requests.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def listener():
    """A web server on a free local port that counts the requests it gets."""
    CountingHandler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), CountingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", CountingHandler.requests
    server.shutdown()
    server.server_close()


def test_hostile_answers_render_inert_run_nothing_and_load_nothing(open_chat, make_user, listener):
    remote, requests = listener
    hostile = f"""Hello <img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script>

[click](javascript:window.__pwned=3)

![remote]({remote}/x.png)

<iframe src="{remote}/frame"></iframe><link rel="stylesheet" href="{remote}/style.css">

[data](data:text/html,<script>window.__pwned=4</script>) <javascript:window.__pwned=5>

[fine]({remote}/page)
"""
    me = make_user("target")
    generation = stored_answer(me, hostile)
    page = open_chat(me, f"/chat/{generation.conversation_id}/")

    answer = page.locator(".message.assistant .message-text")
    expect(answer).to_contain_text("<script>window.__pwned=2</script>")  # shown as text
    for tag in ("img", "script", "iframe", "link", "style", "[onerror]", "[style]", "a[href^='javascript']"):
        expect(answer.locator(tag)).to_have_count(0)
    page.get_by_text("[click](javascript:window.__pwned=3)").click()
    page.get_by_text("<javascript:window.__pwned=5>").click()
    # The image is a link saying what it is; the one real link opens apart from this page.
    image = answer.locator("a.md-image")
    expect(image).to_have_text("Image: remote")
    for link in (image, answer.get_by_role("link", name="fine")):
        assert link.get_attribute("target") == "_blank"
        assert link.get_attribute("rel") == "noopener noreferrer nofollow"
    page.wait_for_timeout(500)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.url.endswith(f"/chat/{generation.conversation_id}/")
    assert requests == []


def test_a_streamed_answer_is_drawn_as_markdown_with_its_stats_and_phase_bar(open_chat, make_user, worker, settled):
    me = make_user("streamer")
    page = open_chat(me, "/chat/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "connected")
    page.fill("#message-input", "Write a short Python function that adds two numbers, in a code block.")
    page.fill("#max-tokens", "48")
    page.click("#send-button")

    answer = page.locator(".message.assistant").last
    expect(answer.locator(".stats-line")).to_be_visible(timeout=600_000)
    assert "TTFT" in answer.locator(".stats-line").inner_text()
    expect(answer.locator(".phase-bar .seg")).to_have_count(4)
    expect(answer.locator(".message-actions .copy-button")).to_be_visible()
    generation = Generation.objects.get()
    assert generation.status == "done"
    # The streamed answer ends drawn exactly as its stored text draws, and as it draws after a reload.
    streamed = answer.locator(".message-text").inner_html()
    assert streamed == markdown_html(page, generation.message.content)
    page.reload()
    expect(page.locator(".message.assistant .stats-line")).to_have_count(1)
    assert page.locator(".message.assistant .message-text").inner_html() == streamed


def test_on_a_phone_the_menu_holds_every_link_and_sign_out_within_the_screen(open_chat, make_user):
    staff = get_user_model().objects.create_superuser("a-rather-long-name", password=factories.PASSWORD)
    generation = stored_answer(staff, MARKDOWN)
    for path in (f"/chat/{generation.conversation_id}/", reverse("dashboard"), reverse("api_keys")):
        page = open_chat(staff, path, viewport=PHONE)
        bar = page.locator(".topbar").bounding_box()
        assert bar["height"] <= 56, path  # one line
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path
        sign_out = page.get_by_role("button", name="Sign out")
        expect(sign_out).to_be_hidden()
        page.get_by_role("button", name="Menu").click()
        expect(sign_out).to_be_visible()
        expect(sign_out).to_be_in_viewport(ratio=1)
        box = sign_out.bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= PHONE["width"], path
        for name in ("Chat", "Dashboard", "Settings", "Models", "People"):
            expect(page.locator(".topnav").get_by_role("link", name=name, exact=True)).to_be_in_viewport(ratio=1)
        if path.startswith("/chat/"):
            shot(page, "phone-menu")
            page.keyboard.press("Escape")
            expect(sign_out).to_be_hidden()
            shot(page, "phone-chat")
            # Turned to landscape with the menu open: it closes, and the bar shows it inline.
            page.get_by_role("button", name="Menu").click()
            page.set_viewport_size({"width": PHONE["height"], "height": PHONE["width"]})
            expect(page.locator(".topbar-menu:popover-open")).to_have_count(0)
            expect(sign_out).to_be_in_viewport(ratio=1)
        page.context.close()
    sign_out_page = open_chat(staff, reverse("chat"), viewport=PHONE)
    sign_out_page.get_by_role("button", name="Menu").click()
    sign_out_page.get_by_role("button", name="Sign out").click()
    expect(sign_out_page).to_have_url(re.compile(r"/accounts/login/"))


def test_pages_keep_the_content_security_policy_without_a_violation(open_chat, make_user):
    staff = get_user_model().objects.create_superuser("root", password=factories.PASSWORD)
    generation = stored_answer(staff, MARKDOWN)
    paths = [
        reverse("chat"),
        reverse("chat_conversation", args=[generation.conversation_id]),
        reverse("dashboard"),
        reverse("dashboard_request", args=[generation.id]),
        reverse("api_keys"),
        reverse("model_library"),
    ]
    page = open_chat(staff, paths[0], color_scheme="dark")
    page.add_init_script(
        """document.addEventListener('securitypolicyviolation', e =>
            (window.__violations = window.__violations || []).push(e.violatedDirective + ' ' + e.blockedURI));"""
    )
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    for path in paths:
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__violations || []") == [], path
        if path == paths[1]:
            expect(page.locator("pre code.hljs")).to_have_count(1)
            shot(page, "markdown-dark")
    assert errors == []
    policy = page.locator("meta[http-equiv='Content-Security-Policy']").get_attribute("content")
    assert "script-src 'self';" in policy and "'unsafe-eval'" not in policy
