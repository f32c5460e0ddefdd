#!/usr/bin/env bash
# `make image-test`: builds the CPU image (docker/Dockerfile) with Podman, then runs
# docker/compose.yaml with podman-compose, as a NAS's Docker would, and checks it from outside
# the containers (tests/image/compose_check.py): first-run setup, a chat answer streamed over
# the WebSocket, an OpenAI API answer, /metrics, the container healthchecks, the worker
# restarting after it is killed, and an upgrade (rebuild with a new revision) that keeps every
# row. Debian 12 or later, as root; needs the apt mirror and PyPI, no Docker and no registry.
#
#   scripts/image-test.sh                 # everything
#   IMAGE_TEST_STEPS=build scripts/image-test.sh   # only build the image
#
# Steps (IMAGE_TEST_STEPS, default build,arm64,check): build (the image), arm64 (llama.cpp's
# configure step for arm64 selects portable flags), check (the compose app), and cuda (not by
# default: about half an hour; llama.cpp's CUDA backend compiled with the CUDA image's flags).
#
# Scratch space (Podman's storage, the base image's root file system, the volumes) is
# IMAGE_TEST_WORK, /var/tmp/homeai-image by default, outside the checkout; Podman's build
# cache there keeps later runs short (the llama.cpp compile is redone only when
# requirements.txt, the llama.cpp flags or the base image change).
#
# How this build host differs from a NAS, and what is done about it:
#  - No base image is pulled: a Debian 12 (bookworm) root file system with Debian's python3
#    (3.11) is made with mmdebstrap from this host's apt mirror and passed as PYTHON_IMAGE, in
#    place of python:3.11.14-slim-bookworm. Extra CA certificates this host trusts, and a
#    pip.conf pointing pip at the system bundle, go into it, so that pip inside the build
#    reaches PyPI through the same TLS setup as the host. The Redis image of the compose file
#    (redis:7.4-alpine) is likewise stood in for by Debian's redis-server on that base.
#  - Podman, not Docker: --format docker (BUILDAH_FORMAT=docker for podman-compose), since the
#    default OCI format drops SHELL and HEALTHCHECK. podman-compose (pinned below) runs the
#    compose file. No systemd: Podman cannot schedule healthchecks, so `podman healthcheck run`
#    runs them on demand.
#  - Podman's default open-files limit (1048576) cannot be set without CAP_SYS_RESOURCE, so the
#    default ulimits are pinned to the hard limits this host has; crun refuses a hybrid
#    cgroup v1/v2 layout, so runc is the runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

WORK=${IMAGE_TEST_WORK:-/var/tmp/homeai-image}
TAG=${IMAGE_TEST_TAG:-homeai:0.1.0}          # the compose file's image
BASE=${IMAGE_TEST_BASE:-localhost/homeai-base:bookworm-py311}
REDIS_IMAGE=${IMAGE_TEST_REDIS_IMAGE:-docker.io/library/redis:7.4-alpine}
PORT=${IMAGE_TEST_PORT:-18080}
STEPS=${IMAGE_TEST_STEPS:-build,arm64,check}
NICE=${IMAGE_TEST_NICE:-19}
BUILD_TIMEOUT=${IMAGE_TEST_BUILD_TIMEOUT:-3600}
PODMAN_COMPOSE_VERSION=1.6.0
WEBSOCKETS_VERSION=17.4
export DEBIAN_FRONTEND=noninteractive

log() { echo "image-test: $(date +%T) $*" >&2; }
mkdir -p "$WORK"
start=$(date +%s)

# 1. Tools.
need=()
# iptables: netavark (compose's bridge network) runs it; a fresh Debian has none, and podman
# then fails to start any container with "netavark: No such file or directory".
for tool in podman runc mmdebstrap curl iptables; do command -v "$tool" >/dev/null || need+=("$tool"); done
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ "${#need[@]}" -gt 0 ]; then
  log "apt-get install ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman runc catatonit mmdebstrap curl python3-venv \
    netavark aardvark-dns iptables uidmap >/dev/null
fi

# 2. Podman's settings for this host, used through environment variables only: its storage
#    (images, build cache, containers) lives in $WORK.
nofile=$(ulimit -Hn)
nproc=$(cat /proc/sys/kernel/pid_max)
hu=$(ulimit -Hu)
if [ "$hu" != unlimited ] && [ "$hu" -lt "$nproc" ]; then nproc=$hu; fi
cat >"$WORK/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
CONF
cat >"$WORK/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$WORK/storage"
runroot = "$WORK/run"
CONF
export CONTAINERS_CONF="$WORK/containers.conf" CONTAINERS_STORAGE_CONF="$WORK/storage.conf" BUILDAH_FORMAT=docker

# 3. The base image (about 2 minutes, once).
apt_uri() { # $1: a regex the URI's path must match
  {
    awk '/^URIs:/ {print $2}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
    awk '/^deb / {print $2}' /etc/apt/sources.list 2>/dev/null || true
  } | awk -v re="$1" '$0 ~ re' | head -n 1
}
if ! podman image exists "$BASE"; then
  mirror=${MIRROR:-$(apt_uri '/debian/?$')}
  security=${SECURITY:-$(apt_uri '/debian-security/?$')}
  if [ -z "$mirror" ] || [ -z "$security" ]; then
    echo "set MIRROR and SECURITY to Debian apt URIs" >&2
    exit 1
  fi
  log "mmdebstrap bookworm -> $BASE"
  rm -f "$WORK/base-rootfs.tar"
  # The hooks are run by mmdebstrap with the root file system's path as $1.
  # shellcheck disable=SC2016
  nice -n "$NICE" mmdebstrap --variant=minbase --mode=root \
    --include=python3,python3-venv,python-is-python3,ca-certificates,netbase,tzdata \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --customize-hook='for f in /usr/local/share/ca-certificates/*.crt; do if [ -e "$f" ]; then cp "$f" "$1/usr/local/share/ca-certificates/"; fi; done; chroot "$1" update-ca-certificates >/dev/null' \
    --customize-hook='printf "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n" >"$1/etc/pip.conf"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/var/log/*' \
    bookworm "$WORK/base-rootfs.tar" \
    "deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb $security bookworm-security main"
  podman import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' "$WORK/base-rootfs.tar" "$BASE" >/dev/null
  rm -f "$WORK/base-rootfs.tar"
fi

# 4. The image. The revision is the build argument an upgrade changes. It is also given as a
#    label: Podman 4.3 may take the Dockerfile's last (LABEL) step from its cache although the
#    build arguments it uses changed, and the new image would then be the old one.
build() { # $1: revision
  local t0 created
  t0=$(date +%s)
  created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  log "podman build $TAG (revision $1)"
  timeout "$BUILD_TIMEOUT" nice -n "$NICE" podman build --format docker --pull=never --network host \
    --build-arg PYTHON_IMAGE="$BASE" \
    --build-arg CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    --build-arg REVISION="$1" --label org.opencontainers.image.revision="$1" \
    --build-arg CREATED="$created" --label org.opencontainers.image.created="$created" \
    -f docker/Dockerfile -t "$TAG" .
  log "built $TAG in $(($(date +%s) - t0)) s: $(podman image inspect --format '{{.Size}}' "$TAG") bytes"
}
revision=${IMAGE_TEST_REVISION:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [[ ,$STEPS, == *,build,* ]]; then
  build "$revision"
fi

# 5. arm64: llama.cpp's configure step, run with an aarch64 cross compiler on the image's flags
#    (docker/llama-cmake-args.sh), must select the portable baseline, and nothing native.
# llama-cpp-python's source at the version requirements.txt pins, unpacked once under $WORK.
llama_source() {
  local llama
  llama=$(awk -F'==' '$1 == "llama-cpp-python" {print $2}' requirements.txt)
  if [ ! -d "$WORK/arm64/llama_cpp_python-$llama" ]; then
    mkdir -p "$WORK/arm64"
    python3 -m pip download -q --no-deps --no-binary :all: -d "$WORK/arm64" "llama-cpp-python==$llama" >&2
    tar -xzf "$WORK/arm64/llama_cpp_python-$llama.tar.gz" -C "$WORK/arm64"
  fi
  echo "$WORK/arm64/llama_cpp_python-$llama"
}

if [[ ,$STEPS, == *,arm64,* ]]; then
  log "arm64: llama.cpp configure with docker/llama-cmake-args.sh arm64"
  if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v cmake >/dev/null; then
    apt-get install -y -qq --no-install-recommends g++-aarch64-linux-gnu cmake >/dev/null
  fi
  src=$(llama_source)
  rm -rf "$WORK/arm64/build"
  # shellcheck disable=SC2046 # the flags are words
  cmake -S "$src/vendor/llama.cpp" -B "$WORK/arm64/build" -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
    -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
    $(sh docker/llama-cmake-args.sh arm64) >"$WORK/arm64/configure.log"
  flags=$(cat "$WORK"/arm64/build/ggml/src/CMakeFiles/ggml-cpu*.dir/flags.make)
  if ! grep -q -- '-march=armv8-a ' <<<"$flags" || grep -Eq -- '-m(arch|cpu|tune)=native' <<<"$flags"; then
    echo "arm64: the CPU backend is not built for the portable armv8-a baseline:" >&2
    grep -E 'C(XX)?_FLAGS' <<<"$flags" >&2
    exit 1
  fi
  log "arm64: $(grep -m1 'Adding CPU backend' "$WORK/arm64/configure.log" | sed 's/^-- //')"
fi

# 6. Optional (IMAGE_TEST_STEPS=cuda; long: about half an hour on 2 cores): docker/Dockerfile.cuda's
#    build stage needs NVIDIA's CUDA images, which cannot be pulled here. Its llama.cpp build is
#    checked instead with the CUDA compiler from PyPI (the CUDA 12 wheels carry no nvcc; the
#    CUDA 13 ones do): configured with the image's flags (docker/llama-cmake-args.sh plus
#    GGML_CUDA=ON) and llama.cpp's CUDA backend compiled for IMAGE_TEST_CUDA_ARCH. No GPU needed.
if [[ ,$STEPS, == *,cuda,* ]]; then
  cuda_arch=${IMAGE_TEST_CUDA_ARCH:-89}
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    apt-get install -y -qq --no-install-recommends cmake g++ >/dev/null
  fi
  cuda=$WORK/cuda/toolkit/nvidia/cu13
  if [ ! -x "$cuda/bin/nvcc" ]; then
    log "cuda: CUDA 13.5 compiler and libraries from PyPI"
    rm -rf "$WORK/cuda/toolkit" && mkdir -p "$WORK/cuda/wheels" "$WORK/cuda/toolkit"
    python3 -m pip download -q --no-deps -d "$WORK/cuda/wheels" nvidia-cuda-nvcc==13.5.37 \
      nvidia-cuda-crt==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-runtime==13.5.37 \
      nvidia-cuda-cccl==13.3.5.0.6 nvidia-cublas==13.10.0.20
    for wheel in "$WORK"/cuda/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$WORK/cuda/toolkit/"; done
    chmod +x "$cuda"/bin/* "$cuda"/nvvm/bin/*
    # The names the linker looks for, and a stand-in for the driver's libcuda (the CUDA images
    # link a stub too; the real one comes from the host's driver at run time).
    for lib in cudart cublas cublasLt; do ln -sf "lib$lib.so.13" "$cuda/lib/lib$lib.so"; done
    mkdir -p "$cuda/lib/stubs"
    echo 'void cuInit(void) {}' | gcc -x c -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$cuda/lib/stubs/libcuda.so" -
  fi
  src=$(llama_source)
  llama=${src##*-}
  log "cuda: llama.cpp configure and compile of its CUDA backend for compute capability $cuda_arch"
  # shellcheck disable=SC2046 # the flags are words
  cmake -S "$src/vendor/llama.cpp" -B "$WORK/cuda/build-$llama" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
    $(sh docker/llama-cmake-args.sh) -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" \
    -DCUDAToolkit_ROOT="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" >"$WORK/cuda/configure.log"
  nice -n "$NICE" cmake --build "$WORK/cuda/build-$llama" --target ggml-cuda -j "$(nproc)" >"$WORK/cuda/build.log"
  log "cuda: $(ls "$WORK"/cuda/build-"$llama"/bin/libggml-cuda.so) built"
fi

if [[ ,$STEPS, == *,check,* ]]; then
  # 7. The compose file's Redis image, stood in for (see above). Like the real one it has
  #    docker-entrypoint.sh, which the compose file's Redis command runs (here it only runs its
  #    arguments: the stand-in runs as root). Its label says which stand-in it is: an older one
  #    is built again.
  standin=2
  if [ "$(podman image inspect --format '{{index .Labels "homeai.redis-stand-in"}}' "$REDIS_IMAGE" 2>/dev/null)" != "$standin" ]; then
    log "Redis stand-in -> $REDIS_IMAGE"
    mkdir -p "$WORK/redis-context"
    cat >"$WORK/redis-context/Containerfile" <<CONTAINERFILE
FROM $BASE
RUN apt-get update && apt-get install -y --no-install-recommends redis-server \\
 && rm -rf /var/lib/apt/lists/* \\
 && printf '#!/bin/sh\\nexec /usr/bin/redis-server "\$@" --protected-mode no\\n' >/usr/local/bin/redis-server \\
 && printf '#!/bin/sh\\nexec "\$@"\\n' >/usr/local/bin/docker-entrypoint.sh \\
 && chmod 0755 /usr/local/bin/redis-server /usr/local/bin/docker-entrypoint.sh
LABEL homeai.redis-stand-in=$standin
WORKDIR /data
CMD ["redis-server"]
CONTAINERFILE
    podman build --format docker --pull=never --network host -t "$REDIS_IMAGE" "$WORK/redis-context" >/dev/null
  fi

  # 8. podman-compose and the checker's one library, in a private virtual environment.
  venv=$WORK/venv
  if [ ! -x "$venv/bin/podman-compose" ] || ! "$venv/bin/python" -c 'import websockets' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "podman-compose==$PODMAN_COMPOSE_VERSION" "websockets==$WEBSOCKETS_VERSION"
  fi

  # 9. The checks. The upgrade step rebuilds with this script (IMAGE_TEST_STEPS=build).
  log "compose checks on 127.0.0.1:$PORT"
  IMAGE_TEST_PODMAN_COMPOSE="$venv/bin/podman-compose" IMAGE_TEST_PORT="$PORT" IMAGE_TEST_WORK="$WORK" \
    IMAGE_TEST_TAG="$TAG" IMAGE_TEST_REBUILD="env IMAGE_TEST_STEPS=build $SRC/scripts/image-test.sh" \
    IMAGE_TEST_REVISION="$revision" \
    "$venv/bin/python" tests/image/compose_check.py
fi
log "done in $(($(date +%s) - start)) s"
