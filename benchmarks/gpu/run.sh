#!/usr/bin/env bash
# One prepared run for a GPU machine (an H200 with nvcc, cmake and ninja; nothing can be downloaded there;
# at most 64 MiB travels with the working tree). NOT RUN YET: no GPU machine was lent to the session that
# wrote it (see README, "A GPU machine"). Budget: under 10 minutes.
#
# Before the session, here: bash benchmarks/gpu/prepare.sh [GPU machine's Python, e.g. 3.12]
#   -> benchmarks/gpu/carry/ (git-ignored, carried as an ignored path): the trimmed llama-cpp-python 0.3.36
#      source (about 8 MB) and the Python dependencies as wheels.
# There:  bash benchmarks/gpu/run.sh      (writes everything it measures under $OUT, default ./gpu-out)
#
# Steps, each with its own time limit so one slow step cannot eat the next:
#   1. CUDA build of the vendored llama.cpp (libllama, libggml*, llama-speculative-simple) for this GPU's
#      architecture only (nvidia-smi's compute capability), FlashAttention kernels off (their template
#      instances are most of a CUDA build; neither side uses them by default here), in the background ...
#   2. ... while the models are made with gguf: random weights in the shapes of Qwen2.5 7B and 0.5B (f16,
#      15 GB + 1 GB; benchmarks/gpu/make_models.py);
#   3. llama_cpp (the sdist's pure-Python package) with the CUDA libraries in its lib/ folder, spectui from
#      this tree: spectui probe (-ngl all), then spectui vs llama-speculative-simple at k = 2 and 4, T = 0,
#      -n 256, alternating (A B B A), both fully offloaded;
#   4. spectui's two row-math paths side by side (benchmarks/gpu/bench_graph_path.py: --sampling cpu / graph,
#      k = 2, 4, 8, T = 0 and 0.8, -n 128; at most 4 minutes).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
carry=$repo/benchmarks/gpu/carry
out=${OUT:-$repo/gpu-out}
work=${SPECTUI_GPU_WORK:-/tmp/spectui-gpu}
mkdir -p "$out" "$work"
log() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - t0 ))s] $*" | tee -a "$out/run.log"; }
t0=$(date +%s)
[[ -f $carry/src.tar.xz ]] || { echo "run.sh: $carry/src.tar.xz missing: run benchmarks/gpu/prepare.sh first" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version,compute_cap --format=csv >"$out/gpu.csv" 2>&1
log "GPU: $(tail -n1 "$out/gpu.csv")"
cap=$(tail -n1 "$out/gpu.csv" | awk -F', ' '{print $5}' | tr -d '.')
[[ $cap =~ ^[0-9]+$ ]] || cap=90

# Python: the machine's, plus the carried wheels for what it lacks
py=python3
if ! $py -c "import numpy, click, psutil, rich, textual, gguf, jinja2, diskcache" 2>/dev/null; then
  $py -m venv --system-site-packages "$work/venv" && py=$work/venv/bin/python
  $py -m pip install -q --no-index --find-links "$carry/wheels" numpy click psutil rich textual gguf diskcache \
    jinja2 typing_extensions huggingface_hub prometheus_client >>"$out/run.log" 2>&1 \
    || { log "cannot install the carried wheels (another Python version? prepare.sh PYVER)"; exit 1; }
fi

# 1. the CUDA build, in the background
src=$work/llama_cpp_python-0.3.36
[[ -d $src ]] || tar xJf "$carry/src.tar.xz" -C "$work"
(
  cmake -G Ninja -S "$src/vendor/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$cap" -DGGML_CUDA_FA=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
    -DGGML_FMA=ON -DGGML_F16C=ON -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    && timeout 420 cmake --build "$work/build" -j"$(nproc)" --target llama ggml llama-speculative-simple
) >"$out/build.log" 2>&1 &
build=$!
log "CUDA build started (sm_$cap), log in build.log"

# 2. the models, meanwhile
models=$work/models
if [[ ! -f $models/draft-0.5b-shape.gguf ]]; then
  timeout 300 $py "$repo/benchmarks/gpu/make_models.py" "$models" >>"$out/run.log" 2>&1 || log "model build failed"
fi
ls -la "$models" >>"$out/run.log" 2>&1
wait $build; rc=$?
log "CUDA build finished rc=$rc"
((rc == 0)) || { tail -n 30 "$out/build.log"; exit 1; }
bin=$work/build/bin
mkdir -p "$src/llama_cpp/lib"
cp -a "$bin"/lib*.so* "$src/llama_cpp/lib/"
export PYTHONPATH=$src:$repo LD_LIBRARY_PATH=$bin
T=$models/target-7b-shape.gguf
D=$models/draft-0.5b-shape.gguf
PROMPT="Write a step-by-step explanation of how a hash map handles collisions."

# 3. probe, then ABBA
timeout 120 $py -m spectui probe --target "$T" --draft "$D" -ngl all -ngld all --json >"$out/probe.json" 2>"$out/probe.err"
log "probe rc=$? $(head -c 300 "$out/probe.json")"
timeout 120 $py -m spectui probe --target "$T" --draft "$D" -ngl all -ngld all >"$out/probe.txt" 2>&1
spectui_run() {  # k -> tokens/s on stdout
  $py -m spectui --target "$T" --draft "$D" -ngl all -ngld all --headless --json -n 256 --temp 0 --draft-max "$1" \
    --no-probe -p "$PROMPT" 2>>"$out/spectui.err" | tail -n1 | tee -a "$out/spectui.jsonl" \
    | $py -c "import json,sys; d=json.load(sys.stdin); s=d.get('stats', d); print(s.get('tokens_per_second', '?'), s.get('acceptance_rate', '?'))"
}
simple_run() {
  "$bin/llama-speculative-simple" -m "$T" -md "$D" -ngl 99 -ngld 99 --spec-type draft-simple --spec-draft-n-max "$1" \
    --spec-draft-n-min 0 --spec-draft-p-min 0 -n 256 --temp 0 -c 4096 -p "$PROMPT" 2>&1 >/dev/null \
    | tee -a "$out/simple.log" | sed -n 's/.*decoded.*speed: *\([0-9.]*\) t\/s.*/\1/p' | tail -n1
}
printf 'k side tokens/s acceptance\n' >"$out/results.txt"
for k in 2 4; do
  for side in spectui simple simple spectui; do
    if [[ $side == spectui ]]; then r=$(timeout 90 bash -c "$(declare -f spectui_run); py=$py T=$T D=$D out=$out PROMPT='$PROMPT' spectui_run $k"); else r=$(timeout 90 bash -c "$(declare -f simple_run); bin=$bin T=$T D=$D out=$out PROMPT='$PROMPT' simple_run $k"); fi
    printf '%s %s %s\n' "$k" "$side" "$r" | tee -a "$out/results.txt"
  done
done
# 4. the two row-math paths (--sampling cpu, --sampling graph: backend sampler chains on the device), side by side
timeout 240 $py "$repo/benchmarks/gpu/bench_graph_path.py" --target "$T" --draft "$D" --reps 1 --n 128 \
  --ks 2,4,8 --temps 0,0.8 >"$out/graph_path.txt" 2>&1
log "graph path rc=$? (graph_path.txt)"; tail -n 9 "$out/graph_path.txt"
log "done; results.txt:"
cat "$out/results.txt"
