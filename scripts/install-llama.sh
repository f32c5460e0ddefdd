#!/usr/bin/env bash
# Installs the pinned llama-cpp-python into the venv, compiled for this machine: with
# CMAKE_ARGS when given, else with scripts/llama-cmake-native.sh's flags (-march=native, Intel
# AMX where its probe shows it works). Run by `make install` before the other requirements,
# after the Debian packages (the probe needs the compiler); does nothing when the venv already
# holds a build with the same version and flags.
#   scripts/install-llama.sh [venv]        (default .venv)
#
# pip caches the wheel it compiles under the package's version alone, so a build with other
# flags would come back from the cache: each set of flags gets a cache of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv}
pin=$(grep '^llama-cpp-python==' requirements.txt | cut -d' ' -f1)
[[ -n "$pin" ]] || { echo "requirements.txt pins no llama-cpp-python version" >&2; exit 1; }
flags=${CMAKE_ARGS:-$(sh scripts/llama-cmake-native.sh)}
want="$pin $flags"
stamp=$venv/.llama-cpp-build
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
id=$(printf '%s' "$flags" | cksum | cut -d' ' -f1)  # pip keys the wheel by version itself
echo "Compiling $pin with CMAKE_ARGS=$flags (cached afterwards)"
rm -f "$stamp"
CMAKE_ARGS="$flags" "$venv/bin/pip" install --cache-dir "${XDG_CACHE_HOME:-$HOME/.cache}/homeai/llama-cpp-python/$id" \
  --force-reinstall --no-deps "$pin"
echo "$want" > "$stamp"
