"""What a backend sampler chain costs inside llama_decode on this build and backend, side by side with the numpy
row math it replaces (the question behind ``--sampling auto``'s choice, docs/lossless.md).

One model (the fast pair's target of benchmarks/fastpair.py: a few-millisecond decode, the real 151,936-token
vocabulary), several llama_contexts on its weights, each made with one chain in its context parameters
(spectui.engine.llama.graph_sampling.context_with_sampler) or none. Their decodes run round-robin in one process
(each context a decode in turn, same tokens, KV rolled back), so load changes hit every configuration alike:

  none         no chain: the raw rows (the CPU path's decode)
  none-0       no chain, the context made with n_outputs_max_per_seq = 0 (as the graph path's target context)
  greedy       argmax in the graph (the graph path at T = 0)
  temp         ``temp`` only (rows / T in the graph, no probabilities)
  temp+dist    ``temp`` + ``dist`` (softmax, cumsum, a draw: the graph path's chain at T > 0)

for a one-row decode (a draft step) and a (k + 1)-row decode (a verify). Beside them, the numpy work the CPU path
does per row instead (spectui.engine.rowmath softmax at T, and a draw from it). Prints medians and minima per
configuration and each one's extra time over ``none``.

usage: .venv/bin/python benchmarks/bench_graph_chains.py [--k 2,4] [--threads 2] [--reps 40] [--temp 0.8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from time import perf_counter

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fastpair import build_fast_pair  # noqa: E402

from spectui.engine.llama import graph_sampling as G  # noqa: E402
from spectui.engine.llama import models as M  # noqa: E402
from spectui.engine.llama.llama_lib import llama  # noqa: E402
from spectui.engine.verify import sample, softmax  # noqa: E402

CHAINS = ("none", "none-0", "greedy", "temp", "temp+dist")


def chain_of(name: str, temp: float):
    L = llama()
    if name == "greedy":
        return G.SamplerChain.greedy()
    if name == "temp+dist":
        return G.SamplerChain.at_temperature(temp, seed=1)
    c = G.SamplerChain.__new__(G.SamplerChain)  # temp alone: a chain without dist
    c.kind, c.temperature, c.attached = "temp", temp, []
    c.ptr = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
    L.llama_sampler_chain_add(c.ptr, L.llama_sampler_init_temp(float(temp)))
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="2,4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--temp", type=float, default=0.8)
    a = ap.parse_args()
    ks = [int(x) for x in a.k.split(",")]
    target, _ = build_fast_pair()
    L = llama()
    model = M.LoadedModel(str(target), "target", 512, a.threads, True, n_outputs_max_per_seq=0)
    ctxs = {}
    for name in CHAINS:
        if name.startswith("none"):
            cp = M.context_params(L, 512, 64, 64, a.threads, ())
            cp.n_outputs_max_per_seq = 0 if name == "none-0" else 1
            ctxs[name] = (L.llama_init_from_model(model.model, cp), None)
        else:
            ch = chain_of(name, a.temp)
            ctxs[name] = (G.context_with_sampler(model, ch, n_ctx=512, threads=a.threads, n_batch=64), ch)
    prompt = list(range(1000, 1020))
    for ctx, _ in ctxs.values():
        assert G.decode_on(ctx, prompt, 0, "last") == 0
    mem = {n: L.llama_get_memory(c) for n, (c, _) in ctxs.items()}
    shapes = [1] + [k + 1 for k in ks]
    t: dict[tuple[str, int], list[float]] = {(n, r): [] for n in CHAINS for r in shapes}
    for rep in range(a.reps + 2):
        for rows in shapes:
            for name in CHAINS:
                ctx, _ = ctxs[name]
                t0 = perf_counter()
                rc = G.decode_on(ctx, list(range(2000, 2000 + rows)), len(prompt), "all" if rows > 1 else "last")
                dt = perf_counter() - t0
                L.llama_memory_seq_rm(mem[name], 0, len(prompt), -1)
                if rc != 0:
                    raise SystemExit(f"llama_decode failed ({rc}) on {name} x {rows} rows")
                if rep >= 2:  # the first decodes of a shape reserve its graph
                    t[(name, rows)].append(dt)
    # the numpy row math of the CPU path, on a real row
    row = np.random.default_rng(0).standard_normal(
        model.n_vocab).astype(np.float32) * 3
    rng = np.random.default_rng(1)
    buf = np.empty_like(row)
    sm = []
    for _ in range(a.reps):
        t0 = perf_counter()
        q = softmax(row, a.temp, out=buf)
        sample(q, rng)
        sm.append(perf_counter() - t0)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; -t {a.threads}, "
          f"{a.reps} rounds, T = {a.temp:g}; {model.n_vocab} ids")
    for rows in shapes:
        base = statistics.median(t[("none", rows)])
        print(f"{rows} output row(s):")
        for name in CHAINS:
            xs = t[(name, rows)]
            med = statistics.median(xs)
            print(f"  {name:10s} median {1000 * med:7.2f} ms  min {1000 * min(xs):7.2f} ms  "
                  f"extra over none {1000 * (med - base):+7.2f} ms ({med / base:5.2f}x)")
    print(f"numpy softmax at T + one draw, one row: median {1000 * statistics.median(sm):.2f} ms, "
          f"min {1000 * min(sm):.2f} ms (the CPU path pays it per drafted token and per target row it judges)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    for ctx, ch in ctxs.values():
        L.llama_free(ctx)
        if ch is not None:
            ch.attached.clear()
            ch.free()
    model.close()


if __name__ == "__main__":
    main()
