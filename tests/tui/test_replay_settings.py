"""A replay's panels read the recording's settings in force at the replay's position (k, temperature, drafter,
auto), not the RunControl's defaults (k = 2, temp 0): a trace whose settings change mid-run (written here),
played to the end, then seeked back into its first segment."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from synthetic_events import make_end, make_pass, make_prefill, make_start  # noqa: E402

from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import Settings, SettingsChanged  # noqa: E402
from spectui.recording.player import ReplayPlayer, load_for_tui  # noqa: E402
from spectui.recording.trace import write_trace  # noqa: E402
from spectui.tui.run.app import SpectuiApp  # noqa: E402
from spectui.tui.run.prediction_panel import PredictionPanel  # noqa: E402

FIRST = Settings(draft_max=8, temperature=0.0, drafter="model")
SECOND = Settings(draft_max=3, temperature=0.7, drafter="ngram", auto="cost")
N = 30  # passes in each segment


def k_changing_trace(path: Path) -> Path:
    events = [make_start(target_decode_ms=40.0, draft_decode_ms=8.0, settings=FIRST, n_predict=1000), make_prefill()]
    t = 0.05
    for i in range(1, N + 1):
        t += 0.1
        events.append(make_pass(i, 8, i % 5, draft_ms_per_token=8.0, verify_ms=70.0, other_ms=1.0, t_end=t,
                                settings=FIRST))
    events.append(SettingsChanged(before_pass=N + 1, old=FIRST, new=SECOND, t=t))
    for i in range(N + 1, 2 * N + 1):
        t += 0.08
        events.append(make_pass(i, 3, i % 4, draft_ms_per_token=0.0, verify_ms=55.0, other_ms=1.0, t_end=t,
                                settings=SECOND))
    events.append(make_end(2 * N))
    write_trace(str(path), events)
    return path


def _panel_text(app) -> str:
    return app.screen.query_one(PredictionPanel).draw(200, 8).plain


async def _settle(pilot, app, cond, tries=300):
    for _ in range(tries):
        await pilot.pause(0.05)
        if cond():
            return
    raise AssertionError("the replay never got there")


async def test_every_panel_reads_the_recordings_settings_at_its_position(tmp_path):
    _header, events = load_for_tui(k_changing_trace(tmp_path / "k-changes.jsonl"))
    app = SpectuiApp(None, RunControl(), replay=ReplayPlayer(events, speed="max"), title="replay")
    async with app.run_test(size=(140, 40)) as pilot:
        await _settle(pilot, app, lambda: app.player.at_end and not app.running)
        app.repaint_all()
        await pilot.pause(0.1)
        view = app.view
        assert (view.asked.draft_max, view.asked.temperature, view.asked.drafter, view.auto) == (3, 0.7, "ngram",
                                                                                                 "cost")
        assert view.prediction is not None and view.prediction.current_k == 3
        text = _panel_text(app)
        assert "auto k: cost" in text and "current k = 2" not in text
        # back into the first segment: k = 8, temperature 0, the draft model, auto off
        app.control.pause()
        app.player.seek(N // 2)
        app.rebuild()
        await pilot.pause(0.1)
        view = app.view
        assert (view.asked.draft_max, view.asked.temperature, view.asked.drafter, view.auto) == (8, 0.0, "model",
                                                                                                 None)
        assert view.prediction is not None and view.prediction.current_k == 8
        text = _panel_text(app)
        assert "auto k: off" in text and "current k = 2" not in text
        if "current k = " in text:
            assert "current k = 8" in text


async def test_at_event_0_the_status_reads_the_traces_header(tmp_path):
    """Right after Home (the cursor at event 0, nothing delivered) the status line and the panels read the
    recording's RunStarted settings (k 8 here), not the RunControl's -k default (2)."""
    from spectui.tui.run.status_line import status_text  # noqa: PLC0415

    _header, events = load_for_tui(k_changing_trace(tmp_path / "k-changes.jsonl"))
    app = SpectuiApp(None, RunControl(), replay=ReplayPlayer(events, speed="max"), title="replay")
    async with app.run_test(size=(140, 40)) as pilot:
        await _settle(pilot, app, lambda: app.player.at_end and not app.running)
        app.control.pause()  # Home, held there (Home then plays on from event 0)
        app.player.jump_start()
        app.rebuild()
        await pilot.pause(0.1)
        view = app.view
        assert view.replay.cursor == 0 and (view.snap is None or view.snap.settings is None)  # nothing delivered
        assert (view.asked.draft_max, view.asked.temperature, view.asked.drafter) == (8, 0.0, "model")
        line = status_text(view).plain
        assert "event 0/" in line and "k 8 " in line and "k 2 " not in line


def test_a_recorded_live_run_keeps_no_event_history_of_its_own(tmp_path):
    """With --record the recorder keeps the run (``s`` saves from it): the screen's state keeps only its bounded
    tails, not every event a second time; without a recorder it keeps them for ``s``."""
    from spectui.recording.trace import TraceWriter

    def source(ctl, p):
        return iter(())

    rec = TraceWriter(str(tmp_path / "r.jsonl"))
    try:
        assert SpectuiApp(source, RunControl(), recorder=rec).state.keep_events is False
    finally:
        rec.close()
    assert SpectuiApp(source, RunControl()).state.keep_events is True
