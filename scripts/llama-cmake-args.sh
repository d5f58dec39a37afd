#!/usr/bin/env bash
# The CMake flags spectui builds llama.cpp with (llama-cpp-python's wheel and llama-server alike), printed
# on one line. SPECTUI_LLAMA_CMAKE_ARGS wins (e.g. "-DGGML_CUDA=on" for a GPU build). On x86-64: no
# -march=native (the AMX kernels it enables crash in VMs that advertise AMX without AMX state), exactly
# the SIMD extensions /proc/cpuinfo lists, never AMX. Elsewhere: llama.cpp's defaults (empty line).
# Note: /proc/cpuinfo spells VBMI "avx512vbmi"; the check below has always looked for "avx512_vbmi", so
# VBMI stays off. Correcting it changes both builds' cache keys (a rebuild): left for a separate change.
set -euo pipefail
if [[ -n ${SPECTUI_LLAMA_CMAKE_ARGS:-} ]]; then
  printf '%s\n' "$SPECTUI_LLAMA_CMAKE_ARGS"
elif [[ $(uname -m) == x86_64 || $(uname -m) == amd64 ]]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  args="-DGGML_NATIVE=OFF"
  has() { [[ " $flags " == *" $1 "* ]]; }
  has avx && args+=" -DGGML_AVX=ON"
  has avx2 && args+=" -DGGML_AVX2=ON"
  has fma && args+=" -DGGML_FMA=ON"
  has f16c && args+=" -DGGML_F16C=ON"
  has avx512f && args+=" -DGGML_AVX512=ON"
  has avx512_vnni && args+=" -DGGML_AVX512_VNNI=ON"
  has avx512_bf16 && args+=" -DGGML_AVX512_BF16=ON"
  has avx512_vbmi && args+=" -DGGML_AVX512_VBMI=ON"
  has avx_vnni && args+=" -DGGML_AVX_VNNI=ON"
  args+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  printf '%s\n' "$args"
else
  printf '\n'
fi
