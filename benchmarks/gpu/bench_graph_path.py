"""Both row-math paths on a GPU, side by side in one run: spectui with ``--sampling cpu`` (the draft's q and the
target's p softmaxed in numpy on rows copied back from the device) and ``--sampling graph`` (llama.cpp
backend sampler chains in the models' graphs, on the device: spectui/engine/run/graph_path.py), both models fully
offloaded, the same pair, prompt, -n, -c, seed.

Per repetition, for every k and temperature, the two paths run back to back in an order that alternates
(A B, then B A); each path has its own Engine over the same files. Printed per cell: the median tokens/s of
each path, their ratio (graph / cpu), the acceptance of each, and each path's share of wall time outside both
models' llama_decode (the goal: <= 3%).

Where no GPU device is in ggml's backend registry (a CPU-only build, no device, or only Mesa's software
lavapipe, whose chains cannot be replaced), it says so and exits 2 without measuring anything.

usage: python benchmarks/gpu/bench_graph_path.py --target T.gguf --draft D.gguf [--reps 2] [--n 256]
       [--ks 2,4,8] [--temps 0,0.8] [--ctx 4096] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from time import perf_counter

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spectui.analysis import stats as S  # noqa: E402
from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import RunEnded, Settings  # noqa: E402
from spectui.contract.prompt import DEFAULT_PROMPT  # noqa: E402

SEED = 1


def gpu_or_why() -> str:
    """"" when a GPU device can run the graph path; else why not (one line)."""
    from spectui.engine.llama import devices as D  # noqa: PLC0415 - loads llama.cpp

    if not D.supports_gpu_offload():
        return "this llama.cpp build cannot offload to a GPU"
    devs = [d for d in D.gpu_devices() if not D.is_lavapipe(d)]
    if not devs:
        return "no GPU device in ggml's backend registry (lavapipe, software Vulkan, does not count)"
    return ""


def one_run(engine, k: int, temp: float, n: int) -> dict:
    models = [engine.target, engine.draft]
    d0 = [m.decode_s for m in models]
    stats = S.RunStats()
    control = RunControl(Settings(draft_max=k, temperature=temp, drafter="model", seed=SEED))
    t0 = perf_counter()
    end = None
    for ev in engine.run(DEFAULT_PROMPT, control, n, overlap=True):
        stats.update(ev)
        if isinstance(ev, RunEnded):
            end = ev
    wall = perf_counter() - t0
    if end is None or end.reason not in ("n_predict", "eog"):
        raise SystemExit(f"spectui run ended with {getattr(end, 'reason', '?')}: {getattr(end, 'error', '')}")
    snap = stats.snapshot()
    dec = sum(m.decode_s - a for m, a in zip(models, d0))
    return {"tps": snap.tokens_per_second, "acc": snap.acceptance_rate, "outside": 1.0 - dec / wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--ks", default="2,4,8")
    ap.add_argument("--temps", default="0,0.8")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    why = gpu_or_why()
    if why:
        print(f"bench_graph_path: {why}: nothing measured", file=sys.stderr)
        return 2
    from spectui.engine import Engine  # noqa: PLC0415

    engines = {p: Engine(a.target, a.draft, n_ctx=a.ctx, threads=a.threads, n_gpu_layers="all",
                         n_gpu_layers_draft="all", sampling=p) for p in ("cpu", "graph")}
    try:
        info = engines["graph"].target_info
        print(f"machine: {info.backend} {info.device}; {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.2f} at start; -n {a.n}, -c {a.ctx}; target {a.target}, draft {a.draft}")
        res: dict[tuple, list[dict]] = defaultdict(list)
        cells = [(k, float(t)) for t in a.temps.split(",") for k in (int(x) for x in a.ks.split(","))]
        for rep in range(a.reps):
            for k, temp in cells:
                order = ["cpu", "graph"] if rep % 2 == 0 else ["graph", "cpu"]
                for p in order:
                    r = one_run(engines[p], k, temp, a.n)
                    res[(p, k, temp)].append(r)
                    print(f"rep {rep + 1} k={k} T={temp:g} {p:5s} {r['tps']:8.2f} t/s  accept {100 * r['acc']:5.1f}%  "
                          f"outside llama_decode {100 * r['outside']:.2f}%", flush=True)
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
        print(f"{'k':>2} {'T':>4} | {'cpu t/s':>9} {'outside':>7} | {'graph t/s':>9} {'outside':>7} | "
              f"{'ratio':>5} | accept")
        for k, temp in cells:
            m = {p: {f: statistics.median(r[f] for r in res[(p, k, temp)]) for f in ("tps", "acc", "outside")}
                 for p in engines}
            print(f"{k:>2} {temp:>4g} | {m['cpu']['tps']:9.2f} {100 * m['cpu']['outside']:6.2f}% | "
                  f"{m['graph']['tps']:9.2f} {100 * m['graph']['outside']:6.2f}% | "
                  f"{m['graph']['tps'] / m['cpu']['tps']:5.2f} | "
                  f"{100 * m['cpu']['acc']:.0f}% / {100 * m['graph']['acc']:.0f}%")
        print("(medians; ratio = graph / cpu tokens/s; outside = wall time outside both models' llama_decode)")
    finally:
        for e in engines.values():
            e.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
