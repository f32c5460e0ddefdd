"""The latency dashboard: pages, privacy, exports, the live socket, and the page in a real browser."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.utils import timezone
from playwright.sync_api import sync_playwright

from dashboard.latency import figures, payload, stats
from dashboard.latency.consumers import DashboardConsumer
from dashboard.latency.views import csv_value
from inference import probe, redis_client
from inference.models import EmbeddingBatch, Generation
from tests.factories import finished_generation
from tests.support import launch_chromium, session_cookie, wait_until

ROOT = Path(__file__).resolve().parents[3]
SECRET = "zebra-sentinel-7731"  # text of bob's that alice must never see


@pytest.fixture
def people(db):
    User = get_user_model()
    alice = User.objects.create_user("alice", password="pw-alice-123")
    bob = User.objects.create_user("bob", password="pw-bob-123")
    admin = User.objects.create_user("admin", password="pw-admin-123", is_staff=True)
    return {"alice": alice, "bob": bob, "admin": admin}


@pytest.fixture
def stored(people):
    """Two answers of alice's and one of bob's carrying the sentinel in prompt, answer and token text."""
    own = [
        finished_generation(people["alice"], prompt=f"alice asks question {i}", answer=f"alice gets answer {i}")
        for i in range(2)
    ]
    secret = finished_generation(people["bob"], prompt=f"bob's {SECRET} prompt", answer=f"{SECRET} answer text")
    return {"own": own, "secret": secret}


@pytest.fixture
def as_user(client, people):
    def login(name: str):
        client.force_login(people[name])
        return client

    return login


def body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


PAGES = ("/dashboard/", "/dashboard/data.json", "/dashboard/export.csv", "/dashboard/export.json")


@pytest.mark.parametrize("url", PAGES)
def test_every_dashboard_page_needs_a_login(client, people, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_dashboard_page_embeds_every_chart_with_data(as_user, stored):
    response = as_user("alice").get("/dashboard/")
    assert response.status_code == 200
    page = body(response)
    assert "vendor/plotly/plotly.min.js" in page and "js/dashboard.js" in page
    data = response.context["payload"]
    for name in ("timeline", "throughput", "ttft", "itl", "tokens", "why"):
        assert any(trace.get("x") for trace in data["figures"][name]["data"]), name
    ids = {g.id for g in stored["own"]} | {stored["secret"].id}
    assert {r["id"] for r in data["rows"]} == ids  # everyone's metrics
    assert data["summary"]["done"] == 3


def test_every_chart_on_the_page_has_its_registered_figure_and_no_figure_lacks_a_chart(as_user, stored):
    response = as_user("alice").get("/dashboard/")
    charts = re.findall(r'data-chart="([^"]+)"', body(response))
    assert sorted(charts) == sorted(figures.FIGURES)
    assert set(response.context["payload"]["figures"]) == set(figures.FIGURES)


def test_the_page_gives_its_script_the_timeline_config_instead_of_mirrored_constants(as_user, stored):
    page = body(as_user("alice").get("/dashboard/"))
    found = re.search(r'<script id="dashboard-config" type="application/json">(.*?)</script>', page)
    config = json.loads(found.group(1))
    assert config["timeline"] == figures.timeline_config()
    assert config["active"] == ["queued", "running"]
    for phase in stats.PHASES:  # the timeline's legend, from the same list
        assert f'<span class="dot seg-{phase}"></span>' in page


def test_the_detail_page_draws_its_token_chart_from_the_figure_registry(as_user, stored):
    own = stored["own"][0]
    page = body(as_user("alice").get(f"/dashboard/requests/{own.id}/"))
    assert 'data-chart="tokens"' in page
    found = re.search(r'<script id="chart-figures" type="application/json">(.*?)</script>', page)
    tokens = json.loads(found.group(1))["tokens"]
    assert len(tokens["data"][0]["y"]) == len(own.token_times_ms) - 1  # a gap before every token but the first


def test_an_empty_dashboard_renders_and_says_what_is_missing(as_user):
    response = as_user("alice").get("/dashboard/")
    assert response.status_code == 200
    data = response.context["payload"]
    assert data["rows"] == [] and data["selected"] is None and data["fit"] is None
    assert any("No finished answers" in s for s in data["why"]["sentences"])
    assert as_user("alice").get("/dashboard/data.json").status_code == 200


def test_embeddings_show_in_their_own_panel_each_persons_own_and_all_to_staff(as_user, people):
    model = "all-MiniLM-L6-v2.Q8_0.gguf"
    for who, inputs, e2e_ms in (("alice", 3, 40.0), ("alice", 1, 20.0), ("bob", 32, 900.0)):
        EmbeddingBatch.objects.create(
            user=people[who], model_name=model, status="done", inputs=inputs, prompt_tokens=10 * inputs,
            compute_ms=5.0 * inputs, e2e_ms=e2e_ms, t_arrive_ns=time.time_ns(),
        )  # fmt: skip
    EmbeddingBatch.objects.create(user=people["bob"], model_name=model, status="error", inputs=2, t_arrive_ns=1)

    alices = as_user("alice").get("/dashboard/")
    (own,) = alices.context["embeddings"]
    assert own == {
        "model": model, "requests": 2, "done": 2, "inputs": 4, "tokens": 40, "e2e_p50_ms": 30.0, "tokens_per_s": 2000.0
    }  # fmt: skip
    assert 'id="embeddings-table"' in body(alices)
    (everyone,) = as_user("admin").get("/dashboard/").context["embeddings"]
    assert (everyone["requests"], everyone["done"], everyone["inputs"], everyone["e2e_p50_ms"]) == (4, 3, 36, 40.0)
    assert 'id="embeddings-table"' not in body(as_user("alice").get("/dashboard/?range=1h&model=other.gguf"))


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("redis://192.168.1.20:6379/0", "192.168.1.20"),
        ("redis://nas.lan:6379/0", "nas.lan"),
        ("redis://redis:6379/0", "redis"),
        ("redis://:s3cret@192.168.1.20:6379/0", None),
        ("redis://192.168.1.20:6379/0?password=s3cret", None),
        ("redis://127.0.0.1:6379/0", None),
        ("redis://localhost:6379/0", None),
        ("redis://[::1]:6379/0", None),
        ("unix:///run/redis/redis.sock", None),
    ],
)
def test_staff_are_warned_when_redis_asks_no_password_on_another_host(as_user, people, settings, url, host):
    """Whoever reaches a Redis without a password reads every chat as it streams and hands the
    workers tasks: staff are told on the dashboard, with what to set; no one else is."""
    redis_client.client()  # the page's own reads stay on the test Redis (the client is made once)
    # Signing in clears the throttle's counts in Redis: both sign in before the URL changes.
    staff = as_user("admin")
    member = Client()
    member.force_login(people["alice"])
    settings.REDIS_URL = url
    page = body(staff.get("/dashboard/"))
    warned = re.search(r'<div class="form-alert" role="alert" id="redis-warning">\s*<p>(.*?)</p>', page, re.S)
    if host is None:
        assert warned is None, warned
    else:
        assert warned, page[:2000]
        sentence = warned[1]
        assert sentence.startswith(f"Redis at {host} asks for no password, so anyone on the network")
        assert "REDIS_PASSWORD" in sentence and "REDIS_URL" in sentence
    assert "redis-warning" not in body(member.get("/dashboard/"))


def test_a_user_sees_no_one_elses_text_on_dashboard_detail_or_export(as_user, stored):
    client = as_user("alice")
    secret_id = stored["secret"].id
    urls = [*PAGES[:1], *PAGES[1:], f"/dashboard/requests/{secret_id}/", f"/dashboard/data.json?selected={secret_id}"]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        text = body(response)
        assert SECRET not in text, url
        assert "bob" in text or url.endswith(".csv") or url.endswith(".json"), url  # his metrics are there
    detail = body(client.get(f"/dashboard/requests/{secret_id}/"))
    assert "only they and the admins can read" in detail
    # Her own text she does see.
    own = stored["own"][0]
    assert "alice asks question 0" in body(client.get(f"/dashboard/requests/{own.id}/"))
    assert "alice asks question 0" in body(client.get("/dashboard/export.json"))
    assert "alice asks question 0" in body(client.get("/dashboard/"))


def test_an_admin_sees_everyones_text(as_user, stored):
    client = as_user("admin")
    for url in ("/dashboard/", f"/dashboard/requests/{stored['secret'].id}/", *PAGES[2:]):
        assert SECRET in body(client.get(url)), url


def test_the_json_export_round_trips_the_stored_metrics(as_user, stored):
    exported = json.loads(body(as_user("admin").get("/dashboard/export.json")))
    assert exported["fields"] == list(payload.EXPORT_FIELDS)
    by_id = {g["id"]: g for g in exported["generations"]}
    assert set(by_id) == {g.id for g in Generation.objects.all()}
    for g in Generation.objects.select_related("user", "message"):
        got = by_id[g.id]
        for name in payload.METRIC_FIELDS:
            assert got[name] == getattr(g, name), name
        assert got["token_times_ms"] == g.token_times_ms and got["itl_ms"] == g.itl_ms
        assert got["t_arrive_ns"] == g.t_arrive_ns
        assert datetime.fromisoformat(got["created_at"]) == g.created_at
        assert (got["user_id"], got["username"], got["status"]) == (g.user_id, g.user.username, g.status)
        assert got["answer"] == g.message.content


def _from_csv(name: str, cell: str):
    """Undo csv_value for one column, using the model's field types."""
    if cell == "":
        return None
    if name in ("token_times_ms", "itl_ms"):
        return json.loads(cell)
    if name in ("cold", "text_visible"):
        return cell == "true"
    if name in ("created_at", "finished_at"):
        return datetime.fromisoformat(cell)
    if name in ("id", "user_id", "t_arrive_ns", "prompt_tokens", "cached_tokens", "output_tokens"):
        return int(cell)
    if name.endswith("_ms") or name.endswith("_tps"):
        return float(cell)
    return cell


def test_the_csv_export_round_trips_the_stored_metrics(as_user, stored):
    response = as_user("alice").get("/dashboard/export.csv")
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    reader = csv.DictReader(io.StringIO(body(response)))
    assert tuple(reader.fieldnames) == payload.EXPORT_FIELDS
    got = {int(r["id"]): {k: _from_csv(k, v) for k, v in r.items()} for r in reader}
    for g in Generation.objects.all():
        row = got[g.id]
        for name in (*payload.METRIC_FIELDS, "token_times_ms", "itl_ms", "t_arrive_ns", "user_id"):
            want = getattr(g, name)
            assert row[name] == (None if want == "" else want), name
        assert row["created_at"] == g.created_at
        assert row["text_visible"] == (g.user_id == stored["own"][0].user_id)


def test_csv_cells_are_exact_and_unambiguous():
    assert csv_value(None) == ""
    assert csv_value(True) == "true"
    assert float(csv_value(0.1 + 0.2)) == 0.1 + 0.2
    assert json.loads(csv_value([1.5, 2.25])) == [1.5, 2.25]
    assert float(csv_value(-1.5)) == -1.5  # numbers stay numbers


def test_csv_text_cells_never_run_as_spreadsheet_formulas():
    for text in ('=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tx"):
        assert csv_value(text) == "'" + text
    assert csv_value("plain client") == "plain client"


def test_the_time_range_and_model_filters_narrow_every_view(as_user, people):
    recent = finished_generation(people["alice"], prompt="recent", answer="a")
    old = finished_generation(people["alice"], prompt="old", answer="b", t_arrive=time.time() - 7200)
    Generation.objects.filter(id=old.id).update(created_at=timezone.now() - timedelta(hours=2))
    other = finished_generation(people["alice"], prompt="other model", answer="c", model_name="llama.gguf")
    client = as_user("alice")

    def ids(url):
        return {g["id"] for g in json.loads(body(client.get(url)))["generations"]}

    assert ids("/dashboard/export.json?range=1h") == {recent.id, other.id}
    assert ids("/dashboard/export.json?range=all") == {recent.id, old.id, other.id}
    assert ids("/dashboard/export.json?range=all&model=llama.gguf") == {other.id}
    rows = json.loads(body(client.get("/dashboard/data.json?range=1h&model=llama.gguf")))["rows"]
    assert [r["id"] for r in rows] == [other.id]
    assert ids("/dashboard/export.json?range=bogus") == {recent.id, old.id, other.id}  # falls back to 24 h
    page = body(client.get("/dashboard/?range=1h&model=llama.gguf"))
    assert "export.csv?range=1h&amp;model=llama.gguf" in page
    # The model filter offers each model once, however many answers it wrote.
    models = re.search(r'<select id="model-filter".*?</select>', page, re.DOTALL)[0]
    assert sorted(re.findall(r'<option value="([^"]+)"', models)) == sorted({"llama.gguf", recent.model_name})


def test_the_detail_page_lists_every_token_with_its_time_gap_and_text(as_user, stored):
    own = stored["own"][1]
    response = as_user("alice").get(f"/dashboard/requests/{own.id}/")
    page = body(response)
    tokens = response.context["tokens"]
    assert [t["t_ms"] for t in tokens] == own.token_times_ms
    assert [t["gap_ms"] for t in tokens[1:]] == pytest.approx(own.itl_ms)
    assert [t["text"] for t in tokens][:4] == ["alice", "gets", "answer", "1"]
    assert "431.5" in page and "412.3" in page  # browser and server TTFT side by side
    assert f"Request #{own.id}" in page
    assert as_user("alice").get("/dashboard/requests/999999/").status_code == 404


def test_the_why_panel_uses_the_workers_model_and_the_probe(as_user, stored, monkeypatch):
    beat = {
        "worker": "box:1",
        "model": "gemma-3-270m-q4_k_m.gguf",
        "loaded": True,
        "running": 0,
        "waiting": 0,
        "model_info": {
            "name": "gemma-3-270m-q4_k_m.gguf",
            "n_layers": 18,
            "size_bytes": 250_000_000,
            "n_params": 300_000_000,
        },
        "sizing": {"mode": "stall", "n_decode": 3, "chunk": 20},
    }
    monkeypatch.setattr(payload.registry, "live_workers", lambda: {"box:1": beat})
    box = {"bandwidth_gbs": 25.0, "gflops": 150.0, "layer_ms": 0.05}
    monkeypatch.setattr(payload.probe, "read_all", lambda: {"box": box})
    data = as_user("alice").get("/dashboard/").context["payload"]
    why = data["why"]
    # The model's layers as the worker's engine reports them, their cost from its layer probe.
    assert (why["layers"], why["layer_ms"]) == (18, 0.05)
    assert any("18 layers" in sentence for sentence in why["sentences"])
    assert why["decode_ceiling_tps"] == pytest.approx(100.0)
    assert why["prefill_ceiling_tps"] == pytest.approx(250.0)
    g = stored["own"][0]
    assert why["decode_pct"] == pytest.approx(100 * g.output_tps / 100.0)
    assert data["system"]["state"] == "warm"
    assert data["system"]["sizing"] == beat["sizing"]
    assert data["system"]["sizing_text"].startswith("Policy chunked: steps aim at")


# --- the live socket --------------------------------------------------------------------------------


def _receive_until(communicator, kind: str, timeout: float = 5) -> dict:
    async def run():
        deadline = time.monotonic() + timeout
        while True:
            frame = await communicator.receive_json_from(timeout=max(deadline - time.monotonic(), 0.01))
            if frame["type"] == kind:
                return frame

    return run


def test_the_dashboard_socket_refuses_anonymous_visitors():

    async def run():
        communicator = WebsocketCommunicator(DashboardConsumer.as_asgi(), "/ws/dashboard/")
        communicator.scope["user"] = AnonymousUser()
        connected, code = await communicator.connect()
        await communicator.disconnect()
        return connected, code

    assert async_to_sync(run)() == (False, 4401)


def test_the_dashboard_socket_forwards_the_feed_and_pushes_system_status(people):
    event = {"type": "request.update", "generation": 41, "phase": "prefill", "t": 1.0, "t_arrive": 0.5}

    async def run():
        communicator = WebsocketCommunicator(DashboardConsumer.as_asgi(), "/ws/dashboard/")
        communicator.scope["user"] = people["alice"]
        connected, _ = await communicator.connect()
        assert connected
        status = await _receive_until(communicator, "system.status")()
        await get_channel_layer().group_send("dashboard", {"type": "dashboard.relay", "events": [event]})
        forwarded = await _receive_until(communicator, "request.update")()
        await communicator.send_to(text_data="anything")  # ignored, the socket stays open
        await communicator.disconnect()
        return status, forwarded

    status, forwarded = async_to_sync(run)()
    assert forwarded == event
    assert {"running", "waiting", "cpu_percent", "ram_total_bytes", "state", "model"} <= set(status)


# --- in the browser, with the real worker ----------------------------------------------------------

CHARTS = ("timeline", "throughput", "ttft", "itl", "tokens", "steps", "why")


@pytest.fixture
def browser_context(live_server_url, monkeypatch):

    # Playwright's sync API keeps an event loop in this thread; the test's ORM calls are blocking.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = launch_chromium(p)

        def open_context(user, **options):
            options.setdefault("viewport", {"width": 1400, "height": 1000})
            context = browser.new_context(base_url=live_server_url, **options)
            host = live_server_url.split("//", 1)[1].split(":")[0]
            context.add_cookies([{"name": "sessionid", "value": session_cookie(user), "domain": host, "path": "/"}])
            return context

        yield open_context
        browser.close()


def _chart_points(page, name: str) -> int:
    return page.evaluate(
        """name => {
            const div = document.querySelector(`[data-chart="${name}"]`);
            if (!div || !div.data) return 0;
            return div.data.reduce((n, t) => n + (Array.isArray(t.x) ? t.x.filter(v => v !== null).length : 0), 0);
        }""",
        name,
    )


def _chart_ids(page, name: str) -> list:
    return page.evaluate(
        """name => document.querySelector(`[data-chart="${name}"]`).data
            .flatMap(t => Array.isArray(t.customdata) ? t.customdata.flat() : [])""",
        name,
    )


def _chat_a_little(connect, user, prompts) -> list[int]:
    sock = connect(user)
    ids = []
    for text in prompts:
        events = sock.chat(text, max_tokens=12)
        done = events[-1]
        assert done["type"] == "generation.done", done
        ids.append(done["generation"])
    return ids


@pytest.mark.integration
@pytest.mark.browser
def test_the_dashboard_draws_every_chart_and_grows_live_as_someone_chats(browser_context, connect, make_user, worker):
    alice, bob = make_user("alice"), make_user("bob")
    prompts = ["Hi.", "Name three colours of the sea, please, and say why each appears.", "What is a tide?"]
    asked = _chat_a_little(connect, alice, prompts)
    assert wait_until(lambda: Generation.objects.filter(status="done").count() == 3, timeout=30)

    page = browser_context(bob).new_page()
    page.set_default_timeout(30_000)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" and "HomeAI" in msg.text else None)
    page.goto("/dashboard/")
    page.wait_for_function("() => document.querySelector('[data-chart=\"timeline\"]').data")
    for name in CHARTS:
        assert _chart_points(page, name) > 0, f"chart {name} has no data"
    # Her three rows (an earlier test's answer still ending on the worker may come in live too).
    shown = page.eval_on_selector_all("#requests-body tr", "trs => trs.map(tr => Number(tr.dataset.generation))")
    assert set(asked) <= set(shown)
    page.locator("#live-status[data-state=connected]").wait_for()
    # Bob sees alice's metrics but not her words.
    assert "sea" not in page.locator("#requests-body").inner_text()
    # The steps panel says how the default policy treats a long prompt, from the worker's numbers.
    page.wait_for_function("() => document.getElementById('steps-sizing').textContent.includes('Policy chunked')")
    assert "× the" in page.locator("#steps-sizing").inner_text()  # the stall target, with the measured step

    timeline_before = len(set(_chart_ids(page, "timeline")))
    throughput_before = _chart_points(page, "throughput")
    steps_before = page.evaluate("document.querySelector('[data-chart=\"steps\"]').data[0].x.length")
    [new_id] = _chat_a_little(connect, alice, ["Tell me about the moon."])
    page.wait_for_function(
        "id => document.querySelector('[data-chart=\"timeline\"]').data.some(t => (t.customdata || []).includes(id))",
        arg=new_id,
        timeout=30_000,
    )
    page.wait_for_function(
        "id => document.querySelector('[data-chart=\"throughput\"]').data.some(t => (t.customdata || []).includes(id))",
        arg=new_id,
        timeout=30_000,
    )
    assert len(set(_chart_ids(page, "timeline"))) == timeline_before + 1
    page.wait_for_function(  # the engine's steps came in live (batched once a second)
        "n => document.querySelector('[data-chart=\"steps\"]').data[0].x.length > n", arg=steps_before
    )
    assert _chart_points(page, "throughput") > throughput_before
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # no reload happened
    # The request's own page draws its token chart the same way.
    page.goto(f"/dashboard/requests/{new_id}/")
    page.wait_for_function("() => document.querySelector('[data-chart=\"tokens\"]').data")
    assert _chart_points(page, "tokens") > 0
    assert errors == []

    # The exports work through the real ASGI server too, and keep alice's words from bob.
    exported = page.request.get("/dashboard/export.csv?range=1h")
    assert exported.ok
    lines = list(csv.DictReader(io.StringIO(exported.text())))
    assert {int(r["id"]) for r in lines} == set(Generation.objects.values_list("id", flat=True))
    assert all(r["text_visible"] == "false" and r["prompt"] == "" for r in lines)
    assert "moon" not in exported.text() and "moon" not in page.request.get("/dashboard/export.json").text()


@pytest.mark.integration
@pytest.mark.browser
def test_staff_switch_the_scheduling_policy_from_the_dashboard(browser_context, make_user, worker, settled):

    admin = make_user("root")
    admin.is_staff = True
    admin.save()
    page = browser_context(admin).new_page()
    page.set_default_timeout(30_000)
    page.goto("/dashboard/")
    page.locator("#live-status[data-state=connected]").wait_for()
    switch = page.locator("#policy-switch")
    try:
        switch.get_by_role("button", name="serial").click()
        # The button follows what the worker reports, so this waits for the real switch.
        switch.locator("button[value=serial][aria-pressed=true]").wait_for()
        assert switch.locator("button[aria-pressed=true]").count() == 1
        page.wait_for_function("() => document.getElementById('steps-sizing').textContent.includes('serial')")
        assert "Now serial" in page.locator("#policy-status").inner_text()
    finally:
        switch.get_by_role("button", name="chunked").click()
        switch.locator("button[value=chunked][aria-pressed=true]").wait_for()
        redis_client.client().delete(redis_client.POLICY_KEY)
    # The demo button starts the shared-machine scenario through the real stack.
    page.get_by_role("button", name="Try it: 3 chats + a document").click()
    page.wait_for_function("() => document.getElementById('policy-status').textContent.includes('start writing')")
    # Close it: a live dashboard rendering every token takes a third of a core here, and
    # llama.cpp's two threads on this 2-core box slow down many times when they must share.
    page.close()
    assert wait_until(lambda: Generation.objects.filter(client="demo", status="done").count() == 4, timeout=600)
    viewer = browser_context(make_user("bob")).new_page()
    viewer.goto("/dashboard/")
    assert viewer.locator("#steps-sizing").count() == 1 and viewer.locator("#policy-switch, #demo-form").count() == 0


# --- screenshots for the docs (run on purpose, not with the suite) -------------------------------------


@pytest.mark.integration
@pytest.mark.browser
@pytest.mark.skipif(not os.environ.get("HOMEAI_SCREENSHOTS"), reason="set HOMEAI_SCREENSHOTS=1 to refresh docs/")
def test_take_dashboard_screenshots_for_the_docs(browser_context, connect, make_user, worker):
    """HOMEAI_SCREENSHOTS=1 pytest tests/test_dashboard.py -k screenshots: writes docs/screenshots/."""
    admin = make_user("admin")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    sam = make_user("sam")

    _chat_a_little(connect, admin, ["Hello!"])  # pays the model load, so the long prompt below is warm
    # Two people at once, one with a long prompt, so the timeline shows overlap and interference.
    long_prompt = "Summarise this for me: " + " ".join(f"The harbour light number {i} blinks." for i in range(60))
    chats = [
        threading.Thread(
            target=_chat_a_little, args=(connect, admin, ["Write a haiku about rain.", "And one on snow."])
        ),
        threading.Thread(target=_chat_a_little, args=(connect, sam, [long_prompt, "And a short one?"])),
    ]
    for thread in chats:
        thread.start()
    for thread in chats:
        thread.join()
    _chat_a_little(connect, admin, ["What makes prompt reading faster than writing an answer?", "Thanks."])
    probe.ensure_cached()  # the worker does this at start; here the web and the worker share one host
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page = browser_context(admin, color_scheme=scheme, viewport={"width": 1440, "height": 1000}).new_page()
        page.goto("/dashboard/")
        page.wait_for_function("() => document.querySelector('[data-chart=\"steps\"]').data")
        page.locator("#live-status[data-state=connected]").wait_for()
        page.wait_for_timeout(2500)  # one system-status frame
        name = "dashboard.png" if scheme == "light" else "dashboard-dark.png"
        page.screenshot(path=str(out / name), full_page=True)
        if scheme == "light":
            latest = Generation.objects.filter(status="done").order_by("-id").first()
            page.goto(f"/dashboard/requests/{latest.id}/")
            page.wait_for_function("() => document.getElementById('chart-tokens').data")
            page.screenshot(path=str(out / "request-detail.png"), full_page=True)
            # The chat's own screenshots: tests/dashboard/chat/test_chat_actions_ui.py


def test_the_kv_cells_of_the_loaded_engines_are_summed_for_the_workers_table_and_the_strip():
    engines = [
        {"loaded": True, "cells": {"total": 32_768, "reserved": 7_100, "cached": 900, "per_request": 8192}},
        {"loaded": True, "cells": {"total": 8_192, "reserved": 0, "cached": 300, "per_request": 8192}},
        {"loaded": False, "cells": {"total": 4_096, "reserved": 0, "cached": 0, "per_request": 4096}},
    ]
    assert payload.cells_of(engines) == {"total": 40_960, "reserved": 7_100, "cached": 1_200}
    assert payload.cells_of([{"loaded": False}]) is None
