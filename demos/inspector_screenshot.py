"""The README's inspector screenshot (docs/inspector-screenshot.svg), from a real run of the Qwen2.5-Coder pair.

1. Runs the pair headless at temperature 0.8, k = 4 (the engine records the inspector's data, --inspect-top 5)
   and keeps the trace (``--trace``, default docs/inspector-run.jsonl.gz, committed: ``--reuse`` re-shoots from it).
2. Replays that trace in the TUI (120x40), enters inspect mode, puts the cursor on the newest pass's first
   rejected draft whose residual shows (a sampled rejection) and opens the inspector, then saves the screen
   as SVG. A replay shows exactly what the live run showed (tested: tests/tui/test_tui_inspector.py).

    .venv/bin/python demos/inspector_screenshot.py [--target T.gguf --draft D.gguf] [--reuse]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from spectui.views.animation import VERDICT  # noqa: E402
from spectui.contract.control import RunControl  # noqa: E402
from spectui.engine.loop import Engine  # noqa: E402
from spectui.contract.events import REJECTED, PassEvent, Settings  # noqa: E402
from spectui.recording.player import ReplayPlayer  # noqa: E402
from spectui.recording.trace import TraceWriter, read_trace  # noqa: E402
from spectui.tui.run.app import SpectuiApp  # noqa: E402
from spectui.tui.shared.inspector_screen import InspectorScreen  # noqa: E402

MODELS = Path(os.environ.get("SPECTUI_MODELS", Path.home() / ".cache" / "spectui" / "models"))
TARGET = MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DRAFT = MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PROMPT = (
    "<|im_start|>system\nYou are a helpful coding assistant.<|im_end|>\n<|im_start|>user\n"
    "Explain in two short paragraphs how a hash map handles collisions.<|im_end|>\n<|im_start|>assistant\n"
)


def record(target: str, draft: str, path: Path, n: int) -> None:
    engine = Engine(target, draft, n_ctx=2048, threads=None, warn=lambda m: print(m, file=sys.stderr))
    try:
        with TraceWriter(path) as w:
            for ev in engine.run(PROMPT, RunControl(Settings(draft_max=4, temperature=0.8, seed=7)), n):
                w.write(ev)
    finally:
        engine.close()


async def shoot(path: Path, out: Path) -> None:
    events = read_trace(path).events
    app = SpectuiApp(None, RunControl(), replay=ReplayPlayer(events, speed="max"), freeze_phase=VERDICT)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        for _ in range(400):
            app.refresh_from_state()
            if app.snap is not None and app.snap.recent and app.player.cursor == len(app.player):
                break
            await pilot.pause(0.01)
        await pilot.pause()
        recent = [v.event for v in app.snap.recent]
        want = next(e for e in reversed(recent) if isinstance(e, PassEvent) and any(
            d.verdict == REJECTED for d in e.drafts) and e.inspect and e.inspect[e.n_accepted].residual_top)
        slot = next(i for i, d in enumerate(want.drafts) if d.verdict == REJECTED)
        await pilot.press("i")
        screen = app.run_screen
        while screen.cursor.pass_index != want.index:
            await pilot.press("down")
        while screen.cursor.slot != slot:
            await pilot.press("left" if screen.cursor.slot > slot else "right")
        await pilot.press("enter")
        await pilot.pause(0.2)
        if not isinstance(app.screen, InspectorScreen):
            raise SystemExit(f"the inspector did not open (screen: {app.screen})")
        app.save_screenshot(filename=out.name, path=str(out.parent))
        print(f"pass {want.index}, draft {slot + 1}: {out}")
        await pilot.press("escape", "escape", "q")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default=str(TARGET))
    ap.add_argument("--draft", default=str(DRAFT))
    ap.add_argument("-n", type=int, default=96)
    ap.add_argument("--trace", default=str(REPO / "docs" / "inspector-run.jsonl.gz"))
    ap.add_argument("-o", "--out", default=str(REPO / "docs" / "inspector-screenshot.svg"))
    ap.add_argument("--reuse", action="store_true", help="use the trace already recorded")
    a = ap.parse_args()
    trace = Path(a.trace)
    if not (a.reuse and trace.is_file()):
        record(a.target, a.draft, trace, a.n)
    asyncio.run(shoot(trace, Path(a.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
