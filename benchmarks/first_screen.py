"""Seconds from launch to the first screen of a first live run (an empty probe cache), in a real pty
(tests/pty_term.py): `spectui --target T [--draft D] -p ... -n N` with XDG_CACHE_HOME an empty folder.

    python benchmarks/first_screen.py --target T.gguf [--draft D.gguf] [-t THREADS]

Prints, each from launch: the app's first screen (the alternate screen and its status line), the end of
the machine probe (shown inside the app as MEASURING THIS MACHINE), and the first decode pass; then the
same run again with the probe now cached, side by side. The 1-min load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pty_term import PtyProcess  # noqa: E402


def first_time(p: PtyProcess, test, t0: float, timeout: float) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if test(p):
            return time.monotonic() - t0
        if p.proc.poll() is not None:
            return None
        time.sleep(0.05)
    return None


def one_run(args, cache: str, timeout: float) -> dict[str, float | None]:
    argv = ["--target", args.target, *(["--draft", args.draft] if args.draft else ["--drafter", "ngram"]),
            "-p", "Write a Python function that merges two sorted lists.", "-n", str(args.n)]
    if args.threads:
        argv += ["-t", str(args.threads)]
    t0 = time.monotonic()
    p = PtyProcess(argv, cols=120, rows=36, env={"XDG_CACHE_HOME": cache})
    try:
        screen = first_time(p, lambda q: "\x1b[?1049h" in q.raw() and "theme" in q.text(), t0, timeout)
        measuring = "MEASURING THIS MACHINE" in p.text()
        probed = first_time(p, lambda q: re.search(r"pass [1-9]", q.text()) is not None, t0, timeout)
        out = {"first screen": screen, "first pass": probed, "measured inside the app": float(measuring)}
        p.send("q")
        p.wait(60)
        return out
    finally:
        p.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", default=None)
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="spectui-first-run-")
    load = os.getloadavg()[0]
    first = one_run(args, cache, args.timeout)
    again = one_run(args, cache, args.timeout)
    print(f"load average (1 min) at start: {load:.2f}; after: {os.getloadavg()[0]:.2f}")
    for name, res in (("empty probe cache", first), ("probe cached", again)):
        fs, fp = res["first screen"], res["first pass"]
        print(f"{name}: first screen {fs:.1f} s" if fs is not None else f"{name}: no screen", end="")
        print(f", first pass {fp:.1f} s" if fp is not None else ", no pass", end="")
        print(", the probe shown measuring inside the app" if res["measured inside the app"] else "")


if __name__ == "__main__":
    main()
