"""Seconds from launch to the first screen and to the first decoded pass of a first live run, and from q to
the process's exit mid-pass: `spectui --target T --draft D` in a real pty (tests/pty_term.py) with
XDG_CACHE_HOME an empty folder (no probe cached: a first run on this machine), recorded with --record so that
the first decoded pass is read from the trace itself (pass 1, after the prefill), not guessed from the screen.

    python benchmarks/first_token.py                          # the Qwen pair in ~/.cache/spectui/models/
    python benchmarks/first_token.py --load 3                 # with 3 busy processes on the machine
    python benchmarks/first_token.py --target T.gguf --draft D.gguf -t 2 --runs 3

Each run: launch, the app's first screen (the alternate screen and its status line), the first decoded pass
(the trace's pass 1), then, once ``--passes`` decode passes are recorded, q: the seconds until the process
has exited, next to the recorded passes' median wall time (a q that waited for its pass would take up to
one). ``--load N`` starts N busy processes (a Python loop each, by pid) before the first run and stops them
after the last. The 1-min load average is printed before and after. Nothing is cached between runs: each
run has its own empty cache folder.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pty_term import PtyProcess  # noqa: E402

MODELS = Path.home() / ".cache" / "spectui" / "models"
QWEN_TARGET = MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_DRAFT = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PROMPT = "Write a Python function that merges two sorted lists, with a docstring and two examples."


def first_time(test, t0: float, timeout: float, proc) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if test():
            return time.monotonic() - t0
        if proc.poll() is not None:
            return None
        time.sleep(0.01)
    return None


def decoded_passes(trace: Path) -> int:
    """Decode passes recorded so far (the prefill, pass 0, not counted)."""
    try:
        data = trace.read_bytes()
    except OSError:
        return 0
    return max(0, data.count(b'"type":"pass"') - 1)


def pass_ms(trace: Path) -> tuple[list[float], dict[str, float]]:
    """The decode passes' wall times, and where the time before pass 1 went: the start event's calibration
    (single decodes of each model, a warm-up and up to CALIBRATION_REPEATS timed, no more once they add up to
    CALIBRATION_BUDGET_MS: estimated from their median), the
    prefill pass and pass 1 itself, in ms."""
    from spectui.contract.events import PassEvent, RunStarted  # noqa: PLC0415
    from spectui.engine.run.prefill import CALIBRATION_BUDGET_MS, CALIBRATION_REPEATS  # noqa: PLC0415
    from spectui.recording.trace import read_trace  # noqa: PLC0415

    evs = read_trace(str(trace)).events
    passes = [e for e in evs if isinstance(e, PassEvent)]
    start = next((e for e in evs if isinstance(e, RunStarted)), None)
    parts = {}
    if start is not None:
        parts["calibration"] = sum((1 + min(CALIBRATION_REPEATS, max(1, math.ceil(CALIBRATION_BUDGET_MS / ms)))) * ms
                                   for ms in (start.target_decode_ms, start.draft_decode_ms) if ms > 0)
    if passes and passes[0].prefill:
        parts["prefill"] = passes[0].timing.wall_ms
    decode = [p.timing.wall_ms for p in passes if not p.prefill]
    if decode:
        parts["pass 1"] = decode[0]
    return decode, parts


def one_run(args, timeout: float) -> dict[str, float | None]:
    folder = Path(tempfile.mkdtemp(prefix="spectui-first-token-"))
    cache, trace = folder / "cache", folder / "run.jsonl"
    cache.mkdir()
    argv = ["--target", args.target, *(["--draft", args.draft] if args.draft else ["--drafter", "ngram"]),
            "-p", PROMPT, "-n", "100000", "--record", str(trace)]
    if args.threads:
        argv += ["-t", str(args.threads)]
    t0 = time.monotonic()
    p = PtyProcess(argv, cols=120, rows=36, env={"XDG_CACHE_HOME": str(cache)})
    try:
        screen = first_time(lambda: "\x1b[?1049h" in p.raw() and "theme" in p.text(), t0, timeout, p.proc)
        first = first_time(lambda: decoded_passes(trace) >= 1, t0, timeout, p.proc)
        more = first_time(lambda: decoded_passes(trace) >= args.passes, t0, timeout, p.proc)
        q_exit = None
        if more is not None:
            time.sleep(0.05)
            tq = time.monotonic()
            p.send("q")
            p.wait(120)
            q_exit = time.monotonic() - tq
        passes, parts = pass_ms(trace) if trace.exists() else ([], {})
        probed = list((cache / "spectui" / "probe").glob("*.json"))
        return {"first screen": screen, "first pass": first, "q to exit": q_exit, "parts": parts,
                "pass ms p50": statistics.median(passes) if passes else None, "probe cached": float(bool(probed)),
                "status": p.proc.returncode}
    finally:
        p.close()


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def fmt(x: float | None, unit: str = " s") -> str:
    return "-" if x is None else f"{x:.2f}{unit}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=str(QWEN_TARGET))
    ap.add_argument("--draft", default=str(QWEN_DRAFT))
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("--load", type=int, default=0, help="busy processes started while the runs run")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--passes", type=int, default=8, help="decode passes recorded before q")
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    for f in (args.target, args.draft):
        if f and not Path(f).is_file():
            sys.exit(f"first_token: no model at {f}")
    load0 = os.getloadavg()[0]
    hogs = busy(args.load)
    try:
        if hogs:
            time.sleep(2.0)  # the busy processes running before the launch
        results = [one_run(args, args.timeout) for _ in range(args.runs)]
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print(f"{Path(args.target).name} / {Path(args.draft).name if args.draft else 'ngram'}, -t "
          f"{args.threads or 'default'}, {args.load} busy processes; load average (1 min) before {load0:.2f}, "
          f"after {os.getloadavg()[0]:.2f}")
    for i, r in enumerate(results, 1):
        print(f"run {i} (empty probe cache): first screen {fmt(r['first screen'])}, first decoded pass "
              f"{fmt(r['first pass'])}, q to exit {fmt(r['q to exit'])} (passes' median {fmt(r['pass ms p50'], ' ms')}"
              f"), exit status {r['status']}, probe cached {'yes' if r['probe cached'] else 'no'}")
        if r["parts"]:
            shares = ", ".join(f"{k} {v / 1000:.2f} s" for k, v in r["parts"].items())
            print(f"  up to pass 1's end (from the trace): {shares}")
    if len(results) > 1:
        for key in ("first screen", "first pass", "q to exit"):
            xs = [r[key] for r in results if r[key] is not None]
            if xs:
                print(f"median {key}: {statistics.median(xs):.2f} s over {len(xs)} runs")


if __name__ == "__main__":
    main()
