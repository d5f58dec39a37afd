"""`spectui serve` under hostile input and signals: one table of wall time and peak memory (issue 37's note),
and the seconds from a signal to serve's exit with a browser tab open (issue 33's note).

Part 1 runs each case of tests/hostile/serve_cases.py (the report's SV06, SV07, SV09 and held rows; what
each sends is in its docstring) against a real `spectui serve demo --act 1` on 127.0.0.1 and prints held /
FAILED, wall seconds, the peak resident memory of serve plus everything it started, the largest child's
peak and the most children alive at once (sampled every 0.1 s).

Part 2 opens the page in headless Chromium (tests/browser.py; a raw websocket when chromium is missing),
waits for the screen, sends SIGTERM or SIGINT to serve with the tab still open, and prints the exit status
and the seconds until serve exited (``--repeats`` times each: median and worst).

    .venv/bin/python benchmarks/serve_hostile.py [--only oversize,many_sessions] [--repeats 5] [--no-signals]

Run it on a quiet machine (`uptime` first): the sessions are Textual apps, slower to start and to quit
under load. The load average is printed with the results.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "hostile"))

from browser import Chromium, chromium_path  # noqa: E402
from serve_cases import CASES, DEMO, run  # noqa: E402
from serve_probe import Serve, client, gone, no_traceback, read_for  # noqa: E402


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def cases(names: list[str]) -> bool:
    print(f"spectui serve, hostile cases ({load()}):")
    print(f"{'case':<52} {'result':<7} {'wall s':>7} {'peak MB':>8} {'child MB':>9} {'children':>9}")
    ok = True
    for name in names:
        out = run(name)
        ok &= out.held
        print(f"{out.case:<52} {'held' if out.held else 'FAILED':<7} {out.wall_s:>7.1f} {out.total_mb:>8.0f} "
              f"{out.child_mb:>9.0f} {out.children:>9}")
        for note in out.notes:
            if note.startswith("FAILED"):
                print("    ", note)
    return ok


def one_stop(signum: int, browser: bool) -> tuple[int | None, float, bool]:
    """(exit status, seconds to exit, nothing left and no traceback) for one signal with a tab open."""
    with Serve(*DEMO) as srv:
        if browser:
            with Chromium(1280, 800) as page:
                page.screenshot(srv.url, "document.body.classList.contains('-first-byte')", settle_s=1.0)
                kids = srv.children()
                rc, wall = srv.stop(signum)
        else:
            async def tab():
                s, ws = await client(srv)
                await read_for(ws, 3.0)
                kids = srv.children()
                rc, wall = srv.stop(signum)
                await s.close()
                return kids, rc, wall

            kids, rc, wall = asyncio.run(tab())
        clean = not gone(kids, 1.0) and no_traceback(srv.stderr())
    return rc, wall, clean


def signals(repeats: int) -> bool:
    browser = chromium_path() is not None
    print(f"\nspectui serve {' '.join(DEMO)}, a tab open ({'headless Chromium' if browser else 'a raw websocket'}), "
          f"{repeats} runs each ({load()}):")
    ok = True
    for signum, want in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        runs = [one_stop(signum, browser) for _ in range(repeats)]
        walls = [w for _rc, w, _c in runs]
        statuses = sorted({rc for rc, _w, _c in runs}, key=str)
        clean = all(c for _rc, _w, c in runs)
        good = statuses == [want] and max(walls) < 2.0 and clean
        ok &= good
        print(f"  {signum.name}: exit {statuses}, median {statistics.median(walls):.2f} s, worst {max(walls):.2f} s, "
              f"{'no process left, no traceback' if clean else 'a process left or a traceback'}"
              f"{'' if good else '  <- FAILED'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated case names (" + ", ".join(CASES) + ")")
    ap.add_argument("--repeats", type=int, default=5, help="signal runs each (part 2)")
    ap.add_argument("--no-signals", action="store_true", help="skip part 2")
    ap.add_argument("--no-cases", action="store_true", help="skip part 1")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        ap.error(f"no such case: {', '.join(unknown)}")
    ok = True
    if not args.no_cases:
        ok &= cases(names)
    if not args.no_signals:
        ok &= signals(max(1, args.repeats))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
