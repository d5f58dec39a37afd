"""spectui's engine vs llama.cpp's own ``llama-speculative-simple``, alternating, same settings.

Qwen2.5-Coder 1.5B target / 0.5B draft (Q4_K_M), the issue's prompt, -n 128, temperature 0, k = 2 and 5,
-t 2. Each repetition runs, for each k, both programs back to back (the order flips every repetition, so
neither always runs on a warmer or quieter machine). Prints per-run figures, then medians:

- decode tokens/s of both and the ratio spectui / llama.cpp (llama.cpp's "decoded ... t/s" line; spectui's
  StatsSnapshot.tokens_per_second, same definition: tokens after the first / time after prompt eval);
- both acceptance rates (n_accept / n_drafted);
- spectui's share of wall time outside llama_decode (1 - time inside llama_decode of both models / the run's
  wall time from RunStarted to RunEnded, calibration and prompt eval included).

llama.cpp's tools are built (once) by ../shared/anchors/build-llama-cpp-tools.sh. That script enables
GGML_AVX_VNNI, which CPUs without the ``avx_vnni`` flag (e.g. AVX-512 VNNI-only parts) cannot execute
(Illegal instruction): when /proc/cpuinfo lacks it, this script reconfigures that build with
-DGGML_AVX_VNNI=OFF and rebuilds the three tools (incremental, a few minutes).

usage: .venv/bin/python benchmarks/bench_vs_llama_cpp.py [--reps 2] [--n 128] [--ks 2,5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spectui.analysis import stats  # noqa: E402
from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import Settings  # noqa: E402
from spectui.contract.prompt import DEFAULT_PROMPT  # noqa: E402
from spectui.engine import Engine  # noqa: E402

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
TARGET = MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DRAFT = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
ANCHORS = ROOT.parent / "shared" / "anchors" / "build-llama-cpp-tools.sh"


def locate_tools() -> Path:
    env = os.environ.get("LLAMA_CPP_BIN")
    if env:
        return Path(env)
    out = subprocess.run(["bash", str(ANCHORS)], check=True, capture_output=True, text=True).stdout.strip()
    bin_dir = Path(out.splitlines()[-1])
    build = bin_dir.parent
    cache = build / "CMakeCache.txt"
    flags = ""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        pass
    if flags and " avx_vnni" not in flags + " " and cache.is_file() and "GGML_AVX_VNNI:BOOL=ON" in cache.read_text():
        print("rebuilding llama.cpp tools with -DGGML_AVX_VNNI=OFF (this CPU has no avx_vnni) ...", file=sys.stderr)
        src = build.parent
        subprocess.run(["cmake", "-B", "build", "-DGGML_AVX_VNNI=OFF"], cwd=src, check=True, capture_output=True)
        subprocess.run(
            ["cmake", "--build", "build", f"-j{os.cpu_count() or 2}", "--target", "llama-speculative-simple",
             "llama-speculative", "llama-simple"], cwd=src, check=True, capture_output=True)
    return bin_dir


def run_llama_cpp(bin_dir: Path, k: int, n: int, threads: int, n_ctx: int) -> dict:
    exe = bin_dir / "llama-speculative-simple"
    cmd = [str(exe), "-m", str(TARGET), "-md", str(DRAFT), "--spec-type", "draft-simple",
           "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0", "--spec-draft-p-min", "0",
           "-n", str(n), "--temp", "0", "-t", str(threads), "-c", str(n_ctx), "-p", DEFAULT_PROMPT]
    env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        tail = p.stderr.strip().splitlines()[-3:]
        raise SystemExit(f"llama-speculative-simple failed (rc {p.returncode}): {' | '.join(tail)}")
    err = p.stderr
    dec = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", err)
    drafted = re.search(r"n_drafted\s*=\s*(\d+)", err)
    accepted = re.search(r"n_accept\s*=\s*(\d+)", err)
    if not (dec and drafted and accepted):
        raise SystemExit("could not parse llama-speculative-simple's summary lines")
    nd, na = int(drafted.group(1)), int(accepted.group(1))
    text = p.stdout
    i = text.find(DEFAULT_PROMPT)
    text = text[i + len(DEFAULT_PROMPT):] if i >= 0 else text
    return {"tps": float(dec.group(3)), "acc": na / nd if nd else 0.0, "n_drafted": nd, "n_accept": na,
            "decoded": int(dec.group(1)), "text": text}


def run_spectui(engine: Engine, k: int, n: int) -> dict:
    m = [engine.target, engine.draft]
    d0 = sum(x.decode_s for x in m)
    events = list(engine.run(DEFAULT_PROMPT, RunControl(Settings(draft_max=k, temperature=0.0, drafter="model")), n))
    inside = sum(x.decode_s for x in m) - d0
    end = events[-1]
    if end.reason not in ("n_predict", "eog"):
        raise SystemExit(f"spectui run ended with {end.reason}: {end.error}")
    s = stats.compute(events)
    text = "".join(t.text for ev in events if getattr(ev, "type", "") == "pass" for t in ev.emitted)
    return {"text": text, "tps": s.tokens_per_second, "acc": s.acceptance_rate, "n_drafted": s.n_drafted,
            "n_accept": s.n_accepted, "outside": 1.0 - inside / end.wall_s,
            "outside_passes": s.other_ms_total / s.decode_wall_ms if s.decode_wall_ms else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--ks", default="2,5")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096)
    a = ap.parse_args()
    if not (TARGET.is_file() and DRAFT.is_file()):
        raise SystemExit(f"Qwen pair not found in {MODELS} (../shared/models/fetch-qwen-coder-pair.sh)")
    ks = [int(x) for x in a.ks.split(",")]
    bin_dir = locate_tools()
    engine = Engine(str(TARGET), str(DRAFT), n_ctx=a.ctx, threads=a.threads)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f} at start; -t {a.threads}, -n {a.n}, temp 0")
    res: dict[tuple[str, int], list[dict]] = {}
    for rep in range(a.reps):
        for k in ks:
            order = ["llama.cpp", "spectui"] if (rep + k) % 2 == 0 else ["spectui", "llama.cpp"]
            for who in order:
                t = time.perf_counter()
                r = (run_llama_cpp(bin_dir, k, a.n, a.threads, a.ctx) if who == "llama.cpp"
                     else run_spectui(engine, k, a.n))
                r["secs"] = time.perf_counter() - t
                res.setdefault((who, k), []).append(r)
                extra = f"  outside llama_decode {100 * r['outside']:.1f}%" if who == "spectui" else ""
                print(f"rep {rep + 1} k={k} {who:9s} {r['tps']:6.2f} t/s  accept {100 * r['acc']:5.1f}% "
                      f"({r['n_accept']}/{r['n_drafted']}){extra}", flush=True)
    engine.close()
    print()
    print(f"{'k':>2} | {'spectui t/s':>11} | {'llama.cpp t/s':>13} | {'ratio':>5} | {'best/best':>9} | "
          f"{'accept spectui':>14} | {'accept llama.cpp':>16} | {'outside decode':>14}")
    for k in ks:
        s, l_ = res[("spectui", k)], res[("llama.cpp", k)]
        st = statistics.median(r["tps"] for r in s)
        lt = statistics.median(r["tps"] for r in l_)
        best = max(r["tps"] for r in s) / max(r["tps"] for r in l_)
        print(f"{k:>2} | {st:11.2f} | {lt:13.2f} | {st / lt:5.2f} | {best:9.2f} | "
              f"{100 * statistics.median(r['acc'] for r in s):13.1f}% | "
              f"{100 * statistics.median(r['acc'] for r in l_):15.1f}% | "
              f"{100 * statistics.median(r['outside'] for r in s):13.2f}%")
    for k in ks:  # greedy outputs: identical up to where batch-variant kernel numerics pick another near-tie
        a, b = res[("spectui", k)][0]["text"], res[("llama.cpp", k)][0]["text"].strip("\n")
        a = a.strip("\n")
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        print(f"k={k}: outputs identical for the first {same} characters (spectui {len(a)}, llama.cpp {len(b)})"
              + ("" if same >= min(len(a), len(b))
                 else f"; then spectui {a[same:same + 30]!r} vs llama.cpp {b[same:same + 30]!r}"))
    print("(medians over repetitions; ratio = spectui / llama.cpp decode tokens/s, best/best = fastest run of "
          "each (less sensitive to other load on a shared machine); targets: ratio >= 1.20, outside decode <= 5%)")


if __name__ == "__main__":
    main()
