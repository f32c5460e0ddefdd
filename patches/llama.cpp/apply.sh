#!/bin/sh
# Applies the llama.cpp patches in this folder (*.patch, in name order) to a llama.cpp source
# tree, such as the vendor/llama.cpp of the llama-cpp-python sdist; or prints an identity of the
# patches for build stamps and caches, which changes whenever a patch does.
#
#   sh patches/llama.cpp/apply.sh <llama.cpp dir>
#   sh patches/llama.cpp/apply.sh --id        # e.g. 3f2a9c0d1b7e4a55, or "none"
#
# LLAMA_PATCHES=none: apply nothing (identity "none"), for the unpatched build that benchmarks
# compare against. Needs patch(1) (Debian's patch package; build-essential brings it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
set -- "${1:-}" "$here"/*.patch
arg=$1
shift
[ -e "${1:-}" ] || set --           # no patches: the glob stayed unexpanded
[ "${LLAMA_PATCHES:-all}" != none ] || set --

if [ "$arg" = --id ]; then
  if [ $# -eq 0 ]; then
    echo none
  else
    cat "$@" | sha256sum | cut -c1-16
  fi
  exit 0
fi

[ -n "$arg" ] && [ -d "$arg" ] || { echo "usage: $0 <llama.cpp dir> | --id" >&2; exit 1; }
for p in "$@"; do
  echo "Applying $(basename "$p")"
  patch -d "$arg" -p1 -N -s -i "$p"
done
