#!/usr/bin/env bash
# Runs HomeAI on this machine: Redis (if needed), migrations, a Celery worker and daphne.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
HOST=${HOST:-0.0.0.0}
PORT=${PORT:-8000}
SLOTS=${HOMEAI_SLOTS:-4}

scripts/ensure-redis.sh
"$BIN/python" manage.py migrate --noinput
"$BIN/python" manage.py setup_link --base-url "http://localhost:$PORT"

"$BIN/celery" -A homeai worker -P threads -c "$SLOTS" -Q "${HOMEAI_QUEUE:-homeai}" \
  --without-gossip --without-mingle --loglevel "${LOG_LEVEL:-INFO}" &
worker=$!
trap 'kill $worker 2>/dev/null; wait $worker 2>/dev/null' EXIT INT TERM

echo
echo "HomeAI is starting: open http://localhost:$PORT (or this machine's address on your network)."
echo "Until an account exists, the setup link above creates the admin account. Stop with Ctrl+C."
echo
# X-Forwarded-* headers are believed only behind the proxy the admin said is there.
proxy=()
case "${HOMEAI_BEHIND_TLS_PROXY:-}" in 1 | true | yes | on) proxy=(--proxy-headers) ;; esac
"$BIN/daphne" -b "$HOST" -p "$PORT" "${proxy[@]}" homeai.asgi:application
