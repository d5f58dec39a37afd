"""TUI overhead: decode tokens/s with the TUI attached vs headless, same engine, same settings, alternating.

The TUI runs under Textual's test driver (headless terminal, full compositor at its 30 Hz refresh),
with the engine in a worker thread. Two headless baselines: ``headless`` is spectui.headless.consume
in the main thread (what ``--headless`` does), ``thread`` is the same consumer iterating the engine in
a worker thread (the TUI's arrangement, so tui/thread isolates the cost of the UI). The engine and
models are loaded once and shared; the modes rotate round by round so machine noise hits all.
Prints every run, then the median TPS per mode and the ratios (target: tui/thread >= 0.97).

    .venv/bin/python benchmarks/bench_tui_overhead.py            # Qwen2.5-Coder 1.5B / 0.5B pair
    .venv/bin/python benchmarks/bench_tui_overhead.py --rounds 3 -n 128 -k 2 --screenshot docs/screenshot.svg
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spectui.control import RunControl  # noqa: E402
from spectui.events import Settings  # noqa: E402
from spectui.headless import consume  # noqa: E402

MODELS = Path.home() / ".cache" / "spectui" / "models"
UI_CPU: list[float] = []  # UI thread CPU seconds per wall second, per TUI run
PROMPT = "Write a step-by-step explanation of how a hash map handles collisions."


def run_headless(engine, settings: Settings, n: int) -> float:
    stats, _ = consume(engine.run(PROMPT, RunControl(settings), n), out=io.StringIO())
    return stats.snapshot().tokens_per_second


def run_headless_thread(engine, settings: Settings, n: int) -> float:
    """The headless consumer, but iterating the engine in a worker thread as the TUI does."""
    out: list[float] = []
    th = threading.Thread(target=lambda: out.append(run_headless(engine, settings, n)))
    th.start()
    th.join()
    return out[0]


def run_tui(engine, settings: Settings, n: int, size=(120, 40), screenshot: str | None = None,
            switch_s: float | None = None) -> float:
    import spectui.tui.app as tui_app
    from spectui.tui.app import SpectuiApp

    default_switch = tui_app.GIL_SWITCH_INTERVAL_S
    if switch_s is not None:
        tui_app.GIL_SWITCH_INTERVAL_S = switch_s

    app = SpectuiApp(lambda c, p: engine.run(p, c, n), RunControl(settings), prompt=PROMPT, n_predict=n)

    async def drive() -> float:
        shot_taken = screenshot is None
        cpu0, wall0 = time.thread_time(), time.perf_counter()  # the UI (event loop) thread's CPU time
        async with app.run_test(size=size) as pilot:
            while True:
                await pilot.pause(0.05)
                snap = app.snap
                lp = snap.last_pass if snap is not None else None
                showing_rejection = (lp is not None and app._phase == "verdict"
                                     and any(v != "accepted" for _, v in lp.drafts))
                if not shot_taken and snap is not None and (
                        (snap.stats.n_emitted >= n * 0.6 and showing_rejection) or snap.stats.n_emitted >= n * 0.95):
                    app.save_screenshot(os.path.basename(screenshot), path=os.path.dirname(screenshot) or ".")
                    shot_taken = True
                if snap is not None and snap.end is not None and not app.running:
                    break
            app.refresh_from_state()
            tps = app.snap.stats.tokens_per_second
            UI_CPU.append((time.thread_time() - cpu0) / (time.perf_counter() - wall0))
            await pilot.press("q")
        app.stop_engine(10)
        return tps

    try:
        return asyncio.run(drive())
    finally:
        tui_app.GIL_SWITCH_INTERVAL_S = default_switch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("--draft", default=str(MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-k", type=int, default=2)
    ap.add_argument("-t", "--threads", type=int, default=None)
    ap.add_argument("--screenshot", default=None, help="save an SVG of the first TUI run (past 60%% of the tokens, showing a rejected draft)")
    ap.add_argument("--compare-switch", action="store_true",
                    help="add a TUI mode with Python's default 5 ms GIL switch interval (the app uses 0.5 ms)")
    args = ap.parse_args()

    from spectui.engine.loop import Engine

    t0 = time.perf_counter()
    engine = Engine(args.target, args.draft, n_ctx=2048, threads=args.threads)
    print(f"loaded {Path(args.target).name} + {Path(args.draft).name} in {time.perf_counter() - t0:.1f} s; "
          f"k={args.k} n={args.n} temp=0 rounds={args.rounds}", flush=True)
    settings = Settings(draft_max=args.k, temperature=0.0, drafter="model")
    modes = ["headless", "thread", "tui"] + (["tui-5ms"] if args.compare_switch else [])
    res: dict[str, list[float]] = {m: [] for m in modes}
    try:
        run_headless(engine, settings, 16)  # warm-up (page cache, thread pool)
        for r in range(args.rounds):
            order = modes[r % len(modes):] + modes[: r % len(modes)]
            for mode in order:
                if mode == "headless":
                    tps = run_headless(engine, settings, args.n)
                elif mode == "thread":
                    tps = run_headless_thread(engine, settings, args.n)
                elif mode == "tui-5ms":
                    tps = run_tui(engine, settings, args.n, switch_s=0.005)
                else:
                    tps = run_tui(engine, settings, args.n, screenshot=args.screenshot if r == 0 else None)
                res[mode].append(tps)
                print(f"round {r + 1} {mode:8s} {tps:6.2f} tok/s", flush=True)
    finally:
        engine.close()
    h, th, t = (statistics.median(res[m]) for m in modes[:3])
    if args.compare_switch:
        t5 = statistics.median(res["tui-5ms"])
        print(f"\nTUI with the default 5 ms GIL switch interval: {t5:.2f} tok/s (tui-5ms/thread {t5 / th:.3f})")
    print(f"\nmedian decode tok/s   headless(main thread) {h:.2f}   headless(worker thread) {th:.2f}   tui {t:.2f}")
    print(f"tui/thread {t / th:.3f} ({100 * (1 - t / th):+.1f}% slower)   tui/headless {t / h:.3f}   "
          f"thread/headless {th / h:.3f}")
    print("UI thread CPU while the TUI ran: " + ", ".join(f"{100 * c:.1f}%" for c in UI_CPU) + " of one core")


if __name__ == "__main__":
    main()
