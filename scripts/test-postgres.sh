#!/usr/bin/env bash
# The whole suite again, on PostgreSQL: DATABASE_URL is TEST_POSTGRES_URL (default
# postgres://postgres@127.0.0.1:5432/homeai). The tests create their own database on that server,
# test_<name>_<HOMEAI_QUEUE>, so runs with different queues never share one. Without a server
# (and without root to install one, scripts/ensure-postgres.sh) it is skipped, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
url=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/homeai}
status=0
scripts/ensure-postgres.sh "$url" || status=$?
if ((status == 2)); then
  echo "make test-postgres: skipped, no PostgreSQL server (see above)."
  exit 0
elif ((status != 0)); then
  exit "$status"
fi
export DATABASE_URL=$url
exec scripts/test.sh "$@"
