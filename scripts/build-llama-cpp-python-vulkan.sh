#!/usr/bin/env bash
# Build (once) llama-cpp-python 0.3.36 with llama.cpp's Vulkan backend, and install it with spectui into its
# own virtual environment (.venv-vulkan), so it never replaces the CPU build in .venv.
#
# Why: the GPU path (-ngl / -ngld, placement, device memory, logits read back from a device) needs a real
# ggml GPU backend. Vulkan runs everywhere, also on Mesa's software Vulkan device (lavapipe, "llvmpipe"),
# which is what tests/engine/test_vulkan.py uses on a machine without a GPU. ggml skips CPU-type Vulkan devices
# unless GGML_VK_VISIBLE_DEVICES names them: run with GGML_VK_VISIBLE_DEVICES=0 there.
#
# Needs (Debian/Ubuntu): libvulkan-dev glslc glslang-tools spirv-headers mesa-vulkan-drivers; installed
# with apt-get when missing and this runs as root.
#
# The header patch: the vendored ggml-vulkan (llama.cpp 0c1e57098) creates its instance with
# vk::LayerSettingEXT (VK_EXT_layer_settings, only to switch on the validation layer's best-practice
# checks), which Vulkan headers older than 1.3.261 lack (Debian 12 ships 1.3.239; no newer Vulkan-Headers
# package exists on Debian 12's apt or on PyPI: the PyPI "vulkan-object" package carries vk.xml, not the
# C++ headers). Only when the installed headers are older than 261, this script wraps that block in
# `#if VK_HEADER_VERSION >= 261` and creates the instance without the settings otherwise (validation
# layers are never enabled by spectui, so nothing changes at run time). With newer headers the source is
# built as shipped. The patched file is in the build folder only; the cache key says whether it was patched.
#
# The wheel is cached in ~/.cache/spectui/wheels-vulkan/<key>/ (key: version, CMake flags, Python, header
# version), with BUILD_SECONDS (the compile's wall time) beside it.
#
# usage: scripts/build-llama-cpp-python-vulkan.sh [PYTHON]   (default python3; makes ./.venv-vulkan)
#   SPECTUI_VULKAN_VENV=DIR   the virtual environment (default: .venv-vulkan in the repository)
#   SPECTUI_WHEEL_CACHE_VULKAN=DIR   cache root (default ~/.cache/spectui/wheels-vulkan)
# prints the virtual environment's folder.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${1:-python3}
ver=0.3.36
venv=${SPECTUI_VULKAN_VENV:-$here/.venv-vulkan}

need=()
command -v glslc >/dev/null 2>&1 || need+=(glslc)
command -v glslangValidator >/dev/null 2>&1 || need+=(glslang-tools)
[[ -f /usr/include/vulkan/vulkan.hpp ]] || need+=(libvulkan-dev)
[[ -d /usr/include/spirv ]] || need+=(spirv-headers)
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
if ((${#need[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need[*]} (apt)" >&2
    (apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null; })
  else
    echo "build-llama-cpp-python-vulkan.sh: missing ${need[*]} (apt-get install libvulkan-dev glslc glslang-tools spirv-headers mesa-vulkan-drivers)" >&2
    exit 1
  fi
fi

hdr=$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\)$/\1/p' /usr/include/vulkan/vulkan_core.h | head -n1)
patch=no
((hdr < 261)) && patch=yes
args="$(SPECTUI_LLAMA_BACKEND=cpu bash "$here/scripts/llama-cmake-args.sh") -DGGML_VULKAN=on"  # the CPU flags + Vulkan
key=$(printf 'vulkan %s %s %s %s' "$ver" "$args" "$("$py" -c 'import sys;print(sys.implementation.cache_tag)')" "$hdr" | sha256sum | cut -c1-12)
root=${SPECTUI_WHEEL_CACHE_VULKAN:-$HOME/.cache/spectui/wheels-vulkan}
wheels=$root/$key
if ! ls "$wheels"/llama_cpp_python-$ver-*.whl >/dev/null 2>&1; then
  work=$root/$key.build
  rm -rf "$work"; mkdir -p "$work"
  echo "downloading the llama-cpp-python $ver sdist" >&2
  "$py" -m pip download -q --no-cache-dir --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$ver" >&2
  tar xzf "$work/llama_cpp_python-$ver.tar.gz" -C "$work"
  src=$work/llama_cpp_python-$ver
  if [[ $patch == yes ]]; then
    echo "Vulkan headers $hdr < 261: guarding ggml-vulkan's vk::LayerSettingEXT block (see this script's header)" >&2
    "$py" - "$src/vendor/llama.cpp/ggml/src/ggml-vulkan/ggml-vulkan.cpp" <<'EOF'
import sys
p = sys.argv[1]
s = open(p, encoding="utf-8").read()
start = "    VkBool32 enable_best_practice = layer_settings;\n"
end = ("    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers, extensions, "
       "&layer_setting_info);\n")
i, j = s.find(start), s.find(end)
if i < 0 or j < i or s.count(start) != 1:
    sys.exit("ggml-vulkan.cpp: the vk::LayerSettingEXT block was not found as expected; patch not applied")
j += len(end)
s = (s[:i] + "#if VK_HEADER_VERSION >= 261\n" + s[i:j] + "#else\n"
     "    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers, extensions);\n"
     "#endif\n" + s[j:])
open(p, "w", encoding="utf-8").write(s)
EOF
  fi
  echo "building llama-cpp-python $ver with CMAKE_ARGS='$args' (Vulkan; takes several minutes)" >&2
  start=$(date +%s)
  mkdir -p "$wheels.tmp"
  CMAKE_ARGS="$args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$py" -m pip wheel --no-cache-dir --no-deps \
    -w "$wheels.tmp" "$src" >&2
  echo "$(( $(date +%s) - start ))" >"$wheels.tmp/BUILD_SECONDS"
  printf '%s\n' "$args" >"$wheels.tmp/CMAKE_ARGS"
  printf 'VK_HEADER_VERSION=%s patched=%s\n' "$hdr" "$patch" >"$wheels.tmp/HEADERS"
  rm -rf "$wheels"; mv "$wheels.tmp" "$wheels"
  rm -rf "$work"
fi
whl=$(ls "$wheels"/llama_cpp_python-$ver-*.whl | head -n1)
[[ -x $venv/bin/python ]] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q -U pip >&2
"$venv/bin/python" -m pip install -q --no-deps --force-reinstall "$whl" >&2
"$venv/bin/python" -m pip install -q "$whl" >&2
"$venv/bin/python" -m pip install -q -e "$here[test]" >&2
# ggml skips CPU-type Vulkan devices (lavapipe) unless GGML_VK_VISIBLE_DEVICES names one
GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} "$venv/bin/python" -c "import llama_cpp, spectui; assert llama_cpp.llama_supports_gpu_offload()" \
  || { echo "build-llama-cpp-python-vulkan.sh: the installed build cannot offload" >&2; exit 1; }
echo "$venv"
