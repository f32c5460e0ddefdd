#!/usr/bin/env bash
# Builds llama.cpp's own llama-server (and llama-bench, llama-batched-bench) from the llama.cpp
# sources inside the pinned llama-cpp-python sdist (its vendor/llama.cpp), with HomeAI's
# llama.cpp patches (patches/llama.cpp) applied as in scripts/install-llama.sh, so the serving
# benchmark compares HomeAI with the very llama.cpp it runs. Output: build/llama.cpp/bin/
# (LLAMA_BUILD_DIR=<dir> elsewhere: scripts/gpu-bench.sh builds a CUDA one beside it).
# Cached: a second run with the same pinned version, flags and patches does nothing.
#   make llama-server                  (about 12 minutes on 2 cores; JOBS=n to change -j)
#   LLAMA_PATCHES=none make llama-server   # unpatched, into build/llama.cpp-unpatched/bin/
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^llama-cpp-python==\([^ ]*\).*/\1/p' requirements.txt)
[[ -n "$version" ]] || { echo "requirements.txt pins no llama-cpp-python version" >&2; exit 1; }
patches=$(sh patches/llama.cpp/apply.sh --id)
if [[ "${LLAMA_PATCHES:-all}" == none ]]; then
  root=${LLAMA_BUILD_DIR:-build/llama.cpp-unpatched}
else
  root=${LLAMA_BUILD_DIR:-build/llama.cpp}
fi
targets=(llama-server llama-bench llama-batched-bench)
# CMAKE_ARGS when given, else the flags llama-cpp-python is compiled with (scripts/install-llama.sh):
# -march=native, Intel AMX where its probe shows it works.
eval "extra=(${CMAKE_ARGS:-$(sh scripts/llama-cmake-native.sh)})"
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "${extra[@]}")
stamp="$root/bin/.built"
want="llama-cpp-python==$version ${flags[*]} patches=$patches"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "llama-server from llama-cpp-python $version (llama.cpp patches: $patches) is up to date: $root/bin/llama-server"
  exit 0
fi
mkdir -p "$root/sdist"
sdist="$root/sdist/llama_cpp_python-$version.tar.gz"
if [[ ! -f "$sdist" ]]; then
  pip=(.venv/bin/pip)
  [[ -x .venv/bin/pip ]] || pip=(python3 -m pip)
  "${pip[@]}" download --quiet --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$root/sdist"
fi
rm -rf "$root/src"
mkdir -p "$root/src"
tar -xzf "$sdist" -C "$root/src" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp"
sh patches/llama.cpp/apply.sh "$root/src"
cmake -S "$root/src" -B "$root/cmake" "${flags[@]}"
nice -n "${NICE:-10}" cmake --build "$root/cmake" --config Release -j "${JOBS:-2}" --target "${targets[@]}"
mkdir -p "$root/bin"
for target in "${targets[@]}"; do
  cp "$root/cmake/bin/$target" "$root/bin/"
done
echo "$want" > "$stamp"
echo "Built $root/bin/llama-server from llama-cpp-python $version (llama.cpp patches: $patches)"
