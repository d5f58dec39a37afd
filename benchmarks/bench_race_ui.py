"""The race's UI cost at 1x: CPU time of the UI thread (time.thread_time on the event loop's thread) per
wall second while a race plays at its recorded pace, against a one-trace replay of the same recordings'
longest lane, alternating replay / race / race / replay (ABBA) in one process. The app renders as to a
terminal (the cast's capture driver: ANSI generated in full colour, written to a list), so the cost includes
Textual's compositor and the driver's output. Target (issue 19): the UI thread under 5% of a core at 1x.

    .venv/bin/python benchmarks/bench_race_ui.py --synthetic      # two 12 s traces: 10 and 6.7 passes a second
    .venv/bin/python benchmarks/bench_race_ui.py spectui/data/race-alone.jsonl.gz spectui/data/race-lookup.jsonl.gz
    .venv/bin/python benchmarks/bench_race_ui.py A.jsonl B.jsonl --rounds 2 --cols 120 --rows 40 --seconds 30

Prints every run (UI CPU %, paints, wall seconds), the mean per side and the ratio race / replay, and the
machine's load (``os.getloadavg``): other processes do not add to a thread's own CPU time, but a busy
machine stretches it (cache misses, frequency).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spectui.contract.control import RunControl  # noqa: E402
from spectui.recording.player import ReplayPlayer, load_for_tui  # noqa: E402
from spectui.tui.race.app import RaceApp  # noqa: E402
from spectui.tui.run.app import SpectuiApp  # noqa: E402
from spectui.tui.shared.capture import Capture  # noqa: E402
from spectui.views.race_timeline import load_race  # noqa: E402


async def measure(make_app, done, cols: int, rows: int, seconds: float) -> tuple[float, int, float]:
    app = make_app()
    Capture().attach(app)  # render as to a terminal
    async with app.run_test(headless=False, size=(cols, rows), notifications=False) as pilot:
        await pilot.pause()
        t0, c0 = time.monotonic(), time.thread_time()
        while not done(app) and time.monotonic() - t0 < seconds:
            await asyncio.sleep(0.1)
        wall, cpu = time.monotonic() - t0, time.thread_time() - c0
        paints = app.paints
    return cpu / wall, paints, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--synthetic", action="store_true", help="race two made-up 12 s traces (tests/race_traces.py): "
                    "121 tokens at 100 ms a pass against 3 tokens a pass at 150 ms")
    ap.add_argument("--rounds", type=int, default=1, help="ABBA rounds")
    ap.add_argument("--cols", type=int, default=120)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--from-start", action="store_true")
    ap.add_argument("--seconds", type=float, default=float("inf"), help="measure at most this long per run")
    args = ap.parse_args()
    if args.synthetic:
        import tempfile

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from race_traces import WORDS, write_run

        tmp = Path(tempfile.mkdtemp(prefix="bench-race-"))
        args.traces = [write_run(tmp / "a.jsonl", words=WORDS[:121], per_pass=1, pass_ms=100),
                       write_run(tmp / "b.jsonl", words=WORDS[:121], per_pass=3, pass_ms=150)]
    if len(args.traces) < 2:
        ap.error("give 2 or 3 traces, or --synthetic")
    race = load_race(args.traces, from_start=args.from_start, any_prompt=True)
    longest = max(race.lanes, key=lambda lane: lane.finish_s)
    _h, replay_events = load_for_tui(longest.path)

    def race_app():
        return RaceApp(race, speed=1)

    def replay_app():
        return SpectuiApp(None, RunControl(), replay=ReplayPlayer(replay_events, speed=1))

    def race_done(app):
        return len(app.finished_at) == len(race.lanes)

    def replay_done(app):
        return app.player.at_end and not app.running

    sides = {"replay": (replay_app, replay_done), "race": (race_app, race_done)}
    results: dict[str, list[float]] = {"replay": [], "race": []}
    print(f"race of {len(race.lanes)} ({', '.join(lane.setting for lane in race.lanes)}), "
          f"{race.end_s:.1f} s at 1x; replay of {longest.name} ({longest.finish_s:.1f} s); "
          f"{args.cols}x{args.rows}; load before: {os.getloadavg()[0]:.2f}")
    for r in range(args.rounds):
        for side in ("replay", "race", "race", "replay"):
            make, done = sides[side]
            frac, paints, wall = asyncio.run(measure(make, done, args.cols, args.rows, args.seconds))
            results[side].append(frac)
            print(f"round {r + 1} {side:<6}  UI thread {100 * frac:5.2f}% of a core  {paints:4d} paints  {wall:5.1f} s",
                  flush=True)
    m_replay, m_race = statistics.mean(results["replay"]), statistics.mean(results["race"])
    print(f"mean UI thread: replay {100 * m_replay:.2f}%, race {100 * m_race:.2f}% of a core; "
          f"race / replay = {m_race / m_replay:.2f}; target < 5%: {'met' if m_race < 0.05 else 'NOT met'}")
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min) on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
