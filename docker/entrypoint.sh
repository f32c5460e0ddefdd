#!/bin/sh
# HomeAI's container entrypoint. One image, several roles, chosen by the first argument:
#
#   web            apply migrations (unless HOMEAI_MIGRATE_ON_START=0), make sure the model file
#                  exists, then serve HTTP and WebSockets with daphne on $PORT (default 8000)
#   worker         make sure the model file exists, then run a Celery worker
#                  (a task thread per slot, as the settings size them; queue HOMEAI_QUEUE)
#   init           migrations, then the model: what the compose file's one-shot service runs,
#                  so that web and worker start against a ready database and model
#   migrate        apply database migrations and exit
#   prepare-model  assemble the bundled model into HOMEAI_MODELS_DIR if it is missing, and exit
#   manage ARGS    python manage.py ARGS
#   healthcheck [web|worker]
#                  exit 0 when this container's role answers (the image's HEALTHCHECK)
#   anything else  run as given, e.g. `sh`
#
# Started as root with HOMEAI_DROP_PRIVILEGES=1 (the image's default), it first gives the
# account HOMEAI_USER the uid PUID and gid PGID, hands the data and models directories to
# them, and runs everything else as that account. Started as any other user (`docker run
# --user`, or natively), it runs as that user and changes no ownership.
#
# It also runs without a container: HOMEAI_APP_DIR names the checkout, and python, daphne and
# celery are taken from PATH (put the virtual environment's bin directory first).
set -eu

# This script's absolute path, to run it again after switching users (it changes directory).
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
APP_DIR=${HOMEAI_APP_DIR:-/app}
cd "$APP_DIR"
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-homeai.settings}"

log() {
  echo "homeai: $*" >&2
}

die() {
  log "$*"
  exit 1
}

data_dir() {
  echo "${HOMEAI_DATA_DIR:-$APP_DIR/data}"
}

models_dir() {
  echo "${HOMEAI_MODELS_DIR:-$(data_dir)/models}"
}

is_uint() {
  case "$1" in
    '' | *[!0-9]*) return 1 ;;
    *) return 0 ;;
  esac
}

# Root only long enough to fix ownership, then the same script again as PUID:PGID.
drop_privileges() {
  [ "$(id -u)" = 0 ] || return 0
  [ "${HOMEAI_DROP_PRIVILEGES:-0}" = 1 ] || return 0
  uid=${PUID:-1000}
  gid=${PGID:-1000}
  is_uint "$uid" || die "PUID=$uid is not a numeric user id."
  is_uint "$gid" || die "PGID=$gid is not a numeric group id."
  if [ "$uid" = 0 ]; then
    log "PUID=0: running as root."
    return 0
  fi
  user=${HOMEAI_USER:-homeai}
  home=""
  if id "$user" >/dev/null 2>&1; then
    # The account takes the ids, for names in `ps` and `ls`. On a read-only root file system
    # (compose's read_only) /etc cannot change: the ids are then used without a name.
    if [ "$(id -g "$user")" != "$gid" ] || [ "$(id -u "$user")" != "$uid" ]; then
      if groupmod --non-unique --gid "$gid" "$(id -gn "$user")" 2>/dev/null &&
        usermod --non-unique --uid "$uid" "$user" 2>/dev/null; then
        home=$(getent passwd "$user" | cut -d: -f6)
      else
        log "could not give the account $user the ids $uid:$gid (read-only /etc?); running as $uid:$gid."
      fi
    else
      home=$(getent passwd "$user" | cut -d: -f6)
    fi
  fi
  data=$(data_dir)
  models=$(models_dir)
  for dir in "$data" "$models"; do
    mkdir -p "$dir" || die "Cannot create $dir."
    # Only what is not already theirs: a large model library on a NAS disk is then not
    # walked file by file at every start. A read-only mount or a squashing NFS export
    # refuses; that is fine as long as the account can read (models) or write (data) it.
    if ! find "$dir" \( ! -user "$uid" -o ! -group "$gid" \) -exec chown -h "$uid:$gid" {} + 2>/dev/null; then
      log "could not give $dir to $uid:$gid; continuing with its current ownership."
    fi
  done
  export HOME="${home:-$data}"
  if command -v setpriv >/dev/null 2>&1; then
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$SELF" "$@"
  elif command -v gosu >/dev/null 2>&1; then
    exec gosu "$uid:$gid" "$SELF" "$@"
  fi
  die "Neither setpriv nor gosu is installed: cannot switch to $uid:$gid."
}

require_writable_data() {
  data=$(data_dir)
  mkdir -p "$data" 2>/dev/null || true
  if [ ! -w "$data" ]; then
    die "The data directory $data is not writable by uid $(id -u) gid $(id -g). Set PUID and PGID to the owner of the folder you mapped (see docs/install.md), or change its owner."
  fi
}

manage() {
  python "$APP_DIR/manage.py" "$@"
}

migrate() {
  manage migrate --noinput
}

prepare_model() {
  manage prepare_model
}

# The role whose server runs in this container: the one named, or else the one found among
# the container's processes (not only PID 1, which is an init process under `docker run
# --init` or compose's `init: true`). Prints nothing when neither server runs.
running_role() {
  for f in /proc/[0-9]*/cmdline; do
    cmdline=$(tr '\0' ' ' <"$f" 2>/dev/null) || continue
    case "$cmdline" in
      *bin/daphne\ *) echo web && return 0 ;;
      *bin/celery\ *\ worker\ *) echo worker && return 0 ;;
    esac
  done
}

# Runs a check as the app's account when the container runs as root (as its servers do), so
# that a check that starts Django never creates a file in the data directory that the app
# cannot read.
as_app_user() {
  if [ "$(id -u)" = 0 ] && [ "${HOMEAI_DROP_PRIVILEGES:-0}" = 1 ] && [ "${PUID:-1000}" != 0 ] &&
    command -v setpriv >/dev/null 2>&1; then
    exec setpriv --reuid="${PUID:-1000}" --regid="${PGID:-1000}" --clear-groups -- "$@"
  fi
  exec "$@"
}

# Exit 0 only when this container's role answers; an unknown role, or no server at all, is
# unhealthy.
healthcheck() {
  role=${1:-$(running_role)}
  case "$role" in
    web)
      # The address daphne binds (HOST), as a client reaches it: 0.0.0.0 and :: are any address.
      host=${HOST:-0.0.0.0}
      case "$host" in
        0.0.0.0 | '') host=127.0.0.1 ;;
        :: | '[::]') host='[::1]' ;;
        \[*) ;;
        *:*) host="[$host]" ;;
      esac
      # /healthz/web: this web process reaches its database and Redis (a worker that is down
      # makes /healthz 503, and the worker's own check unhealthy, but not this one).
      export HEALTHCHECK_URL="http://$host:${PORT:-8000}/healthz/web"
      as_app_user python -c '
import json
import os
import sys
import urllib.request

url = os.environ["HEALTHCHECK_URL"]
try:
    with urllib.request.urlopen(url, timeout=8) as resp:
        body = json.loads(resp.read())
except Exception as exc:  # 503 (database or Redis down), refused, timeout
    sys.exit("unhealthy: %s: %s" % (url, exc))
sys.exit(0 if body.get("status") == "ok" else "unhealthy: %s" % body)
'
      ;;
    worker)
      as_app_user celery -A homeai inspect ping --destination "celery@$(hostname)" --timeout 10
      ;;
    '') die "healthcheck: neither daphne (web) nor a celery worker runs here." ;;
    *) die "healthcheck: unknown role $role (web or worker)." ;;
  esac
}

cmd=${1:-web}
if [ "$#" -gt 0 ]; then
  shift
fi

case "$cmd" in
  healthcheck)
    healthcheck "$@"
    ;;
esac

drop_privileges "$cmd" "$@"

case "$cmd" in
  web)
    require_writable_data
    case "${HOMEAI_MIGRATE_ON_START:-1}" in
      0 | false | no | off) log "HOMEAI_MIGRATE_ON_START=${HOMEAI_MIGRATE_ON_START}: not migrating." ;;
      *) migrate ;;
    esac
    prepare_model
    # Until an account exists, the log carries the one-time link that creates the admin account.
    python manage.py setup_link --base-url "${HOMEAI_PUBLIC_URL:-http://SERVER:${PORT:-8000}}" ||
      log "could not print the setup link (is the database migrated?)"
    if [ -z "${HOMEAI_PUBLIC_URL:-}" ] && [ -z "${ALLOWED_HOSTS:-}" ]; then
      log "HOMEAI_PUBLIC_URL is not set: this server answers to address literals and home-network names" \
        "(nas, nas.local, .lan, .home.arpa). For a DNS name such as ai.example.org, set HOMEAI_PUBLIC_URL" \
        "(e.g. https://ai.example.org) or list the names in ALLOWED_HOSTS."
    fi
    # No --proxy-headers: daphne would take X-Forwarded-For's leftmost hop from any client.
    # HOMEAI_BEHIND_TLS_PROXY and HOMEAI_TRUSTED_PROXIES decide it in the app (infra/forwarded.py).
    exec daphne -b "${HOST:-0.0.0.0}" -p "${PORT:-8000}" "$@" homeai.asgi:application
    ;;
  worker)
    require_writable_data
    prepare_model
    # No Celery events (gossip, mingle, its heartbeat): HomeAI keeps its own heartbeat in Redis.
    exec celery -A homeai worker -P threads -Q "${HOMEAI_QUEUE:-homeai}" \
      --without-gossip --without-mingle --without-heartbeat --loglevel "${LOG_LEVEL:-INFO}" "$@"
    ;;
  init)
    require_writable_data
    migrate
    prepare_model
    ;;
  migrate)
    require_writable_data
    migrate
    ;;
  prepare-model)
    require_writable_data
    prepare_model
    ;;
  manage)
    exec python "$APP_DIR/manage.py" "$@"
    ;;
  *)
    exec "$cmd" "$@"
    ;;
esac
