#!/usr/bin/env bash
# The CMake flags spectui builds llama.cpp with (llama-cpp-python's wheel; llama-server takes the CPU flags
# unless asked), printed on one line: a GPU backend when this machine has a GPU and its toolkit, plus the CPU
# flags.
#
# usage: scripts/llama-cmake-args.sh [--backend]
#   (no option)  the flags
#   --backend    the backend those flags build, one word: cpu, cuda, hip, metal or vulkan
#   SPECTUI_LLAMA_CMAKE_ARGS=...  wins: printed as given (e.g. "-DGGML_CUDA=on"), nothing detected
#   SPECTUI_LLAMA_BACKEND=NAME    skips the detection: cpu, cuda, hip, metal or vulkan
#   SPECTUI_SYSFS_ROOT=DIR        where sysfs is (default /sys; tests point it at a made-up tree)
#
# The backend, first match wins (CUDA > HIP > Metal > Vulkan > CPU):
#   cuda    an NVIDIA GPU (`nvidia-smi -L` lists one, or a PCI display device of vendor 0x10de) and nvcc
#           (on PATH, or CUDA_HOME/bin/nvcc): -DGGML_CUDA=ON, built for the GPUs' compute capabilities
#           (-DCMAKE_CUDA_ARCHITECTURES from `nvidia-smi --query-gpu=compute_cap`) when nvidia-smi says them
#   hip     an AMD GPU (`rocminfo` lists a gfx agent, or a PCI display device of vendor 0x1002) and hipcc
#           (on PATH, or ROCM_PATH/bin/hipcc): -DGGML_HIP=ON
#   metal   macOS on Apple silicon (uname -s Darwin, uname -m arm64): -DGGML_METAL=ON (llama.cpp's default)
#   vulkan  the Vulkan SDK (glslc, and the loader: libvulkan in `ldconfig -p` or `pkg-config vulkan`) and a
#           GPU (a PCI display device of NVIDIA, AMD or Intel, or a discrete or integrated GPU in
#           `vulkaninfo --summary`; Mesa's software device does not count): -DGGML_VULKAN=ON
#   cpu     anything else. An NVIDIA or AMD GPU without its toolkit gets the CPU build and one line on
#           stderr naming what to install.
# The CPU flags: on x86-64 no -march=native (the AMX kernels it enables crash in VMs that advertise AMX
# without AMX state), exactly the SIMD extensions /proc/cpuinfo lists, never AMX. Elsewhere llama.cpp's
# defaults (nothing). A GPU backend adds its flag to them.
# Note: /proc/cpuinfo spells VBMI "avx512vbmi"; the check below has always looked for "avx512_vbmi", so
# VBMI stays off. Correcting it changes both builds' cache keys (a rebuild): left for a separate change.
set -euo pipefail
sysfs=${SPECTUI_SYSFS_ROOT:-/sys}
want=backend
[[ ${1:-} == --backend ]] || want=args
[[ $# -eq 0 || ${1:-} == --backend ]] || { echo "llama-cmake-args.sh: unknown option $1 (use --backend)" >&2; exit 2; }

cpu_args() {
  local m flags args=""
  m=$(uname -m)
  [[ $m == x86_64 || $m == amd64 ]] || return 0
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  has() { [[ " $flags " == *" $1 "* ]]; }
  args="-DGGML_NATIVE=OFF"
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
  printf '%s' "$args"
}

pci_display() {  # true when a PCI display-class device (class 0x03....) of vendor $1 is present
  local d vendor class
  for d in "$sysfs"/bus/pci/devices/*; do
    [[ -r $d/vendor && -r $d/class ]] || continue
    vendor=$(head -c 6 "$d/vendor"); class=$(head -c 4 "$d/class")
    [[ $vendor == "$1" && $class == 0x03 ]] && return 0
  done
  return 1
}

on_path() { command -v "$1" >/dev/null 2>&1; }
# (grep reads every line, no -q: an early exit would SIGPIPE the writer and pipefail would say "no")
nvidia_gpu() { { on_path nvidia-smi && nvidia-smi -L 2>/dev/null | grep '^GPU' >/dev/null; } || pci_display 0x10de; }
amd_gpu() { { on_path rocminfo && rocminfo 2>/dev/null | grep 'gfx[0-9]' >/dev/null; } || pci_display 0x1002; }
nvcc_found() { on_path nvcc || [[ -n ${CUDA_HOME:-} && -x $CUDA_HOME/bin/nvcc ]]; }
hipcc_found() { on_path hipcc || [[ -n ${ROCM_PATH:-} && -x $ROCM_PATH/bin/hipcc ]]; }
vulkan_sdk() {
  on_path glslc || return 1
  { on_path ldconfig && ldconfig -p 2>/dev/null | grep 'libvulkan\.so' >/dev/null; } \
    || { on_path pkg-config && pkg-config --exists vulkan 2>/dev/null; }
}
vulkan_gpu() {
  pci_display 0x10de || pci_display 0x1002 || pci_display 0x8086 && return 0
  on_path vulkaninfo && vulkaninfo --summary 2>/dev/null | grep -E 'PHYSICAL_DEVICE_TYPE_(DISCRETE|INTEGRATED)_GPU' >/dev/null
}

detect() {  # the backend's name; the one line for a GPU without its toolkit goes to stderr
  if nvidia_gpu && nvcc_found; then echo cuda
  elif amd_gpu && hipcc_found; then echo hip
  elif [[ $(uname -s) == Darwin && $(uname -m) == arm64 ]]; then echo metal
  elif vulkan_sdk && vulkan_gpu; then echo vulkan
  else
    if [[ $want == args ]] && nvidia_gpu; then
      echo "llama-cmake-args.sh: an NVIDIA GPU is present but no CUDA toolkit (nvcc on PATH or in CUDA_HOME/bin): building llama.cpp for the CPU; install the CUDA toolkit (or the Vulkan SDK) and build again for the GPU" >&2
    elif [[ $want == args ]] && amd_gpu; then
      echo "llama-cmake-args.sh: an AMD GPU is present but no ROCm HIP compiler (hipcc on PATH or in ROCM_PATH/bin): building llama.cpp for the CPU; install ROCm (or the Vulkan SDK) and build again for the GPU" >&2
    fi
    echo cpu
  fi
}

cuda_archs() {  # "-DCMAKE_CUDA_ARCHITECTURES=90" from nvidia-smi's compute capabilities ("" when it says none)
  local caps
  on_path nvidia-smi || return 0
  caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | grep -E '^[0-9]+$' \
    | sort -un | paste -sd';' - || true)
  [[ -n $caps ]] && printf ' -DCMAKE_CUDA_ARCHITECTURES=%s' "$caps"
  return 0
}

backend_of() {  # the backend a given flag set builds (for SPECTUI_LLAMA_CMAKE_ARGS)
  local a=" ${1^^} "
  case $a in
    *" -DGGML_CUDA=ON "* | *" -DGGML_CUDA=1 "*) echo cuda ;;
    *" -DGGML_HIP=ON "* | *" -DGGML_HIP=1 "*) echo hip ;;
    *" -DGGML_METAL=ON "* | *" -DGGML_METAL=1 "*) echo metal ;;
    *" -DGGML_VULKAN=ON "* | *" -DGGML_VULKAN=1 "*) echo vulkan ;;
    *) echo cpu ;;
  esac
}

if [[ -n ${SPECTUI_LLAMA_CMAKE_ARGS:-} ]]; then
  if [[ $want == args ]]; then printf '%s\n' "$SPECTUI_LLAMA_CMAKE_ARGS"; else backend_of "$SPECTUI_LLAMA_CMAKE_ARGS"; fi
  exit 0
fi
backend=${SPECTUI_LLAMA_BACKEND:-}
case $backend in
  "") backend=$(detect) ;;
  cpu | cuda | hip | metal | vulkan) ;;
  *) echo "llama-cmake-args.sh: SPECTUI_LLAMA_BACKEND must be cpu, cuda, hip, metal or vulkan, not '$backend'" >&2; exit 2 ;;
esac
if [[ $want == backend ]]; then echo "$backend"; exit 0; fi
args=$(cpu_args)
case $backend in
  cuda) args+=" -DGGML_CUDA=ON$(cuda_archs)" ;;
  hip) args+=" -DGGML_HIP=ON" ;;
  metal) args+=" -DGGML_METAL=ON" ;;
  vulkan) args+=" -DGGML_VULKAN=ON" ;;
esac
printf '%s\n' "${args# }"
