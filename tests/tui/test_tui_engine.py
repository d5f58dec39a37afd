"""The TUI driving the real engine (llama.cpp on the tiny test models): keys reach the engine."""

from __future__ import annotations

import time

from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings, SettingsChanged
from spectui.tui.run.app import SpectuiApp
from spectui.tui.run.status_line import StatusLine
from spectui.tui.shared.pass_ribbon import PassRibbon


class ListRecorder:
    def __init__(self) -> None:
        self.events = []
        self.flushed = 0

    def write(self, ev) -> None:
        self.events.append(ev)

    def flush(self) -> None:
        self.flushed += 1


async def wait_until(pilot, cond, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pilot.app.refresh_from_state()
        if cond():
            return
        await pilot.pause(0.02)
    raise AssertionError("timed out")


async def test_app_runs_the_real_engine_and_keys_reach_it(tiny_target, tiny_draft_noisy):
    from spectui.engine.loop import Engine

    engine = Engine(str(tiny_target), str(tiny_draft_noisy), n_ctx=1024, threads=1)
    try:
        control = RunControl(Settings(draft_max=2, temperature=0.0, drafter="model"))
        control.pause()  # the engine waits between passes: the test decides when it goes on
        rec = ListRecorder()
        app = SpectuiApp(lambda c, p: engine.run(p, c, 120), control, recorder=rec, n_predict=120,
                         prompt="the cat")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.snap is not None and app.snap.start is not None)
            await pilot.pause(0.3)
            app.refresh_from_state()
            passes_while_paused = app.snap.stats.n_passes
            assert passes_while_paused <= 1
            assert "PAUSED" in app.query_one(StatusLine).text.plain

            await pilot.press("up")  # k 2 -> 3, takes effect at the next pass
            assert control.settings.draft_max == 3
            await pilot.press("space")  # resume
            await wait_until(pilot, lambda: app.snap.end is not None and not app.running)
            snap = app.snap
            assert snap.stats.n_passes > passes_while_paused
            assert snap.stats.n_drafted > 0
            assert "ENDED" in app.query_one(StatusLine).text.plain
            assert "current pass" in app.query_one(PassRibbon).render().plain
            await pilot.press("q")
        assert app.stop_engine(10)
        events = rec.events
        assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunEnded)
        changes = [e for e in events if isinstance(e, SettingsChanged)]
        assert changes and changes[0].new.draft_max == 3
        decode = [e for e in events if isinstance(e, PassEvent) and not e.prefill]
        assert any(e.settings.draft_max == 3 and e.k == 3 for e in decode)
        assert all(e.k <= e.settings.draft_max for e in decode)
        # the screen showed the engine's statistics for exactly these events
        from spectui.analysis.stats import compute

        assert snap.stats == compute(events)
        assert rec.flushed >= 1
    finally:
        engine.close()


async def test_restart_runs_the_engine_again(tiny_target, tiny_draft_noisy):
    from spectui.engine.loop import Engine

    engine = Engine(str(tiny_target), str(tiny_draft_noisy), n_ctx=1024, threads=1)
    try:
        rec = ListRecorder()
        app = SpectuiApp(lambda c, p: engine.run(p, c, 40), RunControl(Settings(draft_max=2)), recorder=rec,
                         n_predict=40, prompt="the cat")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.snap is not None and app.snap.end is not None and not app.running)
            first = app.snap.stats
            await pilot.press("r")
            await wait_until(pilot, lambda: app.snap is not None and app.snap.end is not None and not app.running)
            assert app.snap.stats.n_emitted == first.n_emitted  # greedy, same prompt: same run length
            await pilot.press("q")
        assert app.stop_engine(10)
        assert sum(isinstance(e, RunStarted) for e in rec.events) == 2
    finally:
        engine.close()
