#!/usr/bin/env bash
# Builds the CPU backend of the llama.cpp that the pinned llama-cpp-python vendors twice, as
# vendored and with one patch, and runs fa-node (one decode step's flash attention, every
# layer) on both, alternated, for the default chat model's shape (SmolLM2-135M: head size 64,
# 9 query heads, 3 K/V heads, 30 layers) and Gemma 3 270M's (256, 4, 1, 18).
#   patches/llama.cpp/bench/fa-node.sh [patch]   (default: the held flash-attention patch)
# Scratch: FA_NODE_WORK (default /var/tmp/homeai-fa-node). Needs cmake and g++.
set -euo pipefail
cd "$(dirname "$0")/../../.."
patch=$(realpath "${1:-patches/llama.cpp/held/0001-ggml-cpu-flash-attention-gqa-decode.patch}")
work=${FA_NODE_WORK:-/var/tmp/homeai-fa-node}
pin=$(grep '^llama-cpp-python==' requirements.txt | cut -d' ' -f1)
version=${pin#llama-cpp-python==}
sdist=${XDG_CACHE_HOME:-$HOME/.cache}/homeai/llama-cpp-python/sdist/llama_cpp_python-$version.tar.gz
[[ -f "$sdist" ]] || .venv/bin/pip download --quiet --no-binary :all: --no-deps "$pin" -d "$(dirname "$sdist")"
flags=$(sh scripts/llama-cmake-native.sh)
mkdir -p "$work"
for variant in vendored patched; do
  dir=$work/$variant
  if [[ ! -x "$dir/fa-node" ]]; then
    rm -rf "$dir" && mkdir -p "$dir"
    tar xzf "$sdist" -C "$dir" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp/ggml"
    [[ $variant == patched ]] && (cd "$dir" && patch -p1 --quiet < "$patch")
    touch "$dir/ggml/ggml.pc.in"  # the sdist leaves it out; ggml's own CMakeLists wants it
    eval "cmake -S '$dir/ggml' -B '$dir/build' -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
      -DGGML_LLAMAFILE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF $flags" > "$dir/cmake.log"
    cmake --build "$dir/build" -j"$(nproc)" --target ggml-cpu ggml-base > "$dir/build.log"
    g++ -O2 -x c patches/llama.cpp/bench/fa-node.c -x none -I"$dir/ggml/include" \
      "$dir/build/src/libggml-cpu.a" "$dir/build/src/libggml-base.a" -lgomp -lpthread -lm -o "$dir/fa-node"
  fi
done
threads=${FA_NODE_THREADS:-1 2}
for round in 1 2; do
  for shape in "64 9 3 30" "256 4 1 18"; do
    read -r dk nh nkv layers <<< "$shape"
    for depth in 128 2000 4000; do
      for t in $threads; do
        for variant in vendored patched; do
          printf '%-8s round %s  ' "$variant" "$round"
          "$work/$variant/fa-node" "$dk" "$nh" "$nkv" 1 "$depth" "$t" 30 "$layers"
        done
      done
    done
  done
done
