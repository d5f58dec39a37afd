"""--pipeline against the sequential loop and llama.cpp's ``llama-speculative-simple``, side by side in one run.

For each pair (the Qwen pair: Qwen2.5-Coder 1.5B target / 0.5B draft, Q4_K_M; the fast pair: benchmarks/fastpair.py,
a few-millisecond target with Qwen's 151,936-token vocabulary and a noisy copy of it as the draft), each
temperature and each draft length k, one repetition runs, in an order that flips every repetition (so none
always runs on a warmer or quieter machine):

- ``seq``: spectui's sequential loop, both models at ``--seq-threads`` (-t 2: they take turns on both cores);
- ``pipe``: spectui's pipelined loop (``Settings.pipeline``: the draft drafts the next block on its own thread
  while the target verifies), at ``--split`` (1,1: one core each), on the same engine;
- ``llama``: ``llama-speculative-simple`` at -t ``--seq-threads`` (greedy verification at T = 0; at T > 0 it
  accepts a draft when the target's own sample equals it, not by speculative sampling: its tokens/s are
  comparable, its acceptance is not);
- ``base`` (once per temperature): the target alone, -t ``--seq-threads``.

It prints the CPU, the load average at the start and the end, the commit, one line per run, then per pair and
temperature a table by k (tokens/s of each, pipe / seq, pipe / llama, and the pipeline's own figures: hit
rate, waste, overlap share, hidden drafting), the best k of each and the ratios at them against the issue's
goals (pipelined >= 1.3x the sequential loop and >= 1.5x llama-speculative-simple on the Qwen pair, two cores),
and the split's costs (``engine.pipeline_probe``: a draft step and a verify at -t 2 alone, at 1 thread alone,
and at 1 thread while the other model decodes), which say why the pipeline wins or loses on this machine.

llama.cpp's tools: ``LLAMA_CPP_BIN`` or ../shared/anchors/build-llama-cpp-tools.sh (built once, cached);
``--no-llama`` leaves them out. ``--smoke``: a short check that everything runs (-n 16, k 2, one repetition,
no figures worth reading).

usage: .venv/bin/python benchmarks/bench_pipeline.py [--pairs qwen,fast] [--temps 0,0.8] [--ks 2,3,4,5,6,8]
       [--reps 3] [-n 128] [--seq-threads 2] [--split 1,1] [--pin] [--no-llama] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from spectui.analysis import stats  # noqa: E402
from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import PassEvent, Settings  # noqa: E402
from spectui.engine import Engine  # noqa: E402
from spectui.engine.llama.llama_lib import cpu_name  # noqa: E402
from spectui.engine.probes.pipeline_probe import measure_split  # noqa: E402

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
QWEN = (MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
ANCHOR = "anchors/build-llama-cpp-tools.sh"
DEFAULT_PROMPT = "Write a step-by-step explanation of how a hash map handles collisions."
GOALS = {"seq": 1.3, "llama": 1.5}  # the issue's: pipelined over each, Qwen pair, best k, two cores


def locate_tools() -> Path:
    """llama.cpp's bin folder: LLAMA_CPP_BIN, or the anchors' build script (beside the checkout or above it)."""
    env = os.environ.get("LLAMA_CPP_BIN")
    if env:
        return Path(env)
    for shared in (ROOT.parent / "shared", ROOT.parent.parent / "shared"):
        script = shared / ANCHOR
        if script.is_file():
            out = subprocess.run(["bash", str(script)], check=True, capture_output=True, text=True).stdout
            return Path(out.strip().splitlines()[-1])
    raise SystemExit("llama.cpp's tools not found: set LLAMA_CPP_BIN, or run with --no-llama")


def run_llama(bin_dir: Path, pair, k: int, temp: float, n: int, threads: int, seed: int) -> dict:
    cmd = [str(bin_dir / "llama-speculative-simple"), "-m", str(pair[0]), "-md", str(pair[1]),
           "--spec-type", "draft-simple", "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0",
           "--spec-draft-p-min", "0", "-n", str(n), "--temp", f"{temp:g}", "--seed", str(seed), "-t", str(threads),
           "-c", "4096", "-p", DEFAULT_PROMPT]
    # a random model's text is not always UTF-8: read it as far as the figures go
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                       env=dict(os.environ, LD_LIBRARY_PATH=str(bin_dir)))
    dec = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", p.stderr)
    nd, na = re.search(r"n_drafted\s*=\s*(\d+)", p.stderr), re.search(r"n_accept\s*=\s*(\d+)", p.stderr)
    if p.returncode != 0 or not (dec and nd and na):
        tail = " | ".join(p.stderr.strip().splitlines()[-3:])
        raise SystemExit(f"llama-speculative-simple failed (rc {p.returncode}): {tail}")
    drafted = int(nd.group(1))
    return {"tps": float(dec.group(3)), "acc": int(na.group(1)) / drafted if drafted else 0.0}


def run_spectui(engine: Engine, k: int, temp: float, n: int, pipeline: bool, seed: int) -> dict:
    drafter = "model" if k else "none"
    s = Settings(draft_max=k, temperature=temp, drafter=drafter, seed=seed, pipeline=pipeline)
    events = list(engine.run(DEFAULT_PROMPT, RunControl(s), n))
    end = events[-1]
    if end.reason not in ("n_predict", "eog"):
        raise SystemExit(f"spectui run ended with {end.reason}: {end.error}")
    snap = stats.compute(events)
    p = snap.pipeline
    assert not pipeline or any(isinstance(e, PassEvent) and e.pipeline is not None for e in events)
    return {"tps": snap.tokens_per_second, "acc": snap.acceptance_rate,
            "hit": p.hit_rate if p else None, "waste": p.waste if p else None,
            "overlap": p.overlap_share if p else None, "hidden": p.hidden_share if p else None}


def machine_line(args) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    return (f"machine: {cpu_name() or '?'}, {len(os.sched_getaffinity(0))} CPUs this process may use; "
            f"load average {os.getloadavg()[0]:.2f} at the start; commit {commit}; -n {args.n}, "
            f"sequential -t {args.seq_threads}, pipelined split {args.split[0]} + {args.split[1]}"
            + (" pinned" if args.pin else ""))


def costs_lines(engine: Engine, ks) -> list[str]:
    c = measure_split(engine, ks=ks)
    (t, td), (ts, tds) = c.split, c.threads
    out = [f"  draft step: {c.draft_ms:.2f} ms alone at {tds} threads, {c.solo_draft_ms:.2f} ms alone at {td}, "
           f"{c.split_draft_ms:.2f} ms at {td} while the target verifies"]
    for k in ks:
        out.append(f"  verify k={k}: {c.verify_ms[k]:.2f} ms alone at {ts} threads, {c.solo_verify_ms[k]:.2f} ms "
                   f"alone at {t}, {c.split_verify_ms[k]:.2f} ms at {t} while the draft steps")
    out.append(f"  (threads scale when 'alone at {ts}' is well under 'alone at {t}'; the pair's bandwidth "
               f"contention is 'while ...' over 'alone at 1')")
    return out


def fmt(x, pct=False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.0f}%" if pct else f"{x:.2f}"


def report(res: dict, pair: str, temp: float, ks, have_llama: bool) -> None:
    def med(who, k, key="tps"):
        vals = [r[key] for r in res.get((pair, temp, who, k), []) if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    base = med("base", 0)
    print(f"\n{pair} pair, temp {temp:g} (medians; the target alone {fmt(base)} t/s)")
    print(f"{'k':>2} | {'seq t/s':>8} | {'pipe t/s':>8} | {'llama t/s':>9} | {'pipe/seq':>8} | {'pipe/llama':>10} | "
          f"{'hit':>4} | {'waste':>5} | {'overlap':>7} | {'hidden':>6} | {'accept':>6}")
    for k in ks:
        s, p, ll = med("seq", k), med("pipe", k), med("llama", k)
        print(f"{k:>2} | {fmt(s):>8} | {fmt(p):>8} | {fmt(ll):>9} | {fmt(p / s if s and p else None):>8} | "
              f"{fmt(p / ll if ll and p else None):>10} | {fmt(med('pipe', k, 'hit'), True):>4} | "
              f"{fmt(med('pipe', k, 'waste'), True):>5} | {fmt(med('pipe', k, 'overlap'), True):>7} | "
              f"{fmt(med('pipe', k, 'hidden'), True):>6} | {fmt(med('seq', k, 'acc'), True):>6}")
    ways = ("seq", "pipe") + (("llama",) if have_llama else ())
    best = {w: max(ks, key=lambda k, w=w: med(w, k) or 0.0) for w in ways}
    line = "  best k: " + ", ".join(f"{w} k={k} {fmt(med(w, k))} t/s" for w, k in best.items())
    bp = med("pipe", best["pipe"]) or 0.0
    for w, k_w in best.items():
        if w != "pipe" and med(w, k_w):
            r = bp / med(w, k_w)
            goal = GOALS[w] if pair == "qwen" else None
            line += f"; pipe/{w} {r:.2f}x" + (f" (goal {goal}x: {'met' if r >= goal else 'not met'})" if goal else "")
    print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default="qwen,fast")
    ap.add_argument("--temps", default="0,0.8")
    ap.add_argument("--ks", default="2,3,4,5,6,8")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--seq-threads", type=int, default=2)
    ap.add_argument("--split", type=lambda s: tuple(int(x) for x in s.split(",")), default=(1, 1))
    ap.add_argument("--pin", action="store_true", help="pin the split's two threads to cores of their own")
    ap.add_argument("--no-llama", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="-n 16, k 2, one repetition: it runs, nothing more")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.smoke:
        a.n, a.ks, a.reps = 16, "2", 1
    ks = [int(x) for x in a.ks.split(",")]
    temps = [float(x) for x in a.temps.split(",")]
    bin_dir = None if a.no_llama else locate_tools()
    print(machine_line(a), flush=True)
    res: dict = {}
    for pair in a.pairs.split(","):
        if pair == "qwen":
            paths = QWEN
            if not all(p.is_file() for p in paths):
                raise SystemExit(f"the Qwen pair is not in {MODELS}")
        else:
            import fastpair  # noqa: PLC0415 - builds the pair once (cached)

            paths = fastpair.build_fast_pair()
        engine = Engine(str(paths[0]), str(paths[1]), n_ctx=4096, threads=a.seq_threads,
                        threads_draft=a.seq_threads, pipeline_threads=a.split, pin_pipeline=a.pin,
                        warn=lambda m: print(f"  {m}", file=sys.stderr))
        try:
            print(f"\n{pair} pair: the split's costs", flush=True)
            for line in costs_lines(engine, ks):
                print(line, flush=True)
            run_pair(engine, pair, paths, temps, ks, a, bin_dir, res)
        finally:
            engine.close()
        for temp in temps:
            report(res, pair, temp, ks, bin_dir is not None)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end (figures from a loaded machine mean nothing)")


def run_pair(engine, pair, paths, temps, ks, a, bin_dir, res) -> None:
    for rep in range(a.reps):
        for temp in temps:
            r = run_spectui(engine, 0, temp, a.n, False, a.seed + rep)
            res.setdefault((pair, temp, "base", 0), []).append(r)
            print(f"rep {rep + 1} {pair} T={temp:g} base      {r['tps']:7.2f} t/s", flush=True)
            for k in ks:
                order = ["seq", "pipe"] + (["llama"] if bin_dir is not None else [])
                if (rep + k) % 2:
                    order.reverse()
                for who in order:
                    if who == "llama":
                        r = run_llama(bin_dir, paths, k, temp, a.n, a.seq_threads, a.seed + rep)
                    else:
                        r = run_spectui(engine, k, temp, a.n, who == "pipe", a.seed + rep)
                    res.setdefault((pair, temp, who, k), []).append(r)
                    extra = (f"  hit {fmt(r['hit'], True)} waste {fmt(r['waste'], True)} overlap "
                             f"{fmt(r['overlap'], True)}" if who == "pipe" else "")
                    print(f"rep {rep + 1} {pair} T={temp:g} k={k} {who:5s} {r['tps']:7.2f} t/s accept "
                          f"{fmt(r['acc'], True)}{extra}", flush=True)


if __name__ == "__main__":
    main()
