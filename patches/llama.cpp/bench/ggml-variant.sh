#!/usr/bin/env bash
# Builds the CPU backend of the llama.cpp that the pinned llama-cpp-python vendors (ggml only,
# static, with scripts/llama-cmake-native.sh's flags) as vendored or with one patch, into
# WORK/NAME, and links the given C programs of this folder against it (WORK/NAME/<program>).
# A variant is rebuilt when its patch, a program or the flags change. Run from the repository root.
#   patches/llama.cpp/bench/ggml-variant.sh WORK vendored|NAME=PATCH PROGRAM.c...
set -euo pipefail
work=$1 variant=$2
shift 2
name=${variant%%=*}
patch=-
[[ $variant == *=* ]] && patch=${variant#*=}
[[ $name == vendored || $patch != - ]] || { echo "variant $variant: vendored or NAME=PATCH" >&2; exit 2; }
pin=$(grep '^llama-cpp-python==' requirements.txt | cut -d' ' -f1)
version=${pin#llama-cpp-python==}
sdist=${XDG_CACHE_HOME:-$HOME/.cache}/homeai/llama-cpp-python/sdist/llama_cpp_python-$version.tar.gz
[[ -f "$sdist" ]] || .venv/bin/pip download --quiet --no-binary :all: --no-deps "$pin" -d "$(dirname "$sdist")"
flags=$(sh scripts/llama-cmake-native.sh)
[[ $patch == - ]] && patch= || patch=$(realpath "$patch")
dir=$work/$name
id=$version-$( (cat ${patch:+"$patch"} "$@" "$(dirname "$0")"/*.h; echo "$flags") | sha256sum | cut -c1-16)
[[ -f "$dir/id" && $(cat "$dir/id") == "$id" ]] && exit 0
echo "building $name" >&2
rm -rf "$dir" && mkdir -p "$dir"
tar xzf "$sdist" -C "$dir" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp/ggml"
[[ -z $patch ]] || (cd "$dir" && patch -p1 --quiet < "$patch")
touch "$dir/ggml/ggml.pc.in"  # the sdist leaves it out; ggml's own CMakeLists wants it
eval "cmake -S '$dir/ggml' -B '$dir/build' -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_LLAMAFILE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF $flags" > "$dir/cmake.log" 2>&1
cmake --build "$dir/build" -j"$(nproc)" --target ggml-cpu ggml-base > "$dir/build.log" 2>&1
for program in "$@"; do
  g++ -O2 -x c "$program" -x none -I"$dir/ggml/include" \
    "$dir/build/src/libggml-cpu.a" "$dir/build/src/libggml-base.a" -lgomp -lpthread -lm \
    -o "$dir/$(basename "$program" .c)"
done
echo "$id" > "$dir/id"
