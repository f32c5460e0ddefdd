#!/usr/bin/env bash
# Starts a local Redis when nothing answers at REDIS_URL (default redis://127.0.0.1:6379/0).
set -euo pipefail
url=${REDIS_URL:-redis://127.0.0.1:6379/0}
if redis-cli -u "$url" ping >/dev/null 2>&1; then
  exit 0
fi
hostport=${url#*://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
host=${hostport%%:*}; port=${hostport##*:}; [[ "$port" == "$hostport" ]] && port=6379
case "$host" in
  127.0.0.1|localhost|::1) ;;
  *) echo "Redis at $url does not answer, and it is not on this machine: start it there." >&2; exit 1 ;;
esac
dir=${HOMEAI_DATA_DIR:-$(pwd)/data}/redis
mkdir -p "$dir"
echo "Starting Redis on 127.0.0.1:$port (data in $dir)"
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$dir" --save "" --appendonly no \
  --logfile "$dir/redis.log"
for _ in $(seq 50); do
  redis-cli -u "$url" ping >/dev/null 2>&1 && exit 0
  sleep 0.1
done
echo "Redis did not start; see $dir/redis.log" >&2
exit 1
