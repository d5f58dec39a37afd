#!/usr/bin/env bash
# Run HERE (a machine with PyPI) before a GPU session: fills benchmarks/gpu/carry/ (git-ignored; pass it to
# the device run as an ignored path to carry) with what benchmarks/gpu/run.sh needs and cannot download there:
#   src.tar.xz   the llama-cpp-python 0.3.36 sdist without what a CUDA build does not read (llama.cpp's
#                vocabulary test models, docs, web UI, tests, benches: the full sdist is 77 MB, over the
#                64 MiB that may travel; this is about 8 MB)
#   wheels/      spectui's and the model builder's Python dependencies as wheels for PYVER (default: this
#                machine's Python; give the GPU machine's, e.g. 3.12) - installed there with --no-index
# usage: bash benchmarks/gpu/prepare.sh [PYVER]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
carry=$here/carry
pyver=${1:-$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}
ver=0.3.36
mkdir -p "$carry/wheels"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$ver"
tar xzf "$tmp/llama_cpp_python-$ver.tar.gz" -C "$tmp"
src=llama_cpp_python-$ver
tar -C "$tmp" -cJf "$carry/src.tar.xz" \
  --exclude="$src/vendor/llama.cpp/models" --exclude="$src/vendor/llama.cpp/docs" \
  --exclude="$src/vendor/llama.cpp/tools/ui" --exclude="$src/vendor/llama.cpp/tests" \
  --exclude="$src/vendor/llama.cpp/benches" --exclude="$src/vendor/llama.cpp/conversion" \
  --exclude="$src/vendor/llama.cpp/.github" --exclude="$src/vendor/llama.cpp/media" --exclude="$src/.git" \
  --exclude="$src/vendor/llama.cpp/tools/mtmd" "$src"
python3 -m pip download -q --only-binary :all: --python-version "$pyver" --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d "$carry/wheels" \
  numpy click psutil rich textual gguf diskcache jinja2 typing_extensions huggingface_hub prometheus_client
echo "$ver" >"$carry/VERSION"
du -sh "$carry" "$carry/src.tar.xz" "$carry/wheels"
size=$(du -sm "$carry" | cut -f1)
((size <= 60)) || { echo "prepare.sh: $carry is ${size} MiB, over what may travel (64 MiB with the tree)" >&2; exit 1; }
