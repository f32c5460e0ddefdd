#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers at the URL given (default postgres://postgres@127.0.0.1:5432/postgres).
# When none answers on this machine and we are root (CI's fresh Debian), it installs Debian's
# postgresql package and starts its cluster, as ensure-redis.sh starts Redis. That new server
# trusts connections from 127.0.0.1 and ::1 (as Debian's Redis does), like a developer's test
# server: it is for tests only. Exit status 0: the server answers; 2: none here, and none can be
# started by this script (the reason is printed); anything else: it failed.
set -euo pipefail
cd "$(dirname "$0")/.."
url=${1:-postgres://postgres@127.0.0.1:5432/postgres}
python=${VENV:-.venv}/bin/python

answers() {
  # The maintenance database: the one the URL names may not exist yet (the tests create theirs).
  "$python" -c 'import sys, psycopg; psycopg.connect(sys.argv[1], dbname="postgres", connect_timeout=5).close()' \
    "$url" 2>/dev/null
}

if answers; then
  exit 0
fi
hostport=${url#*://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
host=${hostport%%:*}; port=${hostport##*:}; [[ "$port" == "$hostport" ]] && port=5432
case "$host" in
  127.0.0.1|localhost|::1|'') ;;
  *) echo "PostgreSQL at $host:$port does not answer, and it is not on this machine: start it there." >&2; exit 2 ;;
esac
if [[ $(id -u) -ne 0 ]]; then
  echo "No PostgreSQL answers on $host:$port, and only root may install one here (apt-get install postgresql)." >&2
  exit 2
fi
if ! command -v pg_lsclusters >/dev/null 2>&1; then
  echo "Installing Debian's postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
read -r version cluster cluster_port _ < <(pg_lsclusters --no-header | head -n 1)
if [[ "$cluster_port" != "$port" ]]; then
  echo "Debian's PostgreSQL cluster $version/$cluster listens on port $cluster_port, not $port: set TEST_POSTGRES_URL." >&2
  exit 2
fi
hba=/etc/postgresql/$version/$cluster/pg_hba.conf
if ! grep -q '^# homeai-test' "$hba"; then
  printf '# homeai-test: the test suite connects as postgres from this machine\nhost all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust\n%s\n' \
    "$(cat "$hba")" >"$hba"
fi
echo "Starting PostgreSQL $version ($cluster) on port $port"
pg_ctlcluster "$version" "$cluster" start 2>/dev/null || pg_ctlcluster "$version" "$cluster" reload
for _ in $(seq 100); do
  answers && exit 0
  sleep 0.1
done
echo "PostgreSQL did not start; see /var/log/postgresql/postgresql-$version-$cluster.log" >&2
exit 1
