"""Replay speed and memory: a generated 100k-pass trace replayed headless (`spectui replay FILE --headless`).

Generates the trace (spectui.recording.trace.synthetic_run: start, prefill, N decode passes at k = 3, one settings
change, end) into a temporary directory, then replays it in a fresh subprocess per size, so each peak
RSS belongs to that replay alone. Prints time and peak memory for 10k and 100k passes side by side:
flat memory means the 100k peak is about the 10k peak, not ten times it. Targets: 100k passes in <= 3 s.

    .venv/bin/python benchmarks/bench_replay.py [--passes 100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

CHILD = r"""
import resource, sys, time, io
t0 = time.perf_counter()
from spectui.text.replay import replay_headless
out = open(sys.argv[2], "w")
stats = replay_headless(sys.argv[1], out, as_json=False)
out.close()
dt = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
print(dt, ru.ru_maxrss, stats.n_passes, stats.n_emitted, ru.ru_utime + ru.ru_stime)
"""

BASELINE = r"""
import resource
import spectui.commands.replay, spectui.text.run, spectui.recording.trace, spectui.analysis.stats
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def run_child(code: str, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": REPO}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True)
    return out.stdout.split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", type=int, default=100_000)
    ap.add_argument("--keep", default=None, help="write the traces here instead of a temporary directory")
    args = ap.parse_args()

    from spectui.recording.trace import synthetic_run, write_trace

    d = args.keep or tempfile.mkdtemp(prefix="spectui-bench-")
    os.makedirs(d, exist_ok=True)
    sizes = sorted({max(1, args.passes // 10), args.passes})
    rows = []
    base_kib = int(run_child(BASELINE)[0])
    for n in sizes:
        path = os.path.join(d, f"synthetic-{n}.jsonl")
        t0 = time.perf_counter()
        write_trace(path, synthetic_run(n, seed=1))
        gen_s = time.perf_counter() - t0
        mb = os.path.getsize(path) / 1e6
        dt, peak_kib, n_passes, n_emitted, cpu = run_child(CHILD, path, os.devnull)
        rows.append((n, mb, gen_s, float(dt), int(peak_kib), int(n_passes), int(n_emitted), float(cpu)))
        if not args.keep:
            os.unlink(path)
    if not args.keep:
        os.rmdir(d)

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
          f"baseline RSS after imports {base_kib / 1024:.1f} MiB")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f} (other jobs on the machine stretch wall times; "
          f"'cpu s' is this process's own CPU time)")
    print(f"{'passes':>8} {'file MB':>8} {'write s':>8} {'replay s':>9} {'cpu s':>6} {'passes/s':>10} "
          f"{'peak RSS MiB':>13} {'tokens':>8}")
    for n, mb, gen_s, dt, peak, n_passes, n_emitted, cpu in rows:
        print(f"{n:>8} {mb:>8.1f} {gen_s:>8.2f} {dt:>9.2f} {cpu:>6.2f} {n_passes / dt:>10.0f} {peak / 1024:>13.1f} "
              f"{n_emitted:>8}")
    if len(rows) == 2:
        (n1, _, _, t1, m1, _, _, _), (n2, _, _, t2, m2, _, _, c2) = rows
        per_pass = (m2 - m1) * 1024 / (n2 - n1)
        print(f"ratio {n2 // n1}x passes: time {t2 / t1:.2f}x, peak RSS {m2 / m1:.2f}x; "
              f"growth {per_pass:.0f} bytes/pass (spectui.analysis.stats.RunStats keeps each token's id, text and ITL "
              f"for the summary/JSON; the reader itself streams: no event is kept)")
        verdict = "OK" if t2 <= 3.0 else "SLOWER than the 3 s target"
        print(f"{n2} passes replayed headless in {t2:.2f} s wall ({c2:.2f} s CPU): {verdict}")


if __name__ == "__main__":
    main()
