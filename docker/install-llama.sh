#!/bin/sh
# Installs the pinned llama-cpp-python into /opt/venv with HomeAI's llama.cpp patches
# (patches/llama.cpp, copied to /tmp/patches) applied to the llama.cpp inside its sdist: the
# image's counterpart of scripts/install-llama.sh, with the image's CMAKE_ARGS (exported by the
# Dockerfile). Used by docker/Dockerfile and docker/Dockerfile.cuda before the other
# requirements, so pip finds it installed there.
set -eu
pin=$(grep '^llama-cpp-python==' /tmp/requirements.txt | cut -d' ' -f1)
[ -n "$pin" ] || { echo "requirements.txt pins no llama-cpp-python version" >&2; exit 1; }
src=$(mktemp -d)
/opt/venv/bin/pip download --no-cache-dir --quiet --no-binary :all: --no-deps "$pin" -d "$src"
tar -xzf "$src"/llama_cpp_python-*.tar.gz -C "$src"
dir=$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'llama_cpp_python-*')
sh /tmp/patches/apply.sh "$dir/vendor/llama.cpp"
/opt/venv/bin/pip install --no-cache-dir --no-deps "$dir"
rm -rf "$src"
