#!/usr/bin/env bash
# Makes sure the PostgreSQL server at the URL given (default postgres://postgres@127.0.0.1:5432/postgres)
# offers the pgvector extension, so that `make test-postgres` tests the chunk vectors' search in
# the database (documents/pgvector.py) as well as numpy's. When it does not, the server is on this
# machine and we are root (CI's fresh Debian), it builds the copy in third_party/pgvector against
# that server (Debian's postgresql-server-dev-N for the headers) and installs it. Exit status 0:
# the extension is offered; 2: it is not, and this script cannot add it (the reason is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
url=${1:-postgres://postgres@127.0.0.1:5432/postgres}
python=${VENV:-.venv}/bin/python

offered() {
  "$python" - "$url" <<'PY'
import sys, psycopg
with psycopg.connect(sys.argv[1], dbname="postgres", connect_timeout=5) as c:
    sys.exit(0 if c.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() else 1)
PY
}

if offered; then
  exit 0
fi
hostport=${url#*://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
host=${hostport%%:*}
case "$host" in
  127.0.0.1|localhost|::1|'') ;;
  *) echo "PostgreSQL at $host has no pgvector; install it there (postgresql-N-pgvector, or third_party/pgvector)." >&2; exit 2 ;;
esac
if [[ $(id -u) -ne 0 ]]; then
  echo "This machine's PostgreSQL has no pgvector, and only root may build and install it here" \
    "(sudo scripts/ensure-pgvector.sh)." >&2
  exit 2
fi
major=$("$python" -c 'import sys, psycopg; print(psycopg.connect(sys.argv[1], dbname="postgres").info.server_version // 10000)' "$url")
pg_config=/usr/lib/postgresql/$major/bin/pg_config
if [[ ! -x "$pg_config" ]] || [[ ! -d "$($pg_config --includedir-server)" ]]; then
  echo "Installing Debian's postgresql-server-dev-$major (pgvector's build needs the server's headers)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "postgresql-server-dev-$major" make gcc >/dev/null
fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cp -r third_party/pgvector/. "$build"
echo "Building pgvector $(sed -n 's/^EXTVERSION = //p' "$build/Makefile") for PostgreSQL $major"
# OPTFLAGS="": no -march=native, as a package is built (the same object on any x86-64);
# with_llvm=no: no JIT bitcode, which would need clang and llvm too.
make -C "$build" -j"$(nproc)" PG_CONFIG="$pg_config" OPTFLAGS="" with_llvm=no >/dev/null
make -C "$build" install PG_CONFIG="$pg_config" OPTFLAGS="" with_llvm=no >/dev/null
offered || { echo "pgvector was installed, but the server does not offer it" >&2; exit 1; }
