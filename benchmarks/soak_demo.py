"""Endurance: the demo's full loop (every act in turn) in a real terminal for a long time, and a long live run.

    python benchmarks/soak_demo.py [--minutes 20] [--speed 8] [--cols 120 --rows 36]
    python benchmarks/soak_demo.py --live --target T.gguf --draft D.gguf [-n 4000]

The demo runs in a real pty (tests/pty_term.py) as a user's terminal would run it; its resident memory (RSS)
is sampled every few seconds. Each loop is seen on the screen (act 1's note coming back). At the end q must
exit 0, with no traceback on the screen, and the RSS must stay within 10% of its value after the first loop
(the exit status is 1 otherwise). ``--live``: one run of ``-n`` tokens on the given models, RSS sampled the
same way from its first pass to its end: the first quarter's median against the last quarter's.

Prints the duration, the loops, the RSS after the first loop, at the end and at its highest, and their
ratios. tests/tui/test_soak.py runs a short version (a few loops).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pty_term import PtyProcess  # noqa: E402

ACT1 = "Act 1 - "
ACT_NOTE = re.compile(r"Act ([123]) - ")
RSS_TOLERANCE = 0.10


def rss(proc: psutil.Process) -> int:
    return proc.memory_info().rss


def soak_demo(minutes: float, speed: str, cols: int, rows: int, sample_s: float = 2.0, min_loops: int = 2,
              say=print) -> dict:
    p = PtyProcess(["demo", "--speed", speed], cols=cols, rows=rows)
    try:
        app = psutil.Process(p.proc.pid)
        p.wait_for(ACT1, 60)
        t0 = time.monotonic()
        deadline = t0 + minutes * 60
        samples: list[tuple[float, int]] = []
        after_first = None
        loops = 0
        last_act = 1
        seen = 0
        while time.monotonic() < deadline or loops < min_loops:
            time.sleep(sample_s)
            assert p.proc.poll() is None, f"the demo stopped by itself ({p.proc.returncode}):\n{p.text()[-3000:]}"
            text = p.text()
            samples.append((time.monotonic() - t0, rss(app)))
            for m in ACT_NOTE.finditer(text, max(0, seen - 16)):  # the acts' notes, in the order drawn
                act = int(m.group(1))
                if act == 1 and last_act == 3:  # act 1 again after the race: a loop done
                    loops += 1
                    if after_first is None:
                        after_first = samples[-1][1]
                    say(f"  loop {loops} done at {samples[-1][0] / 60:.1f} min, RSS "
                        f"{samples[-1][1] / 2**20:.1f} MiB", flush=True)
                last_act = act
            seen = len(text)
            if time.monotonic() > deadline + 30 * 60:
                raise AssertionError("fewer loops than asked in 30 minutes more")
        end_rss = samples[-1][1]
        p.send("q")
        status = p.wait(30)
        text = p.text()
        return {"seconds": time.monotonic() - t0, "loops": loops, "status": status,
                "traceback": "Traceback" in text, "rss_first_loop": after_first,
                "rss_end": end_rss, "rss_max": max(r for _, r in samples), "samples": samples}
    finally:
        p.close()


def soak_live(target: str, draft: str | None, n: int, threads: int, sample_s: float = 1.0, say=print,
              record: str | None = None) -> dict:
    argv = ["--target", target, *(["--draft", draft] if draft else ["--drafter", "ngram"]), "-p",
            "Write a long story about a hash map.", "-n", str(n), "-c", "8192", "--no-probe",
            *(["--record", record, "--force"] if record else [])]
    if threads:
        argv += ["-t", str(threads)]
    p = PtyProcess(argv, cols=120, rows=36)
    try:
        app = psutil.Process(p.proc.pid)
        p.wait_for("pass ", 120)
        t0 = time.monotonic()
        samples: list[tuple[float, int]] = []
        ended = False
        while not ended:
            time.sleep(sample_s)
            assert p.proc.poll() is None, p.text()[-3000:]
            samples.append((time.monotonic() - t0, rss(app)))
            ended = "ENDED" in p.text()[-20000:]
        passes = [int(m) for m in re.findall(r"pass (\d+) ", p.text()[-20000:])]
        p.send("q")
        status = p.wait(60)
        q = max(1, len(samples) // 4)
        first, last = statistics.median(r for _, r in samples[:q]), statistics.median(r for _, r in samples[-q:])
        return {"seconds": time.monotonic() - t0, "status": status, "passes": max(passes or [0]),
                "rss_first_quarter": first, "rss_last_quarter": last, "rss_max": max(r for _, r in samples),
                "traceback": "Traceback" in p.text(), "samples": samples}
    finally:
        p.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--speed", default="8")
    ap.add_argument("--cols", type=int, default=120)
    ap.add_argument("--rows", type=int, default=36)
    ap.add_argument("--live", action="store_true")
    ap.add_argument("--target")
    ap.add_argument("--draft")
    ap.add_argument("-n", type=int, default=4000)
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("--record", default=None, help="--live: record the run to this trace (then the screen keeps "
                                                   "no event history of its own)")
    args = ap.parse_args()
    mib = 2**20
    load = psutil.getloadavg()[0]
    if args.live:
        r = soak_live(args.target, args.draft, args.n, args.threads, record=args.record)
        ratio = r["rss_last_quarter"] / r["rss_first_quarter"]
        rec = " --record" if args.record else ""
        print(f"live run, -n {args.n}{rec}: {r['seconds']:.0f} s, {r['passes']} passes, exit {r['status']}; RSS "
              f"first quarter {r['rss_first_quarter'] / mib:.1f} MiB, last quarter {r['rss_last_quarter'] / mib:.1f} "
              f"MiB ({ratio:.3f}x), highest {r['rss_max'] / mib:.1f} MiB; load {load:.2f}")
        tenths = [r["samples"][min(len(r["samples"]) - 1, len(r["samples"]) * i // 10)][1] / mib for i in range(11)]
        print("RSS at each tenth of the run (MiB): " + " ".join(f"{x:.1f}" for x in tenths))
        ok = r["status"] == 0 and not r["traceback"] and ratio <= 1 + RSS_TOLERANCE
        return 0 if ok else 1
    r = soak_demo(args.minutes, args.speed, args.cols, args.rows)
    end, first = r["rss_end"] / r["rss_first_loop"], r["rss_max"] / r["rss_first_loop"]
    half = [rss for t, rss in r["samples"] if t >= r["seconds"] / 2]
    print(f"second half of the run: RSS {min(half) / mib:.1f} to {max(half) / mib:.1f} MiB "
          f"({max(half) / min(half) - 1:+.1%})")
    print(f"demo at {args.speed}x, {args.cols}x{args.rows}: {r['seconds'] / 60:.1f} min, {r['loops']} loops, exit "
          f"{r['status']}, traceback: {r['traceback']}; RSS after the first loop {r['rss_first_loop'] / mib:.1f} MiB, "
          f"at the end {r['rss_end'] / mib:.1f} MiB ({end:.3f}x), highest {r['rss_max'] / mib:.1f} MiB ({first:.3f}x); "
          f"load {load:.2f}")
    ok = r["status"] == 0 and not r["traceback"] and end <= 1 + RSS_TOLERANCE and first <= 1 + RSS_TOLERANCE
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
