"""Model pulls as web and worker share them: one state per pull in Redis (PULLS_KEY), its status
lines published to the pull's group (broadcast.publish_pull), and the task sent by name.

A pull's id is its name's (the same model asked for twice is one pull: a second request
watches the first). At most HOMEAI_MAX_PULLS run at once, counted atomically in Redis; a pull
whose worker stopped beating no longer counts (its partial file stays, and the next pull of
that name resumes from it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time

from celery import current_app as app
from django.conf import settings

from inference import broadcast, redis_client
from inference.dispatch import registry

PULL_TASK = "inference.pull"
QUEUED_S = 300.0  # a pull no worker has taken in this long no longer counts as running
KEPT_S = 86400.0  # an ended pull's state is dropped after a day

# Start a pull unless one of that name runs (then its state) or HOMEAI_MAX_PULLS do (then 0).
# A running pull is one marked active whose worker's heartbeat is alive, or not yet taken by a
# worker and queued less than QUEUED_S ago. Returns {1, state} (started), {2, state} (joined), {0}.
_START = """
local function alive(raw)
  local st = cjson.decode(raw)
  if not st['active'] then return false end
  if st['worker'] ~= '' then return redis.call('EXISTS', ARGV[5] .. st['worker']) == 1 end
  return tonumber(ARGV[4]) - st['updated'] < tonumber(ARGV[6])
end
local own = redis.call('HGET', KEYS[1], ARGV[1])
if own and alive(own) then return {2, own} end
local running = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 2, #all, 2 do
  if alive(all[i]) then running = running + 1 end
end
if running >= tonumber(ARGV[3]) then return {0, ''} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, ARGV[2]}
"""


@functools.cache
def _start_script(client):
    return client.register_script(_START)


def pull_id(name: str) -> str:
    """A pull's id, from the model's name as the puller spells it (names.parse(...).short)."""
    return hashlib.sha256(name.encode()).hexdigest()[:20]


def new_state(name: str) -> dict:
    return {
        "id": pull_id(name),
        "name": name,
        "worker": "",
        "active": True,
        "updated": time.time(),
        "status": "pulling manifest",
        "layers": {},
        "end": None,
    }


def start(name: str) -> tuple[dict | None, bool]:
    """(state, started): a new pull's state and True; a running pull of that name and False;
    (None, False) when HOMEAI_MAX_PULLS pulls run already."""
    r = redis_client.client()
    state = new_state(name)
    found = _start_script(r)(
        keys=[redis_client.PULLS_KEY],
        args=[
            state["id"],
            json.dumps(state),
            settings.HOMEAI_MAX_PULLS,
            time.time(),
            redis_client.WORKER_KEY_PREFIX,
            QUEUED_S,
        ],
    )
    if int(found[0]) == 0:
        return None, False
    if int(found[0]) == 1:
        redis_client.client().delete(redis_client.pull_cancel_key(state["id"]))
    return json.loads(found[1]), int(found[0]) == 1


def send(state: dict, machine: str = "") -> None:
    """Ask a worker to run the pull (into its own models folder): one on `machine` (a host name
    from registry.machine_of), or any worker."""
    queue = registry.machine_queue(machine) if machine else settings.CELERY_TASK_DEFAULT_QUEUE
    app.send_task(PULL_TASK, args=(state["id"], state["name"]), queue=queue)


def read(pid: str) -> dict | None:
    raw = redis_client.client().hget(redis_client.PULLS_KEY, pid)
    return json.loads(raw) if raw else None


def alive(state: dict) -> bool:
    """Whether a pull still runs: marked so, and its worker beating (or it is queued, not for long)."""
    if not state.get("active"):
        return False
    if state.get("worker"):
        return bool(redis_client.client().exists(redis_client.worker_key(state["worker"])))
    return time.time() - state.get("updated", 0) < QUEUED_S


def every() -> list[dict]:
    """Every pull's state (running or ended), oldest first; those a day old are dropped."""
    r = redis_client.client()
    states = sorted((json.loads(raw) for raw in r.hvals(redis_client.PULLS_KEY)), key=lambda s: s.get("updated", 0))
    old = [s["id"] for s in states if time.time() - s.get("updated", 0) > KEPT_S and not alive(s)]
    if old:
        r.hdel(redis_client.PULLS_KEY, *old)
    return [s for s in states if s["id"] not in old]


def save(state: dict, lines: list[dict]) -> None:
    """The worker's progress: the state kept for late watchers, the new lines published."""
    state["updated"] = time.time()
    redis_client.client().hset(redis_client.PULLS_KEY, state["id"], json.dumps(state))
    broadcast.publish_pull(state["id"], lines)


def layer_line(digest: str, total: int, completed: int) -> dict:
    """Ollama's progress line for one layer."""
    return {
        "status": f"pulling {digest.removeprefix('sha256:')[:12]}",
        "digest": digest,
        "total": total,
        "completed": completed,
    }


def lines_of(state: dict) -> list[dict]:
    """Where a pull stands, as the status lines a watcher that joins late is sent first."""
    lines = [{"status": "pulling manifest"}]
    lines += [layer_line(digest, total, completed) for digest, (total, completed) in state.get("layers", {}).items()]
    if state.get("status") not in ("pulling manifest",) and not state["status"].startswith("pulling "):
        lines.append({"status": state["status"]})
    if state.get("end"):
        lines.append(state["end"])
    return lines


def is_end(line: dict) -> bool:
    return line.get("status") == "success" or "error" in line


def cancel(pid: str) -> None:
    """Ask the pull's worker to stop it (its partial file is removed)."""
    redis_client.client().set(redis_client.pull_cancel_key(pid), 1, ex=3600)


def cancelled(pid: str) -> bool:
    return bool(redis_client.client().exists(redis_client.pull_cancel_key(pid)))
