#!/bin/sh
# Prints the CMake arguments for a llama.cpp built for this very machine (llama-cpp-python in
# the venv, `make llama-server`): -march=native, with Intel AMX tiles only where they work.
#
# AMX (Sapphire Rapids and later Xeons) makes ggml's quantized matrix products with more than
# one row (a prompt's prefill, a speculative draft's check, several answers' decode step) several
# times cheaper (docs/bench/journal.md). Two things can break it, so a probe decides:
# - the kernel must let the process use the tile registers (arch_prctl), which a virtual machine
#   that merely advertises AMX in CPUID does not;
# - GCC 12 (Debian 12's) drops the stores that fill in a tile configuration before
#   _tile_loadconfig at -O2 and above (the builtin is not known to read its operand), so ggml's
#   configuration is garbage and its first tile instruction faults (SIGSEGV or SIGILL, by what
#   the stack held). Without dead-store elimination (-fno-dse -fno-tree-dse) the stores stay.
# The probe is compiled the way ggml's code is (-O3 -march=native, a zero-initialised struct
# filled in field by field) and runs one int8 tile product; AMX stays in only when it is right.
#
#   sh scripts/llama-cmake-native.sh                  # e.g. -DGGML_NATIVE=ON
#   HOMEAI_AMX=off sh scripts/llama-cmake-native.sh   # leave AMX out whatever the probe says
set -eu
native="-DGGML_NATIVE=ON"
no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
keep_stores="-fno-dse -fno-tree-dse"
case "$(uname -m)" in
  x86_64 | amd64) ;;
  *) echo "$native"; exit 0 ;;
esac

probe() { # $1: extra compiler flags; true when the probe prints 128
  c++ -x c++ -std=c++17 -O3 -march=native $1 -o "$dir/probe" "$dir/probe.cpp" 2>/dev/null || return 1
  # (in a subshell: a probe killed by SIGILL is not reported on this script's stderr)
  [ "$( ("$dir/probe") 2>/dev/null)" = 128 ]
}

flags=none
if [ "${HOMEAI_AMX:-auto}" != off ] && grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  cat >"$dir/probe.cpp" <<'EOF'
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
struct tile_config {
  uint8_t palette = 0, start_row = 0, reserved[14] = {0};
  uint16_t colsb[16] = {0};
  uint8_t rows[16] = {0};
};
__attribute__((noinline)) static void configure() {
  alignas(64) tile_config cfg = {};
  cfg.palette = 1;
  for (int i = 0; i < 3; i++) { cfg.rows[i] = 16; cfg.colsb[i] = 64; }
  _tile_loadconfig(&cfg);
}
int main() {
  static int8_t a[16 * 64], b[16 * 64];
  static int32_t c[16 * 16];
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */)) return 1;
  for (int i = 0; i < 16 * 64; i++) { a[i] = 1; b[i] = 2; }
  configure();
  _tile_zero(0);
  _tile_loadd(1, a, 64);
  _tile_loadd(2, b, 64);
  _tile_dpbssd(0, 1, 2);
  _tile_stored(0, c, 64);
  _tile_release();
  printf("%d\n", c[0]);
  return 0;
}
EOF
  if probe "" 2>/dev/null; then
    flags=""
  elif probe "$keep_stores" 2>/dev/null; then
    flags=$keep_stores
  fi
fi
case "$flags" in
  none) echo "$native -DCMAKE_C_FLAGS='$no_amx' -DCMAKE_CXX_FLAGS='$no_amx'" ;;
  "") echo "$native" ;;
  *) echo "$native -DCMAKE_C_FLAGS='$flags' -DCMAKE_CXX_FLAGS='$flags'" ;;
esac
