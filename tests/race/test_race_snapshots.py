"""Snapshots of the race (pytest-textual-snapshot) at 80x24 (stacked) and 120x40 (side by side), in the
default theme, the colour-blind theme (okabe-ito) and under NO_COLOR; mid-race (one lane finished) and at
the finish line; three lanes stacked. The animation phase is frozen and the traces are written by the test
with a fixed machine, so the pictures are stable. Update with ``--snapshot-update``."""

from __future__ import annotations

import pytest
from race_traces import WORDS, write_run

from spectui.tui.race.app import RaceApp
from spectui.views.animation import VERDICT
from spectui.views.race_timeline import load_race


@pytest.fixture
def traces(tmp_path):
    words = [w + ("\n" if i % 12 == 11 else "") for i, w in enumerate(WORDS[:61])]
    a = write_run(tmp_path / "a.jsonl", words=words, per_pass=1, pass_ms=50.0)
    b = write_run(tmp_path / "b.jsonl", words=words, per_pass=3, pass_ms=80.0)
    c = write_run(tmp_path / "c.jsonl", words=words, per_pass=2, pass_ms=70.0, drafter="ngram")
    return a, b, c


def make_app(paths, theme="dark", at=None, phase=VERDICT):
    app = RaceApp(load_race(list(paths)), theme=theme, speed="max", freeze_phase=phase)
    app.control.pause() if at is not None else None
    return app, at


def runner(at):
    async def run_before(pilot):
        app = pilot.app
        if at is not None:  # mid-race: stop the clock at race time ``at``
            app.control.stop()
            await app.workers.wait_for_complete()
            n = sum(1 for t, _, _ in app.race.merged if t <= at) + 1
            app.player.seek(n)
            app.rebuild()
        else:
            await app.workers.wait_for_complete()
        await pilot.pause()
        app.repaint_all()
        await pilot.pause()
        app.repaint_all()
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("theme", ["dark", "okabe-ito"])
def test_race_finished_80x24(snap_compare, traces, theme):
    app, at = make_app(traces[:2], theme)
    assert snap_compare(app, terminal_size=(80, 24), run_before=runner(at))


@pytest.mark.parametrize("theme", ["dark", "okabe-ito"])
def test_race_finished_120x40(snap_compare, traces, theme):
    app, at = make_app(traces[:2], theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=runner(at))


def test_race_midway_120x40(snap_compare, traces):
    app, at = make_app(traces[:2], at=1.5)  # B (1.6 s) still racing, A (3 s) too
    assert snap_compare(app, terminal_size=(120, 40), run_before=runner(at))


def test_race_midway_80x24_one_finished(snap_compare, traces):
    app, at = make_app(traces[:2], at=2.0)  # B has finished, A has not
    assert snap_compare(app, terminal_size=(80, 24), run_before=runner(at))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_race_no_color(snap_compare, traces, monkeypatch, size):
    monkeypatch.setenv("NO_COLOR", "1")
    app, at = make_app(traces[:2])
    assert snap_compare(app, terminal_size=size, run_before=runner(at))


def test_race_three_lanes_80x24(snap_compare, traces):
    app, at = make_app(traces)
    assert snap_compare(app, terminal_size=(80, 24), run_before=runner(at))


def test_race_help_80x24(snap_compare, traces):
    """The race's help page (?) at 80x24: it scrolls, its hint line stays."""
    app, at = make_app(traces[:2])

    async def run_before(pilot):
        await runner(at)(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
