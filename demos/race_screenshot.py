"""The README's race pictures, from the bundled race recordings (spectui/data/race-*.jsonl.gz):

- docs/race-screenshot.svg: Textual's own screenshot of `spectui race` at the finish line (120x36);
- docs/race-browser.png: `spectui serve race (the same recordings)` loaded in a headless Chromium (Debian's
  package) over the DevTools protocol, at 8x, once every lane has finished
  (tests/browser.py).

    .venv/bin/python demos/race_screenshot.py [--no-browser]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

from browser import Chromium, free_port, wait_for_http  # noqa: E402
from spectui.commands.demo import ACTS, load_race_act  # noqa: E402
from spectui.contract.outputs import Kind, check_output  # noqa: E402
from spectui.tui.race.app import RaceApp  # noqa: E402

SVG = Kind("SVG screenshot", lambda head: b"<svg" in head[:200])
PNG = Kind("PNG screenshot", lambda head: head.startswith(b"\x89PNG"))
SPEED = 8  # the browser's race plays at 8x (the recordings were made on a loaded machine: minutes at 1x)


async def svg(path: str, cols: int, rows: int) -> None:
    race = load_race_act(ACTS[2])
    app = RaceApp(race, speed="max", freeze_phase="settled")
    async with app.run_test(size=(cols, rows)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.repaint_all()
        await pilot.pause()
        app.save_screenshot(filename=os.path.basename(path), path=os.path.dirname(path))


def browser_png(path: str, wait_s: float) -> None:
    port = free_port()
    traces = [os.path.join(REPO, "spectui", "data", name) for name in ACTS[2].race]
    server = subprocess.Popen([sys.executable, "-m", "spectui", "serve", "--port", str(port), "race", "--speed",
                               str(SPEED), *traces],
                              cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/")
        with Chromium(1400, 900) as browser:
            png, _facts = browser.screenshot(f"http://127.0.0.1:{port}/?fontsize=14",
                                             "document.body.classList.contains('-first-byte')", settle_s=wait_s)
        with open(path, "wb") as fh:
            fh.write(png)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--browser-wait", type=float, default=None, help="seconds after the first byte (default: the "
                    f"race's length at {SPEED}x + 3)")
    args = ap.parse_args()
    wait_s = args.browser_wait if args.browser_wait is not None else load_race_act(ACTS[2]).end_s / SPEED + 3
    docs = os.path.join(REPO, "docs")
    inputs = [os.path.join(REPO, "spectui", "data", name) for name in ACTS[2].race]
    asyncio.run(svg(check_output(os.path.join(docs, "race-screenshot.svg"), SVG, inputs).path, 120, 36))
    print("wrote docs/race-screenshot.svg", file=sys.stderr)
    if not args.no_browser:
        browser_png(check_output(os.path.join(docs, "race-browser.png"), PNG, inputs).path, wait_s)
        print("wrote docs/race-browser.png", file=sys.stderr)


if __name__ == "__main__":
    main()
