#!/usr/bin/env bash
# Runs the whole suite: unit tests, integration tests (real model, Redis, Celery worker,
# daphne) and browser tests (Playwright driving Debian's Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
export REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}
scripts/ensure-redis.sh
"$BIN/ruff" check .
exec "$BIN/pytest" "$@"
