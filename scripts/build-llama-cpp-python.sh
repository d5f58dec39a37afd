#!/usr/bin/env bash
# Build (once) and install llama-cpp-python without -march=native.
#
# Why: the default build compiles llama.cpp with -march=native. On CPUs/VMs that advertise AMX but do
# not support AMX state (seen on the project's 2-core AMD EPYC VMs), the first llama_decode dies with a
# general protection fault. We build with GGML_NATIVE=OFF and switch on exactly the x86 SIMD extensions
# /proc/cpuinfo lists (never AMX). On non-x86 machines the default build is used.
#
# The wheel is cached per flag set in ~/.cache/spectui/wheels/<key>/ so a second install is instant, and
# pip's own wheel cache is bypassed (it would silently hand back a wheel built with other flags).
#
# usage: scripts/build-llama-cpp-python.sh [PYTHON]     (default: python on PATH)
#   SPECTUI_LLAMA_CMAKE_ARGS=...  overrides the detected flags (e.g. "-DGGML_CUDA=on" for a GPU build)
set -euo pipefail
py=${1:-python}
ver=0.3.36
args=$(bash "$(dirname "$0")/llama-cmake-args.sh")  # the same flags for both builds
key=$(printf '%s %s %s' "$ver" "$args" "$("$py" -c 'import sys;print(sys.implementation.cache_tag)')" | sha256sum | cut -c1-12)
wheels=${SPECTUI_WHEEL_CACHE:-$HOME/.cache/spectui/wheels}/$key
if ! ls "$wheels"/llama_cpp_python-$ver-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $ver with CMAKE_ARGS='$args' (takes several minutes)" >&2
  mkdir -p "$wheels.tmp"
  CMAKE_ARGS="$args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$py" -m pip wheel --no-cache-dir --no-deps \
    -w "$wheels.tmp" "llama-cpp-python==$ver" >&2
  rm -rf "$wheels"; mv "$wheels.tmp" "$wheels"
  printf '%s\n' "$args" >"$wheels/CMAKE_ARGS"
fi
whl=$(ls "$wheels"/llama_cpp_python-$ver-*.whl | head -n1)
"$py" -m pip install -q --no-deps --force-reinstall "$whl" >&2
"$py" -m pip install -q "$whl" >&2   # its own dependencies (numpy, diskcache, jinja2, ...)
echo "$wheels"
