#!/usr/bin/env bash
# Build (once) llama.cpp's llama-server from the llama.cpp vendored in the llama-cpp-python sdist (the
# same llama.cpp as spectui's bindings), for `spectui attach` and its tests against a real server, and beside it
# llama-speculative-simple (the same build: one more target), the reference the n-gram drafters' counts are tested against.
#
# The CPU flags of scripts/build-llama-cpp-python.sh (scripts/llama-cmake-args.sh): no -march=native (the AMX
# kernels it enables crash in VMs that advertise AMX), exactly the x86 extensions /proc/cpuinfo lists, never
# AMX; no GPU backend unless one is asked for (SPECTUI_LLAMA_BACKEND, SPECTUI_LLAMA_CMAKE_ARGS): the test
# server runs on the CPU, whatever the machine has. Static
# (one relocatable binary), no web UI download (LLAMA_USE_PREBUILT_UI=OFF), no OpenSSL, no curl.
#
# The binary is cached in ~/.cache/spectui/llama-server/<key>/llama-server, keyed by version + flags,
# so a second run is instant. Prints the folder that holds it (tests read SPECTUI_LLAMA_SERVER_BIN or
# look in the cache).
#
# usage: scripts/build-llama-server.sh [PYTHON]    (PYTHON runs `pip download`; default python3)
#   SPECTUI_LLAMA_CMAKE_ARGS=...  overrides the detected flags (e.g. "-DGGML_CUDA=on" for a GPU build)
#   SPECTUI_LLAMA_BACKEND=NAME    cpu (the default here), cuda, hip, metal or vulkan
#   SPECTUI_LLAMA_SERVER_CACHE=DIR  cache root (default ~/.cache/spectui/llama-server)
set -euo pipefail
py=${1:-python3}
ver=0.3.36
args=$(SPECTUI_LLAMA_BACKEND=${SPECTUI_LLAMA_BACKEND:-cpu} bash "$(dirname "$0")/llama-cmake-args.sh")  # CPU flags
key=$(printf 'llama-server %s %s' "$ver" "$args" | sha256sum | cut -c1-12)
root=${SPECTUI_LLAMA_SERVER_CACHE:-$HOME/.cache/spectui/llama-server}
out=$root/$key
if [[ -x $out/llama-server && -x $out/llama-speculative-simple ]]; then echo "$out"; exit 0; fi

work=$root/$key.build
mkdir -p "$work"
src=$work/llama_cpp_python-$ver
if [[ ! -d $src/vendor/llama.cpp ]]; then
  sdist=$(ls "$work"/llama_cpp_python-$ver.tar.gz 2>/dev/null || true)
  if [[ -z $sdist ]]; then
    echo "downloading the llama-cpp-python $ver sdist (vendored llama.cpp)" >&2
    "$py" -m pip download -q --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$ver" >&2
  fi
  tar xzf "$work/llama_cpp_python-$ver.tar.gz" -C "$work"
fi
echo "building llama-server (llama-cpp-python $ver's llama.cpp) with '$args' (takes several minutes)" >&2
start=$(date +%s)
# shellcheck disable=SC2086
cmake -S "$src/vendor/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release $args \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >&2
cmake --build "$work/build" -j"$(nproc)" --target llama-server llama-speculative-simple >&2
mkdir -p "$out.tmp"
cp "$work/build/bin/llama-server" "$work/build/bin/llama-speculative-simple" "$out.tmp/"
printf '%s\n' "$args" >"$out.tmp/CMAKE_ARGS"
echo "$(( $(date +%s) - start ))" >"$out.tmp/BUILD_SECONDS"
rm -rf "$out"; mv "$out.tmp" "$out"
rm -rf "$work"
echo "$out"
