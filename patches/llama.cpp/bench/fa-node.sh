#!/usr/bin/env bash
# Builds the CPU backend of the llama.cpp that the pinned llama-cpp-python vendors once per
# variant (as vendored, or with one patch) and runs fa-node (one decode step's flash attention,
# every layer) on each, the variants alternated within every round, for the default chat model's
# shape (SmolLM2-135M: head size 64, 9 query heads, 3 K/V heads, 30 layers) and Gemma 3 270M's
# (256, 4, 1, 18); then prints, per case and variant, the median of the rounds' medians and
# their range. Before timing, fa-same checks each variant's batch-vs-single bit identity.
#   patches/llama.cpp/bench/fa-node.sh [variant...]   variant: vendored | NAME=PATCH
#   (default: vendored patched=patches/llama.cpp/0001-ggml-cpu-flash-attention-gqa-decode.patch)
# FA_NODE_ROUNDS (3), FA_NODE_THREADS ("1 2"), FA_NODE_DEPTHS ("128 2000 4000"),
# FA_NODE_SHAPES ("64 9 3 30,256 4 1 18"), FA_NODE_REPS (30 steps a run).
# Scratch: FA_NODE_WORK (default /var/tmp/homeai-fa-node); a variant is rebuilt when its patch
# changes. Needs cmake and g++.
set -euo pipefail
cd "$(dirname "$0")/../../.."
[[ $# -gt 0 ]] || set -- vendored patched=patches/llama.cpp/0001-ggml-cpu-flash-attention-gqa-decode.patch
work=${FA_NODE_WORK:-/var/tmp/homeai-fa-node}
pin=$(grep '^llama-cpp-python==' requirements.txt | cut -d' ' -f1)
version=${pin#llama-cpp-python==}
sdist=${XDG_CACHE_HOME:-$HOME/.cache}/homeai/llama-cpp-python/sdist/llama_cpp_python-$version.tar.gz
[[ -f "$sdist" ]] || .venv/bin/pip download --quiet --no-binary :all: --no-deps "$pin" -d "$(dirname "$sdist")"
flags=$(sh scripts/llama-cmake-native.sh)
mkdir -p "$work"
names=()
for arg in "$@"; do
  name=${arg%%=*}
  patch=
  [[ $arg == *=* ]] && patch=$(realpath "${arg#*=}")
  [[ $name == vendored || -n $patch ]] || { echo "variant $arg: vendored or NAME=PATCH" >&2; exit 2; }
  names+=("$name")
  dir=$work/$name
  id=$version-$( (cat ${patch:+"$patch"} patches/llama.cpp/bench/fa-node.c; echo "$flags") | sha256sum | cut -c1-16)
  if [[ ! -x "$dir/fa-node" || $(cat "$dir/id" 2>/dev/null) != "$id" ]]; then
    echo "building $name" >&2
    rm -rf "$dir" && mkdir -p "$dir"
    tar xzf "$sdist" -C "$dir" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp/ggml"
    [[ -z $patch ]] || (cd "$dir" && patch -p1 --quiet < "$patch")
    touch "$dir/ggml/ggml.pc.in"  # the sdist leaves it out; ggml's own CMakeLists wants it
    eval "cmake -S '$dir/ggml' -B '$dir/build' -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
      -DGGML_LLAMAFILE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF $flags" > "$dir/cmake.log" 2>&1
    cmake --build "$dir/build" -j"$(nproc)" --target ggml-cpu ggml-base > "$dir/build.log" 2>&1
    g++ -O2 -x c patches/llama.cpp/bench/fa-node.c -x none -I"$dir/ggml/include" \
      "$dir/build/src/libggml-cpu.a" "$dir/build/src/libggml-base.a" -lgomp -lpthread -lm -o "$dir/fa-node"
    echo "$id" > "$dir/id"
  fi
  if [[ ! -x "$dir/fa-same" ]]; then
    g++ -O2 -x c patches/llama.cpp/bench/fa-same.c -x none -I"$dir/ggml/include" \
      "$dir/build/src/libggml-cpu.a" "$dir/build/src/libggml-base.a" -lgomp -lpthread -lm -o "$dir/fa-same"
  fi
  for depth in 100 2000 4000; do
    printf '%-8s batch vs single, ' "$name"
    "$dir/fa-same" "$depth" || true
  done
done
log=$work/last.log
: > "$log"
IFS=, read -r -a shapes <<< "${FA_NODE_SHAPES:-64 9 3 30,256 4 1 18}"
for round in $(seq "${FA_NODE_ROUNDS:-3}"); do
  for shape in "${shapes[@]}"; do
    read -r dk nh nkv layers <<< "$shape"
    for depth in ${FA_NODE_DEPTHS:-128 2000 4000}; do
      for t in ${FA_NODE_THREADS:-1 2}; do
        for name in "${names[@]}"; do
          printf '%-8s round %s  ' "$name" "$round" | tee -a "$log"
          "$work/$name/fa-node" "$dk" "$nh" "$nkv" 1 "$depth" "$t" "${FA_NODE_REPS:-30}" "$layers" | tee -a "$log"
        done
      done
    done
  done
done
# summary: per case and variant, the median of the rounds' medians (µs per step) and their range
echo
echo "case (head size, heads, depth, threads): variant median-of-medians [min-max of the rounds' medians] µs"
awk '{
  match($0, /DK=[0-9]+ heads=[0-9]+\/[0-9]+ rows=[0-9]+ depth=[0-9]+ threads=[0-9]+/); c = substr($0, RSTART, RLENGTH)
  match($0, /median [0-9.]+/); m = substr($0, RSTART + 7, RLENGTH - 7)
  k = c " | " $1; if (!(k in n)) order[++nk] = k; v[k, ++n[k]] = m + 0
} END {
  for (i = 1; i <= nk; i++) {
    k = order[i]; cnt = n[k]
    for (a = 1; a <= cnt; a++) for (b = a + 1; b <= cnt; b++) if (v[k, b] < v[k, a]) { x = v[k, a]; v[k, a] = v[k, b]; v[k, b] = x }
    med = cnt % 2 ? v[k, (cnt + 1) / 2] : (v[k, cnt / 2] + v[k, cnt / 2 + 1]) / 2
    printf "%-60s %9.1f [%.1f-%.1f] (%d rounds)\n", k, med, v[k, 1], v[k, cnt], cnt
  }
}' "$log" | sort -s -t'|' -k1,1V
