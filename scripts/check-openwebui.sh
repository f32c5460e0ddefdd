#!/usr/bin/env bash
# Open WebUI chatting through HomeAI over both of its connections, checked by hand (not in CI:
# Open WebUI's install is about 7 GB, most of it PyTorch). Installs Open WebUI into a venv
# outside the checkout when it is missing, starts a Redis, HomeAI (scripts/run.sh) and Open
# WebUI on spare ports with scratch data, then drives Open WebUI's UI with Debian's Chromium
# (tests/openwebui/check_openwebui.py). Prints what it saw and each answer's TTFT, stops
# everything; exit status 0 only when every step passed. Needs `make install-dev` and
# `scripts/system-deps.sh --test`. Three cases:
#
#   defaults (the default): Open WebUI as a household installs it, only its connections to
#     HomeAI (URL and key) and the offline flags set: its 36 built-in tools, title, tags and
#     follow-up tasks on. "What is a NAS good for? Answer in one sentence." must be answered in
#     words on the default model, over each connection, and a second message in that chat must
#     reuse the first's prompt (tool block included) from HomeAI's cache. Then, on its own,
#     Open WebUI's "pull a model" (its admin's /ollama/api/pull, what the admin page's box
#     calls) through HomeAI's Ollama connection: a small GGUF from a local docker-registry
#     (HOMEAI_PULL_REGISTRY) streams to "success", is listed, and is deleted the same way.
#   export: the defaults, a chat whose second answer is regenerated, saved as Open WebUI's
#     "Export chat (.json)" writes it into OWUI_CHECK_EXPORT (default: the import test's fixture,
#     tests/inference/exports/open-webui-<version>-chat-export.json).
#   custom: the workspace a household sets up for tools: the built-in tools off, a workspace
#     model with a house weather tool that is forced until it has answered: a message streams,
#     the tool is called, its result shown, then an answer in words.
#
#   scripts/check-openwebui.sh            # defaults
#   scripts/check-openwebui.sh custom
#   scripts/check-openwebui.sh export     # writes the import test's Open WebUI file
#   OWUI_CHECK_SHOTS=/tmp/owui-shots scripts/check-openwebui.sh   # also keep screenshots
#
# OWUI_VENV (/var/tmp/homeai-openwebui/venv), OWUI_VERSION (0.12.4), OWUI_CHECK_WORK
# (/tmp/homeai-openwebui-check: the scratch data, emptied first, and the logs) and
# OWUI_CHECK_PORT (8810: HomeAI; Open WebUI, Redis and the pull step's registry take the next three) can be changed.
# docs/api.md records the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
case=${1:-defaults}
if [[ $case != defaults && $case != custom && $case != export ]]; then
  echo "usage: $0 [defaults|custom|export]" >&2
  exit 2
fi
venv=${OWUI_VENV:-/var/tmp/homeai-openwebui/venv}
version=${OWUI_VERSION:-0.12.4}
work=${OWUI_CHECK_WORK:-/tmp/homeai-openwebui-check}
homeai_port=${OWUI_CHECK_PORT:-8810}
webui_port=$((homeai_port + 1))
redis_port=$((homeai_port + 2))
registry_port=$((homeai_port + 3)) # the pull step's docker-registry (defaults case)

if [[ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("open-webui"))' 2>/dev/null)" != "$version" ]]; then
  echo "Installing open-webui==$version into $venv (a few GB; minutes)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "open-webui==$version"
fi

rm -rf "$work"
mkdir -p "$work/logs"
export HOMEAI_DATA_DIR=$work/homeai HOMEAI_MODELS_DIR=${HOMEAI_MODELS_DIR:-$root/data/models}
export REDIS_URL=redis://127.0.0.1:$redis_port/0 HOMEAI_QUEUE=openwebui-check HOMEAI_CHANNEL_PREFIX=openwebui-check
export HOMEAI_THREADS=${HOMEAI_THREADS:-1} LOG_LEVEL=WARNING

redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --logfile "$work/logs/redis.log" &
redis=$!
homeai=
webui=
registry=
cleanup() {
  [[ -n $webui ]] && kill -TERM -- "-$webui" 2>/dev/null
  [[ -n $homeai ]] && kill -TERM -- "-$homeai" 2>/dev/null
  [[ -n $registry ]] && kill "$registry" 2>/dev/null
  kill "$redis" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT

.venv/bin/python manage.py migrate -v0
# Staff: the connection's key also pulls a model in the defaults case (pulls need a staff key).
.venv/bin/python manage.py shell -v0 -c \
  "from django.contrib.auth.models import User; User.objects.create_user('house', password='open-webui check', is_staff=True)"
if [[ $case == defaults ]]; then
  # The pull step's registry: Debian's docker-registry (the CNCF distribution registry), empty;
  # check_openwebui.py pushes a small GGUF into it in Ollama's layout.
  mkdir -p "$work/registry"
  printf 'version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: "127.0.0.1:%s"}\n' \
    "$work/registry/storage" "$registry_port" >"$work/registry/config.yml"
  docker-registry serve "$work/registry/config.yml" >"$work/logs/registry.log" 2>&1 &
  registry=$!
  export HOMEAI_PULL_REGISTRY=http://127.0.0.1:$registry_port
fi
key=$(.venv/bin/python manage.py create_api_key house --name "Open WebUI")
PORT=$homeai_port HOST=127.0.0.1 setsid scripts/run.sh >"$work/logs/homeai.log" 2>&1 &
homeai=$!

# Both connections carry the key; each names itself, so HomeAI's dashboard tells them apart,
# and prefixes its models' names (the same model is listed once per connection).
connection() { # prefix [key]
  printf '{"0": {%s"prefix_id": "%s", "headers": {"X-Client-Name": "open-webui-%s"}}}' \
    "${2:+\"key\": \"$2\", }" "$1" "$1"
}
openai_config=$(connection openai)
ollama_config=$(connection ollama "$key")
(
  cd "$work"
  # Scratch data, the offline flags (no model downloads, update checks or telemetry), then
  # the connections below; nothing else, in the defaults case.
  export DATA_DIR=$work/webui WEBUI_SECRET_KEY=open-webui-check \
    OFFLINE_MODE=true HF_HUB_OFFLINE=1 RAG_EMBEDDING_MODEL_AUTO_UPDATE=false \
    RAG_RERANKING_MODEL_AUTO_UPDATE=false ENABLE_VERSION_UPDATE_CHECK=false \
    ANONYMIZED_TELEMETRY=false DO_NOT_TRACK=true SCARF_NO_ANALYTICS=true
  if [[ $case == custom ]]; then
    # Side tasks off: each would be another answer to wait for on a 2-core box.
    export ENABLE_TITLE_GENERATION=false ENABLE_FOLLOW_UP_GENERATION=false ENABLE_TAGS_GENERATION=false
  fi
  export ENABLE_OPENAI_API=true OPENAI_API_BASE_URLS=http://127.0.0.1:$homeai_port/v1 OPENAI_API_KEYS=$key \
    OPENAI_API_CONFIGS=$openai_config \
    ENABLE_OLLAMA_API=true OLLAMA_BASE_URLS=http://127.0.0.1:$homeai_port \
    OLLAMA_API_CONFIGS=$ollama_config
  exec setsid "$venv/bin/open-webui" serve --host 127.0.0.1 --port "$webui_port"
) >"$work/logs/open-webui.log" 2>&1 &
webui=$!

wait_for() { # what url pattern seconds
  for _ in $(seq "$4"); do
    curl -s "$2" 2>/dev/null | grep -q "$3" && return 0
    sleep 1
  done
  echo "$1 did not start in $4 s; see $work/logs" >&2
  exit 1
}
wait_for HomeAI "http://127.0.0.1:$homeai_port/healthz" '"count": 1' 180
wait_for "Open WebUI" "http://127.0.0.1:$webui_port/health" '"status":true' 300
echo "HomeAI $(git describe --always --dirty) on port $homeai_port, Open WebUI $version on port $webui_port, $case"

export OWUI_CHECK_EXPORT=${OWUI_CHECK_EXPORT:-$root/tests/inference/exports/open-webui-$version-chat-export.json}
OWUI_CHECK_WEBUI_URL=http://127.0.0.1:$webui_port OWUI_CHECK_HOMEAI_USER=house OWUI_CHECK_CASE=$case \
  OWUI_CHECK_REGISTRY_URL=${HOMEAI_PULL_REGISTRY:-} \
  .venv/bin/python -m tests.openwebui.check_openwebui
