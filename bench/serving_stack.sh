#!/usr/bin/env bash
# HomeAI against llama.cpp's llama-server, with the whole stack's CPU time counted: starts a Redis
# of its own (so its CPU time is this run's alone), HomeAI (daphne and a worker) on a scratch data
# dir, then `manage.py bench_serving` with that stack's process ids, --llama-server and the
# arguments given here. Needs `make llama-server` first.
#   bench/serving_stack.sh --endpoint completions --prompt-tokens 80 --output-tokens 128 --concurrency 1,4
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
export HOMEAI_DATA_DIR=${HOMEAI_DATA_DIR:-/tmp/homeai-serving} HOMEAI_MODELS_DIR=${HOMEAI_MODELS_DIR:-$PWD/data/models}
export HOMEAI_MODEL_PATH=${HOMEAI_MODEL_PATH:-$HOMEAI_MODELS_DIR/gemma-3-270m-q4_k_m.gguf}
export HOMEAI_THREADS=${HOMEAI_THREADS:-2} LOG_LEVEL=WARNING HOMEAI_QUEUE=serving HOMEAI_CHANNEL_PREFIX=serving
port=${SERVING_PORT:-8800}
redis_port=${SERVING_REDIS_PORT:-8801}
export REDIS_URL=redis://127.0.0.1:$redis_port/0
mkdir -p "$HOMEAI_DATA_DIR/logs"
redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
  --logfile "$HOMEAI_DATA_DIR/logs/redis.log" &
redis=$!
stack=
cleanup() {
  [[ -n $stack ]] && kill -TERM -- "-$stack" 2>/dev/null
  kill "$redis" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT
"$BIN/python" manage.py migrate -v0
"$BIN/python" manage.py shell -c \
  "from django.contrib.auth.models import User; User.objects.filter(username='bench').exists() or User.objects.create_user('bench')"
PORT=$port HOST=127.0.0.1 setsid scripts/run.sh > "$HOMEAI_DATA_DIR/logs/run.log" 2>&1 &
stack=$!
for _ in $(seq 120); do
  sleep 1
  curl -s "http://127.0.0.1:$port/healthz" | grep -q '"count": 1' && break
done
daphne=$(pgrep -s "$stack" -f "daphne -b 127.0.0.1 -p $port")
worker=$(pgrep -s "$stack" -f "celery -A homeai worker")
echo "HomeAI on port $port: daphne $daphne, worker $worker, redis $redis" >&2
"$BIN/python" manage.py bench_serving --target "homeai=http://127.0.0.1:$port/v1" --create-key bench \
  --cpu "homeai=$daphne,$worker,$redis" --llama-server --threads "$HOMEAI_THREADS" "$@"
