"""The graph sampling path on llama.cpp's Vulkan backend (the build in .venv-vulkan; on a machine without a GPU,
Mesa's software device lavapipe), run there as a subprocess as tests/engine/test_vulkan.py does: at T = 0
every recorded field of the graph path equals the CPU path's on the same device; at T > 0 the graph path's
emitted tokens follow the target's law (chi-square), its recorded q(d), p(d) are the models' softmax and the
first draft is accepted at sum min(p, q); on lavapipe an engine's chains stay fixed, and a run at another
temperature is refused in one line. The tiny models here have 576 ids (ggml-vulkan needs each output row's
offset aligned: graph_path.ROW_ALIGN; 563 ids are refused, also checked)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("SPECTUI_VULKAN_VENV", ROOT / ".venv-vulkan"))
PY = VENV / "bin" / "python"
ENV = dict(os.environ, GGML_VK_VISIBLE_DEVICES=os.environ.get("GGML_VK_VISIBLE_DEVICES", "0"),
           PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))

pytestmark = pytest.mark.slow

SCRIPT = r"""
import dataclasses, json, sys
from pathlib import Path
import tinymodels as T
import graph_checks as C
from spectui.contract.control import RunControl
from spectui.contract.events import Settings
from spectui.engine import Engine
from spectui.engine.llama import devices as D, models as M

folder, n_runs, temp = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
out = {"offload": D.supports_gpu_offload() and bool(D.gpu_devices())}
if not out["offload"]:
    print(json.dumps(out)); sys.exit(0)
v = T.default_vocab()
v = v + [f"<pad{i}>" for i in range(576 - len(v))]
tgt = T.shared_model(folder, "target.gguf", seed=0, vocab=v, name="tiny-target")
dr = T.shared_model(folder, "draft-noisy.gguf", seed=0, noise=0.1, vocab=v, name="tiny-draft-noisy")
odd = T.shared_model(folder, "target.gguf", seed=0, name="tiny-target")

def make(path, sampling):
    return Engine(str(tgt if path is None else path), str(dr) if path is None else None, n_ctx=256, threads=1,
                  warn=lambda m: None, sampling=sampling, n_gpu_layers=99, n_batch=64)

def rec(ev):
    d = dataclasses.asdict(ev)
    for k in ("timing", "others_cpu", "t", "wall_s", "run_id", "started_at", "target_decode_ms",
              "draft_decode_ms", "sampling"):
        d.pop(k, None)
    for k in ("target", "draft"):
        if isinstance(d.get(k), dict):
            d[k].pop("load_s", None)
    return d

def run(e, s, n=40):
    return list(e.run("spectui", RunControl(s), n))

cpu, graph = make(None, "cpu"), make(None, "graph")
out["backend"], out["paths"] = graph.target_info.backend, [cpu.sampling, graph.sampling]
auto = make(None, "auto")
out["auto"] = [auto.sampling, auto.sampling_why]
out["odd_vocab"] = make(odd, "auto").sampling_why
eq = []
for s in (Settings(draft_max=3, drafter="model"), Settings(draft_max=6, drafter="model"),
          Settings(draft_max=3, drafter="ngram")):
    a, b = run(cpu, s), run(graph, s)
    eq.append([rec(x) for x in a] == [rec(x) for x in b] and b[0].sampling == "graph" and len(b) > 8)
out["t0_equal"] = eq
end = run(graph, Settings(draft_max=3, drafter="model", temperature=0.8))[-1]
out["refused"] = [end.reason, end.error]
hot = make(None, "graph")
runs = C.sampled_runs(hot, n_runs, temp)
plain = [M.LoadedModel(str(p), r, n_ctx=256, threads=1, use_extra_bufts=True, n_batch=64, n_gpu_layers=99)
         for p, r in ((tgt, "target"), (dr, "draft"))]
# ggml-vulkan's verify batch rounds apart from its one-token decode by more than the CPU's (a few 1e-3 logits)
out["t_positive"] = C.check_runs(runs, C.laws(plain[0], plain[1], runs, temp), min_df=3, rel_tol=3e-2)
print(json.dumps(out))
"""


@pytest.mark.timeout(1800)
def test_the_graph_path_on_vulkan(tmp_path):
    if not PY.is_file():
        pytest.skip(f"no Vulkan build of llama-cpp-python: {VENV} is missing "
                    "(scripts/build-llama-cpp-python-vulkan.sh)")
    p = subprocess.run([str(PY), "-c", SCRIPT, str(tmp_path), "300", "0.6"], capture_output=True, text=True,
                       env=ENV, timeout=1700, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if not out["offload"]:
        pytest.skip("the Vulkan build sees no Vulkan device (lavapipe: apt-get install mesa-vulkan-drivers)")
    assert out["backend"] == "Vulkan" and out["paths"] == ["cpu", "graph"]
    # auto takes the graph path where the model runs on a device, but not on lavapipe (its chains stay fixed)
    assert out["auto"][0] == "cpu" and "lavapipe" in out["auto"][1]
    assert "not 256-byte aligned" in out["odd_vocab"]
    assert out["t0_equal"] == [True, True, True]
    assert out["refused"][0] == "error" and "lavapipe" in out["refused"][1]
    fig = out["t_positive"]
    assert fig["chi2"] < fig["limit"] and abs(fig["z"]) < 4.0 and 0.05 < fig["accepted"] < 0.95
