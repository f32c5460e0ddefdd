#!/bin/sh
# Prints the CMake arguments llama-cpp-python compiles llama.cpp with in the images, for one
# target architecture (Docker's TARGETARCH: amd64, arm64, ...; default: this machine's).
#
#   sh docker/llama-cmake-args.sh arm64
#   ARM64_CPU=armv8.2-a+dotprod+fp16 sh docker/llama-cmake-args.sh arm64
#
# Never -march=native (GGML_NATIVE=OFF): the image runs on other processors than the one that
# built it.
# - amd64: every x86-64 generation's CPU backend (SSE4.2 up to AVX-512 and Sapphire Rapids'
#   AMX) is built as its own library, and at start the best one the processor supports is
#   loaded (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS). Without dead-store elimination: GCC 12
#   (Debian 12's) otherwise drops the stores that fill in ggml's AMX tile configuration and the
#   AMX variant dies on its first matrix product (scripts/llama-cmake-native.sh has the story;
#   -fno-dse is the pass that matters, and one word here keeps the flags splittable).
# - arm64: one CPU backend for ARM64_CPU, by default the Armv8.0 baseline (NEON), which every
#   64-bit Arm board runs, a Raspberry Pi 4 included. llama.cpp's per-generation Arm variants go
#   up to Armv9.2 with SME, which Debian 12's GCC 12 cannot compile, so they are not used. An
#   Armv8.2 or later box (Raspberry Pi 5, RK3588, Graviton) gets faster quantized matrix
#   products from ARM64_CPU=armv8.2-a+dotprod+fp16 (the build argument of the same name).
# - anything else: one backend for the architecture's baseline.
set -eu
arch=${1:-$(dpkg --print-architecture 2>/dev/null || uname -m)}
common="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON"
case "$arch" in
  amd64 | x86_64) echo "$common -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_C_FLAGS=-fno-dse -DCMAKE_CXX_FLAGS=-fno-dse" ;;
  arm64 | aarch64) echo "$common -DGGML_CPU_ARM_ARCH=${ARM64_CPU:-armv8-a}" ;;
  *) echo "$common" ;;
esac
