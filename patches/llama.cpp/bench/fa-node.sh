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
# changes (ggml-variant.sh). Needs cmake and g++.
set -euo pipefail
cd "$(dirname "$0")/../../.."
[[ $# -gt 0 ]] || set -- vendored patched=patches/llama.cpp/0001-ggml-cpu-flash-attention-gqa-decode.patch
work=${FA_NODE_WORK:-/var/tmp/homeai-fa-node}
names=()
for arg in "$@"; do
  name=${arg%%=*}
  names+=("$name")
  patches/llama.cpp/bench/ggml-variant.sh "$work" "$arg" patches/llama.cpp/bench/fa-node.c patches/llama.cpp/bench/fa-same.c
  dir=$work/$name
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
  match($0, /median [0-9.]+/); print c " | " $1 "\t" substr($0, RSTART + 7, RLENGTH - 7)
}' "$log" | awk -f patches/llama.cpp/bench/medians.awk | sort -s -t'|' -k1,1V
