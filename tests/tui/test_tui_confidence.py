"""The acceptance-by-draft-confidence panel: StatsSnapshot.confidence's buckets (rate, accepted/judged) on
the wide grid, and at 80x24 behind the b key (the acceptance cell switches from position to confidence)."""

from __future__ import annotations

import dataclasses

from spectui.analysis.stats import compute
from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings
from spectui.recording.synthetic import sample_events
from spectui.tui.run.acceptance_by_confidence import AcceptanceByConfidence
from spectui.tui.run.acceptance_by_position import AcceptanceByPosition
from spectui.tui.run.app import SpectuiApp
from spectui.views.animation import VERDICT

QS = (0.12, 0.41, 0.63, 0.82, 0.97)


def varied_events():
    """The sample run with draft confidences spread over every bucket."""
    out = []
    for ev in sample_events(38):
        if isinstance(ev, PassEvent) and ev.drafts:
            drafts = tuple(dataclasses.replace(d, prob=QS[(d.id + ev.index) % len(QS)]) for d in ev.drafts)
            ev = dataclasses.replace(ev, drafts=drafts)
        out.append(ev)
    return out


def counts(panel) -> str:
    return panel.render().plain


async def shown(app, pilot):
    await app.workers.wait_for_complete()
    app.repaint_all()
    await pilot.pause()


async def test_the_panel_shows_the_snapshots_buckets_on_the_wide_grid():
    events = varied_events()
    buckets = compute(events).confidence
    assert sum(b.judged > 0 for b in buckets) >= 4
    app = SpectuiApp(lambda c, p: iter(events), RunControl(Settings(draft_p_min=0.7)), freeze_phase=VERDICT)
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(app, pilot)
        panel = app.query_one(AcceptanceByConfidence)
        assert panel.display and app.query_one(AcceptanceByPosition).display
        assert app.snap.stats.confidence == buckets
        text = counts(panel)
        lines = text.splitlines()
        assert lines[0].startswith("acceptance by") and "p-min 0.7" in lines[0]
        for b, line in zip(buckets, lines[1:]):
            assert line.split()[0] == b.label
            assert line.endswith(f"{b.accepted}/{b.judged}")
            if b.judged:
                assert f"{100 * b.rate:5.1f}%" in line and "█" in line or b.rate == 0
        assert len(lines) == 1 + len(buckets)
        await pilot.press("q")


async def test_at_80x24_b_switches_the_acceptance_cell_to_confidence():
    events = varied_events()
    buckets = compute(events).confidence
    app = SpectuiApp(lambda c, p: iter(events), RunControl(), freeze_phase=VERDICT)
    async with app.run_test(size=(80, 24)) as pilot:
        await shown(app, pilot)
        by_q, by_pos = app.query_one(AcceptanceByConfidence), app.query_one(AcceptanceByPosition)
        assert by_pos.display and not by_q.display
        await pilot.press("b")
        await pilot.pause()
        assert by_q.display and not by_pos.display
        assert by_q.region == by_pos.region or by_q.region.height >= 6  # the same cell: title + 5 buckets
        text = counts(by_q)
        for b in buckets:
            assert f"{b.accepted}/{b.judged}" in text
        assert len(text.splitlines()) == 6
        await pilot.press("b")
        await pilot.pause()
        assert by_pos.display and not by_q.display
        await pilot.press("q")


async def test_no_drafts_yet():
    events = [ev for ev in sample_events(38) if not isinstance(ev, PassEvent) or not ev.drafts]
    app = SpectuiApp(lambda c, p: iter(events), RunControl(), freeze_phase=VERDICT)
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(app, pilot)
        assert "no judged drafts yet" in counts(app.query_one(AcceptanceByConfidence))
        await pilot.press("q")
