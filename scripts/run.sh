#!/usr/bin/env bash
# Runs HomeAI on this machine: Redis (if needed), migrations, a Celery worker and daphne.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
HOST=${HOST:-0.0.0.0}
PORT=${PORT:-8000}

# Redis, with the password kept in the data folder when this starts it (scripts/ensure-redis.sh):
# it exports REDIS_URL and REDIS_PASSWORD_FILE for the web and worker.
# shellcheck source=scripts/ensure-redis.sh
source scripts/ensure-redis.sh
ensure_redis
"$BIN/python" manage.py migrate --noinput
"$BIN/python" manage.py setup_link --base-url "${HOMEAI_PUBLIC_URL:-http://localhost:$PORT}"

# The worker, restarted whenever it exits (as compose's restart policy does in a container): a
# Redis restart can end a Celery worker, and the house should not need someone to notice.
supervise_worker() {
  local child=
  trap '[[ -n $child ]] && kill "$child" 2>/dev/null; wait; exit 0' TERM INT
  # Its task threads come from the settings (CELERY_WORKER_CONCURRENCY: one per slot). No
  # Celery events: HomeAI keeps its own heartbeat, and Celery's (an event every 2 s, a new Redis
  # client each time) held the worker's interpreter beside the engine thread for nothing.
  while true; do
    "$BIN/celery" -A homeai worker -P threads -Q "${HOMEAI_QUEUE:-homeai}" \
      --without-gossip --without-mingle --without-heartbeat --loglevel "${LOG_LEVEL:-INFO}" &
    child=$!
    wait "$child" && status=0 || status=$?
    echo "homeai: the worker exited (status $status); starting it again in 2 s" >&2
    sleep 2
  done
}
supervise_worker &
supervisor=$!
web=
trap 'kill $supervisor $web 2>/dev/null; wait 2>/dev/null' EXIT INT TERM

echo
echo "HomeAI is starting: open http://localhost:$PORT (or this machine's address on your network)."
echo "Until an account exists, the setup link above creates the admin account. Stop with Ctrl+C."
echo
# No --proxy-headers: daphne would take X-Forwarded-For's leftmost hop from any client.
# HOMEAI_BEHIND_TLS_PROXY and HOMEAI_TRUSTED_PROXIES decide it in the app (infra/forwarded.py).
# In the background and waited for, so a TERM to this script reaches the trap at once.
"$BIN/daphne" -b "$HOST" -p "$PORT" homeai.asgi:application &
web=$!
wait "$web"
