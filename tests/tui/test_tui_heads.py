"""The TUI driving the real engine with an MTP head (benchmarks/make_spec_models.py's tiny target): the status
line names the kind, and `d` cycles through the head the run was loaded with, ngram and none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from spectui.contract.control import RunControl
from spectui.contract.events import Settings
from spectui.tui.run.app import SpectuiApp
from spectui.tui.run.live_screen import LiveScreen
from spectui.tui.run.status_line import StatusLine

from test_tui_engine import ListRecorder, wait_until

ROOT = Path(__file__).resolve().parents[2]


async def test_tui_runs_an_mtp_head_and_names_it(tmp_path):
    from spectui.engine.loop import Engine

    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_spec_models.py"), str(tmp_path),
                        "--mtp-agree", "0.5"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    engine = Engine(str(tmp_path / "mtp-agree-target.gguf"), n_ctx=256, threads=1, head="mtp")
    try:
        control = RunControl(Settings(draft_max=3, temperature=0.0, drafter="mtp"))
        control.pause()
        app = SpectuiApp(lambda c, p: engine.run(p, c, 40), control, recorder=ListRecorder(), n_predict=40,
                         prompt="the hash map")
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.snap is not None and app.snap.start is not None)
            assert "drafter mtp" in app.query_one(StatusLine).text.plain
            screen = app.screen
            assert isinstance(screen, LiveScreen)
            assert screen.drafter_choices() == ("ngram", "none", "mtp")
            for want in ("ngram", "none", "mtp"):
                await pilot.press("d")
                assert control.settings.drafter == want
            await pilot.press("space")
            await wait_until(pilot, lambda: app.snap.end is not None and not app.running)
            assert app.snap.stats.n_accepted > 0 and app.snap.end.error == ""
    finally:
        engine.close()
