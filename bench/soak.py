"""The soak: simulated people chatting through the real stack for minutes, an API client beside
them, and, inside the window, a Redis restart and a SIGKILL of the worker (restarted a second
later, as `make run` and compose's restart policy do). Not a test: a run that reports.

    python manage.py bench_soak --minutes 10 --users 8

It builds a HomeAI of its own (tests/stack.py: a redis-server on a spare port, daphne, a Celery
worker) on a fresh SQLite database in a scratch folder, on the app's own settings; this
process's database connection is pointed at that file too. Each
simulated person keeps a chat socket open and, in a loop, sends a message into their
conversation, reads its answer as the page does (asking chat.sync after 3 s of silence), and
waits a few seconds. The API client sends short streamed chat completions.

What it reports: every answer's end (done, cancelled, interrupted with its text, error), the
answers lost (no end seen by the client) and stuck (still queued or running in the database
after the drain), the API's status codes, and per minute the p50 and p99 of TTFT and of the
gaps between tokens, as the clients saw them.

The household mode is the same people without the faults and the API client, as a home uses
it: each keeps one conversation going, one message at a time, answers capped at 48 tokens:

    python manage.py bench_soak --household --minutes 5 --users 8

Its report adds, over all answers, TTFT p50/p90/p99 as the clients saw it, and from the
Generation rows the time queued, the prefill, the prompt's tokens and how many of them came
from a slot's cache or a restored conversation; and the box's load average over the window
(it counts this HomeAI's own worker too).
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from inference.models import Generation
from tests.stack import Stack
from tests.support import LOG_DIR

PROMPTS = [
    "What is a NAS good for?",
    "Give me three tips for a tidy desk.",
    "Write a haiku about rain.",
    "Explain what a CPU cache is in two sentences.",
    "Name five vegetables that grow in spring.",
    "How do I boil an egg?",
    "Write a short thank-you note to a neighbour.",
    "List four board games for a family evening.",
]
THINK_S = (5.0, 15.0)  # a person reads the answer and types the next message
HOUSEHOLD_MAX_TOKENS = (48,)  # the household's answers: a short reply each
SILENT_S = 3.0  # as the page: unfinished answers silent this long, ask chat.sync
DRAIN_S = 180.0  # after the window, how long answers in flight may take to end


@dataclass
class Answer:
    client: str
    sent: float
    status: str = "lost"  # until the client sees its end
    ttft_s: float | None = None
    gaps_s: list[float] = field(default_factory=list)
    ended: float | None = None
    text_chars: int = 0
    generation: int | None = None


@dataclass
class Soak:
    minutes: float
    users: int
    answers: list[Answer] = field(default_factory=list)
    api_statuses: dict[int, int] = field(default_factory=dict)
    faults: list[tuple[float, str]] = field(default_factory=list)
    max_tokens: tuple[int, ...] = (32, 64, 96)
    load: list[float] = field(default_factory=list)  # the 1-minute load average, sampled
    load_5min: float | None = None  # the 5-minute load average as the window closes
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)


def _follow(sock, answer: Answer, deadline: float) -> None:
    """Read one answer's events to its end, as the page does (chat.sync after silence)."""
    last_token = None
    while time.monotonic() < deadline:
        try:
            event = sock.recv(timeout=SILENT_S)
        except TimeoutError:
            sock.send({"type": "chat.sync", "generations": [answer.generation]})
            continue
        if event.get("generation") != answer.generation:
            continue
        now = time.monotonic()
        if event["type"] == "generation.token":
            if answer.ttft_s is None:
                answer.ttft_s = now - answer.sent
            else:
                answer.gaps_s.append(now - last_token)
            last_token = now
        elif event["type"] in ("generation.done", "generation.error"):
            answer.ended = now
            answer.status = event.get("status") or event.get("code") or "error"
            answer.text_chars = len(event.get("text") or "")
            return


def _person(stack, user, soak: Soak, stop_at: float, seed: int) -> None:
    rng = random.Random(seed)
    sock, conversation = None, None
    while time.monotonic() < stop_at:
        try:
            if sock is None:
                sock = stack.socket(user)
            answer = Answer("chat", time.monotonic())
            sock.send(
                {
                    "type": "chat.send",
                    "conversation": conversation,
                    "text": rng.choice(PROMPTS),
                    "max_tokens": rng.choice(soak.max_tokens),
                }
            )
            while answer.generation is None:
                event = sock.recv(timeout=60)
                if event["type"] == "generation.queued":
                    answer.generation, conversation = event["generation"], event["conversation"]
                elif event["type"] == "generation.error" and event.get("generation") is None:
                    raise RuntimeError(event["message"])
            soak.add(answer)
            _follow(sock, answer, stop_at + DRAIN_S)  # however long its line: lost only if it never ends
        except Exception as exc:  # a dropped socket: open another, carry on (the answer stays "lost")
            print(f"user {user.username}: {type(exc).__name__}: {exc}", file=sys.stderr)
            if sock is not None:
                sock.close()
            sock = None
            time.sleep(1)
            continue
        time.sleep(rng.uniform(*THINK_S))
    if sock is not None:
        sock.close()


def _api_client(stack, key: str, model: str, soak: Soak, stop_at: float) -> None:
    while time.monotonic() < stop_at:
        answer = Answer("api", time.monotonic())
        body = {"model": model, "stream": True, "max_tokens": 32, "messages": [{"role": "user", "content": "Hi!"}]}
        last = None
        try:
            with httpx.stream(
                "POST",
                stack.url + "/v1/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {key}"},
                timeout=DRAIN_S,
            ) as response:
                with soak.lock:
                    soak.api_statuses[response.status_code] = soak.api_statuses.get(response.status_code, 0) + 1
                for line in response.iter_lines():
                    now = time.monotonic()
                    if line == "data: [DONE]":
                        answer.status, answer.ended = "done", now
                    if not line.startswith("data: {"):
                        continue
                    chunk = json.loads(line[len("data: ") :])
                    if "error" in chunk:  # the answer ended in an error event, with its code
                        answer.status, answer.ended = chunk["error"].get("code") or "error", now
                    elif any((c.get("delta") or {}).get("content") for c in chunk.get("choices", ())):
                        if answer.ttft_s is None:
                            answer.ttft_s = now - answer.sent
                        elif last is not None:
                            answer.gaps_s.append(now - last)
                        last = now
                if response.status_code >= 400:
                    answer.status, answer.ended = f"http_{response.status_code}", time.monotonic()
        except Exception as exc:
            print(f"api: {type(exc).__name__}: {exc}", file=sys.stderr)
        soak.add(answer)
        time.sleep(2)


def _faults(stack, soak: Soak, start: float, redis_at: float, kill_at: float) -> None:
    time.sleep(max(0.0, start + redis_at - time.monotonic()))
    soak.faults.append((time.monotonic() - start, "redis restart"))
    stack.restart_redis()
    time.sleep(max(0.0, start + kill_at - time.monotonic()))
    soak.faults.append((time.monotonic() - start, "worker SIGKILL"))
    stack.worker.proc.send_signal(signal.SIGKILL)
    stack.worker.proc.wait()
    time.sleep(1)  # the supervisor's pause, as make run's
    stack.worker.start()
    soak.faults.append((time.monotonic() - start, "worker restarted"))


def _sample_load(soak: Soak, stop_at: float) -> None:
    """The box is shared: its load average over the window says what the figures are worth."""
    while time.monotonic() < stop_at:
        soak.load.append(os.getloadavg()[0])
        time.sleep(10)


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _spread(values: list[float]) -> dict:
    return {"p50": _pct(values, 50), "p90": _pct(values, 90), "p99": _pct(values, 99), "n": len(values)}


def served(rows: list[dict]) -> dict:
    """What the Generation rows say of the answers: where the time to first token went (queued,
    prefill) and how much of each prompt was read again rather than cached or restored."""
    prompt = sum(r["prompt_tokens"] or 0 for r in rows)
    cached = sum(r["cached_tokens"] or 0 for r in rows)
    restored = sum(r["restored_tokens"] or 0 for r in rows)
    return {
        "queue_ms": _spread([r["queue_ms"] for r in rows if r["queue_ms"] is not None]),
        "prefill_ms": _spread([r["prefill_ms"] for r in rows if r["prefill_ms"] is not None]),
        "prompt_tokens": _spread([r["prompt_tokens"] for r in rows if r["prompt_tokens"] is not None]),
        "cached_tokens": _spread([r["cached_tokens"] for r in rows if r["cached_tokens"] is not None]),
        "restored_tokens": _spread([r["restored_tokens"] for r in rows if r["restored_tokens"] is not None]),
        "answers_restored": sum(1 for r in rows if r["restored_tokens"]),
        "prompt_tokens_cached_share": round(cached / prompt, 3) if prompt else None,
        "prompt_tokens_restored_share": round(restored / prompt, 3) if prompt else None,
    }


def report(
    soak: Soak,
    start: float,
    stuck: int,
    server_status: dict[str, int],
    interrupted_empty: int,
    *,
    rows: list[dict] = (),
    api_client: bool = True,
    slots: int | None = None,
) -> dict:
    minutes = []
    for minute in range(int(soak.minutes + 0.999)):
        lo, hi = start + 60 * minute, start + 60 * (minute + 1)
        done = [a for a in soak.answers if lo <= a.sent < hi]
        ttft = [a.ttft_s * 1000 for a in done if a.ttft_s is not None]
        gaps = [g * 1000 for a in done for g in a.gaps_s]
        minutes.append(
            {
                "minute": minute + 1,
                "answers": len(done),
                "ttft_p50_ms": _pct(ttft, 50),
                "ttft_p99_ms": _pct(ttft, 99),
                "itl_p50_ms": _pct(gaps, 50),
                "itl_p99_ms": _pct(gaps, 99),
            }
        )
    ends: dict[str, int] = {}
    for a in soak.answers:
        ends[a.status] = ends.get(a.status, 0) + 1
    return {
        "config": {
            "minutes": soak.minutes,
            "users": soak.users,
            "api_clients": int(api_client),
            "max_tokens": list(soak.max_tokens),
            "think_s": list(THINK_S),
            "slots": slots,
        },
        "faults": [{"at_s": round(t, 1), "what": what} for t, what in soak.faults],
        "answers": len(soak.answers),
        "ends_seen_by_clients": ends,
        "lost": ends.get("lost", 0),
        "stuck_in_database": stuck,
        "interrupted_without_text": interrupted_empty,
        "database_ends": server_status,
        "api_statuses": {str(k): v for k, v in sorted(soak.api_statuses.items())},
        "api_5xx": sum(v for k, v in soak.api_statuses.items() if k >= 500),
        "per_minute": minutes,
        "ttft_p50_ms": statistics.median([a.ttft_s * 1000 for a in soak.answers if a.ttft_s is not None] or [0]),
        "ttft_ms": _spread([a.ttft_s * 1000 for a in soak.answers if a.ttft_s is not None]),
        "served": served(list(rows)),
        "load_average": {
            "mean_1min": round(statistics.mean(soak.load), 2) if soak.load else None,
            "max_1min": max(soak.load, default=None),
            "five_min_at_end": soak.load_5min,
        },
    }


def markdown(result: dict) -> str:
    def cell(v):
        return "-" if v is None else f"{v:,.0f}"

    lines = [
        "| minute | answers | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for m in result["per_minute"]:
        lines.append(
            f"| {m['minute']} | {m['answers']} | {cell(m['ttft_p50_ms'])} | {cell(m['ttft_p99_ms'])} "
            f"| {cell(m['itl_p50_ms'])} | {cell(m['itl_p99_ms'])} |"
        )
    return "\n".join(lines)


def own_stack(name: str, **env: str) -> tuple[Stack, Path]:
    """A HomeAI of its own (not started yet) on the app's own settings and a fresh SQLite
    database in a scratch folder, which this process's ORM is pointed at too; env: more of the
    stack's settings. The worker has the settings' own task threads, as `make run` has them."""
    if connection.vendor != "sqlite":
        raise RuntimeError("The benchmark's own stack runs on SQLite: run it without a PostgreSQL DATABASE_URL.")
    scratch = Path(tempfile.mkdtemp(prefix=f"homeai-{name}-"))
    database = scratch / "homeai.sqlite3"
    connection.close()
    connection.settings_dict["NAME"] = str(database)  # this process's ORM, on the stack's database
    call_command("migrate", verbosity=0)
    env = {
        "DJANGO_SETTINGS_MODULE": "homeai.settings",
        "HOMEAI_USE_TEST_DB": "0",
        "HOMEAI_DATA_DIR": str(scratch),
        "HOMEAI_DOCUMENTS_DIR": str(scratch / "documents"),
        "HOMEAI_MODELS_DIR": str(settings.MODELS_DIR),
        "DATABASE_URL": f"sqlite:///{database}",
        "SECRET_KEY": settings.SECRET_KEY,  # the sessions this process signs in are read there
        **env,
    }
    return Stack(scratch, env=env, name=name, concurrency=None), scratch


def run(
    *,
    minutes: float,
    users: int,
    redis_restart_at: float | None,
    worker_kill_at: float | None,
    household: bool = False,
    log=print,
) -> dict:
    """The soak; `household`: no faults and no API client, answers of 48 tokens."""
    window = minutes * 60
    redis_at = window * 0.3 if redis_restart_at is None else redis_restart_at
    kill_at = window * 0.6 if worker_kill_at is None else worker_kill_at
    stack, _scratch = own_stack("soak")
    stack.start()
    people = [get_user_model().objects.create_user(f"person{i}", password="soak-password-1") for i in range(users)]
    out = io.StringIO()
    call_command("create_api_key", people[0].username, "--name", "soak", stdout=out)
    key = out.getvalue().strip()
    model = settings.HOMEAI_MODEL_PATH.name
    who = f"{users} people" if household else f"{users} people and an API client"
    log(f"soak: {who} for {minutes:g} min; logs: {LOG_DIR}/soak-*.log")

    soak = Soak(minutes=minutes, users=users, max_tokens=HOUSEHOLD_MAX_TOKENS if household else (32, 64, 96))
    start = time.monotonic()
    stop_at = start + window
    threads = [
        threading.Thread(target=_person, args=(stack, user, soak, stop_at, i), daemon=True)
        for i, user in enumerate(people)
    ]
    if not household:
        threads.append(threading.Thread(target=_api_client, args=(stack, key, model, soak, stop_at), daemon=True))
        threads.append(threading.Thread(target=_faults, args=(stack, soak, start, redis_at, kill_at), daemon=True))
    threads.append(threading.Thread(target=_sample_load, args=(soak, stop_at), daemon=True))
    for t in threads:
        t.start()
    time.sleep(max(0.0, stop_at - time.monotonic()))
    soak.load_5min = os.getloadavg()[1]
    for t in threads:
        t.join(timeout=window + DRAIN_S + 120)
    deadline = time.monotonic() + DRAIN_S
    while Generation.objects.filter(status__in=Generation.ACTIVE).exists() and time.monotonic() < deadline:
        time.sleep(1)
    stuck = Generation.objects.filter(status__in=Generation.ACTIVE).count()
    server_status: dict[str, int] = {}
    for status in Generation.objects.values_list("status", flat=True):
        server_status[status] = server_status.get(status, 0) + 1
    # An interrupted answer's text is in the database (its error event carries none).
    interrupted_empty = Generation.objects.filter(status=Generation.Status.INTERRUPTED, message__content="").count()
    rows = list(
        Generation.objects.values("queue_ms", "prefill_ms", "prompt_tokens", "cached_tokens", "restored_tokens")
    )
    slots = stack.worker_slots()
    stack.stop()
    return report(
        soak, start, stuck, server_status, interrupted_empty, rows=rows, api_client=not household, slots=slots
    )


def write(result: dict, out_dir: Path, name: str = "soak.json") -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    path.write_text(json.dumps(result, indent=2))
    return path
