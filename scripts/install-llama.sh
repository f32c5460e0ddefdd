#!/usr/bin/env bash
# Installs the pinned llama-cpp-python into the venv, compiled for this machine: with
# CMAKE_ARGS when given, else with scripts/llama-cmake-native.sh's flags (-march=native, Intel
# AMX where its probe shows it works), and with HomeAI's llama.cpp patches (patches/llama.cpp)
# applied to the llama.cpp inside its sdist. Run by `make install` before the other
# requirements, after the Debian packages (the probe needs the compiler); does nothing when the
# venv already holds a build with the same version, flags and patches.
#   scripts/install-llama.sh [venv]        (default .venv)
#   LLAMA_PATCHES=none scripts/install-llama.sh   # without the patches, for comparisons
#
# The sdist is downloaded once and the compiled wheel is kept, one per set of flags and
# patches, under ~/.cache/homeai/llama-cpp-python: a second venv, or going back to earlier
# flags, installs it without compiling again.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv}
pin=$(grep '^llama-cpp-python==' requirements.txt | cut -d' ' -f1)
[[ -n "$pin" ]] || { echo "requirements.txt pins no llama-cpp-python version" >&2; exit 1; }
version=${pin#llama-cpp-python==}
flags=${CMAKE_ARGS:-$(sh scripts/llama-cmake-native.sh)}
patches=$(sh patches/llama.cpp/apply.sh --id)
want="$pin $flags patches=$patches"
stamp=$venv/.llama-cpp-build
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/homeai/llama-cpp-python
wheels=$cache/$(printf '%s' "$flags" | cksum | cut -d' ' -f1)-$patches
rm -f "$stamp"
wheel=
if [[ -d "$wheels" ]]; then
  wheel=$(find "$wheels" -maxdepth 1 -name "llama_cpp_python-$version-*.whl" | head -n 1)
fi
if [[ -z "$wheel" ]]; then
  echo "Compiling $pin with CMAKE_ARGS=$flags, llama.cpp patches: $patches (cached afterwards)"
  sdist=$cache/sdist/llama_cpp_python-$version.tar.gz
  if [[ ! -f "$sdist" ]]; then
    "$venv/bin/pip" download --quiet --no-binary :all: --no-deps "$pin" -d "$cache/sdist"
  fi
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  tar -xzf "$sdist" -C "$src" --strip-components=1
  sh patches/llama.cpp/apply.sh "$src/vendor/llama.cpp"
  CMAKE_ARGS="$flags" "$venv/bin/pip" wheel --no-deps --no-cache-dir -w "$wheels" "$src"
  wheel=$(find "$wheels" -maxdepth 1 -name "llama_cpp_python-$version-*.whl" | head -n 1)
  [[ -n "$wheel" ]] || { echo "pip built no llama-cpp-python $version wheel in $wheels" >&2; exit 1; }
fi
"$venv/bin/pip" install --force-reinstall --no-deps "$wheel"
echo "$want" > "$stamp"
