"""The compose app, checked from outside its containers: what `make image-test` runs after it has
built the image (scripts/image-test.sh, which sets the IMAGE_TEST_* variables below).

A NAS owner's first day and first upgrade, in order, against docker/compose.yaml run by
podman-compose with fresh data and models folders:

1. `up -d` (in two steps: see up()): the containers start (cold: the models are written into
   the models folder), the web and worker healthchecks pass and /healthz reports a worker: the
   start-to-healthy time. The containers run read-only, as the unprivileged account, under an
   init process. Redis asks for the password the first start generated (data/redis_password).
2. First-run setup: the one-time link from the web container's log creates the admin account.
3. A chat answer streams over the WebSocket, token by token, to its end.
4. An API key made on the settings page gets an answer from the OpenAI API.
5. /metrics answers with the bearer token only.
6. The healthchecks: each role's passes, a wrong or unknown role fails.
7. The worker's process killed (as by the OOM killer): compose's restart policy starts the
   container again and it turns healthy. The worker container killed (`podman kill`, a
   deliberate stop): /healthz turns 503 and says why, the web container stays healthy.
8. An upgrade: `down`, a rebuild with a new revision, `up -d`; every row of every table that
   matters (users, conversations, messages, answers, API keys, engine settings) is still there,
   the old API key and the signed-in session still work.

It is a script, not a pytest module: the steps depend on each other and on a built image, and
`make test` must not collect it. Standard library plus `websockets`.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from websockets.sync.client import connect as ws_connect

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker" / "compose.yaml"
PODMAN_COMPOSE = os.environ.get("IMAGE_TEST_PODMAN_COMPOSE", "podman-compose")
PORT = int(os.environ.get("IMAGE_TEST_PORT", "18080"))
WORK = Path(os.environ.get("IMAGE_TEST_WORK", "/var/tmp/homeai-image"))
TAG = os.environ.get("IMAGE_TEST_TAG", "homeai:0.1.0")
REBUILD = os.environ.get("IMAGE_TEST_REBUILD", "")
REVISION = os.environ.get("IMAGE_TEST_REVISION", "unknown")
KEEP = os.environ.get("IMAGE_TEST_KEEP") == "1"  # leave the app running at the end
BASE_URL = f"http://127.0.0.1:{PORT}"
# Not the compose file's name (homeai): a HomeAI installed on this host is left alone.
PROJECT = os.environ.get("IMAGE_TEST_PROJECT", "homeai-imagetest")
METRICS_TOKEN = "image-test-metrics-token"
USERNAME, PASSWORD = "nasadmin", "a long image-test passphrase 42"
APP_DIR = WORK / "app"  # the NAS's folders for /data and /models

ENV = dict(
    os.environ,
    HOMEAI_PORT=f"127.0.0.1:{PORT}",
    HOMEAI_DATA_PATH=str(APP_DIR / "data"),
    HOMEAI_MODELS_PATH=str(APP_DIR / "models"),
    HOMEAI_METRICS_TOKEN=METRICS_TOKEN,
    HOMEAI_SLOTS="2",
)

report: dict = {"timings_s": {}}


def log(message: str) -> None:
    print(f"image-test: {time.strftime('%H:%M:%S')} {message}", flush=True)


class CheckFailed(Exception):
    pass


def check(condition, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def run(*args: str, timeout: float = 600, ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(args, env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if ok and result.returncode != 0:
        output = result.stdout[-3000:] + result.stderr[-3000:]
        raise CheckFailed(f"{' '.join(args)} exited {result.returncode}:\n{output}")
    return result


def compose(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return run(PODMAN_COMPOSE, "-p", PROJECT, "-f", str(COMPOSE_FILE), *args, timeout=timeout)


def container(service: str) -> str:
    names = run(
        "podman",
        "ps",
        "-a",
        "--filter",
        f"label=com.docker.compose.project={PROJECT}",
        "--filter",
        f"label=com.docker.compose.service={service}",
        "--format",
        "{{.Names}}",
    ).stdout.split()
    check(len(names) == 1, f"expected one {service} container, found {names}")
    return names[0]


def inspect(name: str, template: str) -> str:
    return run("podman", "inspect", "--format", template, name).stdout.strip()


def healthcheck(service: str) -> int:
    return run("podman", "healthcheck", "run", container(service), ok=False, timeout=60).returncode


def wait_until(predicate, timeout: float, what: str, interval: float = 1.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# --- HTTP, as a browser and as an API client ----------------------------------------------------


class Browser:
    """Cookies, CSRF tokens and form posts, with the standard library."""

    def __init__(self) -> None:
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def cookie(self, name: str) -> str | None:
        return next((c.value for c in self.jar if c.name == name), None)

    def request(self, method: str, path: str, data: dict | None = None, headers: dict | None = None):
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(BASE_URL + path, data=body, method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", "application/x-www-form-urlencoded")
            req.add_header("Origin", BASE_URL)
            req.add_header("Referer", BASE_URL + path)
        try:
            with self.opener.open(req, timeout=60) as resp:
                return resp.status, resp.geturl(), resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.geturl(), exc.read().decode(errors="replace")

    def post_form(self, path: str, fields: dict):
        """GET the page (for its CSRF cookie), then POST the form to it."""
        status, _, _ = self.request("GET", path)
        check(status == 200, f"GET {path}: {status}")
        token = self.cookie("csrftoken")
        check(token, f"{path}: no CSRF cookie")
        return self.request("POST", path, dict(fields, csrfmiddlewaretoken=token))


def get_json(path: str, token: str | None = None, body: dict | None = None, timeout: float = 300):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(BASE_URL + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    except OSError:
        return 0, {}
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, {"raw": raw.decode(errors="replace")}


def healthz() -> tuple[int, dict]:
    return get_json("/healthz", timeout=10)


def service_healthy() -> bool:
    status, body = healthz()
    return status == 200 and body.get("workers", {}).get("count", 0) >= 1


def service_unavailable() -> dict | None:
    status, body = healthz()
    return body if status == 503 else None


# --- The steps ----------------------------------------------------------------------------------


def up() -> None:
    """`up -d`, in two steps. podman-compose (1.6) ties each container to every service it
    depends on with Podman's --requires, the one-shot migrate included, and Podman then never
    restarts a crashed web or worker container ("dependencies are not started": migrate has
    exited). So first Redis and migrate, then web and worker without that tie (--no-deps); the
    compose file's order (migrate done, Redis healthy) is kept by waiting here. Docker Compose
    has no such tie: there `up -d` is one step."""
    compose("up", "-d", "redis", "migrate")
    code = run("podman", "wait", container("migrate"), timeout=900).stdout.strip()
    check(code == "0", f"the migrate service exited {code}")
    compose("up", "-d", "--no-deps", "web", "worker")


def start(label: str) -> float:
    """Up, then until both healthchecks pass and /healthz reports a worker."""
    t0 = time.monotonic()
    up()
    wait_until(lambda: healthcheck("web") == 0, 300, "the web container's healthcheck", interval=2)
    wait_until(lambda: healthcheck("worker") == 0, 300, "the worker container's healthcheck", interval=2)
    wait_until(service_healthy, 300, "/healthz to report a worker")
    seconds = round(time.monotonic() - t0, 1)
    report["timings_s"][label] = seconds
    log(f"{label}: healthy {seconds} s after `up -d`")
    return seconds


def step_start_cold() -> None:
    compose("down", "--volumes", timeout=300)  # Redis's named volume too: a cold start is from nothing
    shutil.rmtree(APP_DIR, ignore_errors=True)
    (APP_DIR / "data").mkdir(parents=True)
    (APP_DIR / "models").mkdir(parents=True)
    start("cold start to healthy")
    check(any(APP_DIR.joinpath("models").glob("*.gguf")), "no model was written into the models folder")
    check(inspect(container("migrate"), "{{.State.ExitCode}}") == "0", "the migrate service did not succeed")

    # Hardened as the compose file says, and the servers run as the unprivileged account.
    for service, server in (("web", "daphne"), ("worker", "celery")):
        name = container(service)
        check(inspect(name, "{{.HostConfig.ReadonlyRootfs}}") == "true", f"{service}: root file system is writable")
        check(inspect(name, "{{.HostConfig.Init}}") == "true", f"{service}: no init process")
        denied = run("podman", "exec", name, "sh", "-c", "touch /app/x /opt/venv/x /etc/x", ok=False)
        check(denied.returncode != 0, f"{service}: could write into the image's files")
        procs = run(
            "podman",
            "exec",
            name,
            "sh",
            "-c",
            'for p in /proc/[0-9]*; do echo "$(stat -c %u "$p") $(tr "\\0" " " <"$p/cmdline")"; done',
        ).stdout
        servers = [line for line in procs.splitlines() if f"bin/{server} " in line]
        check(servers, f"{service}: no {server} process:\n{procs}")
        check(all(line.split()[0] == "1000" for line in servers), f"{service}: {server} not run as uid 1000:\n{procs}")
    # Redis asks for the password the app's first start wrote into the data folder: a client
    # without it is refused, and Redis's healthcheck (which reads the file) passes.
    password_file = APP_DIR / "data" / "redis_password"
    check(password_file.is_file() and (password_file.stat().st_mode & 0o777) == 0o600, "no private redis_password")
    refused = run("podman", "exec", container("redis"), "redis-cli", "ping", ok=False)
    check("NOAUTH" in refused.stdout + refused.stderr, f"Redis answers without its password: {refused.stdout!r}")
    check(healthcheck("redis") == 0, "the redis container's healthcheck fails")
    log("Redis asks for the generated password (data/redis_password)")
    # --format docker kept the image's HEALTHCHECK (the OCI format drops it).
    image_check = json.loads(run("podman", "image", "inspect", "--format", "{{json .Config.Healthcheck}}", TAG).stdout)
    check(image_check and "healthcheck" in image_check.get("Test", []), f"the image has no HEALTHCHECK: {image_check}")
    size = int(run("podman", "image", "inspect", "--format", "{{.Size}}", TAG).stdout)
    report["image_size_mb"] = round(size / 1e6)
    log(f"image {TAG}: {report['image_size_mb']} MB")


def step_setup(browser: Browser) -> None:
    logs = run("podman", "logs", container("web")).stdout + run("podman", "logs", container("web")).stderr
    links = re.findall(r"https?://\S+/setup/\?token=[\w.:-]+", logs)
    check(links, f"the web log has no setup link:\n{logs[-3000:]}")
    link = urllib.parse.urlsplit(links[-1])
    status, _, _ = browser.request("GET", "/setup/")
    check(status == 403, f"/setup/ without the token: {status}, expected 403")
    path = f"{link.path}?{link.query}"
    status, _, _ = browser.request("GET", path)
    check(status == 200, f"the setup link: {status}")
    fields = {"username": USERNAME, "password1": PASSWORD, "password2": PASSWORD}
    status, url, page = browser.request(
        "POST", "/setup/", dict(fields, csrfmiddlewaretoken=browser.cookie("csrftoken"))
    )
    check(status == 200 and browser.cookie("sessionid"), f"setup did not sign in ({status} {url}):\n{page[-2000:]}")
    status, url, _ = browser.request("GET", path)
    check(urllib.parse.urlsplit(url).path.startswith("/accounts/login"), f"the setup link still works: {status} {url}")
    log(f"first-run setup: admin {USERNAME!r} created from the log's one-time link")


def step_languages() -> None:
    """The image carries the compiled catalogs: a Korean browser gets the sign-in page in Korean."""
    for language, title in (("ko", "로그인"), ("pt-BR", "Entrar")):
        status, _, page = Browser().request("GET", "/accounts/login/", headers={"Accept-Language": language})
        check(status == 200 and f"<title>{title} · HomeAI" in page, f"/accounts/login/ in {language}: {status}")
    log("languages: the sign-in page in Korean and Portuguese")


def chat(browser: Browser, text: str, conversation: int | None = None) -> dict:
    headers = {"Origin": BASE_URL, "Cookie": f"sessionid={browser.cookie('sessionid')}"}
    t0 = time.monotonic()
    with ws_connect(
        BASE_URL.replace("http://", "ws://") + "/ws/chat/",
        additional_headers=headers,
        open_timeout=60,
        ping_interval=None,
        max_size=None,
    ) as ws:
        ws.send(json.dumps({"type": "chat.send", "conversation": conversation, "text": text, "max_tokens": 24}))
        events = []
        while True:
            remaining = 300 - (time.monotonic() - t0)
            check(remaining > 0, f"no end of the answer within 300 s: {events[-5:]}")
            event = json.loads(ws.recv(timeout=remaining))
            events.append(event)
            if event["type"] in ("generation.done", "generation.error"):
                break
    kinds = [e["type"] for e in events]
    done = events[-1]
    check(done["type"] == "generation.done" and done["status"] == "done", f"the answer did not finish: {done}")
    tokens = [e for e in events if e["type"] == "generation.token"]
    check(len(tokens) >= 2 and done["text"].strip(), f"no streamed answer: {kinds}")
    check("generation.queued" in kinds, f"no queued event: {kinds}")
    queued = next(e for e in events if e["type"] == "generation.queued")
    log(f"chat: {len(tokens)} tokens streamed in {time.monotonic() - t0:.1f} s: {done['text'].strip()[:60]!r}")
    return {"conversation": queued.get("conversation"), "text": done["text"]}


def step_api_key(browser: Browser) -> str:
    status, _, page = browser.post_form("/settings/api-keys/", {"name": "image-test"})
    check(status == 200, f"creating an API key: {status}")
    match = re.search(r'id="new-key"[^>]*value="(hai_[^"]+)"', page)
    check(match, "the API keys page shows no new key")
    key = match[1]
    status, models = get_json("/v1/models", key)
    check(status == 200 and models.get("data"), f"/v1/models: {status} {models}")
    model = models["data"][0]["id"]
    t0 = time.monotonic()
    body = {"model": model, "messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 16}
    status, answer = get_json("/v1/chat/completions", key, body)
    check(status == 200, f"/v1/chat/completions: {status} {answer}")
    content = answer["choices"][0]["message"]["content"]
    check(content.strip() and answer["usage"]["completion_tokens"] > 0, f"empty API answer: {answer}")
    status, _ = get_json("/v1/models", "hai_not-a-key")
    check(status == 401, f"/v1/models with a wrong key: {status}")
    log(f"OpenAI API ({model}): {time.monotonic() - t0:.1f} s: {content.strip()[:60]!r}")
    return key


def step_metrics() -> None:
    req = urllib.request.Request(BASE_URL + "/metrics")
    try:
        urllib.request.urlopen(req, timeout=30)
        raise CheckFailed("/metrics answered without the token")
    except urllib.error.HTTPError as exc:
        check(exc.code == 401, f"/metrics without the token: {exc.code}")
    req = urllib.request.Request(BASE_URL + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
    check(resp.status == 200 and "# TYPE homeai_" in text, f"/metrics: {text[:500]}")
    log(f"/metrics: {sum(1 for line in text.splitlines() if line.startswith('# TYPE'))} metric families")


def step_healthchecks() -> None:
    web, worker = container("web"), container("worker")
    check(healthcheck("web") == 0 and healthcheck("worker") == 0, "a healthcheck fails")

    def entry(name: str, *args: str) -> int:
        return run("podman", "exec", name, "/app/docker/entrypoint.sh", "healthcheck", *args, ok=False).returncode

    # The image's own check (no role): found among the processes, though PID 1 is the init.
    check(entry(web) == 0 and entry(worker) == 0, "the role-less healthcheck fails under init")
    check(entry(web, "worker") != 0, "the web container passes the worker's check")
    check(entry(worker, "web") != 0, "the worker container passes the web's check")
    check(entry(web, "nonsense") != 0, "an unknown role passes")
    # The same checks, as Podman runs them, in a container running neither server.
    other = run(
        "podman",
        "run",
        "--rm",
        "--init",
        "--network",
        "none",
        "--entrypoint",
        "sh",
        TAG,
        "-c",
        "/app/docker/entrypoint.sh healthcheck; echo rc=$?",
        ok=False,
    )
    check("rc=1" in other.stdout, f"a container with no server passes: {other.stdout}{other.stderr}")
    log("healthchecks: web and worker pass; wrong, unknown and missing roles fail")


def step_worker_crashes_and_stops() -> None:
    """A worker that dies (as the kernel's OOM killer would kill it) is started again by the
    restart policy; one that is stopped (`podman kill`, which Podman, like Docker, counts as a
    deliberate stop that the policy leaves alone) makes /healthz 503 but not the web unhealthy."""
    worker = container("worker")
    restarts = int(inspect(worker, "{{.RestartCount}}") or 0)
    top = run("podman", "top", worker, "hpid,args").stdout
    celery = [line.split()[0] for line in top.splitlines() if "bin/celery" in line and " worker " in line]
    check(celery, f"no celery worker process in the worker container:\n{top}")
    t0 = time.monotonic()
    run("kill", "-9", celery[0])
    wait_until(lambda: int(inspect(worker, "{{.RestartCount}}") or 0) > restarts, 60, "the worker's restart")
    wait_until(lambda: healthcheck("worker") == 0, 300, "the restarted worker's healthcheck", interval=2)
    wait_until(service_healthy, 120, "/healthz to report the restarted worker")
    back = round(time.monotonic() - t0, 1)
    report["timings_s"]["worker process killed: restarted and healthy again after"] = back
    log(f"worker's celery killed: the container restarted, healthy again after {back} s")

    t0 = time.monotonic()
    run("podman", "kill", worker)
    body = wait_until(service_unavailable, 60, "/healthz to turn 503")
    down = round(time.monotonic() - t0, 1)
    check(any("worker" in reason for reason in body.get("reasons", [])), f"/healthz 503 without the reason: {body}")
    check(healthcheck("web") == 0, "the web container turned unhealthy while only the worker was down")
    check(inspect(worker, "{{.State.Status}}") != "running", "the killed worker runs again")
    compose("up", "-d", "--no-deps", "worker")
    wait_until(service_healthy, 300, "/healthz to report the started worker")
    report["timings_s"]["worker container killed: /healthz 503 after"] = down
    log(f"worker container killed: /healthz 503 after {down} s ({body['reasons'][0]!r}), web healthy; started again")


COUNT = """
import json
from django.contrib.auth import get_user_model
from accounts.models import ApiKey
from inference.models import Conversation, EngineConfig, Generation, Message
tables = {
    "users": get_user_model().objects.values_list("id", "username", "password"),
    "conversations": Conversation.objects.values_list("id", "title"),
    "messages": Message.objects.values_list("id", "content"),
    "generations": Generation.objects.values_list("id", "status"),
    "api_keys": ApiKey.objects.values_list("id", "key_hash"),
    "engine_config": EngineConfig.objects.values_list("id", "model_name", "context", "threads"),
}
print("ROWS " + json.dumps({name: sorted(map(list, rows)) for name, rows in tables.items()}))
"""


def rows() -> dict:
    out = run("podman", "exec", container("web"), "/app/docker/entrypoint.sh", "manage", "shell", "-c", COUNT).stdout
    line = next((line for line in out.splitlines() if line.startswith("ROWS ")), None)
    check(line, f"no row dump: {out[-2000:]}")
    return json.loads(line[5:])


def step_upgrade(browser: Browser, key: str, conversation: int) -> None:
    before = rows()
    summary = {name: len(items) for name, items in before.items()}
    check(all(summary.values()), f"nothing to lose in some table before the upgrade: {summary}")
    old_image = inspect(container("web"), "{{.Image}}")
    compose("down", timeout=300)
    check(REBUILD, "IMAGE_TEST_REBUILD is not set")
    new_revision = f"{REVISION}-upgrade-{int(time.time())}"
    t0 = time.monotonic()
    env = dict(ENV, IMAGE_TEST_REVISION=new_revision)
    rebuilt = subprocess.run(REBUILD, shell=True, env=env, cwd=ROOT, timeout=3600)
    check(rebuilt.returncode == 0, "the rebuild failed")
    report["timings_s"]["rebuild (cached)"] = round(time.monotonic() - t0, 1)
    start("upgrade: start to healthy")
    web = container("web")
    check(inspect(web, "{{.Image}}") != old_image, "the upgrade runs the old image")
    label = inspect(web, '{{index .Config.Labels "org.opencontainers.image.revision"}}')
    check(label == new_revision, f"the running image's revision is {label!r}, expected {new_revision!r}")
    after = rows()
    lost = {name: [r for r in items if r not in after[name]] for name, items in before.items()}
    check(not any(lost.values()), f"rows lost in the upgrade: {lost}")
    report["rows_kept_across_upgrade"] = summary
    # The old key, and the session signed in before the upgrade (the secret key is in /data).
    status, _ = get_json("/v1/models", key)
    check(status == 200, f"the API key made before the upgrade: {status}")
    chat(browser, "And one more word?", conversation)
    log(f"upgrade to revision {new_revision}: every row kept {summary}; key and session still work")


def set_engine_config() -> None:
    """The model library's settings, saved as the page saves them (a row the upgrade must keep)."""
    code = "from inference.models import EngineConfig\nc = EngineConfig.current()\nc.context = 4096\nc.save()\n"
    run("podman", "exec", container("web"), "/app/docker/entrypoint.sh", "manage", "shell", "-c", code)


def main() -> int:
    t0 = time.monotonic()
    log(f"compose app {TAG} on {BASE_URL}, folders in {APP_DIR}")
    browser = Browser()
    try:
        step_start_cold()
        step_setup(browser)
        step_languages()
        set_engine_config()
        answer = chat(browser, "Say hello to the NAS.")
        key = step_api_key(browser)
        step_metrics()
        step_healthchecks()
        step_worker_crashes_and_stops()
        step_upgrade(browser, key, answer["conversation"])
    except (CheckFailed, subprocess.TimeoutExpired) as exc:
        log(f"FAILED: {exc}")
        for service in ("migrate", "web", "worker"):
            logs = subprocess.run(
                ["podman", "logs", "--tail", "60", f"{PROJECT}_{service}_1"], env=ENV, capture_output=True, text=True
            )
            print(f"--- {service} ---\n{logs.stdout[-4000:]}{logs.stderr[-4000:]}", flush=True)
        return 1
    finally:
        report["timings_s"]["checks in all"] = round(time.monotonic() - t0, 1)
        (WORK / "image-test-report.json").write_text(json.dumps(report, indent=2) + "\n")
        if not KEEP:
            subprocess.run(
                [PODMAN_COMPOSE, "-p", PROJECT, "-f", str(COMPOSE_FILE), "down"],
                env=ENV,
                cwd=ROOT,
                capture_output=True,
                timeout=300,
            )
    log("passed: " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
