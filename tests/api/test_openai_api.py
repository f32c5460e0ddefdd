"""The OpenAI-compatible API, end to end: the official `openai` client -> daphne -> Celery worker
-> llama.cpp (bundled model), plus API keys, /metrics after real traffic, and disconnects."""

from __future__ import annotations

import json
import threading

import httpx
import openai
import pytest
from django.conf import settings
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from accounts.models import ApiKey
from api import checks
from api.openai import wire as openai_wire
from inference import redis_client
from inference.dispatch import arrivals
from inference.metrics import PREFIX
from inference.models import Generation
from tests.support import METRICS_AUTH, wait_until

pytestmark = [pytest.mark.integration]

# A prompt the bundled base model keeps answering for a while (it lists numbers).
LONG_PROMPT = "Count from one to three hundred, writing every number in words, separated by commas."
COUNTING = "1, 2, 3, 4, 5, 6, 7,"
MODEL = settings.HOMEAI_MODEL_PATH.name


def _post(live_server_url: str, path: str, key: str | None, body, timeout: float = 180, **headers) -> httpx.Response:
    if key:
        headers["Authorization"] = f"Bearer {key}"
    content = body if isinstance(body, (str, bytes)) else json.dumps(body)
    headers.setdefault("Content-Type", "application/json")
    return httpx.post(live_server_url + path, content=content, headers=headers, timeout=timeout)


def test_the_key_from_the_command_lists_the_configured_model(api, api_key):
    assert api_key.startswith("hai_") and len(api_key) > 40
    stored = ApiKey.objects.get()
    assert stored.name == "tests" and stored.key_hash != api_key and api_key.startswith(stored.prefix)
    assert [m.id for m in api.models.list().data][0] == MODEL
    assert api.models.retrieve(MODEL).id == MODEL


def test_it_streams_a_chat_completion_with_usage_and_timings_last(api):
    stream = api.chat.completions.create(
        model=MODEL,
        messages=[{"role": "system", "content": "You are terse."}, {"role": "user", "content": LONG_PROMPT}],
        max_tokens=5,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)

    assert chunks[0].choices[0].delta.role == "assistant"
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    assert all(c.object == "chat.completion.chunk" and c.model == MODEL for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == ["length"]
    assert all(c.usage is None for c in chunks[:-1])
    last = chunks[-1]
    assert last.choices == []
    assert last.usage.completion_tokens == 5
    assert last.usage.prompt_tokens > 10
    assert last.usage.total_tokens == last.usage.prompt_tokens + 5
    timings = last.model_extra["timings"]
    assert timings["predicted_n"] == 5 and timings["prompt_n"] + timings["cache_n"] == last.usage.prompt_tokens
    assert timings["ttft_ms"] > 0 and timings["queue_ms"] >= 0 and timings["load_ms"] >= 0
    assert timings["prompt_ms"] > 0 and timings["prompt_per_second"] > 0 and timings["predicted_per_second"] > 0

    generation = Generation.objects.get(id=int(chunks[0].id.split("-")[1]))
    assert generation.status == "done" and generation.output_tokens == 5 and generation.finish_reason == "length"
    assert generation.client == "OpenAI"  # the User-Agent's product token
    assert generation.conversation.source == "api"
    assert generation.message.content == text


def test_it_answers_a_chat_completion_without_streaming_tagged_with_the_client(api):
    response = api.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": LONG_PROMPT}],
        max_completion_tokens=5,
        temperature=0,
        seed=7,
        extra_headers={"X-Client-Name": "Open WebUI"},
    )
    assert response.object == "chat.completion" and response.model == MODEL
    choice = response.choices[0]
    assert choice.finish_reason == "length" and choice.message.role == "assistant" and choice.message.content
    assert response.usage.completion_tokens == 5
    assert response.usage.total_tokens == response.usage.prompt_tokens + 5
    timings = response.model_extra["timings"]
    assert set(timings) >= {
        "prompt_n",
        "prompt_ms",
        "prompt_per_second",
        "predicted_n",
        "predicted_ms",
        "predicted_per_second",
        "cache_n",
        "queue_ms",
        "load_ms",
        "ttft_ms",
    }
    generation = Generation.objects.get(id=int(response.id.split("-")[1]))
    assert generation.client == "Open WebUI" and generation.sampling["seed"] == 7
    assert generation.message.content == choice.message.content


def test_it_streams_a_completion_of_a_raw_prompt(api):
    chunks = list(
        api.completions.create(
            model=MODEL,
            prompt=COUNTING,
            max_tokens=6,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert all(c.object == "text_completion" and c.id.startswith("cmpl-") for c in chunks)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text.strip()
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["length"]
    assert chunks[-1].usage.completion_tokens == 6
    generation = Generation.objects.get(id=int(chunks[0].id.split("-")[1]))
    assert generation.raw_prompt and generation.message.content == text


def test_a_stop_sequence_ends_the_answer_just_before_it(api):
    free = api.completions.create(model=MODEL, prompt=COUNTING, max_tokens=12, temperature=0)
    text = free.choices[0].text
    words = text.split()
    assert len(words) >= 3, text
    stop = words[2]  # something the answer is known to reach, a few tokens in
    expected = text[: text.index(stop)]

    stopped = api.completions.create(model=MODEL, prompt=COUNTING, max_tokens=12, temperature=0, stop=[stop])
    assert stopped.choices[0].finish_reason == "stop"
    assert stopped.choices[0].text == expected
    assert stopped.usage.completion_tokens < 12

    streamed = api.completions.create(
        model=MODEL, prompt=COUNTING, max_tokens=12, temperature=0, stop=stop, stream=True
    )
    chunks = list(streamed)
    assert "".join(c.choices[0].text for c in chunks) == expected
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_bad_key_gets_401_as_openai_sends_it(api, live_server_url):
    bad = openai.OpenAI(base_url=live_server_url + "/v1", api_key="hai_not-a-real-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        bad.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 401
    assert caught.value.body["code"] == "invalid_api_key" and "not valid" in caught.value.body["message"]

    missing = _post(live_server_url, "/v1/chat/completions", None, {"messages": []})
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert missing.json()["error"]["code"] == "missing_api_key"
    assert httpx.get(live_server_url + "/v1/models").status_code == 401


BAD_BODIES = [
    ("/v1/chat/completions", "{not json", 400, None, "invalid_json"),
    ("/v1/chat/completions", "[1, 2]", 400, None, "invalid_json"),
    ("/v1/chat/completions", {"model": MODEL}, 400, "messages", "invalid_type"),
    ("/v1/chat/completions", {"messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role", None),
    (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0},
        400,
        "max_tokens",
        None,
    ),
    (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": "5"},
        400,
        "max_tokens",
        None,
    ),
    (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"},
        400,
        "temperature",
        None,
    ),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "n": 3}, 400, "n", None),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}, 400, "stream", None),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "  "}]}, 400, "messages", "empty_message"),
    (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}], "model": "gpt-9"},
        404,
        "model",
        "model_not_found",
    ),
    ("/v1/completions", {"prompt": [1, 2, 3]}, 400, "prompt", None),
    ("/v1/completions", {"prompt": "hi", "stop": ["a", "b", "c", "d", "e"]}, 400, "stop", None),
]


@pytest.mark.parametrize(("path", "body", "status", "param", "code"), BAD_BODIES)
def test_a_bad_body_gets_an_openai_error_object(api, api_key, live_server_url, path, body, status, param, code):
    before = Generation.objects.count()
    response = _post(live_server_url, path, api_key, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["param"] == param
    if code:
        assert error["code"] == code
    assert error["message"].endswith(".") and "Traceback" not in error["message"]
    assert Generation.objects.count() == before  # nothing was queued


def _redis_commands_during(action) -> list[dict]:
    """The Redis commands every client sent while action() ran (Redis's MONITOR)."""
    r, end = redis_client.client(), "end-of-watch"
    seen, watching = [], threading.Event()

    def watch():
        with r.monitor() as monitor:
            watching.set()
            for command in monitor.listen():
                if end in command["command"]:
                    return
                seen.append(command)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert watching.wait(timeout=30)
    action()
    redis_client.client().echo(end)
    watcher.join(timeout=60)
    assert not watcher.is_alive()
    return seen


def test_a_request_is_announced_once_its_key_is_good_and_its_token_never_left_behind(api, api_key, live_server_url):
    """What lets an engine wait for questions sent together (dispatch/arrivals.py): a request is
    announced once its key is good; a refused one withdraws its token, an answered one's token
    is withdrawn once an engine has it."""
    key = arrivals.arriving_key()
    redis_client.client().delete(key)
    body = {"model": MODEL, "prompt": "Hello", "max_tokens": 2}

    def requests():
        assert _post(live_server_url, "/v1/completions", "sk-not-a-key", body).status_code == 401
        assert _post(live_server_url, "/v1/completions", api_key, {**body, "max_tokens": -5}).status_code == 400
        assert _post(live_server_url, "/v1/completions", api_key, body).status_code == 200

    commands = [c["command"].split() for c in _redis_commands_during(requests)]
    added = [words[-1] for words in commands if words[:2] == ["ZADD", key]]
    removed = [words[-1] for words in commands if words[:2] == ["ZREM", key]]
    assert len(added) == 2  # the refused body and the answer, not the bad key
    assert removed == added
    assert redis_client.client().zcard(key) == 0


def test_the_openai_client_raises_bad_request_for_a_bad_body(api):
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], top_p=7)
    assert caught.value.status_code == 400
    assert (
        caught.value.body["param"] == "top_p"
        and "top_p must be a number from 0.0 to 1.0" in caught.value.body["message"]
    )


def test_a_client_that_disconnects_mid_stream_cancels_its_answer_and_frees_the_engine(api):
    stream = api.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": LONG_PROMPT}],
        max_tokens=2000,
        stream=True,
        extra_body={"ignore_eos": True},  # still writing when the client goes, whatever the model says
    )
    gid = None
    for chunk in stream:
        gid = int(chunk.id.split("-")[1])
        if chunk.choices and chunk.choices[0].delta.content:
            break  # the first token
    stream.close()

    assert wait_until(lambda: Generation.objects.get(id=gid).status == "cancelled", timeout=60)
    generation = Generation.objects.get(id=gid)
    assert generation.finish_reason == "cancelled" and 1 <= generation.output_tokens < 2000

    after = api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello"}], max_tokens=3)
    assert after.choices[0].finish_reason in ("stop", "length")
    assert Generation.objects.get(id=int(after.id.split("-")[1])).status == "done"


def test_a_client_that_gives_up_waiting_for_a_whole_answer_cancels_it_too(api, api_key, live_server_url):
    # ignore_eos: the answer is still being written when the client gives up, whatever the model says.
    body = {"messages": [{"role": "user", "content": LONG_PROMPT}], "max_tokens": 2000, "ignore_eos": True}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            live_server_url + "/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=httpx.Timeout(10, read=3),
        )
    generation = Generation.objects.latest("id")
    assert wait_until(lambda: Generation.objects.get(id=generation.id).status == "cancelled", timeout=60)


def test_a_prompt_longer_than_the_context_is_a_400_the_person_can_act_on(api, settings):
    # Digits are one token each: far more tokens than the context holds, fewer characters than the limit.
    words = " ".join(str(10_000 + i) for i in range(5000))[: settings.HOMEAI_MAX_PROMPT_CHARS]
    with pytest.raises(openai.BadRequestError) as caught:
        api.completions.create(model=MODEL, prompt=words, max_tokens=4)
    assert caught.value.body["code"] == "context_length_exceeded"
    assert "context holds" in caught.value.body["message"]
    stream = api.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": words}], max_tokens=4, stream=True
    )
    with pytest.raises(openai.APIError, match="context holds"):
        list(stream)


def test_metrics_count_every_finished_request_across_web_and_worker(api, live_server_url):

    r = redis_client.client()
    stale = list(r.scan_iter(match=PREFIX + "*", count=500))
    if stale:
        r.delete(*stale)

    messages = [{"role": "user", "content": "Name a colour."}]
    api.chat.completions.create(model=MODEL, messages=messages, max_tokens=3)
    list(api.chat.completions.create(model=MODEL, messages=messages, max_tokens=3, stream=True))
    api.completions.create(model=MODEL, prompt=COUNTING, max_tokens=3)

    def scrape() -> dict:
        response = httpx.get(live_server_url + "/metrics", headers=METRICS_AUTH, timeout=30)
        assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain")
        samples = {}
        for family in text_string_to_metric_families(response.text):
            for s in family.samples:
                if s.labels.get("model") == MODEL:
                    samples[(s.name, s.labels.get("outcome"))] = s.value
        return samples

    # The worker counts an answer just after it sent the answer's end, so the client need not
    # wait for that: the last one may be counted a moment after its client had it.
    wait_until(lambda: scrape().get(("homeai_requests_total", "done")) == 3, timeout=60)
    samples = scrape()
    finished = Generation.objects.filter(status="done")
    assert finished.count() == 3
    assert samples[("homeai_time_to_first_token_seconds_count", None)] == 3
    assert samples[("homeai_e2e_request_latency_seconds_count", None)] == 3
    assert samples[("homeai_requests_total", "done")] == 3
    assert samples[("homeai_generation_tokens_total", None)] == sum(g.output_tokens for g in finished)
    assert samples[("homeai_prompt_tokens_total", None)] == sum(g.prompt_tokens for g in finished)
    assert samples[("homeai_inter_token_latency_seconds_count", None)] == sum(len(g.itl_ms) for g in finished)
    assert samples[("homeai_time_to_first_token_seconds_sum", None)] == pytest.approx(
        sum(g.ttft_ms for g in finished) / 1000, rel=1e-6
    )
    assert samples[("homeai_workers", None)] >= 1
    assert ("homeai_requests_running", None) in samples


def test_the_keys_page_shows_only_your_own_keys_and_revoking_locks_the_key_out(
    api, make_user, live_server_url, api_key
):
    ada = ApiKey.objects.get().user
    bob = make_user("bob")
    bob_key = ApiKey.objects.create(user=bob, name="bob's script", prefix="hai_bobbobbo", key_hash="0" * 64)

    assert Client().get("/settings/api-keys/").status_code == 302  # login first

    page = Client()
    page.force_login(ada)
    created = page.post("/settings/api-keys/", {"name": "Laptop editor"})
    assert created.status_code == 200
    html = created.content.decode()
    new_key = html.split('id="new-key" type="text" readonly value="')[1].split('"')[0]
    assert new_key.startswith("hai_") and ApiKey.objects.filter(user=ada).count() == 2
    assert "Laptop editor" in html and "bob&#x27;s script" not in html and "bob's script" not in html

    listed = page.get("/settings/api-keys/").content.decode()
    assert "Laptop editor" in listed and "tests" in listed and new_key not in listed  # shown once only
    assert "bob" not in listed

    assert page.post(f"/settings/api-keys/{bob_key.id}/revoke/").status_code == 404
    assert ApiKey.objects.get(id=bob_key.id).revoked_at is None

    client = openai.OpenAI(base_url=live_server_url + "/v1", api_key=new_key, max_retries=0)
    assert client.models.list().data[0].id == MODEL
    key = ApiKey.objects.get(user=ada, name="Laptop editor")
    assert key.last_used_at is not None
    assert page.post(f"/settings/api-keys/{key.id}/revoke/").status_code == 302
    with pytest.raises(openai.AuthenticationError):
        client.models.list()
    assert "revoked" in page.get("/settings/api-keys/").content.decode()


def test_the_client_tag_comes_from_the_header_then_the_user_agent_then_api():
    assert checks.client_name({"X-Client-Name": " Open WebUI ", "User-Agent": "curl/8"}) == "Open WebUI"
    assert checks.client_name({"User-Agent": "OpenAI/Python 3.57.0"}) == "OpenAI"
    assert checks.client_name({"User-Agent": "python-httpx/0.28.1"}) == "python-httpx"
    assert checks.client_name({}) == "api"
    assert checks.client_name({"X-Client-Name": "chat"}) == "api-chat"  # "chat" means the chat page
    assert len(checks.client_name({"X-Client-Name": "x" * 100})) == 32


def test_timings_use_llama_cpp_names_and_meanings():
    metrics = {
        "prompt_tokens": 100,
        "cached_tokens": 40,
        "prefill_ms": 200.0,
        "prompt_tps": 300.0,
        "output_tokens": 11,
        "first_token_ms": 10.0,
        "decode_ms": 100.0,
        "queue_ms": 1.0,
        "load_ms": 0.0,
        "ttft_ms": 211.0,
    }
    t = openai_wire.timings(metrics)
    assert (t["prompt_n"], t["cache_n"], t["prompt_ms"], t["prompt_per_second"]) == (60, 40, 200.0, 300.0)
    assert (t["predicted_n"], t["predicted_ms"], t["predicted_per_second"]) == (11, 110.0, 100.0)
    assert (t["queue_ms"], t["load_ms"], t["ttft_ms"]) == (1.0, 0.0, 211.0)


def test_with_no_worker_running_a_request_gets_503_at_once(api, api_key, live_server_url, worker_process):
    worker_process.stop()  # a clean stop removes its heartbeat; the next test's fixture starts it again
    response = _post(live_server_url, "/v1/completions", api_key, {"prompt": "Hello", "max_tokens": 2})
    assert response.status_code == 503 and response.headers["Retry-After"]
    # At once: answered from the heartbeats, not after waiting for a worker to take the task (a
    # generous bound: the refusal takes milliseconds, the wait it replaces minutes).
    assert response.elapsed.total_seconds() < 10, response.elapsed
    error = response.json()["error"]
    assert (
        error["type"] == "server_error" and error["code"] == "no_worker" and "No worker is running" in error["message"]
    )
    assert not Generation.objects.exists()
