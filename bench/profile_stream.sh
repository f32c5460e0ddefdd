#!/usr/bin/env bash
# Where does a single stream's time go on this box? Starts HomeAI on a scratch data dir, sends
# one 400-token completion streamed and one not, and prints wall time and the CPU time the
# web server (daphne) and the worker process used, plus the server's own `timings`.
#   bench/profile_stream.sh            (from the repository root, with the venv installed)
set -euo pipefail
cd "$(dirname "$0")/.."
export HOMEAI_DATA_DIR=${HOMEAI_DATA_DIR:-/tmp/homeai-profile} HOMEAI_MODELS_DIR=${HOMEAI_MODELS_DIR:-$PWD/data/models}
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/9} HOMEAI_QUEUE=profile HOMEAI_CHANNEL_PREFIX=profile
export HOMEAI_THREADS=${HOMEAI_THREADS:-2} LOG_LEVEL=WARNING
port=${PROFILE_PORT:-8801}
.venv/bin/python manage.py migrate -v0
.venv/bin/python manage.py shell -c "from django.contrib.auth.models import User; User.objects.filter(username='profile').exists() or User.objects.create_user('profile')"
PORT=$port HOST=127.0.0.1 setsid scripts/run.sh > "$HOMEAI_DATA_DIR/run.log" 2>&1 &
trap 'pkill -f "daphne -b 127.0.0.1 -p $port" || true; pkill -f "Q profile " || true' EXIT
for _ in $(seq 60); do sleep 1; curl -s "http://127.0.0.1:$port/healthz" | grep -q '"count": 1' && break; done
key=$(.venv/bin/python manage.py create_api_key profile --name profile | grep -o 'hai_[A-Za-z0-9_-]*' | head -1)
daphne=$(pgrep -f "daphne -b 127.0.0.1 -p $port"); worker=$(pgrep -f "Q profile ")
request() {
  curl -s -N "http://127.0.0.1:$port/v1/completions" -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
    -d "{\"prompt\": \"Once upon a time\", \"max_tokens\": $1, \"temperature\": 0, \"ignore_eos\": true, \"stream\": $2}"
}
cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$1/stat"; }  # utime + stime, in 10 ms ticks
request 8 true > /dev/null  # pays the model load
for stream in true false; do
  d0=$(cpu_ms "$daphne"); w0=$(cpu_ms "$worker"); t0=$(date +%s%N)
  request 400 $stream > "$HOMEAI_DATA_DIR/response-$stream.txt"
  t1=$(date +%s%N); d1=$(cpu_ms "$daphne"); w1=$(cpu_ms "$worker")
  timings=$(grep -o '"timings": *{[^}]*}' "$HOMEAI_DATA_DIR/response-$stream.txt" | tail -1)
  echo "stream=$stream wall=$(( (t1 - t0) / 1000000 )) ms daphne_cpu=$((d1 - d0)) ms worker_cpu=$((w1 - w0)) ms"
  echo "  $timings"
done
