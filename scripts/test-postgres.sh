#!/usr/bin/env bash
# The whole suite again, on PostgreSQL: DATABASE_URL is TEST_POSTGRES_URL (default
# postgres://postgres@127.0.0.1:5432/homeai). The tests create their own database on that server,
# test_<name>_<HOMEAI_QUEUE>, so runs with different queues never share one. Without a server
# (and without root to install one, scripts/ensure-postgres.sh) it is skipped, saying why; under
# CI (CI=true) that is a failure, so a run that tested nothing on PostgreSQL never passes as one.
set -euo pipefail
cd "$(dirname "$0")/.."
url=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/homeai}
status=0
scripts/ensure-postgres.sh "$url" || status=$?
if ((status == 2)); then
  if [[ "${CI:-}" == "true" ]]; then
    echo "make test-postgres: FAILED under CI: no PostgreSQL server to test on (see above)." >&2
    exit 1
  fi
  echo "make test-postgres: SKIPPED, no PostgreSQL server (see above): nothing was tested on PostgreSQL." >&2
  exit 0
elif ((status != 0)); then
  exit "$status"
fi
# pgvector: the chunk vectors' search in the database (documents/pgvector.py). Without it the
# suite still runs (numpy's search, as on a server without the extension), except under CI.
status=0
scripts/ensure-pgvector.sh "$url" || status=$?
if ((status == 2)) && [[ "${CI:-}" == "true" ]]; then
  echo "make test-postgres: FAILED under CI: the server has no pgvector to test (see above)." >&2
  exit 1
elif ((status == 2)); then
  echo "make test-postgres: the server has no pgvector: its tests are skipped (see above)." >&2
elif ((status != 0)); then
  exit "$status"
fi
export DATABASE_URL=$url
exec scripts/test.sh "$@"
