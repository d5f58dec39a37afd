"""The GPU path on a real ggml GPU backend: llama.cpp's Vulkan backend, on whatever Vulkan device the machine
has - on a machine without a GPU, Mesa's software device (lavapipe, "llvmpipe"), which ggml lists only when
GGML_VK_VISIBLE_DEVICES names it (set to 0 here unless already set).

The Vulkan build lives in its own virtual environment (scripts/build-llama-cpp-python-vulkan.sh makes
.venv-vulkan, or SPECTUI_VULKAN_VENV), so these tests run spectui there as a subprocess: the real offload code
path (device buffers, the device's name and free memory, logits copied back from the device). Skipped, with
the reason, when that environment or a Vulkan device is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from greedy_checks import MARGIN, assert_lossless, reference

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("SPECTUI_VULKAN_VENV", ROOT / ".venv-vulkan"))
PY = VENV / "bin" / "python"
ENV = dict(os.environ, GGML_VK_VISIBLE_DEVICES=os.environ.get("GGML_VK_VISIBLE_DEVICES", "0"),
           PYTHONPATH=str(ROOT))
PROMPT = "the hash map handles collisions"
# the greedy check needs a prompt whose CPU run has no near tie (margin < CROSS_BACKEND_MARGIN) in its first 20
# steps: this one has none in 60 on the tiny target (PROMPT has one at step 7)
GREEDY_PROMPT = "spectui"
# Across backends the kernels differ more than across batch sizes on one backend: a step whose top-two
# target logits (CPU, target-only run) are closer than this may legitimately flip.
CROSS_BACKEND_MARGIN = 0.05

pytestmark = pytest.mark.slow

_DEVICES = """
import json, dataclasses
from spectui.engine.llama import devices as D
print(json.dumps({"offload": D.supports_gpu_offload(), "devices": [dataclasses.asdict(d) for d in D.gpu_devices()]}))
"""


def _py(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(PY), "-c", code], capture_output=True, text=True, env=ENV, timeout=timeout)


@pytest.fixture(scope="module")
def devices() -> list[dict]:
    if not PY.is_file():
        pytest.skip(f"no Vulkan build of llama-cpp-python: {VENV} is missing (bash "
                    "scripts/build-llama-cpp-python-vulkan.sh builds it; needs libvulkan-dev glslc glslang-tools "
                    "spirv-headers, and mesa-vulkan-drivers for a software device)")
    p = _py(_DEVICES)
    if p.returncode != 0:
        pytest.skip(f"the Vulkan environment {VENV} cannot load llama.cpp: {p.stderr.strip().splitlines()[-1:]}")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    if not info["offload"] or not info["devices"]:
        pytest.skip("the Vulkan build sees no Vulkan device (lavapipe: apt-get install mesa-vulkan-drivers; "
                    "ggml lists a CPU-type device only with GGML_VK_VISIBLE_DEVICES=0)")
    return info["devices"]


def spectui(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(PY), "-m", "spectui", *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _header(trace: Path) -> dict:
    with open(trace, encoding="utf-8") as fh:
        return json.loads(fh.readline())


def test_device_is_vulkan_with_free_memory(devices):
    d = devices[0]
    assert d["backend"] == "Vulkan" and d["name"].startswith("Vulkan")
    assert d["description"]  # e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
    assert 0 < d["free_bytes"] <= d["total_bytes"]


def test_offload_all_places_both_models_on_the_device(devices, tiny_target, tiny_draft_noisy, tmp_path):
    dev = devices[0]["description"]
    trace = tmp_path / "vk.jsonl"
    p = spectui("--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "--headless", "-ngl", "all",
                "-ngld", "all", "-n", "24", "--temp", "0", "--draft-max", "2", "-t", "1", "-c", "256",
                "-p", PROMPT, "--record", str(trace))
    assert p.returncode == 0, p.stderr
    # the headless summary: "target NAME: Vulkan (llvmpipe ...), 3/3 layers"
    placed = [line for line in p.stdout.splitlines() if line.strip().startswith(("target ", "draft "))]
    assert any(f"Vulkan ({dev}), 3/3 layers" in line for line in placed if line.strip().startswith("target")), placed
    assert any(f"Vulkan ({dev}), 3/3 layers" in line for line in placed if line.strip().startswith("draft")), placed
    # the trace header records it, so a replay says what hardware produced the run
    h = _header(trace)
    for role in ("target", "draft"):
        m = h["models"][role]
        assert (m["backend"], m["n_layer"], m["n_gpu_layers"]) == ("Vulkan", 2, 3) and dev in m["device"]
    # the JSON (replayed from the trace: the same events) and the TUI header's words
    r = subprocess.run([sys.executable, "-m", "spectui", "replay", "--headless", "--json", str(trace)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout.strip().splitlines()[-1])
    for role in ("target", "draft"):
        assert j["placement"][role]["backend"] == "Vulkan" and dev in j["placement"][role]["device"]
        assert j["placement"][role]["n_gpu_layers"] == 3
    from spectui.recording.trace import read_trace  # noqa: PLC0415
    from spectui.views.placement import models_where  # noqa: PLC0415

    start = next(iter(read_trace(trace).events))
    assert models_where(start) == "target Vulkan 3/3 layers · draft Vulkan 3/3 layers"


def test_ngl_0_keeps_both_models_on_the_cpu(devices, tiny_target, tiny_draft_noisy):
    p = spectui("--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "--headless", "--json", "-ngl",
                "0", "-ngld", "0", "-n", "8", "--temp", "0", "--draft-max", "2", "-t", "1", "-c", "256", "-p", PROMPT)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout.strip().splitlines()[-1])
    for role in ("target", "draft"):
        assert j["placement"][role]["backend"] == "CPU" and j["placement"][role]["n_gpu_layers"] == 0


def test_greedy_output_on_the_device_equals_the_cpu_build(devices, tiny_target, tiny_draft_noisy, make_engine,
                                                         tmp_path):
    """Speculative greedy on the Vulkan device = the CPU build's target-only greedy text, up to the first step
    whose top-two margin (CPU) is below CROSS_BACKEND_MARGIN."""
    trace = tmp_path / "vk.jsonl"
    n = 60
    p = spectui("--target", str(tiny_target), "--draft", str(tiny_draft_noisy), "--headless", "-ngl", "all",
                "-ngld", "all", "-n", str(n), "--temp", "0", "--draft-max", "3", "-t", "1", "-c", "256", "-p",
                GREEDY_PROMPT, "--record", str(trace))
    assert p.returncode == 0, p.stderr
    from spectui.contract.events import PassEvent  # noqa: PLC0415
    from spectui.recording.trace import read_trace  # noqa: PLC0415

    vk = [t.id for ev in read_trace(trace).events if isinstance(ev, PassEvent) for t in ev.emitted]
    assert len(vk) == n
    with make_engine(tiny_target, None, n_ctx=256) as cpu:
        ref, margins = reference(cpu, n_predict=n, prompt=GREEDY_PROMPT)
    assert MARGIN <= CROSS_BACKEND_MARGIN
    assert_lossless(vk, ref, [m if m >= CROSS_BACKEND_MARGIN else 0.0 for m in margins], min_checked=20)


def test_memory_check_reads_the_devices_free_memory(devices, tiny_target):
    """The placement check compares the offloaded share with the free memory the Vulkan device reports."""
    code = """
import json
from spectui.engine.llama import devices as D, preload as P
devs = D.gpu_devices()
free = sum(d.free_bytes for d in devs)
warned = []
part = P.ModelMemory(file_bytes=free + 2**30, kv_bytes=0, n_layer=2, n_gpu_layers=-1)
fits = P.placement_report([part], 2**50, devs, warned.append)
small = P.placement_report([P.ModelMemory(file_bytes=2**20, kv_bytes=0, n_layer=2, n_gpu_layers=-1)], 2**50, devs,
                           warned.append)
print(json.dumps({"free": free, "fits": fits, "small": small, "warned": warned}))
"""
    p = _py(code)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["free"] == sum(d["free_bytes"] for d in devices) > 0
    assert r["fits"] is False and r["small"] is True and len(r["warned"]) == 1
    w = r["warned"][0]
    assert devices[0]["description"] in w and f"{r['free'] / 1024**3:.2f} GiB free" in w


def test_probe_runs_on_the_device(devices, tiny_target, tiny_draft_noisy, tmp_path):
    env_home = dict(ENV, HOME=str(tmp_path))  # a fresh probe cache
    p = subprocess.run([str(PY), "-m", "spectui", "probe", "--target", str(tiny_target), "--draft",
                        str(tiny_draft_noisy), "-ngl", "all", "-ngld", "all", "-t", "1", "-c", "256", "--max-batch",
                        "4", "--repeats", "1", "--json"], capture_output=True, text=True, env=env_home, timeout=600,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    text = json.dumps(r)
    assert "Vulkan" in text, text[:500]


# Decode sequences that crashed lavapipe before flash attention was switched off there (README: "The Vulkan
# path"): a one-token first decode then a longer one; a dropped warm-up, a clear, then a longer one; the probe's
# 1..4-token verify batches with every row's logits; and a draft/verify-like mix with rollbacks.
_SEQUENCES = """
import json, sys
import numpy as np
from spectui.engine.llama import models as M
m = M.LoadedModel(sys.argv[1], "target", 256, 1, False, n_gpu_layers=-1)
seqs = [[("d", 1, "last"), ("d", 4, "last")],
        [("d", 2, "none"), ("c",), ("d", 4, "last")],
        [("d", 2, "none"), ("c",), ("d", 1, "all"), ("d", 2, "all"), ("d", 3, "all"), ("d", 4, "all")],
        [("d", 8, "last"), ("d", 4, "all"), ("r", 9), ("d", 3, "all"), ("r", 10), ("d", 1, "last"),
         ("d", 33, "all"), ("r", 20), ("d", 5, "none"), ("d", 2, "all")]]
seq = seqs[int(sys.argv[2])]
pos, rows = 0, []
for op in seq:
    if op[0] == "c":
        m.clear(); pos = 0
    elif op[0] == "r":
        m.rollback(op[1]); pos = op[1]
    else:
        n = m.decode([3 + (pos + i) % 50 for i in range(op[1])], pos, op[2])
        if n:
            rows.append(np.array(m.logits_rows(n)).tolist())
        pos += op[1]
print(json.dumps({"offloaded": m.n_gpu_layers, "rows": rows}))
"""


def _rows(python: str, code: str, model: Path, which: int, env: dict | None) -> dict:
    p = subprocess.run([python, "-c", code, str(model), str(which)], capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, (which, p.returncode, p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("which,n_rows", [(0, 2), (1, 1), (2, 4), (3, 6)])
def test_decode_sequences_that_crashed_lavapipe(devices, tiny_target, which, n_rows):
    """Each sequence, in a fresh process (ggml-vulkan compiles its pipelines once per process, on first use), runs to
    the end on the device, and every logit row equals the CPU build's (the same decodes) up to the backends'
    rounding."""
    import numpy as np  # noqa: PLC0415

    vk = _rows(str(PY), _SEQUENCES, tiny_target, which, ENV)
    cpu = _rows(sys.executable, _SEQUENCES.replace("n_gpu_layers=-1", "n_gpu_layers=0"), tiny_target, which, None)
    assert (vk["offloaded"], cpu["offloaded"]) == (3, 0)
    assert len(vk["rows"]) == len(cpu["rows"]) == n_rows
    for x, y in zip(vk["rows"], cpu["rows"]):
        # the two backends' kernels sum in different orders: here they differ by < 0.004 (and a wrong row,
        # as from a stale or missing buffer, by whole units)
        np.testing.assert_allclose(np.array(x), np.array(y), rtol=0, atol=0.02)
