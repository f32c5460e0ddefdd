#!/usr/bin/env bash
# One MUL_MAT node (mm-node.c) on the CPU backend of the vendored llama.cpp and of each variant
# (vendored | NAME=PATCH, built by ggml-variant.sh), the variants alternated within every round:
# per case, each variant's output hash (equal: the same bits) and the median of its rounds'
# median microseconds, with their range.
#   patches/llama.cpp/bench/mm-node.sh [variant...]
#   (default: vendored patched=patches/llama.cpp/0003-ggml-cpu-prefetch-the-next-rows-in-tinyblas-q0-avx.patch)
# MM_NODE_CASES ("TYPE k m copies", comma-separated; default Gemma 3 270M's output matrix and
# SmolLM2-135M's), MM_NODE_N ("1 2 3 4 8 16 64"), MM_NODE_ROUNDS (3), MM_NODE_THREADS (2),
# MM_NODE_REPS (15). Scratch: MM_NODE_WORK (default /var/tmp/homeai-mm-node).
set -euo pipefail
cd "$(dirname "$0")/../../.."
[[ $# -gt 0 ]] || set -- vendored patched=patches/llama.cpp/0003-ggml-cpu-prefetch-the-next-rows-in-tinyblas-q0-avx.patch
work=${MM_NODE_WORK:-/var/tmp/homeai-mm-node}
names=()
for arg in "$@"; do
  name=${arg%%=*}
  names+=("$name")
  patches/llama.cpp/bench/ggml-variant.sh "$work" "$arg" patches/llama.cpp/bench/mm-node.c
done
log=$work/last.log
: > "$log"
IFS=, read -r -a cases <<< "${MM_NODE_CASES:-q8_0 640 262144 1,q8_0 576 49152 1}"
for round in $(seq "${MM_NODE_ROUNDS:-3}"); do
  for c in "${cases[@]}"; do
    read -r type k m copies <<< "$c"
    for n in ${MM_NODE_N:-1 2 3 4 8 16 64}; do
      for name in "${names[@]}"; do
        printf '%-8s ' "$name" | tee -a "$log"
        "$work/$name/mm-node" "$type" "$k" "$m" "$n" "${MM_NODE_THREADS:-2}" "${MM_NODE_REPS:-15}" "$copies" | tee -a "$log"
      done
    done
  done
done
echo
echo "case: variant output-hash median-of-medians [min-max of the rounds' medians] us"
awk '{ print $2 " " $3 " " $4 " " $5 " " $6 " | " $1 " " $9 "\t" $11 }' "$log" | awk -f patches/llama.cpp/bench/medians.awk
