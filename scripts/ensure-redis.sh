#!/usr/bin/env bash
# Redis for HomeAI on this machine: scripts/run.sh sources this file and calls ensure_redis (it
# exports what the web and worker need); scripts/test.sh runs it.
#
# - REDIS_URL set: that Redis, and the URL is used unchanged. When nothing answers there and it
#   is on this machine, Redis is started there asking for the password HomeAI will send: the
#   URL's, else REDIS_PASSWORD_FILE's (made when missing) or REDIS_PASSWORD's, else none.
# - REDIS_URL unset: the Redis on 127.0.0.1:HOMEAI_REDIS_PORT (6379). If one that asks no
#   password already answers there (a developer's machine), it is used as it is, and said so.
#   Otherwise its password is the one kept in the data folder (redis_password, generated on the
#   first start, 0600, like the secret key; REDIS_PASSWORD_FILE names another file), exported
#   as REDIS_PASSWORD_FILE for the web and worker, and Redis is started with it if none answers.
#
# The password reaches redis-server on its standard input and redis-cli through REDISCLI_AUTH,
# never on a command line that `ps` shows.

data_dir() {
  echo "${HOMEAI_DATA_DIR:-$(pwd)/data}"
}

# The password in REDIS_PASSWORD_FILE (generated there when the file is missing: 48 hex digits,
# created 0600 with O_EXCL by bash's noclobber), else REDIS_PASSWORD's.
redis_password() {
  local file=${REDIS_PASSWORD_FILE:-}
  if [[ -z $file ]]; then
    printf '%s' "${REDIS_PASSWORD:-}"
    return
  fi
  if [[ ! -e $file ]]; then
    mkdir -p "$(dirname "$file")"
    (umask 077 && set -C && od -An -v -N24 -tx1 /dev/urandom | tr -d ' \n' >"$file") 2>/dev/null || true
  fi
  local password
  password=$(<"$file")
  printf '%s' "$password"
}

# The host:port of the Redis URL $1, and its password (decoded), each on a line.
url_parts() {
  local rest=${1#*://} userinfo='' password='' hostport
  if [[ $rest == *@* ]]; then
    userinfo=${rest%%@*}
    rest=${rest#*@}
  fi
  [[ $userinfo == *:* ]] && password=${userinfo#*:}
  hostport=${rest%%/*}
  hostport=${hostport%%\?*}
  [[ $hostport =~ :[0-9]+$ ]] || hostport=$hostport:6379
  printf '%s\n' "$hostport"
  printf '%b\n' "${password//%/\\x}"
}

# What Redis at $1 answers to PING, sent with the password $2 unless the URL carries one;
# nothing when none answers.
redis_ping() {
  if [[ -n $2 ]]; then
    REDISCLI_AUTH=$2 redis-cli -u "$1" ping 2>/dev/null || true
  else
    redis-cli -u "$1" ping 2>/dev/null || true
  fi
}

# Starts redis-server on this machine for host:port $1, asking for the password $2 (none if
# empty); $3 is the URL to ping.
start_redis() {
  local host=${1%:*} port=${1##*:} password=$2 url=$3 dir
  case "$host" in
    127.0.0.1 | localhost | '[::1]') ;;
    *)
      echo "Redis at $1 does not answer, and it is not on this machine: start it there." >&2
      return 1
      ;;
  esac
  dir=$(data_dir)/redis
  echo "Starting Redis on 127.0.0.1:$port (data in $dir${password:+, with a password})" >&2
  # The password as a config file's quoted string, each byte escaped: any byte is safe there.
  local quoted
  quoted=$(printf '%s' "$password" | od -An -v -tx1 | tr -d ' \n' | sed 's/../\\x&/g')
  # Its folder and files are this account's alone, as every HomeAI file is (umask 077).
  (
    umask 077
    mkdir -p "$dir"
    if [[ -n $password ]]; then printf 'requirepass "%s"\n' "$quoted"; fi |
      redis-server - --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$dir" --save "" \
        --appendonly no --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" >/dev/null
  )
  # An upper bound on a busy machine's start, not a measurement.
  for _ in $(seq 300); do
    [[ $(redis_ping "$url" "$password") == PONG ]] && return 0
    sleep 0.1
  done
  echo "Redis did not start; see $dir/redis.log" >&2
  return 1
}

ensure_redis() {
  local url hostport password answer
  if [[ -n ${REDIS_URL:-} ]]; then
    url=$REDIS_URL
  else
    url=redis://127.0.0.1:${HOMEAI_REDIS_PORT:-6379}/0
    export REDIS_URL=$url
    if [[ -z ${REDIS_PASSWORD_FILE:-} && -z ${REDIS_PASSWORD:-} && $(redis_ping "$url" "") == PONG ]]; then
      echo "homeai: using the Redis that answers on 127.0.0.1:${HOMEAI_REDIS_PORT:-6379} without a password (stop it to have HomeAI start one with a password, or set REDIS_URL)." >&2
      return 0
    fi
    if [[ -z ${REDIS_PASSWORD:-} ]]; then
      export REDIS_PASSWORD_FILE=${REDIS_PASSWORD_FILE:-$(data_dir)/redis_password}
    fi
  fi
  { read -r hostport && read -r password; } < <(url_parts "$url")
  # The URL's password wins, as in the settings.
  [[ -n $password ]] || password=$(redis_password)
  answer=$(redis_ping "$url" "$password")
  case "$answer" in
    PONG) return 0 ;;
    '') start_redis "$hostport" "$password" "$url" ;;
    *)
      echo "Redis at $hostport answers \"$answer\": give HomeAI its password (REDIS_URL or REDIS_PASSWORD_FILE)." >&2
      return 1
      ;;
  esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  ensure_redis
fi
