#!/usr/bin/env bash
# Build (once) and install llama-cpp-python for this machine's GPU, if it has one with its toolkit, and
# its CPU without -march=native.
#
# Why: the default build compiles llama.cpp with -march=native. On CPUs/VMs that advertise AMX but do
# not support AMX state (seen on the project's 2-core AMD EPYC VMs), the first llama_decode dies with a
# general protection fault. We build with GGML_NATIVE=OFF and switch on exactly the x86 SIMD extensions
# /proc/cpuinfo lists (never AMX). On non-x86 machines the default build is used. The GPU backend (CUDA,
# HIP, Metal, Vulkan or none) is chosen by scripts/llama-cmake-args.sh: its header has the rules.
#
# The wheel is cached per backend and flag set in ~/.cache/spectui/wheels/<key>/ so a second install is
# instant, and pip's own wheel cache is bypassed (it would silently hand back a wheel built with other
# flags). The key hashes the version, the flags, the Python and, for a GPU backend, its name (the CPU
# build's key is the one it always had, so an existing CPU wheel is reused).
#
# usage: scripts/build-llama-cpp-python.sh [--dry-run] [PYTHON]     (default: python on PATH)
#   --dry-run  print the backend, the flags and the wheel's folder; build and install nothing
#   SPECTUI_LLAMA_CMAKE_ARGS=...  overrides the detected flags (e.g. "-DGGML_CUDA=on" for a GPU build)
#   SPECTUI_LLAMA_BACKEND=NAME    cpu, cuda, hip, metal or vulkan instead of the detected one
set -euo pipefail
dry=0
if [[ ${1:-} == --dry-run ]]; then dry=1; shift; fi
py=${1:-python}
ver=0.3.36
here=$(dirname "$0")
args=$(bash "$here/llama-cmake-args.sh")  # the same flags for both builds
backend=$(bash "$here/llama-cmake-args.sh" --backend)
keyed="$ver $args $("$py" -c 'import sys;print(sys.implementation.cache_tag)')"
[[ $backend == cpu ]] || keyed="$backend $keyed"
key=$(printf '%s' "$keyed" | sha256sum | cut -c1-12)
wheels=${SPECTUI_WHEEL_CACHE:-$HOME/.cache/spectui/wheels}/$key
if ((dry)); then printf 'backend %s\nCMAKE_ARGS %s\nwheels %s\n' "$backend" "$args" "$wheels"; exit 0; fi
if ! ls "$wheels"/llama_cpp_python-$ver-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $ver for $backend with CMAKE_ARGS='$args' (takes several minutes)" >&2
  mkdir -p "$wheels.tmp"
  CMAKE_ARGS="$args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$py" -m pip wheel --no-cache-dir --no-deps \
    -w "$wheels.tmp" "llama-cpp-python==$ver" >&2
  rm -rf "$wheels"; mv "$wheels.tmp" "$wheels"
  printf '%s\n' "$args" >"$wheels/CMAKE_ARGS"
  printf '%s\n' "$backend" >"$wheels/BACKEND"
fi
whl=$(ls "$wheels"/llama_cpp_python-$ver-*.whl | head -n1)
"$py" -m pip install -q --no-deps --force-reinstall "$whl" >&2
"$py" -m pip install -q "$whl" >&2   # its own dependencies (numpy, diskcache, jinja2, ...)
echo "$wheels"
