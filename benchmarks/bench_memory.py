"""Peak memory and pass times of a headless run, before and after the memory changes, side by side.

Each configuration runs in its own process (peak RSS = the child's ru_maxrss, as GNU time reports it)
on the Qwen pair at k = 2, and the configurations alternate (ABAB...). Printed per configuration: peak
RSS, RSS over the model files, decode tokens/s, TTFT, mean verify ms and mean draft ms per pass, and
the ratios after/before.

    .venv/bin/python benchmarks/bench_memory.py [--rounds 2] [-n 64] [-t 2] [--prompt-tokens 0]

Configurations:
  before   mmap on with weight repacking (the repacked copies and the file pages both resident),
           n_ubatch 512 (compute buffers reserved for 512-row logits on both contexts)
  after    spectui's defaults: no mmap when repacking, n_ubatch = engine default
  headless as after, with the KV caches sized to the run (Engine grow_kv, what `spectui --headless` asks for)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from spectui.contract.prompt import DEFAULT_PROMPT  # noqa: E402

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
TARGET = MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DRAFT = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"

CONFIGS = {
    "before": {"use_mmap": True, "n_ubatch": 512},
    "after": {},
    "headless": {"grow_kv": True},
}

CHILD = r"""
import json, resource, sys
from spectui.contract.control import RunControl
from spectui.engine.loop import Engine
from spectui.contract.events import PassEvent, Settings
from spectui.analysis.stats import compute
cfg = json.loads(sys.argv[1])
e = Engine(cfg.pop("target"), cfg.pop("draft"), n_ctx=4096, threads=cfg.pop("threads"), warn=lambda m: None,
           **cfg.pop("kw"))
events = list(e.run(cfg["prompt"], RunControl(Settings(draft_max=2, drafter="model")), cfg["n"]))
snap = compute(events)
passes = [ev for ev in events if isinstance(ev, PassEvent) and not ev.prefill]
out = {
    "tps": snap.tokens_per_second, "ttft_ms": snap.ttft_ms,
    "verify_ms": sum(p.timing.verify_ms for p in passes) / len(passes),
    "draft_ms": sum(p.timing.draft_ms for p in passes) / len(passes),
    "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}
e.close()
print(json.dumps(out))
"""


def run_one(name: str, n: int, threads: int, prompt: str) -> dict:
    cfg = {"target": str(TARGET), "draft": str(DRAFT), "threads": threads, "kw": CONFIGS[name], "prompt": prompt,
           "n": n}
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], capture_output=True, text=True, cwd=REPO,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=0, help="repeat the prompt to about this many tokens")
    a = ap.parse_args()
    if not (TARGET.is_file() and DRAFT.is_file()):
        print(f"Qwen pair not found in {MODELS} (../shared/models/fetch-qwen-coder-pair.sh)")
        return 2
    prompt = DEFAULT_PROMPT
    while a.prompt_tokens and len(prompt) // 4 < a.prompt_tokens:
        prompt += " " + DEFAULT_PROMPT
    files = TARGET.stat().st_size + DRAFT.stat().st_size
    print(f"model files {files / 1e9:.3f} GB; load {os.getloadavg()[0]:.2f}; -t {a.threads}, -n {a.n}, k=2")
    res: dict[str, list[dict]] = {k: [] for k in CONFIGS}
    for r in range(a.rounds):
        order = list(CONFIGS) if r % 2 == 0 else list(reversed(CONFIGS))
        for name in order:
            res[name].append(run_one(name, a.n, a.threads, prompt))
            x = res[name][-1]
            print(f"  round {r + 1} {name:6s} rss {x['maxrss_kb'] / 1e6:.3f} GB  {x['tps']:.2f} t/s  "
                  f"ttft {x['ttft_ms']:.0f} ms  verify {x['verify_ms']:.1f} ms  draft {x['draft_ms']:.1f} ms")

    def mean(name, key):
        return sum(x[key] for x in res[name]) / len(res[name])

    print(f"{'config':8s} {'peak RSS':>9s} {'over files':>10s} {'(MiB)':>6s} {'t/s':>7s} {'TTFT ms':>8s} "
          f"{'verify ms':>9s} {'draft ms':>9s}")
    for name in CONFIGS:
        rss = max(x["maxrss_kb"] for x in res[name]) * 1024
        print(f"{name:8s} {rss / 1e9:8.3f}G {(rss - files) / 1e6:+9.0f}M {(rss - files) / 2**20:+6.0f} "
              f"{mean(name, 'tps'):7.2f} {mean(name, 'ttft_ms'):8.0f} {mean(name, 'verify_ms'):9.1f} "
              f"{mean(name, 'draft_ms'):9.1f}")
    for name in list(CONFIGS)[1:]:
        print(f"{name}/before: " + ", ".join(
            f"{k} {mean(name, k) / mean('before', k):.3f}x" for k in ("tps", "ttft_ms", "verify_ms", "draft_ms")))
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (other processes on the cores skew the times, not RSS)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
