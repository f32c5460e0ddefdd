# ruff: noqa: F811
"""The library page's pull box, in Debian's Chromium against a HomeAI of its own whose worker
pulls into a temporary folder (tests/pullstack.py): a pull shows its bytes and ends with the
model in the table; a held download shows its progress and is cancelled from the page."""

from __future__ import annotations

import re
import socket

import pytest
from playwright.sync_api import expect, sync_playwright

from dashboard.library.curated import RECOMMENDED
from inference import probe, redis_client
from infra.pull import store
from infra.pull.names import parse
from tests.infra.pull.servers import push_ollama_model, tiny_gguf

# The stack's fixtures (pytest finds them here by name; the parameters of the same names are them).
from tests.pullstack import hf_hub, models_dir, registry, stack  # noqa: F401
from tests.support import launch_chromium, session_cookie, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.faults]
MS = 1000
WAIT = 600  # an upper bound on an event on a busy box, never a measurement


@pytest.fixture
def page(stack, make_user, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop; the ORM calls block
    if not stack.worker.alive():
        stack.worker.start()
    staff = make_user("pat", is_staff=True)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        context = browser.new_context(base_url=stack.url)
        context.add_cookies([{"name": "sessionid", "value": session_cookie(staff), "url": stack.url}])
        yield context.new_page()
        browser.close()


def test_a_pull_from_the_page_ends_with_the_model_in_the_table(page, registry, tmp_path):
    handle, _ = registry
    push_ollama_model(handle.url, "library/pagetiny", "1m", tiny_gguf(tmp_path / "p.gguf", n_floats=256 * 1024))
    page.goto("/models/")
    page.fill("#pull-name", "pagetiny:1m")
    page.click("#pull-form button[type=submit]")
    # The page reloads once the pull it watched succeeded: the table lists the new file.
    expect(page.locator(".library-table")).to_contain_text("pagetiny-1m.gguf", timeout=WAIT * MS)
    expect(page.locator(".pull", has_text="pagetiny:1m")).to_contain_text("Pulled")


def test_a_name_with_a_path_gets_a_sentence(page):
    page.goto("/models/")
    page.fill("#pull-name", "../../etc/passwd")
    page.click("#pull-form button[type=submit]")
    expect(page.locator("#pull-error")).to_contain_text("is not a model name", timeout=WAIT * MS)


def test_a_held_download_shows_its_progress_and_is_cancelled_from_the_page(page, stack, registry, models_dir, tmp_path):
    handle, proxy = registry
    manifest = push_ollama_model(handle.url, "library/slow", "latest", tiny_gguf(tmp_path / "s.gguf", n_floats=2**20))
    size = manifest["layers"][0]["size"]
    proxy.hold_after(size // 2)
    page.goto("/models/")
    page.fill("#pull-name", "slow")
    page.click("#pull-form button[type=submit]")
    row = page.locator(".pull", has_text="slow:latest")
    assert proxy.held.wait(WAIT)
    expect(row.locator("progress")).to_have_attribute("value", str(size // 2), timeout=WAIT * MS)
    expect(row.locator(".pull-bytes")).to_contain_text(re.compile(r"of"))
    pid = row.get_attribute("data-pull")
    row.locator(".pull-cancel").click()
    assert wait_until(lambda: stack.redis.client.exists(redis_client.pull_cancel_key(pid)), timeout=WAIT)
    proxy.release()  # the held connection is cut; the worker finds the cancel and stops
    expect(row).to_contain_text("was cancelled", timeout=WAIT * MS)
    assert not store.partial_path(models_dir, manifest["layers"][0]["digest"]).exists()
    assert "slow-latest.gguf" not in [p.name for p in models_dir.glob("*.gguf")]


def test_before_a_pull_the_page_says_whether_it_fits_and_how_fast_it_should_be(page, stack, registry, tmp_path):
    handle, _ = registry
    push_ollama_model(handle.url, "library/forecast", "latest", tiny_gguf(tmp_path / "f.gguf", n_floats=1024))
    # The worker measures the box once it is up and quiet (probe.py); the forecast reads its figures.
    assert wait_until(lambda: stack.redis.client.exists(probe.probe_key(probe.host_name())), timeout=WAIT)
    page.goto("/models/")
    page.fill("#pull-name", "forecast")
    page.click("#pull-check")
    shown = page.locator("#pull-forecast")
    expect(shown).to_contain_text("forecast:latest needs", timeout=WAIT * MS)
    expect(shown).to_contain_text("it fits")
    expect(shown).to_contain_text("tokens/s written")
    page.fill("#pull-name", "nobody-has:this")
    page.click("#pull-check")
    expect(page.locator("#pull-error")).to_contain_text("There is no model nobody-has:this", timeout=WAIT * MS)


def test_a_recommended_model_is_pulled_with_one_click(page, registry, models_dir, tmp_path):
    """The curated table's first row (dashboard/library/curated.py), its name served by the
    test registry (a small GGUF under it): its Pull button starts the pull, which ends with the
    model in the folder."""
    handle, _ = registry
    first = RECOMMENDED[0]
    name = parse(first.name)
    push_ollama_model(handle.url, name.repository, name.tag, tiny_gguf(tmp_path / "r.gguf", n_floats=1024))
    page.goto("/models/")
    row = page.locator(f'tr[data-recommended="{first.name}"]')
    expect(row).to_contain_text(first.licence)
    row.locator('button[data-action="pull"]').click()
    expect(page.locator(".pull", has_text=name.short)).to_contain_text("Pulled", timeout=WAIT * MS)
    assert (models_dir / name.file_name).is_file()
    store.remove(models_dir / name.file_name)


def test_a_pull_goes_to_the_machine_chosen(page, registry, models_dir, tmp_path):
    """The machine list names each machine a worker runs on; a pull sent to this one's queue
    (registry.machine_queue) is taken by its worker. A machine no worker runs on is refused."""
    handle, _ = registry
    push_ollama_model(handle.url, "library/onhost", "latest", tiny_gguf(tmp_path / "h.gguf", n_floats=1024))
    page.goto("/models/")
    page.select_option("#pull-machine", socket.gethostname())
    page.fill("#pull-name", "onhost")
    page.click("#pull-form button[type=submit]")
    # The page reloads once the pull it watched succeeded: wait for the reloaded table.
    expect(page.locator(".library-table")).to_contain_text("onhost-latest.gguf", timeout=WAIT * MS)
    page.wait_for_load_state()
    assert (models_dir / "onhost-latest.gguf").is_file()
    page.evaluate("document.getElementById('pull-machine').add(new Option('nowhere', 'nowhere'))")
    page.select_option("#pull-machine", "nowhere")
    page.fill("#pull-name", "onhost")
    page.click("#pull-form button[type=submit]")
    expect(page.locator("#pull-error")).to_contain_text("No worker runs on nowhere now", timeout=WAIT * MS)


def test_the_dashboard_shows_staff_a_running_pull_and_cancels_it(page, stack, registry, models_dir, tmp_path):
    handle, proxy = registry
    gguf = tiny_gguf(tmp_path / "d.gguf", n_floats=2**20)
    manifest = push_ollama_model(handle.url, "library/dashslow", "latest", gguf)
    size = manifest["layers"][0]["size"]
    proxy.hold_after(size // 2)
    page.goto("/models/")
    page.fill("#pull-name", "dashslow")
    page.click("#pull-form button[type=submit]")
    assert proxy.held.wait(WAIT)
    page.goto("/dashboard/")
    row = page.locator("#pulls .pull", has_text="dashslow:latest")
    expect(row.locator("progress")).to_have_attribute("value", str(size // 2), timeout=WAIT * MS)
    expect(row.locator(".pull-bytes")).to_contain_text(re.compile(r"of"))
    row.locator(".pull-cancel").click()
    pid = row.get_attribute("data-pull")
    assert wait_until(lambda: stack.redis.client.exists(redis_client.pull_cancel_key(pid)), timeout=WAIT)
    proxy.release()
    expect(row).to_contain_text("was cancelled", timeout=WAIT * MS)
    assert not store.partial_path(models_dir, manifest["layers"][0]["digest"]).exists()
