"""The fast lane, serially and under pytest-xdist, side by side in one run: wall time, the CPU time of
pytest and every process it started (reaped children), and the load average around each run.

    .venv/bin/python benchmarks/bench_fast_lane.py [--workers auto|N] [--only-parallel] [-- PYTEST ARGS]

Runs ``python -m pytest -m "not slow" -q -p no:cacheprovider`` from the repository, then the same with
``-n WORKERS``, and prints one line per run and the ratio of their wall times. Both runs must pass. On a
shared machine a figure means little without its load: the line says it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(extra: list[str]) -> tuple[float, float, str, str, int]:
    argv = [sys.executable, "-m", "pytest", "-m", "not slow", "-q", "-p", "no:cacheprovider", *extra]
    load0 = "%.2f" % os.getloadavg()[0]
    c0, t0 = children_cpu(), time.monotonic()
    r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall, cpu = time.monotonic() - t0, children_cpu() - c0
    load1 = "%.2f" % os.getloadavg()[0]
    lines = r.stdout.strip().splitlines() or ["(no output)"]
    failed = [ln for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    return wall, cpu, f"load {load0} -> {load1}", "; ".join([lines[-1], *failed]), r.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="auto", help="pytest-xdist's -n (auto: one worker per core)")
    ap.add_argument("--only-parallel", action="store_true", help="skip the serial run")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    a = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; {sys.executable}")
    runs = []
    for label, extra in ([] if a.only_parallel else [("serial", [])]) + [(f"-n {a.workers}", ["-n", a.workers])]:
        wall, cpu, load, last, rc = one(extra + a.pytest_args)
        runs.append(wall)
        print(f"{label:>8}: {wall:6.1f} s wall, {cpu:6.1f} s CPU, {load}, exit {rc}: {last}", flush=True)
        if rc != 0:
            return rc
    if len(runs) == 2:
        print(f"serial / -n {a.workers}: {runs[0] / runs[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
